"""A small translation task: numbers written as words, from one language into another.

``num2words`` writes a number in many languages; a pair such as
``"twenty one" -> "ein und zwanzig"`` is a translation with a real change of word order.
German compounds are split into number morphemes (``ein``, ``und``, ``zwanzig``,
``hundert``, ``tausend``, ...) so the order flip is visible token by token
(:func:`~transformer_lab.data.number_words.number_to_words`, also ``numbers.number_to_words``)::

    from transformer_lab.data import numbers

    data = numbers.load()                     # English -> German, cached after the first call
    data.train[0]                             # Pair(number=..., src=(...), tgt=(...))
    batches = data.batches("train", batch_size=64, seed=0)   # endless, reshuffled per epoch
    batch = next(batches)                     # Batch: src [batch, src_pos], tgt [batch, tgt_pos]
    logits = model(batch.src, batch.tgt_in)   # teacher forcing
    loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(),
                           ignore_index=batch.pad_id)

Token ids: ``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, ``<unk>`` 3 in both vocabularies.
Sources are plain tokens (no ``<bos>``/``<eos>``); targets are ``<bos> tokens <eos>``.
Padding is on the right.

With ``join=2`` each sentence holds two numbers joined by "and" ("und", "et"), sources of
up to twice the length; with ``joint_vocab=True`` source and target share one vocabulary
(for a model that shares its source and target embeddings).

Numbers are drawn without replacement, in equal shares per digit count (``min_digits``
to ``max_digits``), then split into disjoint train/validation/test sets, all from
``seed``. Writing numbers out costs time (``num2words`` takes 0.1-0.6 ms a call; the
trimmed converter here about 0.05 ms), so a data set is built once, kept in memory and
written as JSON to :func:`~transformer_lab.data.cache.cache_dir`; the file is rebuilt
identically when missing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from transformer_lab.checks import instance_of, integer, one_of
from transformer_lab.data.cache import CACHE_HINT, cache_dir, write_atomically
from transformer_lab.data.number_words import LANGUAGES, number_to_words
from transformer_lab.data.tokenizers import BOS_ID, EOS_ID, PAD_ID, SPECIALS, UNK_ID, Vocab
from transformer_lab.device import check_device

__all__ = [  # the token ids of both vocabularies and the words of a number are shown here too
    "SPECIALS",
    "PAD_ID",
    "BOS_ID",
    "EOS_ID",
    "UNK_ID",
    "NumbersConfig",
    "Pair",
    "Batch",
    "NumberData",
    "number_to_words",
    "load",
    "predict",
    "exact_match",
    "accuracy_by_length",
]


@dataclass(frozen=True)
class NumbersConfig:
    src_lang: str = "en"  # language of the source sentences
    tgt_lang: str = "de"  # language of the target sentences
    n_train: int = 8000  # training pairs
    n_val: int = 500  # validation pairs
    n_test: int = 2000  # test pairs
    min_digits: int = 1  # shortest numbers drawn (1: 0-9)
    max_digits: int = 12  # longest numbers drawn (12: up to 999 billion ...)
    max_src_len: int | None = None  # drop pairs whose source has more tokens than this
    seed: int = 0  # seeds the draw and the split
    join: int = 1  # numbers per sentence, joined by "and" ("und", "et"): 2 doubles the length
    joint_vocab: bool = False  # one vocabulary for source and target (shared embeddings)

    def __post_init__(self):
        one_of(self.src_lang, LANGUAGES, "language")
        if one_of(self.tgt_lang, LANGUAGES, "language") == self.src_lang:
            raise ValueError(f"src_lang and tgt_lang are both {self.src_lang!r}")
        for name in ("n_train", "n_val", "n_test", "min_digits", "max_digits", "seed"):
            integer(getattr(self, name), name)
        if self.n_train <= 0 or self.n_val < 0 or self.n_test < 0:
            raise ValueError(
                f"need n_train > 0 and n_val, n_test >= 0, got {self.n_train}, "
                f"{self.n_val}, {self.n_test}"
            )
        if not 1 <= self.min_digits <= self.max_digits <= 15:
            raise ValueError(
                f"need 1 <= min_digits <= max_digits <= 15, got {self.min_digits}, "
                f"{self.max_digits}"
            )
        if self.max_src_len is not None:
            integer(self.max_src_len, "max_src_len", minimum=1)
        integer(self.join, "join", minimum=1)
        instance_of(self.joint_vocab, bool, "joint_vocab")
        available = 10**self.max_digits - (
            10 ** (self.min_digits - 1) if self.min_digits > 1 else 0
        )
        if self.n_total * self.join > available:
            raise ValueError(
                f"asked for {self.n_total * self.join} distinct numbers but only {available} have "
                f"{self.min_digits} to {self.max_digits} digits"
            )

    @property
    def n_total(self) -> int:
        return self.n_train + self.n_val + self.n_test


@dataclass(frozen=True)
class Pair:
    """One translation example (``number``: the first number of the sentence)."""

    number: int
    src: tuple[str, ...]
    tgt: tuple[str, ...]


@dataclass
class Batch:
    """Padded token ids of a batch.

    ``src [batch, src_pos]`` source ids; ``tgt [batch, tgt_pos]`` is ``<bos> ... <eos>``;
    ``tgt_in = tgt[:, :-1]`` is what the decoder reads under teacher forcing and
    ``tgt_out = tgt[:, 1:]`` what it must predict. ``index`` holds the rows of the split.
    """

    src: torch.Tensor
    tgt: torch.Tensor
    index: torch.Tensor
    pad_id: int = PAD_ID

    @property
    def tgt_in(self) -> torch.Tensor:
        return self.tgt[:, :-1]

    @property
    def tgt_out(self) -> torch.Tensor:
        return self.tgt[:, 1:]

    @property
    def src_lengths(self) -> torch.Tensor:
        return (self.src != self.pad_id).sum(dim=1)

    @property
    def src_mask(self) -> torch.Tensor:
        """``[batch, src_pos]`` bool, True at real source tokens."""
        return self.src != self.pad_id

    def to(self, device) -> Batch:
        device = check_device(device) if isinstance(device, str) else device
        return Batch(self.src.to(device), self.tgt.to(device), self.index, self.pad_id)

    def __len__(self) -> int:
        return self.src.shape[0]


def _pad(rows: list[list[int]]) -> torch.Tensor:
    width = max(map(len, rows))
    return torch.tensor([row + [PAD_ID] * (width - len(row)) for row in rows], dtype=torch.long)


class NumberData:
    """The splits, vocabularies and padded id tensors of one :class:`NumbersConfig`."""

    SPLITS = ("train", "val", "test")

    def __init__(self, config: NumbersConfig, splits: dict[str, list[Pair]]):
        self.config = instance_of(config, NumbersConfig, "config")
        if not isinstance(splits, dict) or set(splits) != set(self.SPLITS):
            got = sorted(splits) if isinstance(splits, dict) else type(splits).__name__
            raise ValueError(f"splits must be a dict with keys {list(self.SPLITS)}, got {got}")
        self.train, self.val, self.test = (splits[s] for s in self.SPLITS)
        every = [p for s in self.SPLITS for p in splits[s]]
        self.src_vocab = Vocab(t for p in every for t in p.src)
        self.tgt_vocab = Vocab(t for p in every for t in p.tgt)
        if config.joint_vocab:  # one table: the words of both languages
            self.src_vocab = self.tgt_vocab = Vocab(t for p in every for t in (*p.src, *p.tgt))
        self._ids = {}
        for s in self.SPLITS:
            pairs = splits[s] or [Pair(0, ("<pad>",), ())]  # an empty split still has a shape
            self._ids[s] = (
                _pad([self.src_vocab.encode(p.src) for p in pairs]),
                _pad([self.tgt_vocab.encode(p.tgt, bos=True, eos=True) for p in pairs]),
            )

    def __repr__(self) -> str:
        c = self.config
        return (
            f"NumberData({c.src_lang}->{c.tgt_lang}: train {len(self.train)}, val "
            f"{len(self.val)}, test {len(self.test)}; vocab {len(self.src_vocab)}/"
            f"{len(self.tgt_vocab)})"
        )

    def split(self, name: str) -> list[Pair]:
        return getattr(self, one_of(name, self.SPLITS, "split"))

    def src_lengths(self, split: str) -> torch.Tensor:
        """Source length in tokens of every pair of ``split``, ``[n]``."""
        return torch.tensor([len(p.src) for p in self.split(split)], dtype=torch.long)

    def batch(self, split: str, index) -> Batch:
        """The pairs ``index`` (ints or a 1-d tensor) of ``split``, trimmed to their longest."""
        pairs = self.split(split)
        index = torch.as_tensor(index, dtype=torch.long).reshape(-1)
        if index.numel() == 0:
            raise ValueError("a batch needs at least one index")
        if int(index.min()) < 0 or int(index.max()) >= len(pairs):
            raise IndexError(f"index out of range for split {split!r} of {len(pairs)} pairs")
        src, tgt = (t[index] for t in self._ids[split])
        src = src[:, : int((src != PAD_ID).sum(1).max())]
        tgt = tgt[:, : int((tgt != PAD_ID).sum(1).max())]
        return Batch(src, tgt, index)

    def batches(
        self,
        split: str = "train",
        batch_size: int = 64,
        *,
        shuffle: bool = True,
        seed: int = 0,
        epochs: int | None = None,
    ) -> Iterator[Batch]:
        """Batches over ``split``; endless when ``epochs`` is None (the training loop stops
        it). Shuffled with its own generator seeded by ``seed`` and reshuffled each epoch,
        so the sequence of batches is the same on every run; the last short batch of an
        epoch is kept."""
        integer(batch_size, "batch_size", minimum=1)
        n = len(self.split(split))
        if n == 0:
            raise ValueError(f"split {split!r} is empty")
        generator = torch.Generator().manual_seed(seed)
        epoch = 0
        while epochs is None or epoch < epochs:
            order = torch.randperm(n, generator=generator) if shuffle else torch.arange(n)
            for start in range(0, n, batch_size):
                yield self.batch(split, order[start : start + batch_size])
            epoch += 1


def _draw_numbers(config: NumbersConfig) -> list[int]:
    """Distinct numbers, as equal a share per digit count as the counts allow, shuffled."""
    rng = random.Random(config.seed)
    counts = list(range(config.min_digits, config.max_digits + 1))
    sizes = {d: (10**d - 10 ** (d - 1)) if d > 1 else 10 for d in counts}
    quota = dict.fromkeys(counts, 0)
    left, open_counts = config.n_total * config.join, list(counts)
    while left > 0:  # share out, giving what small digit counts cannot take to the others
        share = max(1, left // len(open_counts))
        for d in list(open_counts):
            take = min(share, sizes[d] - quota[d], left)
            quota[d] += take
            left -= take
            if quota[d] == sizes[d]:
                open_counts.remove(d)
            if left == 0:
                break
    numbers = []
    for d in counts:
        low = 10 ** (d - 1) if d > 1 else 0
        numbers.extend(rng.sample(range(low, 10**d), quota[d]))
    rng.shuffle(numbers)
    return numbers


def _cache_file(config: NumbersConfig) -> Path:
    from importlib.metadata import version

    fields = asdict(config)
    del fields["joint_vocab"]  # the vocabularies are built from the pairs, not stored
    if fields["join"] == 1:  # single numbers keep the names of the files made before join
        del fields["join"]
    key = json.dumps({**fields, "num2words": version("num2words"), "v": 1}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir() / f"numbers_{config.src_lang}_{config.tgt_lang}_{digest}.json"


JOINERS = {"en": "and", "de": "und", "fr": "et"}  # between the numbers of a joined sentence


def _sentence(group: list[int], lang: str) -> tuple[str, ...]:
    words = []
    for i, n in enumerate(group):
        words += ([JOINERS[lang]] if i else []) + number_to_words(n, lang)
    return tuple(words)


def _build(config: NumbersConfig) -> dict[str, list[Pair]]:
    pairs = []
    drawn = _draw_numbers(config)
    for start in range(0, len(drawn), config.join):
        group = drawn[start : start + config.join]
        src = _sentence(group, config.src_lang)
        if config.max_src_len is not None and len(src) > config.max_src_len:
            continue
        pairs.append(Pair(group[0], src, _sentence(group, config.tgt_lang)))
    a, b = config.n_test, config.n_test + config.n_val
    return {"test": pairs[:a], "val": pairs[a:b], "train": pairs[b:]}


@functools.lru_cache(maxsize=8)
def _load(config: NumbersConfig, use_cache_file: bool) -> NumberData:
    path = _cache_file(config) if use_cache_file else None
    splits = None
    if path is not None and path.exists():
        try:
            raw = json.loads(path.read_text())
            splits = {
                s: [Pair(n, tuple(src.split()), tuple(tgt.split())) for n, src, tgt in raw[s]]
                for s in NumberData.SPLITS
            }
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
            splits = None  # a damaged cache file is rebuilt
    if splits is None:
        splits = _build(config)
        if path is not None:
            raw = {
                s: [[p.number, " ".join(p.src), " ".join(p.tgt)] for p in splits[s]]
                for s in NumberData.SPLITS
            }
            text = json.dumps(raw).encode()
            write_atomically(path, lambda file: file.write(text), hint=CACHE_HINT)
    return NumberData(config, splits)


def load(
    config: NumbersConfig | None = None, *, use_cache_file: bool = True, **kwargs
) -> NumberData:
    """Build (or fetch from the caches) the data set of ``config``; keyword arguments are
    fields of :class:`NumbersConfig`, e.g. ``load(tgt_lang="fr", max_digits=9)``.

    With ``max_src_len`` set, pairs with longer sources are dropped after the draw, so
    the splits can be smaller than asked."""
    if config is None:
        config = NumbersConfig(**kwargs)
    elif kwargs:
        raise TypeError("pass either a NumbersConfig or keyword arguments, not both")
    return _load(instance_of(config, NumbersConfig, "config"), use_cache_file)


@torch.no_grad()
def predict(translate, data: NumberData, split: str = "test", batch_size: int = 500, device=None):
    """Translate every source of ``split``: ``translate(src [batch, src_pos]) -> ids
    [batch, out_pos]`` (greedy or any other decoder; ``<bos>``/padding are skipped and
    each row is cut at its first ``<eos>``). Returns a list of token lists in split order."""
    if not callable(translate):
        raise TypeError(f"translate must be a function src -> ids, got {type(translate).__name__}")
    instance_of(data, NumberData, "data")
    integer(batch_size, "batch_size", minimum=1)
    n = len(data.split(split))
    out: list[list[str]] = []
    for start in range(0, n, batch_size):
        src = data.batch(split, torch.arange(start, min(start + batch_size, n))).src
        ids = translate(src if device is None else src.to(device))
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.shape[0] != src.shape[0]:
            raise ValueError(
                f"translate must return [batch, out_pos] ids for {src.shape[0]} sources"
            )
        out.extend(data.tgt_vocab.decode(row) for row in ids.cpu())
    return out


def exact_match(predictions: Sequence[Sequence[str]], references: Sequence[Sequence[str]]):
    """``[n]`` bool tensor: True where a predicted token sequence equals its reference.
    Each is a list or tuple of tokens (strings), or a string read as one token a character."""
    for name, texts in (("predictions", predictions), ("references", references)):
        if isinstance(texts, str) or not isinstance(texts, Sequence):
            raise TypeError(f"{name} must be a list of token sequences, got {type(texts).__name__}")
        odd = [t for t in texts if not _tokens(t)]
        if odd:
            raise TypeError(
                f"{name} must hold only token sequences (lists of strings), got "
                f"{type(odd[0]).__name__}: {odd[0]!r:.60}"
            )
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references")
    return torch.tensor([list(p) == list(r) for p, r in zip(predictions, references, strict=True)])


def _tokens(sequence) -> bool:
    """Whether ``sequence`` is a string or a list or tuple of strings."""
    return isinstance(sequence, str) or (
        isinstance(sequence, (list, tuple)) and all(isinstance(t, str) for t in sequence)
    )


def accuracy_by_length(correct, lengths, bins: Sequence[int]) -> list[tuple[str, float, int]]:
    """Exact-match accuracy per length bin: ``bins=[1, 5, 9]`` gives the bins 1-4 and 5-8
    (left edge inclusive, right exclusive). Returns ``(label, accuracy, count)`` per bin,
    accuracy NaN for an empty bin."""
    correct = torch.as_tensor(correct, dtype=torch.float)
    lengths = torch.as_tensor(lengths)
    if correct.shape != lengths.shape:
        raise ValueError(
            f"correct has shape {tuple(correct.shape)}, lengths {tuple(lengths.shape)}"
        )
    if len(bins) < 2 or list(bins) != sorted(set(bins)):
        raise ValueError(f"bins must be at least two increasing edges, got {list(bins)}")
    out = []
    for lo, hi in zip(bins[:-1], bins[1:], strict=True):
        inside = (lengths >= lo) & (lengths < hi)
        n = int(inside.sum())
        acc = float(correct[inside].mean()) if n else float("nan")
        out.append((f"{lo}-{hi - 1}" if hi - 1 > lo else f"{lo}", acc, n))
    return out
