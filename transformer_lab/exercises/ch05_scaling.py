"""Checkers for chapter 5, why attention divides by sqrt(d_k).

- :func:`check_score_divisor`: ``fn(sigma, d_k)``, the number that brings ``q . k`` back to
  unit variance when the entries of ``q`` and ``k`` have standard deviation ``sigma``;
- :func:`check_half_weight_temperature`: a temperature ``T`` at which the first key of the
  lectures' worked example (scores 112, 96, 16, 8) gets a weight of one half.

The chapter's first exercise checks a reader's attention with chapter 4's
:func:`~.ch04_self_attention.check_attention`, which names the scaling mistakes (no
division, division by ``d_k``, by the wrong dimension); it is re-exported here so the
chapter's checkers can be imported from its own module.
"""

from __future__ import annotations

import math

import torch

from transformer_lab.exercises.ch04_self_attention import check_attention
from transformer_lab.exercises.runner import CheckResult, WrongAnswer, as_number, call, run_check

__all__ = ["check_attention", "check_score_divisor", "check_half_weight_temperature"]

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
