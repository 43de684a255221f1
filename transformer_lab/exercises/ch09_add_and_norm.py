"""Checkers for chapter 9, add and norm: layer norm over the features of each token."""

from __future__ import annotations

import torch

from .runner import CheckResult, call, compare, need_tensor, run_check

__all__ = ["check_layer_norm"]


def _layer_norm_variant(
    x, gain, bias, eps, *, dim=-1, unbiased=False, eps_outside=False, affine=True
):
    x = x.double()
    mu = x.mean(dim=dim, keepdim=True)
    var = x.var(dim=dim, keepdim=True, unbiased=unbiased)
    sigma = var.sqrt() + eps if eps_outside else (var + eps).sqrt()
    z = (x - mu) / sigma
    return z * gain.double() + bias.double() if affine else z


def check_layer_norm(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(x, gain, bias, eps)``: layer norm over the last axis of ``x [..., d_model]``,
    ``gain * (x - mean) / sqrt(var + eps) + bias`` with the biased variance (divide by
    ``d_model``), as ``nn.LayerNorm`` computes it."""
    gen = torch.Generator().manual_seed(2)

    def body():
        for shape, scale in [((4, 6), 3.0), ((2, 5, 8), 1.0), ((3, 7, 4), 1e-3)]:
            d = shape[-1]
            x = (torch.randn(*shape, generator=gen) + 2.0) * scale
            gain, bias = torch.randn(d, generator=gen), torch.randn(d, generator=gen)
            eps = 1e-5
            describe = f"x of shape {shape} with features of size about {scale:g}, eps={eps}"
            out = need_tensor(call(fn, (x, gain, bias, eps), describe))
            want = _layer_norm_variant(x, gain, bias, eps)
            wrong_axis = (
                "the statistics were taken over the wrong axis: each token is normalized "
                "over its own d_model features, the last axis (dim=-1)"
            )
            mistakes = [
                (
                    "you used the unbiased variance (dividing by d_model - 1); layer norm divides "
                    "by d_model: x.var(dim=-1, unbiased=False)",
                    _layer_norm_variant(x, gain, bias, eps, unbiased=True),
                ),
                (
                    "eps belongs inside the square root, sqrt(var + eps); adding it to the "
                    "standard deviation changes the result when the features are tiny",
                    _layer_norm_variant(x, gain, bias, eps, eps_outside=True),
                ),
                (wrong_axis, _layer_norm_variant(x, gain, bias, eps, dim=0)),
                (wrong_axis, _layer_norm_variant(x, gain, bias, eps, dim=-2)),
                (
                    "the gain and bias are missing: multiply the z-scores by gain, then add bias",
                    _layer_norm_variant(x, gain, bias, eps, affine=False),
                ),
                (
                    "gain and bias are swapped: the result is gain * z + bias",
                    _layer_norm_variant(x, bias, gain, eps),
                ),
            ]
            compare(out, want, describe, mistakes)
        return "correct on 3 inputs, including tiny features where eps matters."

    return run_check("check_layer_norm", body, strict, verbose)
