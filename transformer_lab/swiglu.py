"""The SwiGLU feed-forward layer (Shazeer 2020) of Llama-style decoders.

``SwiGLU(h) = (silu(h W_gate) * (h W_up)) W_down``: two projections up to ``d_mlp``, one
passed through ``silu(a) = a * sigmoid(a)`` and used as a gate that multiplies the other
element by element, then one projection back down. No biases. It replaces GPT's
``W_2 gelu(W_1 h + b_1) + b_2``, at the price of a third matrix.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["SwiGLU"]


class SwiGLU(nn.Module):
    """``(silu(h W_gate) * (h W_up)) W_down`` for ``h [..., d_model]``."""

    def __init__(self, d_model: int, d_mlp: int, init_std: float = 0.02):
        super().__init__()
        for name, value in (("d_model", d_model), ("d_mlp", d_mlp)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self.W_gate = nn.Parameter(torch.randn(d_model, d_mlp) * init_std)
        self.W_up = nn.Parameter(torch.randn(d_model, d_mlp) * init_std)
        self.W_down = nn.Parameter(torch.randn(d_mlp, d_model) * init_std)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if not isinstance(h, torch.Tensor) or not h.is_floating_point():
            got = h.dtype if isinstance(h, torch.Tensor) else type(h).__name__
            raise TypeError(f"SwiGLU expects a floating-point tensor, got {got}")
        if h.dim() == 0 or h.shape[-1] != self.W_gate.shape[0]:
            raise ValueError(
                f"SwiGLU expects d_model={self.W_gate.shape[0]}, got shape {tuple(h.shape)}"
            )
        gate = F.silu(h @ self.W_gate)  # [..., d_mlp]
        return (gate * (h @ self.W_up)) @ self.W_down  # [..., d_model]

    def extra_repr(self) -> str:
        d_model, d_mlp = self.W_gate.shape
        return f"d_model={d_model}, d_mlp={d_mlp}"
