"""Exercise checkers of the Transformer chapters: each passes the package's own
implementation, fails a wrong one with a message naming the mistake, and never raises
unless ``strict=True``."""

from __future__ import annotations

import math
import re

import pytest
import torch
import torch.nn.functional as F

from transformer_lab.attention import scaled_dot_product_attention
from transformer_lab.exercises_transformer import (
    check_cross_attention,
    check_feed_forward,
    check_layer_norm,
    check_multi_head_attention,
    check_pre_ln_block,
    check_shift_matrix,
    check_sinusoidal_encoding,
    check_split_heads,
    shift_matrix,
)
from transformer_lab.layers import MultiHeadAttention
from transformer_lab.positional import sinusoidal_encoding


def package_mha(x, W_Q, W_K, W_V, W_O, n_heads):
    layer = MultiHeadAttention(x.shape[-1], n_heads, bias=False)
    with torch.no_grad():
        for param, W in zip(
            (layer.W_Q, layer.W_K, layer.W_V, layer.W_O), (W_Q, W_K, W_V, W_O), strict=True
        ):
            param.copy_(W)
        return layer(x)[0]


def mha_scaled_by_d_model(x, W_Q, W_K, W_V, W_O, n_heads):
    b, n, d = x.shape

    def split(t):
        return t.view(b, n, n_heads, d // n_heads).transpose(1, 2)

    q, k, v = split(x @ W_Q), split(x @ W_K), split(x @ W_V)
    z = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), -1) @ v
    return z.transpose(1, 2).reshape(b, n, d) @ W_O


def pre_ln(x, attn, mlp, ln1, ln2):
    h = x + attn(ln1(x))
    return h + mlp(ln2(h))


def post_ln(x, attn, mlp, ln1, ln2):
    h = ln1(x + attn(x))
    return ln2(h + mlp(h))


CASES = [
    (
        check_sinusoidal_encoding,
        sinusoidal_encoding,
        lambda n, d: sinusoidal_encoding(n, d).T,
        "transposed",
    ),
    (check_shift_matrix, shift_matrix, lambda k, d: shift_matrix(-k, d), "wrong way"),
    (
        check_split_heads,
        lambda x, h: x.view(*x.shape[:2], h, -1).transpose(1, 2),
        lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1),
        "cuts the sequence",
    ),
    (check_multi_head_attention, package_mha, mha_scaled_by_d_model, "sqrt\\(d_model\\)"),
    (
        check_layer_norm,
        lambda x, g, b, e: F.layer_norm(x, x.shape[-1:], g, b, e),
        lambda x, g, b, e: (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True) * g + b,
        "unbiased",
    ),
    (
        check_feed_forward,
        lambda h, W1, b1, W2, b2: F.relu(h @ W1 + b1) @ W2 + b2,
        lambda h, W1, b1, W2, b2: (h @ W1 + b1) @ W2 + b2,
        "ReLU is missing",
    ),
    (check_pre_ln_block, pre_ln, post_ln, "post-LN"),
    (
        check_cross_attention,
        lambda x, m, W_Q, W_K, W_V, mask: scaled_dot_product_attention(
            x @ W_Q, m @ W_K, m @ W_V, mask[:, None, :]
        )[0],
        lambda x, m, W_Q, W_K, W_V, mask: scaled_dot_product_attention(m @ W_Q, x @ W_K, x @ W_V)[
            0
        ],
        "queries came from the encoder",
    ),
]


@pytest.mark.parametrize(
    ("check", "right", "wrong", "hint"), CASES, ids=[c[0].__name__ for c in CASES]
)
def test_checker_passes_right_and_names_the_mistake(check, right, wrong, hint, capsys):
    result = check(right)
    assert result.passed, result.message
    assert check.__name__ in capsys.readouterr().out  # the verdict is printed
    bad = check(wrong, verbose=False)
    assert not bad.passed
    assert re.search(hint, bad.message), bad.message
    with pytest.raises(AssertionError):
        check(wrong, strict=True, verbose=False)


@pytest.mark.parametrize("check", [c[0] for c in CASES])
def test_checker_reports_an_exception_in_words(check):
    def broken(*args):
        raise RuntimeError("boom")

    result = check(broken, verbose=False)
    assert not result.passed and "RuntimeError: boom" in result.message


def test_checker_reports_a_wrong_return_type():
    result = check_sinusoidal_encoding(lambda n, d: [[0.0] * d] * n, verbose=False)
    assert not result.passed and "expected a tensor" in result.message


def test_checker_notices_in_place_edits():
    def in_place(x, gain, bias, eps):
        x -= x.mean(-1, keepdim=True)
        return F.layer_norm(x, x.shape[-1:], gain, bias, eps)

    result = check_layer_norm(in_place, verbose=False)
    assert not result.passed and "in place" in result.message


def test_shift_matrix_moves_positions():
    pe = sinusoidal_encoding(30, 10)
    torch.testing.assert_close(pe[:-4] @ shift_matrix(4, 10), pe[4:], atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="even"):
        shift_matrix(1, 5)


def test_pre_ln_checker_leaves_the_global_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    check_pre_ln_block(pre_ln, verbose=False)
    torch.testing.assert_close(torch.rand(3), expected)
