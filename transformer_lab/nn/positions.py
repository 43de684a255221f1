"""Positional information: the sinusoidal encoding and learned absolute positions, added
to the token vectors, and rotary embeddings (RoPE), which rotate queries and keys by an
angle that grows with the position."""

from __future__ import annotations

import operator

import torch
from torch import nn

from transformer_lab.checks import finite_number, floating_tensor, integer

__all__ = [
    "sinusoidal_encoding",
    "SinusoidalPositions",
    "LearnedPositions",
    "rotary_frequencies",
    "rotary_cos_sin",
    "apply_rotary",
]


def sinusoidal_encoding(n_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The encoding of Vaswani et al. (2017), ``[n_positions, d_model]``.

    ``PE[pos, 2i] = sin(pos / base^(2i/d_model))`` on even dimensions and
    ``PE[pos, 2i+1] = cos(pos / base^(2i/d_model))`` on odd ones. An odd ``d_model``
    is allowed: its last (even) dimension is a sine.
    """
    integer(n_positions, "n_positions", minimum=1)
    integer(d_model, "d_model", minimum=1)
    finite_number(base, "base", above=0)
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]  # [pos, 1]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # [ceil(d_model / 2)]
    angle = pos / base ** (two_i / d_model)  # [pos, ceil(d_model / 2)]
    pe = torch.zeros(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.float()  # [pos, d_model]


class SinusoidalPositions(nn.Module):
    """Adds the fixed sinusoidal encoding to ``x [batch, pos, d_model]``."""

    W_pos: torch.Tensor  # a buffer

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
        max_pos, d_model = (
            integer(max_pos, "max_pos", minimum=1),
            integer(d_model, "d_model", minimum=1),
        )
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
    floating_tensor(x, "x", shape="[..., pos, d_model]")
    if x.dim() < 2 or x.shape[-1] != d_model:
        raise ValueError(f"expected x of shape [..., pos, {d_model}], got {tuple(x.shape)}")
    try:
        ok = operator.index(offset) >= 0  # ints, NumPy ints and 0-d integer tensors
    except TypeError:
        ok = False
    if not ok:
        raise ValueError(f"offset must be a non-negative int, got {offset!r}")
    return x.shape[-2]


def _check_rotary(d_head, base) -> None:
    if integer(d_head, "d_head", minimum=1) % 2:
        raise ValueError(f"d_head must be a positive even int, got {d_head!r}")
    finite_number(base, "base", above=1)


def rotary_frequencies(d_head: int, base: float = 10000.0) -> torch.Tensor:
    """``theta_i = base^(-2i / d_head)`` for ``i = 0 .. d_head/2 - 1``: radians per position."""
    _check_rotary(d_head, base)
    two_i = torch.arange(0, d_head, 2, dtype=torch.float32)  # [d_head / 2]
    return 1.0 / base ** (two_i / d_head)  # [d_head / 2]


def rotary_cos_sin(
    positions: torch.Tensor, d_head: int, base: float = 10000.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cosine and sine of ``positions[..., None] * theta``: two ``[..., pos, d_head / 2]``
    tensors, for integer ``positions`` ``[pos]`` (shared by the batch) or ``[batch, pos]``."""
    if (
        not isinstance(positions, torch.Tensor)
        or positions.is_floating_point()
        or positions.is_complex()
        or positions.dtype == torch.bool  # True/False would read as positions 1 and 0
    ):
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
    (from :func:`rotary_cos_sin`), both of one layout."""
    floating_tensor(x, "x", 4, "[batch, n_heads, pos, d_head]")
    half = x.shape[-1] // 2
    want = (x.shape[2], half)
    for name, t in (("cos", cos), ("sin", sin)):
        if not isinstance(t, torch.Tensor) or t.dim() not in (2, 3) or tuple(t.shape[-2:]) != want:
            got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(
                f"{name} must be [..., pos, d_head/2]={want} for x {tuple(x.shape)}, got {got} "
                "(x is read as [batch, n_heads, pos, d_head])"
            )
        floating_tensor(t, name, shape="[..., pos, d_head/2]")
    if cos.shape != sin.shape:  # one [pos, ...], the other [batch, pos, ...]: mixed layouts
        raise ValueError(
            f"cos {tuple(cos.shape)} and sin {tuple(sin.shape)} must have one shape, "
            f"[pos, d_head/2] or [batch, pos, d_head/2], for x {tuple(x.shape)}"
        )
    if cos.dim() == 3:  # one row of positions per sequence: broadcast over the heads
        if cos.shape[0] not in (1, x.shape[0]):
            raise ValueError(f"cos has batch={cos.shape[0]} but x has batch={x.shape[0]}")
        cos, sin = cos[:, None], sin[:, None]  # [batch, 1, pos, d_head / 2]
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]  # the two members of every pair
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
