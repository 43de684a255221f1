"""Chapter 9's layer-norm checkers pass the right answers and name the usual mistakes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from checker_helpers import assert_fails, assert_passes_right_and_names_mistake, verdict

from transformer_lab.exercises.ch09_add_and_norm import check_layer_norm, check_layer_norm_by_hand


def layer_norm(x, gain, bias, eps):
    return F.layer_norm(x, x.shape[-1:], gain, bias, eps)


def test_layer_norm(capsys):
    def unbiased(x, gain, bias, eps):
        return (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True) * gain + bias

    assert_passes_right_and_names_mistake(
        check_layer_norm, layer_norm, unbiased, "unbiased", capsys
    )

    def eps_outside(x, gain, bias, eps):
        z = (x - x.mean(-1, keepdim=True)) / (x.var(-1, keepdim=True, unbiased=False).sqrt() + eps)
        return z * gain + bias

    assert_fails(verdict(check_layer_norm, eps_outside), "inside the square root")
    swapped = verdict(check_layer_norm, lambda x, g, b, e: layer_norm(x, b, g, e))
    assert_fails(swapped, "swapped")


def test_checker_notices_in_place_edits():
    def in_place(x, gain, bias, eps):
        x -= x.mean(-1, keepdim=True)
        return layer_norm(x, gain, bias, eps)

    assert_fails(verdict(check_layer_norm, in_place), "in place")


def test_layer_norm_by_hand(capsys):
    right = check_layer_norm_by_hand([-0.577, -0.577, -0.577, 1.732])
    assert right.passed, right.message
    assert "check_layer_norm_by_hand" in capsys.readouterr().out
    assert verdict(check_layer_norm_by_hand, torch.tensor([-1.0, -1.0, -1.0, 3.0]) / 3**0.5).passed
    assert_fails(verdict(check_layer_norm_by_hand, [-0.5, -0.5, -0.5, 1.5]), "unbiased")
    assert_fails(verdict(check_layer_norm_by_hand, [-1 / 3, -1 / 3, -1 / 3, 1.0]), "variance")
    assert_fails(verdict(check_layer_norm_by_hand, [-1, -1, -1, 3]), "deviations")
    assert_fails(verdict(check_layer_norm_by_hand, [0.577, 0.577, 0.577, 2.887]), "mean")
    assert_fails(verdict(check_layer_norm_by_hand, [0.0] * 4), "placeholder")
    assert_fails(verdict(check_layer_norm_by_hand, [1, 2, 3]), "4 numbers")
    assert_fails(verdict(check_layer_norm_by_hand, [0.1, 0.2, 0.3, 0.4]), "sum to 0")
    assert_fails(verdict(check_layer_norm_by_hand, "abc"), "list or a tensor")
    with pytest.raises(AssertionError):
        check_layer_norm_by_hand([-1, -1, -1, 3], strict=True, verbose=False)
