"""The pretrained models' tokenizers: text to token ids and back, run by the ``tokenizers``
library (Rust) from the vocabulary that ships with each model.

- :class:`WordPieceTokenizer` is BERT's (all-MiniLM-L6-v2's and the tiny BERT's): it
  lower-cases, splits off punctuation and cuts each word into the longest pieces of its
  vocabulary, ``##`` marking a piece that continues a word ("playing" -> ``play ##ing``). A
  call returns a :class:`TokenBatch` (ids, attention mask, segment ids and the tokens) with
  ``[CLS] A [SEP]`` or ``[CLS] A [SEP] B [SEP]`` around the text. It can also learn a small
  vocabulary from text (:meth:`WordPieceTokenizer.train`).
- :class:`GGUFTokenizer` is SmolLM2's byte-level BPE, rebuilt from the vocabulary and the
  merges stored in the model's GGUF file: the text's UTF-8 bytes are merged pair by pair in
  the order the merges were learned, so any text, emoji included, has a spelling; the file's
  chat template turns a conversation into the prompt the model was tuned on
  (:meth:`GGUFTokenizer.chat_prompt`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from transformer_lab.checks import instance_of, is_int, require, token_id_list
from transformer_lab.device import check_device

__all__ = ["WordPieceTokenizer", "TokenBatch", "GGUFTokenizer", "SPECIAL_TOKENS", "CHAT_ROLES"]

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")  # BERT's special tokens
CHAT_ROLES = ("system", "user", "assistant")  # the turns of SmolLM2's chat template
_TURN = ("role", "content")


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


def _check_max_length(max_length, pair: bool) -> int:
    """Room for the special tokens and at least one token of each text: 3 for
    ``[CLS] A [SEP]``, 5 for ``[CLS] A [SEP] B [SEP]``."""
    least = 5 if pair else 3
    if not is_int(max_length) or not least <= max_length < 2**32:
        what = "a pair [CLS] A [SEP] B [SEP]" if pair else "[CLS] A [SEP]"
        raise ValueError(
            f"max_length must be an int >= {least} (room for {what} with at least one token "
            f"per text), got {max_length!r}"
        )
    return int(max_length)


class WordPieceTokenizer:
    """A WordPiece tokenizer (lower-casing, punctuation splitting, ``##`` continuation
    pieces) run by the ``tokenizers`` library, adding ``[CLS] A [SEP]`` or
    ``[CLS] A [SEP] B [SEP]`` around the text.

    ``tokenizer("some text")`` or ``tokenizer(["one", "two"])`` returns a
    :class:`TokenBatch`, always 2-d (a single text is a batch of one); shorter sequences
    are padded on the right. Sequences longer than ``max_length`` are truncated.
    """

    def __init__(self, backend, max_length: int = 512):
        tokenizers = require("tokenizers", "tokenizers")
        instance_of(backend, tokenizers.Tokenizer, "backend", "a tokenizers.Tokenizer")
        max_length = _check_max_length(max_length, pair=False)
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
        tokenizers = require("tokenizers", "tokenizers")
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
        tk = require("tokenizers", "tokenizers")
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
        """The text of ``ids``; an id outside the vocabulary or a bool is refused (the
        backend would drop it without a word)."""
        ids = token_id_list(ids, self.vocab_size)
        return self.backend.decode(ids, skip_special_tokens=skip_special_tokens)

    def convert_ids_to_tokens(self, ids: Sequence[int] | torch.Tensor) -> list[str]:
        return [self.backend.id_to_token(i) for i in token_id_list(ids, self.vocab_size)]

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
        if max_length is not None:
            max_length = _check_max_length(max_length, text_pair is not None)
        _check_max_length(self.max_length, text_pair is not None)
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


class GGUFTokenizer:
    """The byte-level BPE tokenizer of a GGUF file, run by ``tokenizers``.

    ``encode(text) -> list[int]`` (special tokens such as ``<|im_start|>`` written in the
    text become their ids), ``decode(ids) -> str``, ``tokens(text)`` (the pieces, with
    ``Ġ`` for a space as byte-level BPE writes it), and :meth:`chat_prompt`.
    """

    def __init__(self, metadata: dict):
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

        instance_of(metadata, dict, "metadata")
        kind = metadata.get("tokenizer.ggml.model")
        if kind != "gpt2":
            raise ValueError(f"only byte-level BPE ('gpt2') tokenizers are supported, got {kind!r}")
        tokens = list(metadata["tokenizer.ggml.tokens"])
        merges = [tuple(m.split(" ", 1)) for m in metadata["tokenizer.ggml.merges"]]
        types = list(metadata.get("tokenizer.ggml.token_type", [1] * len(tokens)))
        vocab = {tok: i for i, tok in enumerate(tokens)}
        self._tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
        self._tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        self._tok.decoder = decoders.ByteLevel()
        control = [tokens[i] for i, kind in enumerate(types) if kind == 3]  # CONTROL tokens
        self._tok.add_special_tokens([AddedToken(s, special=True) for s in control])
        self.special_tokens = control
        self.vocab_size = len(tokens)
        self.bos_id = metadata.get("tokenizer.ggml.bos_token_id")
        self.eos_id = metadata.get("tokenizer.ggml.eos_token_id")
        self.pad_id = metadata.get("tokenizer.ggml.padding_token_id")
        self.chat_template = metadata.get("tokenizer.chat_template")

    def encode(self, text: str) -> list[int]:
        instance_of(text, str, "text", "a str")
        return self._tok.encode(text, add_special_tokens=False).ids

    def tokens(self, text: str) -> list[str]:
        instance_of(text, str, "text", "a str")
        return self._tok.encode(text, add_special_tokens=False).tokens

    def decode(self, ids: Sequence[int] | torch.Tensor, skip_special_tokens: bool = False) -> str:
        if isinstance(ids, torch.Tensor):
            if ids.dim() != 1 or ids.is_floating_point():
                raise ValueError(f"ids must be a 1-d integer tensor, got {tuple(ids.shape)}")
            ids = ids.tolist()
        ids = list(ids) if isinstance(ids, Iterable) and not isinstance(ids, str) else None
        if ids is None or not all(isinstance(i, int) for i in ids):
            raise TypeError("ids must be a sequence of ints")
        ids = token_id_list(ids, self.vocab_size)  # bools too: True would read as id 1
        return self._tok.decode(ids, skip_special_tokens=skip_special_tokens)

    def chat_prompt(self, messages: str | Sequence[dict], add_generation_prompt: bool = True):
        """The text the model expects for a conversation, made by the file's own chat
        template (Jinja). ``messages`` is a question (one user turn) or a list of
        ``{"role": ..., "content": ...}`` with both strings and the role one of
        :data:`CHAT_ROLES`, the roles SmolLM2's template was tuned on (the template itself
        would print any role); the template adds the default system turn."""
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        if not isinstance(messages, (list, tuple)):
            raise TypeError(
                "messages must be a str or a list of {'role', 'content'} dicts, "
                f"got {type(messages).__name__}"
            )
        if not messages:
            raise ValueError("messages is empty: give a question or at least one message")
        for i, m in enumerate(messages):
            if not isinstance(m, dict) or not all(isinstance(m.get(k), str) for k in _TURN):
                raise TypeError(
                    f"messages[{i}] must be a dict with str 'role' and 'content', got {m!r:.80}"
                )
            if m["role"] not in CHAT_ROLES:
                raise ValueError(
                    f"messages[{i}]['role'] must be one of {CHAT_ROLES}, got {m['role']!r}"
                )
        if not self.chat_template:
            raise ValueError("this GGUF file has no tokenizer.chat_template")
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        return env.from_string(self.chat_template).render(
            messages=list(messages), add_generation_prompt=add_generation_prompt
        )
