"""Tests of transformer_lab.analysis.sequential_depth: dependency chains, multiply-adds
and timing."""

import pytest
import torch

from transformer_lab.analysis.sequential_depth import (
    interleaved_medians,
    is_matrix_product,
    longest_chain,
    multiply_adds,
)
from transformer_lab.nn.multi_head import MultiHeadAttention

D = 16


@pytest.fixture
def layers():
    torch.manual_seed(0)
    return torch.nn.GRU(D, D, batch_first=True), MultiHeadAttention(D, n_heads=2)


def test_chain_of_a_hand_written_graph():
    w = torch.randn(3, 3, requires_grad=True)
    x = torch.randn(1, 3)
    a = x @ w  # product 1
    b = (a @ w).tanh()  # product 2, then tanh
    c = b + x @ w  # a parallel product does not lengthen the chain
    assert longest_chain(c, count=is_matrix_product) == 2
    assert longest_chain(c) == 4  # mm, mm, tanh, add


@pytest.mark.parametrize("n", [1, 2, 7, 33])
def test_gru_needs_one_product_per_step(layers, n):
    gru, _ = layers
    out = gru(torch.randn(1, n, D))[0]
    assert longest_chain(out, count=is_matrix_product) == n


def test_gru_chain_of_operations_grows_linearly(layers):
    gru, _ = layers
    chains = [longest_chain(gru(torch.randn(1, n, D))[0]) for n in (4, 8, 16)]
    assert chains[1] - chains[0] == (chains[2] - chains[1]) / 2 > 0


def test_stacked_gru_runs_layer_after_layer():
    torch.manual_seed(0)
    gru = torch.nn.GRU(D, D, num_layers=3, batch_first=True)
    for n in (1, 5, 12):
        assert longest_chain(gru(torch.randn(1, n, D))[0], count=is_matrix_product) == 3 * n


@pytest.mark.parametrize("n", [1, 8, 100])
def test_self_attention_chain_does_not_depend_on_length(layers, n):
    _, attention = layers
    out = attention(torch.randn(1, n, D))[0]
    # W_Q/W_K/W_V in one product, scores q k^T, weights @ v, W_O
    assert longest_chain(out, count=is_matrix_product) == 4
    if n > 1:  # (one length has one shape operation fewer: nothing to expand)
        assert longest_chain(out) == longest_chain(attention(torch.randn(1, 50, D))[0])


def test_long_recurrence_does_not_hit_the_recursion_limit(layers):
    gru, _ = layers
    out = gru(torch.randn(1, 600, D))[0]  # thousands of nodes deep
    assert longest_chain(out, count=is_matrix_product) == 600


def test_longest_chain_errors():
    with pytest.raises(ValueError, match="no autograd graph"):
        longest_chain(torch.randn(3))
    with pytest.raises(TypeError, match="torch.Tensor"):
        longest_chain([1.0])


def test_multiply_adds_match_the_formulas(layers):
    gru, attention = layers
    for n in (5, 40):
        x = torch.randn(1, n, D)
        assert multiply_adds(gru, x) == 6 * n * D * D
        assert multiply_adds(attention, x) == 4 * n * D * D + 2 * n * n * D


def test_interleaved_medians_runs_in_turn():
    calls = []
    fns = {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}
    times = interleaved_medians(fns, repeats=3, warmup=1)
    assert calls == ["a", "b"] * 4
    assert set(times) == {"a", "b"} and all(t >= 0 for t in times.values())


def test_interleaved_medians_calls_sync_around_each_run():
    synced = []
    interleaved_medians({"a": lambda: None}, repeats=2, warmup=0, sync=lambda: synced.append(1))
    assert len(synced) == 4


@pytest.mark.parametrize(
    "kwargs, match",
    [({"fns": {}}, "empty"), ({"repeats": 0}, "repeats"), ({"warmup": -1}, "warmup")],
)
def test_interleaved_medians_errors(kwargs, match):
    args = {"fns": {"a": lambda: None}, **kwargs}
    with pytest.raises(ValueError, match=match):
        interleaved_medians(**args)


def test_interleaved_medians_repeats_short_functions_to_last_min_time():
    clock = [0.0]  # a fake clock: each call of the function takes 1 ms
    calls = []

    def short():
        calls.append(1)
        clock[0] += 0.001

    times = interleaved_medians(
        {"short": short}, repeats=2, warmup=1, min_time=0.005, clock=lambda: clock[0]
    )
    assert len(calls) == 1 + 2 * 5  # the warmup call, then two samples of 5 calls
    assert times["short"] == pytest.approx(0.001)  # reported per call


def test_interleaved_medians_reads_the_clock_it_is_given():
    ticks = iter(range(100))
    times = interleaved_medians({"a": lambda: None}, repeats=3, warmup=0, clock=lambda: next(ticks))
    assert times == {"a": 1}  # each sample is two consecutive readings of the fake clock


def test_min_time_needs_a_warmup():
    with pytest.raises(ValueError, match="warmup"):
        interleaved_medians({"a": lambda: None}, warmup=0, min_time=0.1)
