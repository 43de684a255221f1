"""RMSNorm (Zhang and Sennrich 2019): layer norm without the mean.

``RMSNorm(x) = x / sqrt(mean(x^2) + eps) * gain``: each token's ``d_model`` features are
divided by their root mean square and scaled by a learned gain. Unlike
:class:`~transformer_lab.layers.LayerNorm` it neither subtracts the mean nor adds a bias,
which saves one reduction per token; Llama-style decoders use it before every sublayer.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["rms_norm", "RMSNorm"]


def _check_eps(eps) -> None:
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"eps must be a number, got {type(eps).__name__}")
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a positive finite number, got {eps!r}")


def rms_norm(x: torch.Tensor, gain: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """``x [..., d_model]`` divided by its root mean square over the last axis, times
    ``gain [d_model]``. The mean is not subtracted."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
        raise TypeError(f"rms_norm expects a floating-point tensor x, got {got}")
    if not isinstance(gain, torch.Tensor) or gain.dim() != 1:
        got = tuple(gain.shape) if isinstance(gain, torch.Tensor) else type(gain).__name__
        raise TypeError(f"gain must be a 1-d tensor [d_model], got {got}")
    if x.dim() == 0 or x.shape[-1] != gain.shape[0]:
        raise ValueError(
            f"x has {x.shape[-1] if x.dim() else 0} features but gain has {gain.shape[0]}"
        )
    _check_eps(eps)
    inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)  # [..., 1]: 1 / rms
    return gain * (x * inv_rms)


class RMSNorm(nn.Module):
    """:func:`rms_norm` with a learned ``gain [d_model]`` (ones at the start)."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        if not isinstance(d_model, int) or isinstance(d_model, bool) or d_model <= 0:
            raise ValueError(f"d_model must be a positive int, got {d_model!r}")
        _check_eps(eps)
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.gain, self.eps)

    @classmethod
    def from_torch(cls, m: nn.RMSNorm) -> RMSNorm:
        """Copy a ``torch.nn.RMSNorm`` over one axis (its ``eps=None`` means the dtype's
        machine epsilon, which is used here too)."""
        if not isinstance(m, nn.RMSNorm):
            raise TypeError(f"expected nn.RMSNorm, got {type(m).__name__}")
        if len(m.normalized_shape) != 1:
            raise ValueError(f"only 1-d normalized_shape is supported, got {m.normalized_shape}")
        eps = m.eps if m.eps is not None else torch.finfo(torch.get_default_dtype()).eps
        ours = cls(m.normalized_shape[0], eps=eps)
        if m.weight is not None:
            with torch.no_grad():
                ours.gain.copy_(m.weight)
        return ours

    def extra_repr(self) -> str:
        return f"d_model={self.gain.shape[0]}, eps={self.eps}"
