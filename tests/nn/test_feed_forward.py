"""FeedForward against two ``nn.Linear`` layers (position-wise, bad inputs) and SwiGLU
against the formula written with nn.Linear and F.silu."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transformer_lab.nn.feed_forward import FeedForward, SwiGLU

F32 = dict(atol=1e-5, rtol=1e-5)


def test_equals_linear_layers():
    torch.manual_seed(0)
    ours = SwiGLU(6, 10)
    gate, up, down = (
        nn.Linear(6, 10, bias=False),
        nn.Linear(6, 10, bias=False),
        nn.Linear(10, 6, bias=False),
    )
    with torch.no_grad():
        gate.weight.copy_(ours.W_gate.T)
        up.weight.copy_(ours.W_up.T)
        down.weight.copy_(ours.W_down.T)
    h = torch.randn(2, 5, 6)
    ref = down(F.silu(gate(h)) * up(h))
    torch.testing.assert_close(ours(h), ref, atol=1e-6, rtol=1e-5)


def test_silu_gate_closes_for_very_negative_gate():
    m = SwiGLU(2, 3)
    with torch.no_grad():
        m.W_gate.fill_(-100.0)
    assert ours_small(m(torch.ones(1, 2)))


def ours_small(y):
    return bool((y.abs() < 1e-20).all())


def test_parameter_count_is_three_matrices():
    m = SwiGLU(576, 1536)
    assert sum(p.numel() for p in m.parameters()) == 3 * 576 * 1536


@pytest.mark.parametrize(
    "thunk, error, fragment",
    [
        (lambda: SwiGLU(0, 4), ValueError, "d_model"),
        (lambda: SwiGLU(4, 2.5), TypeError, "d_mlp must be an int, got float"),
        (lambda: SwiGLU(4, 8)(torch.ones(2, 5)), ValueError, "d_model=4"),
        (lambda: SwiGLU(4, 8)(torch.ones(2, 4, dtype=torch.long)), TypeError, "floating"),
    ],
)
def test_bad_inputs(thunk, error, fragment):
    with pytest.raises(error, match=fragment):
        thunk()


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh"])
def test_feed_forward_matches_two_linear_layers(activation):
    torch.manual_seed(0)
    linear1, linear2 = nn.Linear(6, 10), nn.Linear(10, 6)
    act = {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda h: F.gelu(h, approximate="tanh")}
    ff = FeedForward(6, 10, activation).load_linear(linear1, linear2)
    x = torch.randn(2, 5, 6)
    torch.testing.assert_close(ff(x), linear2(act[activation](linear1(x))), **F32)


def test_feed_forward_is_position_wise():
    ff = FeedForward(4, 8)
    x = torch.randn(1, 5, 4)
    torch.testing.assert_close(ff(x)[:, 2], ff(x[:, 2:3])[:, 0], **F32)


def test_feed_forward_bad_input():
    with pytest.raises(ValueError, match=r"activation must be one of .*got 'tanh'"):
        FeedForward(4, 8, activation="tanh")
    with pytest.raises(ValueError, match=r"d_mlp must be a positive int, got 0"):
        FeedForward(4, 0)
