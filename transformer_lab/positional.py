"""Positional information: the sinusoidal encoding and learned absolute positions."""

from __future__ import annotations

import math
import operator

import torch
from torch import nn

__all__ = ["sinusoidal_encoding", "SinusoidalPositions", "LearnedPositions"]


def sinusoidal_encoding(n_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The encoding of Vaswani et al. (2017), ``[n_positions, d_model]``.

    ``PE[pos, 2i] = sin(pos / base^(2i/d_model))`` on even dimensions and
    ``PE[pos, 2i+1] = cos(pos / base^(2i/d_model))`` on odd ones. An odd ``d_model``
    is allowed: its last (even) dimension is a sine.
    """
    for name, value in (("n_positions", n_positions), ("d_model", d_model)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value <= 0:
            raise ValueError(f"{name} must be positive, got {value}")
    if isinstance(base, bool) or not isinstance(base, (int, float)):
        raise TypeError(f"base must be a number, got {type(base).__name__}")
    if not (math.isfinite(base) and base > 0):
        raise ValueError(f"base must be a positive finite number, got {base!r}")
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]  # [pos, 1]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # [ceil(d_model / 2)]
    angle = pos / base ** (two_i / d_model)  # [pos, ceil(d_model / 2)]
    pe = torch.zeros(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.float()  # [pos, d_model]


class SinusoidalPositions(nn.Module):
    """Adds the fixed sinusoidal encoding to ``x [batch, pos, d_model]``."""

    def __init__(self, max_pos: int, d_model: int):
        super().__init__()
        self.register_buffer("W_pos", sinusoidal_encoding(max_pos, d_model), persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        n = _check_input(x, offset, self.W_pos.shape[1])
        if offset + n > self.W_pos.shape[0]:
            # the formula extends to any position, so compute the longer table on demand
            table = sinusoidal_encoding(offset + n, self.W_pos.shape[1]).to(x.device, x.dtype)
        else:
            table = self.W_pos
        return x + table[offset : offset + n].to(x.dtype)


class LearnedPositions(nn.Module):
    """A learned vector per absolute position (``W_pos [max_pos, d_model]``) added to ``x``."""

    def __init__(self, max_pos: int, d_model: int, init_std: float = 0.02):
        super().__init__()
        for name, value in (("max_pos", max_pos), ("d_model", d_model)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self.W_pos = nn.Parameter(torch.randn(max_pos, d_model) * init_std)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        n = _check_input(x, offset, self.W_pos.shape[1])
        if offset + n > self.W_pos.shape[0]:
            raise ValueError(
                f"learned positions cover {self.W_pos.shape[0]} positions but positions "
                f"{offset}..{offset + n - 1} were asked for"
            )
        return x + self.W_pos[offset : offset + n]


def _check_input(x: torch.Tensor, offset: int, d_model: int) -> int:
    """Validate ``x [..., pos, d_model]`` and ``offset``; return ``pos``."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        got = getattr(x, "dtype", type(x).__name__)
        raise TypeError(f"x must be a floating-point tensor [..., pos, d_model], got {got}")
    if x.dim() < 2 or x.shape[-1] != d_model:
        raise ValueError(f"expected x of shape [..., pos, {d_model}], got {tuple(x.shape)}")
    try:
        ok = operator.index(offset) >= 0  # ints, NumPy ints and 0-d integer tensors
    except TypeError:
        ok = False
    if not ok:
        raise ValueError(f"offset must be a non-negative int, got {offset!r}")
    return x.shape[-2]
