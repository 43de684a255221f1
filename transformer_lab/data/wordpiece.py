"""BERT's tokenizer: WordPiece, run by the ``tokenizers`` library (Rust).

:class:`WordPieceTokenizer` is the tokenizer of all-MiniLM-L6-v2 and of the tiny BERT: it
lower-cases, splits off punctuation and cuts each word into the longest pieces of its
vocabulary, ``##`` marking a piece that continues a word ("playing" -> ``play ##ing``). A
call returns a :class:`TokenBatch` (ids, attention mask, segment ids and the tokens) with
``[CLS] A [SEP]`` or ``[CLS] A [SEP] B [SEP]`` around the text. It reads the vocabulary that
ships with a model (:meth:`WordPieceTokenizer.from_file`), learns a small one from text
(:meth:`WordPieceTokenizer.train`) and numbers a learned one in a fixed order
(:meth:`WordPieceTokenizer.renumbered`). Its special tokens are
:data:`~transformer_lab.data.tokenizers.BERT_SPECIALS`, the other tokenizers of the package
are in :mod:`transformer_lab.data.tokenizers` and :mod:`transformer_lab.data.gguf_tokenizer`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from transformer_lab.checks import instance_of, is_int, require, token_id_list
from transformer_lab.data.tokenizers import BERT_SPECIALS
from transformer_lab.device import check_device

__all__ = ["WordPieceTokenizer", "TokenBatch"]


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


def _bert_backend(tk):
    """An untrained ``tokenizers.Tokenizer`` with BERT's WordPiece model, lower-casing
    normalizer, pre-tokenizer and decoder."""
    backend = tk.Tokenizer(tk.models.WordPiece(unk_token=BERT_SPECIALS.unk))
    backend.normalizer = tk.normalizers.BertNormalizer(lowercase=True)
    backend.pre_tokenizer = tk.pre_tokenizers.BertPreTokenizer()
    backend.decoder = tk.decoders.WordPiece()
    return backend


def _add_cls_and_sep(tk, backend) -> None:
    """Have ``backend`` put ``[CLS] A [SEP]`` and ``[CLS] A [SEP] B [SEP]`` around a text."""
    cls, sep = BERT_SPECIALS.cls, BERT_SPECIALS.sep
    backend.post_processor = tk.processors.TemplateProcessing(
        single=f"{cls} $A {sep}",
        pair=f"{cls} $A {sep} $B:1 {sep}:1",
        special_tokens=[(cls, backend.token_to_id(cls)), (sep, backend.token_to_id(sep))],
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
        tokenizers = require("tokenizers", "tokenizers")
        instance_of(backend, tokenizers.Tokenizer, "backend", "a tokenizers.Tokenizer")
        max_length = _check_max_length(max_length, pair=False)
        self.backend = tokenizers.Tokenizer.from_str(backend.to_str())  # own copy
        self.backend.no_padding()  # the file may ask for fixed padding; we pad per batch
        self.backend.enable_truncation(max_length)
        self.max_length = max_length
        for tok in BERT_SPECIALS:
            if self.backend.token_to_id(tok) is None:
                raise ValueError(f"the vocabulary has no {tok} token")
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (
            self.backend.token_to_id(t) for t in BERT_SPECIALS
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
        backend = _bert_backend(tk)
        trainer = tk.trainers.WordPieceTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=list(BERT_SPECIALS),
            show_progress=False,
        )
        backend.train_from_iterator(texts, trainer)
        _add_cls_and_sep(tk, backend)
        return cls(backend, max_length)

    def renumbered(self, counts: torch.Tensor) -> WordPieceTokenizer:
        """The same vocabulary with new ids: the special tokens first (ids 0-4, in the order
        of :data:`~transformer_lab.data.tokenizers.BERT_SPECIALS`), then the other tokens by
        falling ``counts`` (``[vocab_size]``, indexed by the present ids), ties by spelling.

        The trainer numbers tokens of equal frequency in an order that changes from run to
        run; renumbered by their count in a text, the same vocabulary gets the same ids in
        every run."""
        instance_of(counts, torch.Tensor, "counts", "a tensor of one count per token")
        if counts.shape != (self.vocab_size,) or counts.is_floating_point():
            raise ValueError(
                f"counts must hold one integer count per token, shape ({self.vocab_size},), "
                f"got {counts.dtype} {tuple(counts.shape)}"
            )
        tk = require("tokenizers", "tokenizers")
        vocab = self.backend.get_vocab()
        specials = list(BERT_SPECIALS)
        rest = sorted(
            (t for t in vocab if t not in specials), key=lambda t: (-int(counts[vocab[t]]), t)
        )
        new_vocab = {t: i for i, t in enumerate(specials + rest)}
        backend = tk.Tokenizer(tk.models.WordPiece(vocab=new_vocab, unk_token=BERT_SPECIALS.unk))
        old = self.backend
        backend.normalizer, backend.pre_tokenizer, backend.decoder = (
            old.normalizer,
            old.pre_tokenizer,
            old.decoder,
        )
        _add_cls_and_sep(tk, backend)
        return WordPieceTokenizer(backend, self.max_length)

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
        texts: list[str] = [text] if isinstance(text, str) else list(text)
        if not texts or not all(isinstance(t, str) for t in texts):
            raise TypeError("text must be a string or a non-empty list of strings")
        inputs: list[str] | list[tuple[str, str]]
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
