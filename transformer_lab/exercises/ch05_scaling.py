"""Checkers for chapter 5, why attention divides by sqrt(d_k).

- :func:`check_stable_softmax`: ``fn(scores)``, a softmax over the last axis that stays
  right for scores in the hundreds (unscaled dot products of wide vectors) and for masked
  keys (``-inf``);
- :func:`check_score_divisor`: ``fn(sigma, d_k)``, the number that brings ``q . k`` back to
  unit variance when the entries of ``q`` and ``k`` have standard deviation ``sigma``;
- :func:`check_half_weight_temperature`: a temperature ``T`` at which the first key of the
  lectures' worked example (scores 112, 96, 16, 8) gets a weight of one half.
"""

from __future__ import annotations

import math

import torch

from transformer_lab.exercises.runner import (
    CheckResult,
    WrongAnswer,
    as_number,
    call,
    compare,
    need_tensor,
    run_check,
)

__all__ = ["check_stable_softmax", "check_score_divisor", "check_half_weight_temperature"]

WORKED_SCORES = (112.0, 96.0, 16.0, 8.0)  # q_1 . k_j in the lectures' example, d_k = 64


def _number(value, what: str) -> float:
    """``value`` as a float (a Python or NumPy number, or a one-element tensor or array), else
    WrongAnswer."""
    number = as_number(value)
    if number is None and hasattr(value, "shape"):
        raise WrongAnswer(
            f"{what} should be a single number, got a tensor of shape {tuple(value.shape)}."
        )
    if number is None:
        raise WrongAnswer(f"{what} should be a number, got {type(value).__name__}.")
    value = number
    if not math.isfinite(value):
        raise WrongAnswer(f"{what} should be a finite number, got {value}.")
    return float(value)


def _softmax_inputs() -> list[tuple[str, torch.Tensor]]:
    """Scores the checker feeds ``fn``: ordinary ones first, then the hard cases."""
    gen = torch.Generator().manual_seed(5)
    ordinary = torch.randn(2, 3, 6, generator=gen)
    large = 40 * torch.randn(2, 3, 6, generator=gen) + 600  # unscaled scores of wide vectors
    negative = 40 * torch.randn(3, 6, generator=gen) - 600
    spread = torch.stack([torch.randn(6, generator=gen), 500 + torch.randn(6, generator=gen)])
    masked = torch.randn(3, 6, generator=gen)
    masked[:, 4:] = -math.inf  # the last two keys masked in every row
    return [
        ("ordinary scores [2, 3, 6]", ordinary),
        ("scores around 600 [2, 3, 6]", large),
        ("scores around -600 [3, 6]", negative),
        ("two rows [2, 6], one around 0 and one around 500", spread),
        ("scores [3, 6] with the last two keys masked (-inf)", masked),
    ]


def _softmax_mistakes(scores: torch.Tensor):
    """``(message, what that mistake computes)`` for a softmax of ``scores``."""
    with torch.no_grad():
        e = scores.exp()
        yield (
            "exp overflows: float32 holds numbers up to about 3.4e38, and exp(89) is already "
            "larger, so a score of 600 gives inf and inf / inf is NaN. Subtract each row's "
            "largest score before exp: the result is the same, and the largest exp is then 1",
            e / e.sum(-1, keepdim=True),
        )
        shifted = (scores - scores.max()).exp()
        yield (
            "you subtracted the largest score of the whole tensor; a row whose scores are all "
            "far below it underflows to zeros and 0 / 0. Subtract each row's own maximum "
            "(max over the last axis, keepdim=True)",
            shifted / shifted.sum(-1, keepdim=True),
        )
        low = (scores - scores.min(-1, keepdim=True).values).exp()
        yield (
            "you subtracted each row's smallest score: the other exps then grow without bound "
            "(and a masked -inf makes it NaN). Subtract the largest score instead",
            low / low.sum(-1, keepdim=True),
        )
        if scores.dim() >= 2:
            yield (
                "the weights sum to one along the wrong axis: take max and sum over the last "
                "axis (dim=-1), where the keys are",
                torch.softmax(scores, dim=-2),
            )


def check_stable_softmax(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(scores)`` -> ``torch.softmax(scores, dim=-1)`` for ordinary scores, for
    scores in the hundreds of either sign, for rows far apart in size, and for rows with
    masked (``-inf``) keys; the usual slips are named (no shift, one shift for the whole
    tensor, the minimum instead of the maximum, the wrong axis)."""

    def body():
        for describe, scores in _softmax_inputs():
            out = need_tensor(call(fn, (scores,), describe), "a tensor of weights")
            want = torch.softmax(scores, dim=-1)
            compare(out, want, describe, lambda s=scores: _softmax_mistakes(s), row_sums=True)
        return "the weights match torch.softmax for large, negative, uneven and masked scores."

    return run_check("check_stable_softmax", body, strict, verbose)


def check_score_divisor(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(sigma, d_k)`` -> the divisor ``sigma**2 * sqrt(d_k)``: the standard deviation
    of ``q . k`` for independent entries with mean 0 and standard deviation ``sigma``."""

    def body():
        # sigma = 1 last: there several mistakes give the right number by accident
        cases = [(2.0, 64), (0.5, 16), (3.0, 7), (1.0, 64)]
        for sigma, d_k in cases:
            describe = f"sigma={sigma:g}, d_k={d_k}"
            got = _number(call(fn, (sigma, d_k), describe), "the divisor")
            want = sigma**2 * math.sqrt(d_k)
            if math.isclose(got, want, rel_tol=1e-6):
                continue
            mistakes = [
                (
                    sigma * math.sqrt(d_k),
                    "you divided by sigma * sqrt(d_k). A score sums products q_i k_i, and one "
                    "product has variance sigma^2 * sigma^2 = sigma^4, so its standard deviation "
                    "is sigma^2, not sigma",
                ),
                (
                    math.sqrt(d_k),
                    "sqrt(d_k) is the divisor for unit-variance entries; here each product "
                    "q_i k_i has variance sigma^4, which the divisor must undo too",
                ),
                (
                    sigma**4 * d_k,
                    "that is the variance of q . k; divide by its square root, the standard "
                    "deviation, to bring the variance to 1",
                ),
                (
                    sigma**2 * d_k,
                    "the d_k products add their variances, so the standard deviation grows like "
                    "sqrt(d_k), not d_k",
                ),
            ]
            for value, message in mistakes:
                if math.isclose(got, value, rel_tol=1e-6):
                    raise WrongAnswer(f"{message} ({describe}).")
            raise WrongAnswer(
                f"for {describe} the divisor should be {want:.4g}, got {got:.4g}. "
                "Work out Var(q . k) first, then take its square root."
            )
        return "sigma^2 * sqrt(d_k): right for 4 choices of sigma and d_k."

    return run_check("check_score_divisor", body, strict, verbose)


def _first_weight(T: float) -> float:
    scores = torch.tensor(WORKED_SCORES, dtype=torch.float64)
    return torch.softmax(scores / T, dim=0)[0].item()


def check_half_weight_temperature(
    T, *, strict: bool = False, verbose: bool = True, tolerance: float = 1e-3
) -> CheckResult:
    """Check a temperature ``T`` with ``softmax(s / T)[0]`` within ``tolerance`` of one half,
    for the worked example's scores ``s = (112, 96, 16, 8)``."""

    def body():
        value = _number(T, "the temperature")
        if value <= 0:
            raise WrongAnswer(f"a temperature must be positive, got {value:g}.")
        weight = _first_weight(value)
        if abs(weight - 0.5) <= tolerance:
            return f"at T = {value:.4g} the first key gets weight {weight:.4f}."
        if math.isclose(value, 8.0):
            hint = (
                "T = 8 = sqrt(d_k) is the temperature of scaled attention, where the first "
                "key still gets most of the weight"
            )
        elif weight > 0.5:
            hint = "the softmax is still too peaked: raise T (a higher temperature flattens it)"
        else:
            hint = "the softmax is already too flat: lower T"
        raise WrongAnswer(
            f"at T = {value:.4g} the first key gets weight {weight:.4f}, not 0.5: {hint}."
        )

    return run_check("check_half_weight_temperature", body, strict, verbose)
