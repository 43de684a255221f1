"""Argument checks shared by the package: each is one line at the call site."""

from __future__ import annotations

import torch


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
