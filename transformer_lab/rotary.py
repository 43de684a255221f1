"""Rotary position embeddings, RoPE (Su et al. 2021).

Instead of adding a position vector to the token, RoPE *rotates* each query and key by an
angle proportional to its position. The ``d_head`` features are taken as ``d_head / 2``
pairs ``(x_i, x_{i + d_head/2})`` (the "half-split" layout of Hugging Face's Llama; the
paper pairs neighbours ``(x_{2i}, x_{2i+1})``, which is the same up to a fixed permutation
of the features), and pair ``i`` at position ``m`` turns by ``m * theta_i`` with
``theta_i = base^(-2i / d_head)``: fast turns for the first pairs, slow for the last.

Because a rotation by ``m theta`` followed by the transpose of one by ``n theta`` is a
rotation by ``(n - m) theta``, the score ``q_m . k_n`` depends on the two positions only
through their distance ``n - m``. Nothing is added to the residual stream, and there is no
table of positions to outgrow.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["rotary_frequencies", "rotary_cos_sin", "apply_rotary", "RotaryEmbedding"]


def _check_d_head(d_head) -> None:
    if not isinstance(d_head, int) or isinstance(d_head, bool) or d_head <= 0 or d_head % 2:
        raise ValueError(f"d_head must be a positive even int, got {d_head!r}")


def _check_base(base) -> None:
    if isinstance(base, bool) or not isinstance(base, (int, float)):
        raise TypeError(f"base must be a number, got {type(base).__name__}")
    if not (math.isfinite(base) and base > 1):
        raise ValueError(f"base must be a finite number > 1, got {base!r}")


def rotary_frequencies(d_head: int, base: float = 10000.0) -> torch.Tensor:
    """``theta_i = base^(-2i / d_head)`` for ``i = 0 .. d_head/2 - 1``: radians per position."""
    _check_d_head(d_head)
    _check_base(base)
    two_i = torch.arange(0, d_head, 2, dtype=torch.float32)  # [d_head / 2]
    return 1.0 / base ** (two_i / d_head)  # [d_head / 2]


def rotary_cos_sin(
    positions: torch.Tensor, d_head: int, base: float = 10000.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cosine and sine of ``positions[..., None] * theta``: two ``[..., pos, d_head / 2]``
    tensors, for integer ``positions`` ``[pos]`` (shared by the batch) or ``[batch, pos]``."""
    if not isinstance(positions, torch.Tensor) or positions.is_floating_point():
        got = positions.dtype if isinstance(positions, torch.Tensor) else type(positions).__name__
        raise TypeError(f"positions must be an integer tensor, got {got}")
    if positions.dim() not in (1, 2):
        raise ValueError(f"positions must be [pos] or [batch, pos], got {tuple(positions.shape)}")
    theta = rotary_frequencies(d_head, base).to(positions.device)  # [d_head / 2]
    angle = positions.float()[..., None] * theta  # [..., pos, d_head / 2]
    return angle.cos(), angle.sin()


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate the feature pairs ``(x_i, x_{i + d/2})`` of ``x [batch, n_heads, pos, d_head]``
    by the angles whose ``cos``/``sin`` are ``[pos, d_head/2]`` or ``[batch, pos, d_head/2]``
    (from :func:`rotary_cos_sin`)."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
        raise TypeError(f"x must be a floating-point tensor, got {got}")
    if x.dim() != 4:
        raise ValueError(f"x must be [batch, n_heads, pos, d_head], got {tuple(x.shape)}")
    half = x.shape[-1] // 2
    want = (x.shape[2], half)
    for name, t in (("cos", cos), ("sin", sin)):
        if not isinstance(t, torch.Tensor) or t.dim() not in (2, 3) or tuple(t.shape[-2:]) != want:
            got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(
                f"{name} must be [..., pos, d_head/2]={want} for x {tuple(x.shape)}, got {got}"
            )
    if cos.dim() == 3:  # one row of positions per sequence: broadcast over the heads
        if cos.shape[0] not in (1, x.shape[0]):
            raise ValueError(f"cos has batch={cos.shape[0]} but x has batch={x.shape[0]}")
        cos, sin = cos[:, None], sin[:, None]  # [batch, 1, pos, d_head / 2]
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]  # the two members of every pair
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class RotaryEmbedding(nn.Module):
    """RoPE for heads of ``d_head`` features: ``rope(x, positions)`` rotates ``x [batch,
    n_heads, pos, d_head]``; ``positions`` defaults to ``0 .. pos - 1``."""

    def __init__(self, d_head: int, base: float = 10000.0):
        super().__init__()
        _check_d_head(d_head)
        _check_base(base)
        self.d_head, self.base = d_head, float(base)

    def cos_sin(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return rotary_cos_sin(positions, self.d_head, self.base)

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.dim() != 4 or x.shape[-1] != self.d_head:
            got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"x must be [batch, n_heads, pos, d_head={self.d_head}], got {got}")
        if positions is None:
            positions = torch.arange(x.shape[2], device=x.device)
        return apply_rotary(x, *self.cos_sin(positions))

    def extra_repr(self) -> str:
        return f"d_head={self.d_head}, base={self.base:g}"
