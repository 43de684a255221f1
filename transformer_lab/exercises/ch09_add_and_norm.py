"""Checkers for chapter 9, add and norm: layer norm over the features of each token, and
the same worked by hand on one small vector."""

from __future__ import annotations

import torch

from transformer_lab.exercises.runner import (
    CheckResult,
    WrongAnswer,
    call,
    compare,
    need_tensor,
    run_check,
)

__all__ = ["check_layer_norm", "check_layer_norm_by_hand"]


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


_BY_HAND_H = (1.0, 1.0, 1.0, 5.0)


def check_layer_norm_by_hand(values, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check four numbers worked out by hand: layer norm of ``h = (1, 1, 1, 5)`` with gain 1,
    bias 0 and ``eps = 0``. Rounding to three decimals is accepted."""

    def body():
        try:
            out = torch.as_tensor(values, dtype=torch.float64).flatten()
        except (TypeError, ValueError, RuntimeError):
            raise WrongAnswer(
                f"give your four numbers as a list or a tensor, got {type(values).__name__}."
            ) from None
        if out.numel() != 4:
            raise WrongAnswer(f"h has 4 features, so LN(h) has 4 numbers; you gave {out.numel()}.")
        h = torch.tensor(_BY_HAND_H, dtype=torch.float64)
        deviations = h - h.mean()  # (-1, -1, -1, 3)
        variance = deviations.pow(2).mean()  # 3
        want = deviations / variance.sqrt()
        mistakes = [
            (
                "you divided by sqrt(12 / 3) = 2, the unbiased standard deviation; layer norm "
                "takes the mean of the squared deviations over all d = 4 features: "
                "sigma = sqrt(12 / 4) = sqrt(3)",
                deviations / (deviations.pow(2).sum() / 3).sqrt(),
            ),
            (
                "you divided by the variance (3); divide by its square root, sigma = sqrt(3)",
                deviations / variance,
            ),
            ("these are the deviations h - mu; now divide them by sigma = sqrt(3)", deviations),
            ("subtract the mean mu = 2 before dividing by sigma", h / variance.sqrt()),
        ]
        if torch.allclose(out, want, atol=2e-3):
            return "correct: (-1, -1, -1, 3) / sqrt(3), about (-0.577, -0.577, -0.577, 1.732)."
        for message, wrong in mistakes:
            if torch.allclose(out, wrong, atol=2e-3):
                raise WrongAnswer(message + ".")
        if not out.any():
            raise WrongAnswer("your answer is all zeros; is it still the placeholder?")
        if abs(float(out.sum())) > 1e-2:
            raise WrongAnswer(
                f"your numbers sum to {float(out.sum()):.3g}; after subtracting the mean they "
                "must sum to 0. Start from mu = (1 + 1 + 1 + 5) / 4."
            )
        raise WrongAnswer(
            "not quite: mu = 2, the squared deviations average to sigma^2, and LN(h) = "
            "(h - mu) / sigma with gain 1 and bias 0."
        )

    return run_check("check_layer_norm_by_hand", body, strict, verbose)
