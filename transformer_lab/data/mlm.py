"""BERT's pretraining data: masked tokens and sentence pairs (Devlin et al. 2019).

Masked-language modelling (:func:`mask_tokens`): each ordinary token (not a special token
such as [CLS], [SEP] or [PAD], and not padding) is *chosen* with probability 15%,
independently. A chosen token becomes [MASK] with probability 80%, a random ordinary
token with probability 10%, and stays itself with probability 10%; its label is the
original token. Every other position has the label ``IGNORE_INDEX`` (-100) and carries no
loss. (The original code chose exactly ``round(15% * length)`` tokens per sequence; the
independent choice used here, as in most reimplementations, has the same rate.)

Next-sentence prediction (:func:`next_sentence_pairs`): a pair ``(A, B)`` where, with
probability 50%, B is the sentence that follows A in its document (``is_next = 1``) and
otherwise a random sentence from another document (``is_next = 0``). :func:`pack_pair`
lays a pair out as ``[CLS] A [SEP] B [SEP]`` with segment ids ``0 ... 0 1 ... 1``.

Words as tokens (:func:`word_spans`): documents cut into spans of a fixed number of words of
a :class:`~transformer_lab.data.tokenizers.WordVocabulary` (whole lower-cased words with
BERT's five special tokens). BERT's "sentence" is "an arbitrary span of contiguous text,
rather than an actual linguistic sentence" (Devlin et al. 2019, section 3); with whole words
as tokens, every hidden token is a whole word, which whole-word masking (the BERT authors'
2019 release) obtains for WordPiece by hiding all the pieces of a word together.

The tokenizers themselves, the vocabulary of words and BERT's WordPiece, live in
:mod:`transformer_lab.data.tokenizers` and :mod:`transformer_lab.data.wordpiece`.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import torch

from transformer_lab.checks import IGNORE_INDEX, fraction, integer, token_ids
from transformer_lab.data.tokenizers import WordVocabulary
from transformer_lab.device import check_device

__all__ = [
    "IGNORE_INDEX",
    "mask_tokens",
    "SentencePair",
    "next_sentence_pairs",
    "pack_pair",
    "pad_batch",
    "pretraining_batch",
    "PretrainingBatch",
    "word_spans",
]

T = TypeVar("T")


def mask_tokens(
    input_ids: torch.Tensor,
    *,
    mask_id: int,
    vocab_size: int,
    special_ids: Iterable[int] = (),
    attention_mask: torch.Tensor | None = None,
    mask_prob: float = 0.15,
    mask_token_prob: float = 0.8,
    random_token_prob: float = 0.1,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Corrupt ``input_ids`` for masked-LM training; returns ``(masked_ids, labels)``.

    Args:
        input_ids: ``[batch, pos]`` (or any shape) integer token ids; not modified.
        mask_id: id of the [MASK] token.
        vocab_size: ids run from 0 to ``vocab_size - 1``.
        special_ids: ids that are never chosen nor drawn as random replacements
            ([PAD], [CLS], [SEP], [MASK], [UNK] ...). ``mask_id`` is always one of them.
        attention_mask: same shape, 0 at padding; padding is never chosen.
        mask_prob: probability that an ordinary token is chosen (0.15 in BERT).
        mask_token_prob: of the chosen, the share that becomes [MASK] (0.8).
        random_token_prob: of the chosen, the share that becomes a random ordinary token
            (0.1), drawn uniformly; it can by chance be the original token. The rest
            (``1 - mask_token_prob - random_token_prob``) stay unchanged.
        generator: a seeded ``torch.Generator`` for reproducible masks.

    Returns:
        ``masked_ids`` (same shape and dtype) and ``labels``: the original id where a
        token was chosen, ``IGNORE_INDEX`` everywhere else.
    """
    token_ids(input_ids, "input_ids")
    for name, p in (
        ("mask_prob", mask_prob),
        ("mask_token_prob", mask_token_prob),
        ("random_token_prob", random_token_prob),
    ):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{name} must be a probability in [0, 1], got {p}")
    if mask_token_prob + random_token_prob > 1.0 + 1e-12:
        raise ValueError(
            f"mask_token_prob + random_token_prob = {mask_token_prob + random_token_prob} > 1"
        )
    if not 0 <= mask_id < vocab_size:
        raise ValueError(f"mask_id={mask_id} is not in [0, vocab_size={vocab_size})")
    if input_ids.numel() and (input_ids.min() < 0 or input_ids.max() >= vocab_size):
        raise ValueError(f"token ids must lie in [0, {vocab_size})")
    special = torch.tensor(sorted({*special_ids, mask_id}), dtype=torch.long)
    ordinary_ids = torch.ones(vocab_size, dtype=torch.bool)
    ordinary_ids[special] = False
    candidates = ordinary_ids.nonzero().squeeze(1)  # ids a random replacement is drawn from
    if len(candidates) == 0:
        raise ValueError("every id is special: there is no ordinary token to mask or draw")

    device = input_ids.device
    eligible = ordinary_ids.to(device)[input_ids]  # [batch, pos] ordinary tokens
    if attention_mask is not None:
        if attention_mask.shape != input_ids.shape:
            raise ValueError(
                f"attention_mask has shape {tuple(attention_mask.shape)}, "
                f"input_ids {tuple(input_ids.shape)}"
            )
        eligible &= attention_mask.to(device) != 0

    # One uniform number per position decides everything: u < mask_prob chooses the token,
    # and u / mask_prob (uniform on [0, 1) given that) splits the chosen 80 / 10 / 10.
    u = torch.rand(input_ids.shape, generator=generator).to(device)
    chosen = eligible & (u < mask_prob)
    v = u / mask_prob if mask_prob > 0 else u
    to_mask = chosen & (v < mask_token_prob)
    to_random = chosen & (v >= mask_token_prob) & (v < mask_token_prob + random_token_prob)

    draws = torch.randint(len(candidates), input_ids.shape, generator=generator).to(device)
    random_ids = candidates.to(device)[draws].to(input_ids.dtype)
    masked = torch.where(
        to_mask, torch.as_tensor(mask_id, dtype=input_ids.dtype, device=device), input_ids
    )
    masked = torch.where(to_random, random_ids, masked)
    labels = torch.where(chosen, input_ids.long(), torch.as_tensor(IGNORE_INDEX, device=device))
    return masked, labels


@dataclass(frozen=True)
class SentencePair(Generic[T]):
    """Two sentences for next-sentence prediction."""

    a: T  # sentence A
    b: T  # sentence B: the true next sentence, or a random one
    is_next: int  # 1 when B follows A in the document, 0 when B is random

    def __post_init__(self):
        if self.is_next not in (0, 1) or isinstance(self.is_next, float):
            raise ValueError(f"is_next must be 0 or 1, got {self.is_next!r}")


def next_sentence_pairs(
    documents: Sequence[Sequence[T]],
    n_pairs: int,
    *,
    next_prob: float = 0.5,
    generator: torch.Generator | None = None,
) -> list[SentencePair[T]]:
    """``n_pairs`` pairs: A is a random sentence that has a successor in its document; B
    is that successor with probability ``next_prob`` (0.5 in BERT), otherwise a random
    sentence from a different document (or, with a single document, any sentence other
    than A's successor)."""
    integer(n_pairs, "n_pairs", minimum=0)
    docs = [list(d) for d in documents]
    if not docs or sum(len(d) for d in docs) < 2:
        raise ValueError("need at least two sentences in total")
    fraction(next_prob, "next_prob")
    starts = [(d, i) for d, doc in enumerate(docs) for i in range(len(doc) - 1)]
    if not starts:
        raise ValueError("no document has two consecutive sentences")
    every = [(d, i) for d, doc in enumerate(docs) for i in range(len(doc))]
    many_docs = sum(1 for doc in docs if doc) > 1
    if n_pairs <= 0:
        return []

    # All random numbers are drawn at once: a start, a coin and a candidate per pair.
    start_index = torch.randint(len(starts), (n_pairs,), generator=generator).tolist()
    coins = (torch.rand(n_pairs, generator=generator) < next_prob).tolist()
    other_index = torch.randint(len(every), (n_pairs,), generator=generator).tolist()

    def acceptable(d: int, i: int, e: int, j: int) -> bool:
        return e != d if many_docs else j != i + 1

    pairs = []
    for k in range(n_pairs):
        d, i = starts[start_index[k]]
        if coins[k]:
            pairs.append(SentencePair(docs[d][i], docs[d][i + 1], 1))
            continue
        e, j = every[other_index[k]]
        while not acceptable(d, i, e, j):  # rare: redraw until it comes from elsewhere
            e, j = every[int(torch.randint(len(every), (1,), generator=generator))]
        pairs.append(SentencePair(docs[d][i], docs[e][j], 0))
    return pairs


def pack_pair(
    a: Sequence[int], b: Sequence[int], *, cls_id: int, sep_id: int, max_len: int
) -> tuple[list[int], list[int]]:
    """``[CLS] a [SEP] b [SEP]`` and its segment ids (0 up to the first [SEP], then 1),
    truncating the longer sentence one token at a time until it fits ``max_len``."""
    if max_len < 5:
        raise ValueError(
            f"max_len must leave room for 3 special tokens and 1 token each, got {max_len}"
        )
    a, b = list(a), list(b)
    while len(a) + len(b) + 3 > max_len:
        (a if len(a) >= len(b) else b).pop()
    ids = [cls_id, *a, sep_id, *b, sep_id]
    segments = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    return ids, segments


def pad_batch(
    sequences: Sequence[Sequence[int]], pad_value: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad to the longest: ``(ids [batch, pos], attention_mask [batch, pos])``."""
    if not sequences:
        raise ValueError("need at least one sequence")
    for s in sequences:
        try:
            ok = not isinstance(s, str) and all(operator.index(i) is not None for i in s)
        except TypeError:
            ok = False
        if not ok:
            raise TypeError(f"sequences must hold lists of int token ids, got {s!r}")
    empty = [row for row, s in enumerate(sequences) if len(s) == 0]
    if empty:
        raise ValueError(f"every sequence needs at least one token; sequence {empty[0]} is empty")
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_value, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, s in enumerate(sequences):
        ids[row, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
        mask[row, : len(s)] = 1
    return ids, mask


@dataclass
class PretrainingBatch:
    """A batch for :meth:`BertForPreTraining.pretraining_loss`.

    Use it as ``model.pretraining_loss(**batch)``."""

    input_ids: torch.Tensor  # [batch, pos] after masking
    labels: torch.Tensor  # [batch, pos] original id at chosen positions, IGNORE_INDEX elsewhere
    is_next: torch.Tensor  # [batch] 1 = B follows A
    attention_mask: torch.Tensor  # [batch, pos] 1 = real token, 0 = padding
    segment_ids: torch.Tensor  # [batch, pos] 0 = sentence A, 1 = sentence B

    def keys(self):
        return ("input_ids", "labels", "is_next", "attention_mask", "segment_ids")

    def __getitem__(self, key: str) -> torch.Tensor:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def to(self, device) -> PretrainingBatch:
        device = check_device(device) if isinstance(device, str) else device
        return PretrainingBatch(*(getattr(self, k).to(device) for k in self.keys()))


def pretraining_batch(
    pairs: Sequence[SentencePair[Sequence[int]]],
    *,
    cls_id: int,
    sep_id: int,
    pad_id: int,
    mask_id: int,
    vocab_size: int,
    special_ids: Iterable[int] = (),
    max_len: int = 64,
    mask_prob: float = 0.15,
    mask_token_prob: float = 0.8,
    random_token_prob: float = 0.1,
    generator: torch.Generator | None = None,
) -> PretrainingBatch:
    """Pack token-id pairs, pad them and mask them (:func:`mask_tokens`): one batch for both
    objectives. ``mask_token_prob=1.0, random_token_prob=0.0`` shows every hidden token as
    ``[MASK]``, a fill-in-the-blank test in which the input never holds the answer."""
    packed = [pack_pair(p.a, p.b, cls_id=cls_id, sep_id=sep_id, max_len=max_len) for p in pairs]
    ids, attention_mask = pad_batch([p[0] for p in packed], pad_id)
    segment_ids, _ = pad_batch([p[1] for p in packed], 0)
    masked, labels = mask_tokens(
        ids,
        mask_id=mask_id,
        vocab_size=vocab_size,
        special_ids={*special_ids, cls_id, sep_id, pad_id, mask_id},
        attention_mask=attention_mask,
        mask_prob=mask_prob,
        mask_token_prob=mask_token_prob,
        random_token_prob=random_token_prob,
        generator=generator,
    )
    is_next = torch.tensor([p.is_next for p in pairs], dtype=torch.long)
    return PretrainingBatch(masked, labels, is_next, attention_mask, segment_ids)


def word_spans(documents: Iterable[Iterable[str]], vocab: WordVocabulary, span: int):
    """Each document (a list of lines) as one stream of word ids cut into spans of ``span``
    words, BERT's "sentences"; the last words that do not fill a span are dropped.
    Returns a list (per document) of lists (per span) of ids."""
    integer(span, "span", minimum=1)
    if not isinstance(vocab, WordVocabulary):
        raise TypeError(f"vocab must be a WordVocabulary, got {type(vocab).__name__}")
    out = []
    for doc in documents:
        if isinstance(doc, str):
            raise TypeError("documents must hold lists of lines, got a str")
        stream = [t for line in doc for t in vocab.encode(line)]
        out.append([stream[i : i + span] for i in range(0, len(stream) - span + 1, span)])
    return out
