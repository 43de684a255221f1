"""A token-level n-gram language model with interpolated Kneser-Ney smoothing.

Counts instead of weights: :class:`NGramLM` counts every n-gram of up to ``order`` tokens of
a training sequence and predicts the next token from the ``order - 1`` tokens before it,
with the smoothing of Kneser & Ney (1995) in the interpolated form and with the modified
discounts of Chen & Goodman (1999)::

    lm = NGramLM(7, d_vocab=75).fit(train_ids)
    lm.nats_per_token(val_ids)           # mean -ln p of every token but the first
    lm.next_distribution(context_ids)    # [d_vocab] probabilities that sum to 1

The probability of token ``w`` after a context ``h`` of ``k - 1`` tokens (``k = order`` at
the top) mixes the discounted count of ``h w`` with the next level down, ``p_{k-1}(w | h')``,
where ``h'`` is ``h`` without its first token::

    p_k(w | h) = (c_k(h w) - D_k(c_k(h w)) + gamma_k(h) p_{k-1}(w | h')) / c_k(h .)
    gamma_k(h) = sum of D_k(c_k(h v)) over the tokens v with c_k(h v) > 0
    p_0(w)     = 1 / d_vocab

so the discounts taken from the tokens seen after ``h`` are handed to the lower level, every
distribution sums to 1 and every token of the vocabulary keeps a probability above zero.
``c_k(h .)`` is the sum of ``c_k(h v)`` over ``v``; a context with ``c_k(h .) = 0`` passes
``p_{k-1}`` through unchanged. The counts are Kneser-Ney's: at the top level ``c_k`` is how
often the n-gram occurs; at every level below it, its *continuation count*, the number of
distinct tokens seen right before it. A lower level is consulted for contexts that are rare
at the top, and there a token that follows many different contexts is the better guess.

Discounts: ``discount=None`` (the default) is modified Kneser-Ney, three discounts per level,
for counts of 1, 2, and 3 or more, estimated from that level's count-of-counts ``n_1 .. n_4``
(Chen & Goodman 1999): ``Y = n_1 / (n_1 + 2 n_2)``, ``D(1) = 1 - 2 Y n_2 / n_1``,
``D(2) = 2 - 3 Y n_3 / n_2``, ``D(3+) = 3 - 4 Y n_4 / n_3``. Where a tiny corpus lacks a
count-of-count, ``D(c) = c / 2``, and every ``D(c)`` is clipped into ``[0.1, c - 0.1]``
(:attr:`NGramLM.discounts` holds them). A number in (0, 1) is plain interpolated Kneser-Ney:
that one discount at every level.

Scoring is the convention of ``evaluate_lm``: every token of a sequence but the first is
predicted once, from the up to ``order - 1`` tokens before it in that sequence. Near the start,
where fewer tokens precede, the highest level is the one that short context fills (position
``t`` starts at level ``t + 1``, with its continuation counts), in :meth:`NGramLM.log_probs`
and :meth:`NGramLM.next_distribution` alike.

An n-gram is one integer in base ``d_vocab`` (so ``d_vocab ** order`` must fit an int64).
Counting is one sort of the longest n-grams, every shorter level read from the level above,
and look-up is binary search (NumPy, one thread): an 8-gram model of 4.66 million characters
fits in about a second. :func:`select_ngram` scores a grid of orders and discounts on
validation text, sharing the counts between the settings.
"""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Real
from typing import cast

import numpy as np
import torch

from transformer_lab.checks import check_token_range, integer, token_ids

__all__ = ["NGramLM", "select_ngram"]

_MIN_DISCOUNT = 0.1  # estimated discounts are clipped into [0.1, c - 0.1]
_CHUNK = 1 << 16  # positions scored at once: bounds the memory of the look-ups
_Table = tuple[np.ndarray, np.ndarray]  # one level's sorted k-gram codes and their counts


def _check_order(order, d_vocab: int, name: str = "order") -> int:
    if integer(order, name, minimum=1) > 63 or d_vocab**order >= 2**63:
        raise ValueError(f"{name}={order} is too long for d_vocab={d_vocab}: codes exceed int64")
    return int(order)


def _check_discount(discount, name: str = "discount") -> float | None:
    ok = discount is None or (
        isinstance(discount, Real)
        and not isinstance(discount, bool)
        and 0 < cast(float, discount) < 1
    )
    if not ok:
        raise ValueError(f"{name} must be None (estimated) or a number in (0, 1), got {discount!r}")
    return None if discount is None else float(discount)


def _ids(ids, d_vocab: int, name: str, least: int) -> np.ndarray:
    """``ids`` (a 1-d integer tensor or NumPy array, ids in [0, d_vocab)) as int64 NumPy."""
    if isinstance(ids, np.ndarray) and ids.dtype.kind in "iu":
        ids = torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64))
    if token_ids(ids, name).dim() != 1 or len(ids) < least:
        raise ValueError(
            f"{name} must be 1-d with at least {least} token ids, got shape {tuple(ids.shape)}"
        )
    check_token_range(ids, d_vocab, name)
    return ids.detach().cpu().numpy().astype(np.int64, copy=False)


def _runs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and length of each run of equal values in a sorted array."""
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    return starts, np.diff(np.r_[starts, len(values)])


def _codes(x: np.ndarray, k: int, d_vocab: int) -> np.ndarray:
    """The k-gram starting at each position of ``x`` as one int64, first token most significant."""
    n = len(x) - k + 1
    code = np.zeros(max(n, 0), np.int64)
    for j in range(k if n > 0 else 0):
        code = code * d_vocab + x[j : j + n]
    return code


def _count_tables(
    x: np.ndarray, order: int, d_vocab: int
) -> tuple[dict[int, _Table], dict[int, _Table]]:
    """``(raw, continuation)``: for each level k, the distinct k-grams of ``x`` (sorted codes)
    with how often each occurs (``raw``, k = 1 .. order) and with how many distinct tokens come
    right before it (``continuation``, k = 1 .. order - 1). One sort of the longest n-grams;
    each shorter level is read from the one above it (the distinct k-grams are the prefixes
    of the distinct (k + 1)-grams, and the k-gram that ends ``x``), then sorted by suffix."""
    codes = np.sort(_codes(x, order, d_vocab))
    starts, sizes = _runs(codes)
    raw: dict[int, _Table] = {order: (codes[starts], sizes)}
    for k in range(order - 1, 0, -1):
        above, above_counts = raw[k + 1]
        prefixes = above // d_vocab  # sorted, as the codes above are
        starts, _ = _runs(prefixes)
        grams, counts = prefixes[starts], np.add.reduceat(above_counts, starts)
        last = _codes(x[-k:], k, d_vocab)[0]  # the k-gram that ends x starts no (k + 1)-gram
        at = np.searchsorted(grams, last)
        if at < len(grams) and grams[at] == last:
            counts[at] += 1
        else:
            grams, counts = np.insert(grams, at, last), np.insert(counts, at, 1)
        raw[k] = (grams, counts)
    continuation: dict[int, _Table] = {}
    for k in range(1, order):
        suffixes = np.sort(raw[k + 1][0] % d_vocab**k)  # one per distinct (k + 1)-gram
        starts, sizes = _runs(suffixes)
        continuation[k] = (suffixes[starts], sizes)
    return raw, continuation


class _Level:
    """One level's table: the k-grams, their counts, and per context ``h`` (the first k - 1
    tokens) the total count and how many k-grams ``h v`` have count 1, 2 and 3+."""

    def __init__(self, codes: np.ndarray, counts: np.ndarray, d_vocab: int):
        self.codes, self.counts = codes, counts
        context = codes // d_vocab
        starts, sizes = _runs(context)
        self.contexts = context[starts]
        self.totals = np.add.reduceat(counts, starts)
        row = np.repeat(np.arange(len(starts)), sizes) * 3 + np.minimum(counts, 3) - 1
        self.n_by_count = np.bincount(row, minlength=3 * len(starts)).reshape(-1, 3).T
        self.count_of_counts = np.bincount(np.minimum(counts, 5), minlength=6)[1:5]

    def estimated_discounts(self) -> np.ndarray:
        """D(1), D(2), D(3+) from the count-of-counts (Chen & Goodman 1999)."""
        n1, n2, n3, n4 = self.count_of_counts.astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            y = n1 / (n1 + 2 * n2)
            d = np.array([1 - 2 * y * n2 / n1, 2 - 3 * y * n3 / n2, 3 - 4 * y * n4 / n3])
        c = np.arange(1.0, 4.0)
        return np.clip(np.where(np.isfinite(d), d, c / 2), _MIN_DISCOUNT, c - _MIN_DISCOUNT)

    def look_up(self, code: np.ndarray, d_vocab: int) -> tuple[np.ndarray, ...]:
        """For k-gram codes ``h w`` (-1: none): the indices of those whose context ``h`` was
        seen, and for them the count of ``h w`` (0 when unseen), and the context's counts of
        1, 2 and 3+ ``[3, seen]`` and its total count."""
        context = code // d_vocab
        row = np.minimum(np.searchsorted(self.contexts, context), len(self.contexts) - 1)
        where = np.flatnonzero((code >= 0) & (self.contexts[row] == context))
        code, row = code[where], row[where]
        at = np.minimum(np.searchsorted(self.codes, code), len(self.codes) - 1)
        count = np.where(self.codes[at] == code, self.counts[at], 0)
        return where, count, self.n_by_count[:, row].astype(float), self.totals[row].astype(float)


def _look_up(levels: list[_Level], codes: list[np.ndarray], d_vocab: int, alive=None) -> list:
    """Each level's counts for the k-gram codes ``codes[i]`` (level ``levels[i]``), at the
    positions ``alive`` (default: all) whose context that level has seen. A context seen at a
    level was seen at the level below too, so each level looks up only the survivors."""
    found, alive = [], np.arange(len(codes[0])) if alive is None else alive
    for level, code in zip(levels, codes, strict=True):
        where, *counts = level.look_up(code[alive], d_vocab)
        alive = alive[where]
        found.append((alive, *counts))
    return found


def _target_codes(x: np.ndarray, t: np.ndarray, order: int, d_vocab: int) -> list[np.ndarray]:
    """Code of the k-gram of ``x`` ending at each position ``t``, k = 1 .. order (-1: none)."""
    codes, code = [], np.zeros(len(t), np.int64)
    for k in range(1, order + 1):
        first = t - k + 1
        code = np.where(first >= 0, code + x[np.maximum(first, 0)] * d_vocab ** (k - 1), -1)
        codes.append(code)
    return codes


class NGramLM:
    """An interpolated Kneser-Ney n-gram model over token ids in ``[0, d_vocab)``; see the
    module's docstring for the formulas. ``discount=None``: modified Kneser-Ney with three
    discounts per level estimated from the counts; a number in (0, 1): that discount at
    every level. :meth:`fit` counts, then :meth:`log_probs`, :meth:`nats_per_token` and
    :meth:`next_distribution` answer."""

    def __init__(self, order: int, d_vocab: int, discount: float | None = None):
        self.d_vocab = integer(d_vocab, "d_vocab", minimum=1)
        self.order = _check_order(order, self.d_vocab)
        self.discount = _check_discount(discount)
        self._levels: list[_Level] = []  # level k (k-grams) at index k - 1, after fit
        self.discounts = np.zeros((self.order, 3))  # [order, 3]: D(1), D(2), D(3+) per level

    def __repr__(self) -> str:
        d = "estimated" if self.discount is None else self.discount
        return f"NGramLM(order={self.order}, d_vocab={self.d_vocab}, discount={d})"

    @property
    def n_counts(self) -> int:
        """How many counts the fitted model stores: its distinct k-grams over every level."""
        return sum(len(level.codes) for level in self._levels)

    def fit(self, ids) -> NGramLM:
        """Count the n-grams of ``ids`` (1-d, at least ``order`` tokens); returns ``self``."""
        x = _ids(ids, self.d_vocab, "ids", self.order)
        v = self.d_vocab
        raw, continuation = _count_tables(x, self.order, v)
        tables = [continuation[k] for k in range(1, self.order)] + [raw[self.order]]
        return self._use([_Level(*table, v) for table in tables])

    def _use(self, levels: list[_Level]) -> NGramLM:
        self._levels = levels
        if self.discount is None:
            self.discounts = np.stack([level.estimated_discounts() for level in levels])
        else:
            self.discounts = np.full((self.order, 3), self.discount)
        return self

    def _fitted(self) -> None:
        if not self._levels:
            raise ValueError(f"{self!r} has no counts yet: call fit(ids) first")

    def _probabilities(self, found: list[tuple[np.ndarray, ...]], size: int) -> np.ndarray:
        """p(w | h) for ``size`` k-grams ``h w`` from each level's look-up (lowest first)."""
        p = np.full(size, 1.0 / self.d_vocab)
        for d, (alive, count, n_by_count, totals) in zip(self.discounts, found, strict=True):
            taken = np.r_[0.0, d][np.minimum(count, 3)]  # D(count), 0 for an unseen k-gram
            p[alive] = (count - taken + (d @ n_by_count) * p[alive]) / totals
        return p

    def log_probs(self, ids) -> torch.Tensor:
        """``ln p`` of each token of ``ids`` (1-d, at least 2) but the first, given up to
        ``order - 1`` tokens before it: float64 ``[len(ids) - 1]``."""
        self._fitted()
        x = _ids(ids, self.d_vocab, "ids", 2)
        out = np.empty(len(x) - 1)
        for start in range(1, len(x), _CHUNK):
            t = np.arange(start, min(start + _CHUNK, len(x)))
            codes = _target_codes(x, t, self.order, self.d_vocab)
            out[t - 1] = self._probabilities(_look_up(self._levels, codes, self.d_vocab), len(t))
        return torch.from_numpy(np.log(out))

    def nats_per_token(self, ids) -> float:
        """Mean negative log-probability (nats) of every token of ``ids`` but the first."""
        return float(-self.log_probs(ids).mean())

    def next_distribution(self, context_ids) -> torch.Tensor:
        """Probabilities of every next token after ``context_ids`` (1-d, may be empty; its
        last ``order - 1`` tokens count): float64 ``[d_vocab]``, summing to 1."""
        self._fitted()
        x = _ids(context_ids, self.d_vocab, "context_ids", 0)
        codes = [np.arange(self.d_vocab, dtype=np.int64)]  # the 1-grams w
        for k in range(2, self.order + 1):  # the k-grams: one more token of the context
            if k - 1 <= len(x):
                codes.append(codes[-1] + x[-(k - 1)] * self.d_vocab ** (k - 1))
            else:  # the context is too short for this level
                codes.append(np.full(self.d_vocab, -1))
        found = _look_up(self._levels, codes, self.d_vocab)
        return torch.from_numpy(self._probabilities(found, self.d_vocab))


def select_ngram(
    train_ids,
    valid_ids,
    d_vocab: int,
    orders: Iterable[int] = range(3, 10),
    discounts: Iterable[float | None] = (None, 0.6, 0.7, 0.8, 0.9),
) -> tuple[dict[tuple[int, float | None], float], tuple[int, float | None]]:
    """Fit an :class:`NGramLM` on ``train_ids`` for every order and discount and score it on
    ``valid_ids``. Returns ``(scores, best)``: ``scores[(order, discount)]`` is the validation
    nats per token, ``best`` the ``(order, discount)`` with the lowest. The counts are made
    once, for the largest order, and shared: the grid costs little more than its largest model."""
    d_vocab = integer(d_vocab, "d_vocab", minimum=1)
    orders = [_check_order(n, d_vocab, "orders[i]") for n in _non_empty(orders, "orders")]
    discounts = [_check_discount(d, "discounts[i]") for d in _non_empty(discounts, "discounts")]
    x = _ids(train_ids, d_vocab, "train_ids", max(orders))
    valid = _ids(valid_ids, d_vocab, "valid_ids", 2)
    raw, continuation = _count_tables(x, max(orders), d_vocab)
    below = [_Level(*continuation[k], d_vocab) for k in range(1, max(orders))]
    t = np.arange(1, len(valid))
    codes = _target_codes(valid, t, max(orders), d_vocab)
    found_below = _look_up(below, codes[: len(below)], d_vocab, t - 1)  # shared by every order
    scores = {}
    for order in sorted(set(orders)):
        top = _Level(*raw[order], d_vocab)
        alive = found_below[order - 2][0] if order > 1 else t - 1
        found = found_below[: order - 1] + _look_up([top], [codes[order - 1]], d_vocab, alive)
        for d in discounts:
            model = NGramLM(order, d_vocab, d)._use(below[: order - 1] + [top])
            scores[(order, d)] = float(-np.log(model._probabilities(found, len(t))).mean())
    return scores, min(scores, key=scores.__getitem__)


def _non_empty(values, name: str) -> list:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a list, got {type(values).__name__}")
    values = list(values)
    if not values:
        raise ValueError(f"{name} must not be empty")
    return values
