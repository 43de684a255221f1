"""Argument checks shared by the package: each is one line at the call site.

Every check raises a ``ValueError`` or ``TypeError`` whose message names the argument,
what was expected and what came ("d_model must be a positive int, got 0"), and returns
the value it checked, so a call site can read ``n = positive_int(n, "n")``. ``bool`` is
never an int here: ``True`` is refused wherever an int or a number is asked for.
"""

from __future__ import annotations

import math
from collections.abc import Collection

import torch

__all__ = [
    "is_int",
    "positive_int",
    "non_negative_int",
    "positive_number",
    "non_negative_number",
    "fraction",
    "one_of",
    "floating_tensor",
    "check_labels",
    "check_token_batch",
    "check_token_range",
]


def is_int(value) -> bool:
    """An ``int`` that is not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def positive_int(value, name: str) -> int:
    """``value`` if it is an int >= 1, else "``name`` must be a positive int, got ..."."""
    if not is_int(value) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def non_negative_int(value, name: str) -> int:
    """``value`` if it is an int >= 0, else "``name`` must be a non-negative int, got ..."."""
    if not is_int(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return value


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def positive_number(value, name: str) -> float:
    """``value`` if it is a finite number > 0, else "``name`` must be a positive number"."""
    if not _is_number(value) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return value


def non_negative_number(value, name: str) -> float:
    """``value`` if it is a finite number >= 0."""
    if not _is_number(value) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative number, got {value!r}")
    return value


def fraction(value, name: str, *, closed: bool = True) -> float:
    """``value`` if it is a number in [0, 1] (``closed=False``: in [0, 1))."""
    ok = _is_number(value) and 0 <= value <= 1 and (closed or value < 1)
    if not ok:
        interval = "[0, 1]" if closed else "[0, 1)"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return value


def one_of(value, choices: Collection, name: str):
    """``value`` if it is one of ``choices``, else "``name`` must be one of ..., got ..."."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def floating_tensor(value, name: str, dim: int | None = None, shape: str = "") -> torch.Tensor:
    """``value`` if it is a floating-point tensor (with ``dim`` dimensions when given;
    ``shape`` names them in the message, e.g. "[batch, pos, d_model]")."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        got = getattr(value, "dtype", type(value).__name__)
        raise TypeError(f"{name} must be a floating-point tensor, got {got}")
    if dim is not None and value.dim() != dim:
        raise ValueError(f"{name} must be {shape or f'{dim}-d'}, got {tuple(value.shape)}")
    return value


def check_labels(labels: torch.Tensor, n_classes: int, ignore_index: int | None = None) -> None:
    """Raise a ValueError unless every label is in ``[0, n_classes)`` or ``ignore_index``
    (one min/max; ``F.cross_entropy`` would give an IndexError or a device assert)."""
    if not isinstance(labels, torch.Tensor) or labels.dtype not in (torch.long, torch.int):
        got = getattr(labels, "dtype", type(labels).__name__)
        raise TypeError(f"labels must be a tensor of integer class ids, got {got}")
    if labels.numel() == 0:
        return
    if ignore_index is not None:
        labels = labels.masked_fill(labels == ignore_index, 0)
    low, high = (int(t) for t in torch.aminmax(labels))
    if low < 0 or high >= n_classes:
        extra = f" (or ignore_index={ignore_index})" if ignore_index is not None else ""
        raise ValueError(
            f"labels must be in [0, {n_classes}){extra}, got values from {low} to {high}"
        )


def check_token_batch(idx, n_ctx: int, d_vocab: int, offset: int = 0, hint: str = "") -> None:
    """Check a decoder's input: an integer tensor ``[batch, pos]``, ``pos >= 1``, that fits
    the context after ``offset`` cached positions, with ids in ``[0, d_vocab)``. ``hint`` is
    appended to the context-length message."""
    if not isinstance(idx, torch.Tensor) or idx.dtype not in (torch.long, torch.int):
        got = getattr(idx, "dtype", type(idx).__name__)
        raise TypeError(f"idx must be an integer tensor of token ids, got {got}")
    if idx.dim() != 2 or idx.shape[1] == 0:
        raise ValueError(f"idx must be [batch, pos] with pos >= 1, got shape {tuple(idx.shape)}")
    if offset + idx.shape[1] > n_ctx:
        raise ValueError(
            f"{offset + idx.shape[1]} positions exceed the context length n_ctx={n_ctx}{hint}"
        )
    check_token_range(idx, d_vocab, "idx")


def check_token_range(ids: torch.Tensor, d_vocab: int, name: str = "token ids") -> None:
    """Raise a ValueError unless every id is in ``[0, d_vocab)`` (one min/max: negative
    ids would silently index from the end of ``W_E``)."""
    if ids.numel() == 0:
        return
    low, high = torch.aminmax(ids)
    low, high = int(low), int(high)
    if low < 0 or high >= d_vocab:
        raise ValueError(f"{name} must be in [0, {d_vocab}), got values from {low} to {high}")
