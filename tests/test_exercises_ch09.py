"""Chapter 9's layer-norm checker passes the package's answer and names the usual mistakes."""

from __future__ import annotations

import torch.nn.functional as F
from checker_helpers import assert_fails, assert_passes_right_and_names_mistake, verdict

from transformer_lab.exercises.ch09_add_and_norm import check_layer_norm


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
