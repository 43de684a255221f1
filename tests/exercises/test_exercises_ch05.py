"""Chapter 5's checkers: the divisor for entries of any variance and the temperature that
halves the worked example's first weight pass right answers and name the usual mistakes."""

from __future__ import annotations

import math

import torch
from checker_helpers import assert_fails, assert_passes_right_and_names_mistake, verdict

from transformer_lab.exercises.ch05_scaling import (
    check_half_weight_temperature,
    check_score_divisor,
    check_stable_softmax,
)


def right_divisor(sigma, d_k):
    return sigma**2 * math.sqrt(d_k)


def test_check_score_divisor_passes_right_and_names_mistakes(capsys):
    assert_passes_right_and_names_mistake(
        check_score_divisor, right_divisor, lambda sigma, d_k: math.sqrt(d_k), "sigma\\^4", capsys
    )
    assert verdict(check_score_divisor, lambda s, d: torch.tensor(s**2 * d**0.5)).passed
    assert_fails(verdict(check_score_divisor, lambda s, d: s * math.sqrt(d)), "sigma * sqrt(d_k)")
    assert_fails(verdict(check_score_divisor, lambda s, d: s**4 * d), "square root")
    assert_fails(verdict(check_score_divisor, lambda s, d: s**2 * d), "not d_k")
    assert_fails(verdict(check_score_divisor, lambda s, d: 3.0), "should be 32", "Var(q . k)")
    assert_fails(verdict(check_score_divisor, lambda s, d: "8"), "should be a number")
    assert_fails(verdict(check_score_divisor, lambda s, d: torch.ones(2)), "single number")


def test_check_score_divisor_matches_a_measurement():
    gen = torch.Generator().manual_seed(0)
    sigma, d_k = 2.0, 64
    q = sigma * torch.randn(20_000, d_k, generator=gen)
    k = sigma * torch.randn(20_000, d_k, generator=gen)
    scaled = (q * k).sum(-1) / right_divisor(sigma, d_k)
    assert abs(scaled.var().item() - 1) < 0.05


def solve_half_temperature():
    low, high = 1.0, 1000.0
    scores = torch.tensor([112.0, 96.0, 16.0, 8.0], dtype=torch.float64)
    for _ in range(60):
        middle = (low + high) / 2
        if torch.softmax(scores / middle, 0)[0] > 0.5:
            low = middle
        else:
            high = middle
    return low


def test_check_half_weight_temperature(capsys):
    T = solve_half_temperature()
    assert 50.0 < T < 50.3
    result = check_half_weight_temperature(T)
    assert result.passed, result.message
    assert "check_half_weight_temperature" in capsys.readouterr().out
    assert verdict(check_half_weight_temperature, torch.tensor(T)).passed
    assert_fails(verdict(check_half_weight_temperature, 8.0), "sqrt(d_k)")
    assert_fails(verdict(check_half_weight_temperature, 20.0), "raise T")
    assert_fails(verdict(check_half_weight_temperature, 200.0), "lower T")
    assert_fails(verdict(check_half_weight_temperature, -1.0), "positive")
    assert_fails(verdict(check_half_weight_temperature, None), "should be a number")


def stable_softmax(scores):
    e = (scores - scores.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1, keepdim=True)


def test_check_stable_softmax_passes_right_and_names_mistakes(capsys):
    def textbook(scores):
        e = scores.exp()
        return e / e.sum(-1, keepdim=True)

    assert_passes_right_and_names_mistake(
        check_stable_softmax, stable_softmax, textbook, "exp overflows", capsys
    )
    assert verdict(check_stable_softmax, lambda s: torch.softmax(s, dim=-1)).passed

    def one_shift(scores):
        e = (scores - scores.max()).exp()
        return e / e.sum(-1, keepdim=True)

    def by_min(scores):
        e = (scores - scores.min(-1, keepdim=True).values).exp()
        return e / e.sum(-1, keepdim=True)

    assert_fails(verdict(check_stable_softmax, one_shift), "whole tensor", "own maximum")
    assert_fails(verdict(check_stable_softmax, by_min), "smallest score")
    assert_fails(verdict(check_stable_softmax, lambda s: torch.softmax(s, dim=-2)), "wrong axis")
    assert_fails(verdict(check_stable_softmax, lambda s: s.tolist()), "expected a tensor")
