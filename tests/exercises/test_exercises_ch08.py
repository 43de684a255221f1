"""Chapter 8's checkers pass the package's answers and name the usual mistakes."""

from __future__ import annotations

import math

import torch
from checker_helpers import assert_fails, assert_passes_right_and_names_mistake, verdict

from transformer_lab.exercises.ch08_multi_head import check_multi_head_attention, check_split_heads
from transformer_lab.nn.multi_head import MultiHeadAttention


def split(x, n_heads):
    return x.view(*x.shape[:2], n_heads, -1).transpose(1, 2)


def test_split_heads(capsys):
    def cut_sequence(x, n_heads):
        return x.reshape(x.shape[0], n_heads, x.shape[1], -1)

    assert_passes_right_and_names_mistake(
        check_split_heads, split, cut_sequence, "cuts the sequence", capsys
    )
    no_transpose = verdict(check_split_heads, lambda x, h: x.view(*x.shape[:2], h, -1))
    assert_fails(no_transpose, "transpose(1, 2)")


def package_mha(x, W_Q, W_K, W_V, W_O, n_heads):
    layer = MultiHeadAttention(x.shape[-1], n_heads, bias=False)
    with torch.no_grad():
        for param, W in zip(
            (layer.W_Q, layer.W_K, layer.W_V, layer.W_O), (W_Q, W_K, W_V, W_O), strict=True
        ):
            param.copy_(W)
        return layer(x)[0]


def mha(x, W_Q, W_K, W_V, W_O, n_heads, *, scale_by=None, project=True):
    b, n, d = x.shape
    q, k, v = split(x @ W_Q, n_heads), split(x @ W_K, n_heads), split(x @ W_V, n_heads)
    z = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(scale_by or d // n_heads), -1) @ v
    z = z.transpose(1, 2).reshape(b, n, d)
    return z @ W_O if project else z


def test_multi_head_attention(capsys):
    def by_d_model(x, W_Q, W_K, W_V, W_O, n_heads):
        return mha(x, W_Q, W_K, W_V, W_O, n_heads, scale_by=x.shape[-1])

    assert_passes_right_and_names_mistake(
        check_multi_head_attention, package_mha, by_d_model, r"sqrt\(d_model\)", capsys
    )
    assert verdict(check_multi_head_attention, mha).passed
    no_W_O = verdict(check_multi_head_attention, lambda *a: mha(*a, project=False))
    assert_fails(no_W_O, "W_O is missing")


def test_multi_head_attention_placeholder_is_named():
    placeholder = verdict(check_multi_head_attention, lambda x, *weights: x)
    assert_fails(placeholder, "input x unchanged", "placeholder")
