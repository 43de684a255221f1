"""Normalisation layers: LayerNorm (Ba et al., 2016) and RMSNorm (Zhang & Sennrich, 2019).

Both rescale each position's vector on its own; LayerNorm also subtracts the mean.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from transformer_lab.checks import finite_number, integer, layer_input, torch_module
from transformer_lab.nn.functional import at_least_float32

__all__ = ["LayerNorm", "rms_norm", "RMSNorm"]


class LayerNorm(nn.Module):
    """Layer norm written out: a z-score over each token's ``d_model`` features, then a
    learned gain and bias (Ba et al. 2016). ``sigma`` is the biased standard deviation,
    with ``eps`` inside the square root, as in ``nn.LayerNorm``.

    ``fused=True`` computes the same function with PyTorch's one-kernel
    ``F.layer_norm`` (equal to the written-out version to float rounding, as the tests
    check); models that train for long, such as the GPT, switch it on for speed."""

    def __init__(self, d_model: int, eps: float = 1e-5, fused: bool = False):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(integer(d_model, "d_model", minimum=1)))
        self.bias = nn.Parameter(torch.zeros(d_model))
        self.eps = finite_number(eps, "eps", above=0)
        self.fused = fused

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Statistics in float32 for half-precision ``x`` (as ``F.layer_norm`` computes
        them); the result has ``x``'s dtype (the promoted one if gain and bias differ)."""
        layer_input(x, self.gain.shape[0], "LayerNorm")
        if self.fused:
            return F.layer_norm(x, self.gain.shape, self.gain, self.bias, self.eps)
        # float16 squares overflow from |x| >= 256, so half precision is widened to float32
        # for the statistics; float32 and float64 stay as they are (no copy)
        xf = at_least_float32(x)
        mu = xf.mean(dim=-1, keepdim=True)  # [..., 1]
        centered = xf - mu  # [..., d_model]
        # the biased variance as a mean of squares: the number x.var(unbiased=False) gives,
        # several times faster on the CPU (forward and backward)
        sigma = (centered.pow(2).mean(dim=-1, keepdim=True) + self.eps).sqrt()  # [..., 1]
        return (centered / sigma).to(x.dtype) * self.gain + self.bias

    @classmethod
    def from_torch(cls, m: nn.LayerNorm) -> LayerNorm:
        torch_module(m, nn.LayerNorm)
        if len(m.normalized_shape) != 1:
            raise ValueError(f"only 1-d normalized_shape is supported, got {m.normalized_shape}")
        ours = cls(m.normalized_shape[0], eps=m.eps)
        with torch.no_grad():
            if m.weight is not None:
                ours.gain.copy_(m.weight)
            if m.bias is not None:
                ours.bias.copy_(m.bias)
        return ours


def rms_norm(x: torch.Tensor, gain: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """``x [..., d_model]`` divided by its root mean square over the last axis, times
    ``gain [d_model]``. The mean is not subtracted. Statistics in float32 or wider
    (as in ``F.rms_norm``); returns ``x``'s dtype (the promoted one if ``gain``'s differs)."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
        raise TypeError(f"rms_norm expects a floating-point tensor x, got {got}")
    if not isinstance(gain, torch.Tensor) or gain.dim() != 1:
        shape = tuple(gain.shape) if isinstance(gain, torch.Tensor) else type(gain).__name__
        raise TypeError(f"gain must be a 1-d tensor [d_model], got {shape}")
    if x.dim() == 0 or x.shape[-1] != gain.shape[0]:
        raise ValueError(
            f"x has {x.shape[-1] if x.dim() else 0} features but gain has {gain.shape[0]}"
        )
    finite_number(eps, "eps", above=0)
    # float16 squares overflow from |x| >= 256: half precision is widened to float32 for
    # the mean square (float32 and float64 stay as they are, no copy), then cast back
    xf = at_least_float32(x)
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)  # [..., 1]: 1 / rms
    return gain * (xf * inv_rms).to(x.dtype)


class RMSNorm(nn.Module):
    """:func:`rms_norm` with a learned ``gain [d_model]`` (ones at the start)."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(integer(d_model, "d_model", minimum=1)))
        self.eps = finite_number(eps, "eps", above=0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.gain, self.eps)

    @classmethod
    def from_torch(cls, m: nn.RMSNorm) -> RMSNorm:
        """Copy a ``torch.nn.RMSNorm`` over one axis (its ``eps=None`` means the dtype's
        machine epsilon, which is used here too)."""
        torch_module(m, nn.RMSNorm)
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
