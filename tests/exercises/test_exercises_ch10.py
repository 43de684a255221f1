"""Chapter 10's checkers pass the package's answers and name the usual mistakes."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from checker_helpers import assert_fails, assert_passes_right_and_names_mistake, verdict

from transformer_lab.exercises.ch10_block import (
    check_block_parameter_count,
    check_feed_forward,
    check_pre_ln_block,
)


def test_feed_forward(capsys):
    def right(h, W1, b1, W2, b2):
        return F.relu(h @ W1 + b1) @ W2 + b2

    def no_relu(h, W1, b1, W2, b2):
        return (h @ W1 + b1) @ W2 + b2

    assert_passes_right_and_names_mistake(
        check_feed_forward, right, no_relu, "ReLU is missing", capsys
    )
    no_b1 = verdict(check_feed_forward, lambda h, W1, b1, W2, b2: F.relu(h @ W1) @ W2 + b2)
    assert_fails(no_b1, "b_1 is missing")


def pre_ln(x, attn, mlp, ln1, ln2):
    h = x + attn(ln1(x))
    return h + mlp(ln2(h))


def test_pre_ln_block(capsys):
    def post_ln(x, attn, mlp, ln1, ln2):
        h = ln1(x + attn(x))
        return ln2(h + mlp(h))

    def no_residual(x, attn, mlp, ln1, ln2):
        return mlp(ln2(attn(ln1(x))))

    assert_passes_right_and_names_mistake(check_pre_ln_block, pre_ln, post_ln, "post-LN", capsys)
    assert_fails(verdict(check_pre_ln_block, no_residual), "residual connections are missing")


def test_pre_ln_checker_leaves_the_global_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    check_pre_ln_block(pre_ln, verbose=False)
    torch.testing.assert_close(torch.rand(3), expected)


def counts(d, d_mlp):
    return 4 * d * d + 4 * d, 2 * d * d_mlp + d_mlp + d, 4 * d


def test_block_parameter_count(capsys):
    def no_attention_biases(d, d_mlp):
        return 4 * d * d, *counts(d, d_mlp)[1:]

    assert_passes_right_and_names_mistake(
        check_block_parameter_count, counts, no_attention_biases, "four biases", capsys
    )
    one_norm = verdict(check_block_parameter_count, lambda d, m: (*counts(d, m)[:2], 2 * d))
    assert_fails(one_norm, "4 * d_model")
    no_ffn_biases = verdict(
        check_block_parameter_count, lambda d, m: (counts(d, m)[0], 2 * d * m, 4 * d)
    )
    assert_fails(no_ffn_biases, "feed-forward: the biases are missing")
    off_by_one = verdict(check_block_parameter_count, lambda d, m: (*counts(d, m)[:2], 4 * d + 1))
    assert_fails(off_by_one, "layer norms", "too high")
    zeros = verdict(check_block_parameter_count, lambda d, m: (0, 0, 0))
    assert_fails(zeros, "placeholder")
    assert_fails(verdict(check_block_parameter_count, lambda d, m: 7), "three numbers")


def test_feed_forward_names_a_bare_product():
    bare = verdict(check_feed_forward, lambda h, W1, b1, W2, b2: h @ W1 @ W2)
    assert_fails(bare, "ReLU and both biases are missing")
