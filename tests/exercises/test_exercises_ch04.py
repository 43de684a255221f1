"""Chapter 4's checkers (also used by chapter 5) pass right answers and name each typical
mistake in attention weights and outputs."""

from __future__ import annotations

import math

import pytest
import torch
from checker_helpers import assert_fails, verdict

from transformer_lab.exercises.ch04_self_attention import check_attention, check_attention_weights
from transformer_lab.nn.attention import scaled_dot_product_attention


def attention(q, k, v, *, scale=None, dim=-1):
    """A plain attention with knobs that reproduce the usual mistakes."""
    return weights(q, k, scale=scale, dim=dim) @ v


def weights(q, k, *, scale=None, dim=-1):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    return torch.softmax(q @ k.transpose(-2, -1) * scale, dim=dim)


def test_attention_weights():
    assert verdict(check_attention_weights, lambda q, k: weights(q, k)).passed
    unscaled = verdict(check_attention_weights, lambda q, k: weights(q, k, scale=1.0))
    assert_fails(unscaled, "forgot to divide the scores by sqrt(d_k)")
    by_d = verdict(check_attention_weights, lambda q, k: weights(q, k, scale=1 / q.shape[-1]))
    assert_fails(by_d, "instead of sqrt(d_k)")
    assert_fails(verdict(check_attention_weights, lambda q, k: weights(q, k, dim=-2)), "axis")
    raw = verdict(check_attention_weights, lambda q, k: q @ k.transpose(-2, -1))
    assert_fails(raw, "skipped the softmax")
    exp = verdict(check_attention_weights, lambda q, k: torch.exp(q @ k.transpose(-2, -1)))
    assert_fails(exp, "Rows should sum to one")


def test_attention_output():
    assert verdict(check_attention, lambda q, k, v: attention(q, k, v)).passed

    def package(q, k, v):
        return scaled_dot_product_attention(q, k, v)[0]

    assert verdict(check_attention, package).passed
    forgot = verdict(check_attention, lambda q, k, v: attention(q, k, v, scale=1.0))
    assert_fails(forgot, "forgot to divide the scores by sqrt(d_k)")
    by_d = verdict(check_attention, lambda q, k, v: attention(q, k, v, scale=1 / q.shape[-1]))
    assert_fails(by_d, "divided the scores by d_k")
    times = verdict(check_attention, lambda q, k, v: attention(q, k, v, scale=q.shape[-1] ** 0.5))
    assert_fails(times, "multiplied the scores by sqrt(d_k)")
    assert_fails(verdict(check_attention, lambda q, k, v: attention(q, k, v, dim=-2)), "axis")
    assert_fails(verdict(check_attention, lambda q, k, v: weights(q, k)), "attention weights")
    transposed = verdict(check_attention, lambda q, k, v: attention(q, k, v).transpose(-2, -1))
    assert_fails(transposed, "transposed")
    both = verdict(check_attention, lambda q, k, v: (attention(q, k, v), weights(q, k)))
    assert_fails(both, "tuple of 2 items", "returns (output, weights)")
    assert_fails(verdict(check_attention, lambda q, k, v: None), "returned NoneType")
    placeholder = verdict(check_attention, lambda q, k, v: torch.zeros(*q.shape[:-1], v.shape[-1]))
    assert_fails(placeholder, "all zeros")
    nan = verdict(check_attention, lambda q, k, v: attention(q, k, v) * float("nan"))
    assert_fails(nan, "NaN")


@pytest.mark.filterwarnings("ignore:The use of `x.T`")
def test_attention_written_for_2d_only_gets_a_batch_hint():
    def two_d(q, k, v):
        return torch.softmax(q @ k.T / math.sqrt(q.shape[-1]), -1) @ v

    def wrong_dim(q, k, v):
        return attention(q, k, v, scale=1 / math.sqrt(q.shape[1]))

    assert_fails(verdict(check_attention, two_d), "k.transpose(-2, -1)")
    assert_fails(verdict(check_attention, wrong_dim), "use q.shape[-1]")
