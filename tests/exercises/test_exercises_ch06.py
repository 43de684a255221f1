"""Chapter 6's checkers (masked attention is also used by chapter 13) pass right answers and
name each typical mistake in masks and masked attention."""

from __future__ import annotations

import math

import torch
from checker_helpers import assert_fails, verdict

from transformer_lab.exercises.ch06_masking import (
    check_causal_mask,
    check_masked_attention,
    check_padding_mask,
)
from transformer_lab.nn.attention import scaled_dot_product_attention


def attention(q, k, v, mask=None, *, scale=None, fill=float("-inf")):
    """A plain masked attention with knobs that reproduce the usual mistakes."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, fill)
    return torch.softmax(scores, dim=-1) @ v


def weights(q, k):
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)


def test_masked_attention_correct_versions():
    def with_inf(q, k, v, mask):
        return attention(q, k, v, mask)

    result = verdict(check_masked_attention, with_inf)
    assert result.passed and "NaN" in result.message  # noted, not failed
    strict_rows = verdict(check_masked_attention, with_inf, fully_masked_rows=True)
    assert_fails(strict_rows, "all masked", "NaN")

    def package(q, k, v, mask):
        return scaled_dot_product_attention(q, k, v, mask)[0]

    result = verdict(check_masked_attention, package, fully_masked_rows=True)
    assert result.passed and "gets zeros" in result.message

    def renormalised(q, k, v, mask):  # zeroing after the softmax and renormalising is fine
        w = weights(q, k) * mask
        return w / w.sum(-1, keepdim=True) @ v

    assert verdict(check_masked_attention, renormalised).passed


def test_masked_attention_mistakes():
    def check(fn):
        return verdict(check_masked_attention, fn)

    assert_fails(check(lambda q, k, v, m: attention(q, k, v, ~m)), "wrong way round")
    assert_fails(check(lambda q, k, v, m: attention(q, k, v)), "no effect")
    assert_fails(check(lambda q, k, v, m: attention(q, k, v, m, scale=1.0)), "sqrt(d_k)")
    assert_fails(check(lambda q, k, v, m: (weights(q, k) * m) @ v), "after the softmax")

    def multiplied(q, k, v, m):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) * m
        return torch.softmax(scores, -1) @ v

    assert_fails(check(multiplied), "multiplied the scores by the mask")
    assert_fails(check(lambda q, k, v, m: attention(q, k, v, m, fill=-1e9)), "-1e9", "float16")


def test_masked_attention_with_finite_fill_is_noted_on_fully_masked_rows():
    def finite_fill(q, k, v, mask):  # survives float16 (the product overflows to -inf there)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) + (~mask) * -1e9
        return torch.softmax(scores, dim=-1) @ v

    result = verdict(check_masked_attention, finite_fill)
    assert result.passed and "plain average of the values" in result.message
    strict_rows = verdict(check_masked_attention, finite_fill, fully_masked_rows=True)
    assert_fails(strict_rows, "plain average")


def test_causal_mask():
    def good(n):
        return torch.ones(n, n, dtype=torch.bool).tril()

    assert verdict(check_causal_mask, good).passed
    assert_fails(verdict(check_causal_mask, lambda n: ~good(n)), "PyTorch's convention")
    assert_fails(verdict(check_causal_mask, lambda n: good(n).tril(-1)), "diagonal")
    assert_fails(verdict(check_causal_mask, lambda n: good(n).T), "triu")
    assert_fails(verdict(check_causal_mask, lambda n: good(n).float()), "dtype torch.float32")

    def additive(n):
        return torch.zeros(n, n).masked_fill(~good(n), float("-inf"))

    assert_fails(verdict(check_causal_mask, additive), "additive")
    assert_fails(verdict(check_causal_mask, lambda n: good(n + 1)), "expected (5, 5)")


def test_padding_mask():
    def good(lengths, max_len):
        return (torch.arange(max_len) < lengths[:, None])[:, None, None, :]

    assert verdict(check_padding_mask, good).passed
    flat = verdict(check_padding_mask, lambda lengths, n: good(lengths, n)[:, 0, 0])
    assert_fails(flat, "mask[:, None, None, :]")
    assert_fails(verdict(check_padding_mask, lambda lengths, n: ~good(lengths, n)), "padding")

    def off_by_one(lengths, max_len):
        return (torch.arange(max_len) <= lengths[:, None])[:, None, None, :]

    assert_fails(verdict(check_padding_mask, off_by_one), "one position too many")

    def longest(lengths, max_len):
        return good(lengths, int(lengths.max()))

    assert_fails(verdict(check_padding_mask, longest), "max_len")
