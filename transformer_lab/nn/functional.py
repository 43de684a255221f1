"""The book's ``x @ W + b``, shared by the layers, and the float32 widening that norms,
attention and losses apply to half precision."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from transformer_lab.checks import torch_tensor

__all__ = ["affine", "at_least_float32"]


def affine(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """``x @ W + b`` for ``x [..., d_in]``, ``W [d_in, d_out]``: the book's layout
    (``Q = X W_Q``). One fused matrix-multiply-and-add (``F.linear`` takes the transposed
    weight of ``nn.Linear``), cheaper than a product and a separate addition."""
    try:
        return F.linear(x, W.T, b)
    except (RuntimeError, AttributeError, TypeError) as err:  # checked on failure: hot path
        shapes = [getattr(t, "shape", type(t).__name__) for t in (x, W, b)]
        shapes = [tuple(s) if not isinstance(s, str) else s for s in shapes]
        kind = ValueError if isinstance(err, RuntimeError) else TypeError
        raise kind(
            f"affine needs tensors x [..., d_in], W [d_in, d_out], b [d_out] or None of one "
            f"dtype; got x {shapes[0]}, W {shapes[1]}, b {shapes[2]}"
        ) from err


def at_least_float32(t: torch.Tensor) -> torch.Tensor:
    """``t`` in float32 when it is half precision (float16, bfloat16), where squares, sums
    and exponentials overflow or round too coarsely; float32 and float64 as they are, with
    no copy."""
    return torch_tensor(t, "t").to(torch.promote_types(t.dtype, torch.float32))
