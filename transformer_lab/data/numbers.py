"""A small translation task: numbers written as words, from one language into another.

``num2words`` writes a number in many languages; a pair such as
``"twenty one" -> "ein und zwanzig"`` is a translation with a real change of word order.
German compounds are split into number morphemes (``ein``, ``und``, ``zwanzig``,
``hundert``, ``tausend``, ...) so the order flip is visible token by token::

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

Numbers are drawn without replacement, in equal shares per digit count (``min_digits``
to ``max_digits``), then split into disjoint train/validation/test sets, all from
``seed``. Writing numbers out costs time (``num2words`` takes 0.1-0.6 ms a call; the
trimmed converter here about 0.05 ms), so a data set is built once, kept in memory and
written as JSON under ``artifacts/cache/`` (git-ignored; or the folder named by
``TRANSFORMER_LAB_CACHE``); the file is rebuilt identically when missing.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import random
import re
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from transformer_lab.device import check_device

__all__ = [
    "LANGUAGES",
    "SPECIALS",
    "PAD_ID",
    "BOS_ID",
    "EOS_ID",
    "UNK_ID",
    "NumbersConfig",
    "Pair",
    "Vocab",
    "Batch",
    "NumberData",
    "number_to_words",
    "tokenize",
    "split_german",
    "load",
    "cache_dir",
    "predict",
    "exact_match",
    "accuracy_by_length",
]

LANGUAGES = ("en", "de", "fr")
SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
_LIMIT = 10**16  # numbers must be below this (at most 16 digits)

# German number morphemes; a compound is split by longest match from the left.
# "sech"/"sieb" are the short stems of sechzehn/siebzehn.
_GERMAN_MORPHEMES = sorted(
    [
        *("null", "eins", "ein", "eine", "zwei", "drei", "vier", "fünf", "sechs", "sech"),
        *("sieben", "sieb", "acht", "neun", "zehn", "elf", "zwölf", "zwanzig", "dreißig"),
        *("vierzig", "fünfzig", "sechzig", "siebzig", "achtzig", "neunzig", "hundert"),
        *("tausend", "und", "million", "millionen", "milliarde", "milliarden"),
        *("billion", "billionen"),
    ],
    key=len,
    reverse=True,
)


@functools.cache
def _converter(lang: str):
    """num2words' converter for ``lang`` with its table of number words cut to the
    powers of ten below 10**16: ``splitnum`` scans that whole table on every call, and
    entries larger than the number are skipped anyway, so the words are unchanged
    (a test compares with ``num2words``) and a call is several times faster."""
    try:
        from num2words import CONVERTER_CLASSES
    except ImportError as err:  # pragma: no cover - the package is a dependency
        raise ImportError(
            "the numbers data set needs num2words: pip install 'num2words>=0.5.13,<0.6'"
        ) from err
    converter = copy.deepcopy(CONVERTER_CLASSES[lang])
    converter.cards = OrderedDict((k, v) for k, v in converter.cards.items() if k < _LIMIT)
    return converter


def split_german(word: str) -> list[str]:
    """Split one German number word into morphemes: ``"einundzwanzig"`` ->
    ``["ein", "und", "zwanzig"]``. Raises ValueError on a word that is not a number."""
    if not isinstance(word, str):
        raise TypeError(f"word must be a str, got {type(word).__name__}")
    word = word.lower()
    out, i = [], 0
    while i < len(word):
        for m in _GERMAN_MORPHEMES:
            if word.startswith(m, i):
                out.append(m)
                i += len(m)
                break
        else:
            raise ValueError(f"cannot split {word!r} into number morphemes at {word[i:]!r}")
    return out


def _fix_german_eins(morphemes: list[str]) -> list[str]:
    """num2words writes 101000 as "einhunderteinstausend" and 101 million as
    "einhunderteins Millionen"; German says "ein" before "tausend" and "eine" before
    "millionen"/"milliarden"."""
    out = list(morphemes)
    for j in range(len(out) - 1):
        if out[j] == "eins" and out[j + 1] == "tausend":
            out[j] = "ein"
        elif out[j] == "eins" and out[j + 1] in ("millionen", "milliarden", "billionen"):
            out[j] = "eine"
    return out


def tokenize(text: str, lang: str) -> list[str]:
    """Lower-case word tokens of a number written by num2words; hyphens and commas split
    words and are dropped; German compounds are split into morphemes."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    _check_lang(lang)
    words = [w for w in re.split(r"[\s,\-]+", text.lower()) if w]
    if lang == "de":
        return _fix_german_eins([m for w in words for m in split_german(w)])
    return words


def number_to_words(number: int, lang: str) -> list[str]:
    """The tokens of ``number`` in language ``lang``, e.g. ``(21, "de")`` ->
    ``["ein", "und", "zwanzig"]``."""
    if not isinstance(number, int) or isinstance(number, bool):
        raise TypeError(f"number must be an int, got {type(number).__name__}")
    if not 0 <= number < _LIMIT:
        raise ValueError(f"number must be in [0, 10**16), got {number}")
    _check_lang(lang)
    return tokenize(_converter(lang).to_cardinal(number), lang)


def _check_lang(lang):
    if lang not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {lang!r}")


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

    def __post_init__(self):
        _check_lang(self.src_lang)
        _check_lang(self.tgt_lang)
        if self.src_lang == self.tgt_lang:
            raise ValueError(f"src_lang and tgt_lang are both {self.src_lang!r}")
        for name in ("n_train", "n_val", "n_test", "min_digits", "max_digits", "seed"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
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
        if self.max_src_len is not None and self.max_src_len < 1:
            raise ValueError(f"max_src_len must be positive or None, got {self.max_src_len}")
        available = 10**self.max_digits - (
            10 ** (self.min_digits - 1) if self.min_digits > 1 else 0
        )
        if self.n_total > available:
            raise ValueError(
                f"asked for {self.n_total} distinct numbers but only {available} have "
                f"{self.min_digits} to {self.max_digits} digits"
            )

    @property
    def n_total(self) -> int:
        return self.n_train + self.n_val + self.n_test


@dataclass(frozen=True)
class Pair:
    """One translation example."""

    number: int
    src: tuple[str, ...]
    tgt: tuple[str, ...]


class Vocab:
    """Tokens <-> ids, with ``<pad> <bos> <eos> <unk>`` as ids 0-3 and the rest sorted."""

    def __init__(self, tokens):
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
        if isinstance(ids, torch.Tensor):
            if ids.dim() != 1:
                raise ValueError(f"decode takes one sequence, got shape {tuple(ids.shape)}")
            ids = ids.tolist()
        out = []
        for i in ids:
            if not 0 <= i < len(self.itos):
                raise ValueError(f"id {i} is outside the vocabulary of {len(self)} tokens")
            if strip and i == self.eos_id:
                break
            if strip and i in (self.bos_id, self.pad_id):
                continue
            out.append(self.itos[i])
        return out


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
        if not isinstance(config, NumbersConfig):
            raise TypeError(f"config must be a NumbersConfig, got {type(config).__name__}")
        if not isinstance(splits, dict) or set(splits) != set(self.SPLITS):
            got = sorted(splits) if isinstance(splits, dict) else type(splits).__name__
            raise ValueError(f"splits must be a dict with keys {list(self.SPLITS)}, got {got}")
        self.config = config
        self.train, self.val, self.test = (splits[s] for s in self.SPLITS)
        every = [p for s in self.SPLITS for p in splits[s]]
        self.src_vocab = Vocab(t for p in every for t in p.src)
        self.tgt_vocab = Vocab(t for p in every for t in p.tgt)
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
        if name not in self.SPLITS:
            raise ValueError(f"split must be one of {self.SPLITS}, got {name!r}")
        return getattr(self, name)

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
        if not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
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
    left, open_counts = config.n_total, list(counts)
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


def cache_dir() -> Path:
    """Where built data sets are cached: ``$TRANSFORMER_LAB_CACHE`` or ``artifacts/cache``
    in the source checkout (git-ignored), else ``~/.cache/transformer_lab``."""
    if os.environ.get("TRANSFORMER_LAB_CACHE"):
        return Path(os.environ["TRANSFORMER_LAB_CACHE"])
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").exists():
        return root / "artifacts" / "cache"
    return Path.home() / ".cache" / "transformer_lab"


def _cache_file(config: NumbersConfig) -> Path:
    from importlib.metadata import version

    key = json.dumps({**asdict(config), "num2words": version("num2words"), "v": 1}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir() / f"numbers_{config.src_lang}_{config.tgt_lang}_{digest}.json"


def _build(config: NumbersConfig) -> dict[str, list[Pair]]:
    pairs = []
    for n in _draw_numbers(config):
        src = tuple(number_to_words(n, config.src_lang))
        if config.max_src_len is not None and len(src) > config.max_src_len:
            continue
        pairs.append(Pair(n, src, tuple(number_to_words(n, config.tgt_lang))))
    a, b = config.n_test, config.n_test + config.n_val
    return {"test": pairs[:a], "val": pairs[a:b], "train": pairs[b:]}


@functools.lru_cache(maxsize=8)
def _load(config: NumbersConfig, use_cache_file: bool) -> NumberData:
    path = _cache_file(config)
    splits = None
    if use_cache_file and path.exists():
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
        if use_cache_file:
            raw = {
                s: [[p.number, " ".join(p.src), " ".join(p.tgt)] for p in splits[s]]
                for s in NumberData.SPLITS
            }
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(raw))
            os.replace(tmp, path)  # atomic: a reader never sees half a file
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
    if not isinstance(config, NumbersConfig):
        raise TypeError(f"config must be a NumbersConfig, got {type(config).__name__}")
    return _load(config, use_cache_file)


@torch.no_grad()
def predict(translate, data: NumberData, split: str = "test", batch_size: int = 500, device=None):
    """Translate every source of ``split``: ``translate(src [batch, src_pos]) -> ids
    [batch, out_pos]`` (greedy or any other decoder; ``<bos>``/padding are skipped and
    each row is cut at its first ``<eos>``). Returns a list of token lists in split order."""
    if not callable(translate):
        raise TypeError(f"translate must be a function src -> ids, got {type(translate).__name__}")
    if not isinstance(data, NumberData):
        raise TypeError(f"data must be a NumberData, got {type(data).__name__}")
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    n = len(data.split(split))
    out = []
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
    """``[n]`` bool tensor: True where a predicted token sequence equals its reference."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references")
    return torch.tensor([list(p) == list(r) for p, r in zip(predictions, references, strict=True)])


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
