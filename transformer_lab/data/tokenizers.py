"""Tokenizers: text to token ids and back, the first and last step of every model.

Every tokenizer and vocabulary of the package lives in ``data/``: this module holds the ones
written out in Python, from the plainest to the one GPT-2 uses,

- :class:`Vocabulary`: an ordered list of distinct tokens, a token's id its position;
  an unknown token is an error (chapter 1, where each token is a row of ``W_E``).
- :class:`Vocab`: tokens sorted after four special tokens ``<pad> <bos> <eos> <unk>``
  (:data:`SPECIALS`) with ids 0-3, unknown tokens read as ``<unk>`` (the translation and
  captioning data).
- :class:`WordVocabulary`: whole lower-cased words after BERT's five special tokens
  (:data:`BERT_SPECIALS`), unknown words read as ``[UNK]`` (chapter 12's live run).
- :class:`CharTokenizer`: one token per character (the character-level GPT).
- :class:`BPETokenizer`: byte-level byte-pair encoding, merges learned from a text
  (Sennrich et al. 2016, in the byte-level form of GPT-2), so any text can be encoded.

and the special tokens, each set defined once: :data:`SPECIALS` for :class:`Vocab`,
:data:`BERT_SPECIALS` for :class:`WordVocabulary` and BERT's WordPiece tokenizer. The
tokenizers that ship with pretrained models sit beside this module:
:class:`~transformer_lab.data.wordpiece.WordPieceTokenizer` (BERT's, in ``wordpiece``) and
:class:`~transformer_lab.data.gguf_tokenizer.GGUFTokenizer` (SmolLM2's, in
``gguf_tokenizer``).

The data sets build them from their own text: ``shakespeare.char_tokenizer()``,
``shakespeare.bpe_tokenizer(1024)``, the vocabularies of ``numbers.load()``.
"""

from __future__ import annotations

import operator
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from transformer_lab.checks import integer, string, token_id_list

__all__ = [
    "SPECIALS",
    "PAD_ID",
    "BOS_ID",
    "EOS_ID",
    "UNK_ID",
    "BERT_SPECIALS",
    "Vocabulary",
    "Vocab",
    "WordVocabulary",
    "CharTokenizer",
    "BPETokenizer",
]

SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")  # the first four tokens of every Vocab
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3


class BertSpecials(NamedTuple):
    """BERT's special tokens by name, in the order of their ids in a :class:`WordVocabulary`
    and in a vocabulary renumbered by
    :meth:`~transformer_lab.data.wordpiece.WordPieceTokenizer.renumbered`."""

    pad: str  # pads a sequence to the batch's length
    unk: str  # a word (or piece) outside the vocabulary
    cls: str  # first token of every input; its final vector feeds next-sentence prediction
    sep: str  # ends sentence A and sentence B
    mask: str  # a hidden token in masked-language modelling


BERT_SPECIALS = BertSpecials("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class UnknownTokenError(KeyError, ValueError):
    """A token that is not in the vocabulary (a KeyError, and a ValueError as the book's
    bad-input errors are)."""


class TokenIndexError(IndexError, ValueError):
    """An index outside the vocabulary (an IndexError, and a ValueError)."""


class Vocabulary:
    """An ordered list of distinct tokens; a token's index is its position in the list."""

    def __init__(self, tokens: Iterable[str]):
        self.tokens = list(tokens)
        bad = [t for t in self.tokens if not isinstance(t, str)]
        if bad:
            raise TypeError(f"tokens must be strings, got {bad[:3]!r}")
        self.index: dict[str, int] = {}
        for i, token in enumerate(self.tokens):
            if token in self.index:
                raise ValueError(f"token {token!r} appears twice (at {self.index[token]} and {i})")
            self.index[token] = i

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: str) -> bool:
        return token in self.index

    def __getitem__(self, i: int) -> str:
        return self.tokens[i]

    def __repr__(self) -> str:
        return f"Vocabulary(|V|={len(self)}, first={self.tokens[:5]})"

    def encode(self, tokens: Sequence[str]) -> torch.Tensor:
        """Indices of ``tokens`` as a LongTensor ``[pos]``; unknown tokens raise KeyError."""
        if isinstance(tokens, str):
            raise TypeError(
                f"tokens must be a list of tokens; a str would be read character by character: "
                f"pass [{tokens!r}]"
            )
        missing = [t for t in tokens if t not in self.index]
        if missing:
            raise UnknownTokenError(f"not in the vocabulary: {missing}")
        return torch.tensor([self.index[t] for t in tokens], dtype=torch.long)

    def decode(self, ids: Sequence[int] | torch.Tensor) -> list[str]:
        """The tokens at ``ids``."""
        if isinstance(ids, torch.Tensor) and (ids.dim() != 1 or ids.is_floating_point()):
            raise ValueError(
                f"ids must be a 1-d integer tensor, got {ids.dtype} {tuple(ids.shape)}"
            )
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise TypeError(f"ids must be ints, got {ids!r}")
        bad = [i for i in ids if not 0 <= i < len(self)]
        if bad:
            raise TokenIndexError(f"indices {bad} are outside 0..{len(self) - 1}")
        return [self.tokens[i] for i in ids]


class Vocab:
    """Tokens <-> ids, with ``<pad> <bos> <eos> <unk>`` as ids 0-3 and the rest sorted."""

    def __init__(self, tokens: Iterable[str]):
        extra = sorted(set(tokens) - set(SPECIALS))
        self.itos: list[str] = [*SPECIALS, *extra]
        self.stoi: dict[str, int] = {t: i for i, t in enumerate(self.itos)}
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = PAD_ID, BOS_ID, EOS_ID, UNK_ID

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token) -> bool:
        return token in self.stoi

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens: {' '.join(self.itos[:12])} ...)"

    def encode(self, tokens: Sequence[str], bos: bool = False, eos: bool = False) -> list[int]:
        """Token ids, unknown tokens as ``<unk>``; optionally wrapped in ``<bos>``/``<eos>``."""
        if isinstance(tokens, str):
            raise TypeError("encode takes a list of tokens, not a string; use tokenize() first")
        ids = [self.stoi.get(t, self.unk_id) for t in tokens]
        return ([self.bos_id] if bos else []) + ids + ([self.eos_id] if eos else [])

    def decode(self, ids, strip: bool = True) -> list[str]:
        """Tokens of ``ids`` (a list or 1-d tensor). With ``strip``, ``<bos>`` and
        ``<pad>`` are dropped and decoding stops at the first ``<eos>``."""
        if isinstance(ids, torch.Tensor) and ids.dim() != 1:
            raise ValueError(f"decode takes one sequence, got shape {tuple(ids.shape)}")
        out = []
        for i in token_id_list(ids):  # ints only: True would read as <bos>
            if not 0 <= i < len(self.itos):
                raise ValueError(f"id {i} is outside the vocabulary of {len(self)} tokens")
            if strip and i == self.eos_id:
                break
            if strip and i in (self.bos_id, self.pad_id):
                continue
            out.append(self.itos[i])
        return out


_WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")  # letters, with inner apostrophes: o'er, 'tis -> tis


class WordVocabulary:
    """Whole lower-cased words as tokens: BERT's five special tokens (ids 0-4, in the order
    of :data:`BERT_SPECIALS`), then the most frequent words of a text, most frequent first
    (ties by spelling). Punctuation and digits are dropped; a word outside the vocabulary
    reads as ``[UNK]``."""

    def __init__(self, words: Sequence[str]):
        words = list(words)
        bad = [w for w in words if not isinstance(w, str) or _WORD.fullmatch(w) is None]
        if bad:
            raise ValueError(f"words must be lower-case words like 'thee', got {bad[:3]!r}")
        if len(set(words)) != len(words):
            raise ValueError("words must be distinct")
        self.tokens = [*BERT_SPECIALS, *words]
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (
            self.index[t] for t in BERT_SPECIALS
        )
        self.special_ids = list(range(len(BERT_SPECIALS)))

    @staticmethod
    def words(text: str) -> list[str]:
        """The lower-cased words of ``text``: ``"O, 'tis Timon!"`` -> ``['o', 'tis', 'timon']``."""
        return _WORD.findall(string(text, "text").lower())

    @classmethod
    def from_texts(cls, texts: Iterable[str], size: int) -> WordVocabulary:
        """The ``size - 5`` most frequent words of ``texts``, after the special tokens."""
        integer(size, "size", minimum=len(BERT_SPECIALS) + 1)
        counts = Counter(w for t in texts for w in cls.words(t))
        ranked = sorted(counts, key=lambda w: (-counts[w], w))
        return cls(ranked[: size - len(BERT_SPECIALS)])

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def __repr__(self) -> str:
        return f"WordVocabulary({len(self)} tokens: {self.tokens[5:10]} ...)"

    def token_to_id(self, word: str) -> int:
        """The id of ``word`` (``unk_id`` for a word outside the vocabulary)."""
        return self.index.get(string(word, "word"), self.unk_id)

    def encode(self, text: str) -> list[int]:
        """Ids of the words of ``text``, without special tokens."""
        return [self.index.get(w, self.unk_id) for w in self.words(text)]

    def convert_ids_to_tokens(self, ids: Iterable[int]) -> list[str]:
        ids = [operator.index(i) for i in ids]
        bad = [i for i in ids if not 0 <= i < len(self.tokens)]
        if bad:
            raise ValueError(f"ids must be in [0, {len(self.tokens)}), got {bad[:3]}")
        return [self.tokens[i] for i in ids]


class CharTokenizer:
    """One token per character: ``stoi`` maps a character to its id, ``itos`` back."""

    def __init__(self, chars: str):
        chars = "".join(sorted(set(string(chars, "chars"))))
        if not chars:
            raise ValueError("a character tokenizer needs at least one character")
        self.itos = list(chars)
        self.stoi = {c: i for i, c in enumerate(self.itos)}

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        return self.encode_tensor(text).tolist()

    def encode_tensor(self, text: str) -> torch.Tensor:
        """``encode`` as a ``torch.long`` tensor, by table look-up (fast on long texts)."""
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        table = np.full(max(int(codes.max(initial=0)), max(map(ord, self.itos))) + 1, -1)
        table[[ord(c) for c in self.itos]] = np.arange(self.vocab_size)
        ids = table[codes]
        if (ids < 0).any():
            bad = chr(int(codes[np.argmax(ids < 0)]))
            raise ValueError(f"character {bad!r} is not in the vocabulary")
        return torch.from_numpy(ids.astype(np.int64))

    def decode(self, ids) -> str:
        return "".join(self.itos[i] for i in token_id_list(ids, self.vocab_size))

    def chars_per_token(self, text: str) -> float:
        return 1.0

    def __repr__(self) -> str:
        return f"CharTokenizer(vocab_size={self.vocab_size})"


class BPETokenizer:
    """Byte-level BPE (Sennrich et al. 2016; the GPT-2 variant works on bytes, so every
    text can be encoded) with the same ``encode``/``decode`` interface as
    :class:`CharTokenizer`. Wraps a ``tokenizers.Tokenizer``; :meth:`train` learns one."""

    def __init__(self, tokenizer, cache_path: Path | None = None):
        if not all(hasattr(tokenizer, a) for a in ("encode", "decode", "get_vocab_size")):
            raise TypeError(
                f"tokenizer must be a tokenizers.Tokenizer, got {type(tokenizer).__name__}"
            )
        self.tokenizer = tokenizer
        self.cache_path = cache_path  # where it is saved; its encoded splits sit beside it

    @classmethod
    def train(cls, text: str, vocab_size: int) -> BPETokenizer:
        """Learn ``vocab_size - 256`` merges from ``text`` on top of the 256 bytes,
        deterministically, one paragraph (block between blank lines) at a time."""
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            special_tokens=[],
        )
        pieces = string(text, "text").split("\n\n")  # no single huge sequence
        tok.train_from_iterator(pieces, trainer=trainer, length=len(pieces))
        return cls(tok)

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text).ids

    def encode_tensor(self, text: str) -> torch.Tensor:
        """``encode`` as a ``torch.long`` tensor; long texts are encoded paragraph by
        paragraph in parallel (BPE merges never cross the blank line between paragraphs,
        because :meth:`train` learns from paragraphs)."""
        pieces = text.split("\n\n")
        pieces = [p + "\n\n" for p in pieces[:-1]] + pieces[-1:]
        ids = [i for enc in self.tokenizer.encode_batch(pieces) for i in enc.ids]
        return torch.tensor(ids, dtype=torch.long)

    def decode(self, ids) -> str:
        return self.tokenizer.decode(token_id_list(ids, self.vocab_size))

    def chars_per_token(self, text: str) -> float:
        """Average characters per token on ``text``: multiply a loss in nats per token by
        ``1 / chars_per_token`` to get nats per character."""
        return len(text) / max(1, len(self.encode(text)))

    def __repr__(self) -> str:
        return f"BPETokenizer(vocab_size={self.vocab_size})"
