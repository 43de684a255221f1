"""Position-wise feed-forward networks: the ReLU/GELU MLP of the 2017 Transformer and
the gated SwiGLU of today's decoders (Shazeer, 2020)."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from transformer_lab.checks import instance_of, integer, layer_input, one_of, weights_dtype
from transformer_lab.hooks import Hook
from transformer_lab.nn.functional import affine

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
}

__all__ = ["ACTIVATIONS", "FeedForward", "SwiGLU"]


class FeedForward(nn.Module):
    """``W_2 act(W_1 h + b_1) + b_2`` applied to each position independently."""

    def __init__(self, d_model: int, d_mlp: int, activation: str = "relu", dropout: float = 0.0):
        super().__init__()
        d_model, d_mlp = integer(d_model, "d_model", minimum=1), integer(d_mlp, "d_mlp", minimum=1)
        self.activation = one_of(activation, sorted(ACTIVATIONS), "activation")
        self.W_1 = nn.Parameter(torch.empty(d_model, d_mlp))
        self.b_1 = nn.Parameter(torch.zeros(d_mlp))
        self.W_2 = nn.Parameter(torch.empty(d_mlp, d_model))
        self.b_2 = nn.Parameter(torch.zeros(d_model))
        nn.init.xavier_uniform_(self.W_1)
        nn.init.xavier_uniform_(self.W_2)
        self.dropout = nn.Dropout(dropout)
        self.hidden = Hook()

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        weights_dtype(layer_input(h, self.W_1.shape[0], "FeedForward"), self.W_1)
        pre = affine(h, self.W_1, self.b_1)  # [..., d_mlp]
        hidden = self.hidden(ACTIVATIONS[self.activation](pre))  # [..., d_mlp]
        return affine(self.dropout(hidden), self.W_2, self.b_2)  # [..., d_model]

    def load_linear(self, linear1: nn.Linear, linear2: nn.Linear) -> FeedForward:
        """Copy weights from two ``nn.Linear`` layers (as in ``nn.TransformerEncoderLayer``)."""
        want = ((self.W_1.shape[1], self.W_1.shape[0]), (self.W_2.shape[1], self.W_2.shape[0]))
        for name, lin, shape in (("linear1", linear1, want[0]), ("linear2", linear2, want[1])):
            instance_of(lin, nn.Linear, name, "an nn.Linear")
            if tuple(lin.weight.shape) != shape or lin.bias is None:
                raise ValueError(
                    f"{name} must be nn.Linear with bias and weight {shape}, "
                    f"got weight {tuple(lin.weight.shape)}"
                )
        with torch.no_grad():
            self.W_1.copy_(linear1.weight.T)
            self.b_1.copy_(linear1.bias)
            self.W_2.copy_(linear2.weight.T)
            self.b_2.copy_(linear2.bias)
        return self


class SwiGLU(nn.Module):
    """``(silu(h W_gate) * (h W_up)) W_down`` for ``h [..., d_model]``."""

    def __init__(self, d_model: int, d_mlp: int, init_std: float = 0.02):
        super().__init__()
        d_model, d_mlp = integer(d_model, "d_model", minimum=1), integer(d_mlp, "d_mlp", minimum=1)
        self.W_gate = nn.Parameter(torch.randn(d_model, d_mlp) * init_std)
        self.W_up = nn.Parameter(torch.randn(d_model, d_mlp) * init_std)
        self.W_down = nn.Parameter(torch.randn(d_mlp, d_model) * init_std)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        layer_input(h, self.W_gate.shape[0], "SwiGLU")
        gate = F.silu(h @ self.W_gate)  # [..., d_mlp]
        return (gate * (h @ self.W_up)) @ self.W_down  # [..., d_model]

    def extra_repr(self) -> str:
        d_model, d_mlp = self.W_gate.shape
        return f"d_model={d_model}, d_mlp={d_mlp}"
