"""Positional encodings: the sinusoidal table against the lecture formula, computed here
independently with Python's ``math``, and learned absolute positions.

Tolerance: the table is computed in float64 and returned in float32, so it must agree
with the float64 formula to float32 rounding, ``atol=1e-6``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from transformer_lab.nn.positions import LearnedPositions, SinusoidalPositions, sinusoidal_encoding


def lecture_formula(n_positions: int, d_model: int) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d))."""
    table = torch.empty(n_positions, d_model, dtype=torch.float64)
    for pos in range(n_positions):
        for dim in range(d_model):
            i = dim // 2
            angle = pos / 10000 ** (2 * i / d_model)
            table[pos, dim] = math.sin(angle) if dim % 2 == 0 else math.cos(angle)
    return table


@pytest.mark.parametrize(("n_positions", "d_model"), [(1, 1), (1, 4), (50, 16), (37, 7), (10, 3)])
def test_sinusoidal_matches_the_lecture_formula(n_positions, d_model):
    pe = sinusoidal_encoding(n_positions, d_model)
    assert pe.shape == (n_positions, d_model)
    assert pe.dtype == torch.float32
    torch.testing.assert_close(
        pe.double(), lecture_formula(n_positions, d_model), atol=1e-6, rtol=0
    )


def test_sinusoidal_known_values():
    pe = sinusoidal_encoding(3, 4)
    # position 0: sin(0) = 0 on even dimensions, cos(0) = 1 on odd ones
    assert pe[0].tolist() == [0.0, 1.0, 0.0, 1.0]
    # position 1, dimension 0 and 1: sin(1), cos(1); dimensions 2 and 3: 1 / 10000^(2/4) = 0.01
    expected = [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)]
    torch.testing.assert_close(pe[1], torch.tensor(expected), atol=1e-7, rtol=0)


def test_sinusoidal_odd_d_model_ends_with_a_sine():
    pe = sinusoidal_encoding(20, 5)
    last_angle = torch.arange(20, dtype=torch.float64) / 10000 ** (4 / 5)
    torch.testing.assert_close(pe[:, 4].double(), torch.sin(last_angle), atol=1e-6, rtol=0)


def test_sinusoidal_base():
    pe = sinusoidal_encoding(5, 4, base=100.0)
    torch.testing.assert_close(pe[3, 2], torch.tensor(math.sin(3 / 100**0.5)), atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((0, 4), ValueError, r"n_positions must be a positive int, got 0"),
        ((4, -2), ValueError, r"d_model must be a positive int, got -2"),
        ((4.0, 4), TypeError, r"n_positions must be an int, got float"),
        ((4, True), TypeError, r"d_model must be an int, got bool"),
    ],
)
def test_sinusoidal_bad_input(args, error, message):
    with pytest.raises(error, match=message):
        sinusoidal_encoding(*args)


def test_sinusoidal_positions_adds_the_table():
    module = SinusoidalPositions(max_pos=16, d_model=6)
    x = torch.randn(2, 5, 6)
    torch.testing.assert_close(module(x), x + sinusoidal_encoding(16, 6)[:5])
    torch.testing.assert_close(module(x, offset=3), x + sinusoidal_encoding(16, 6)[3:8])
    assert list(module.parameters()) == []  # fixed, nothing to learn
    assert "W_pos" not in module.state_dict()  # recomputed, not saved


def test_sinusoidal_positions_past_max_pos_extends_the_formula():
    module = SinusoidalPositions(max_pos=4, d_model=6)
    x = torch.zeros(1, 9, 6)
    torch.testing.assert_close(module(x)[0], sinusoidal_encoding(9, 6))
    torch.testing.assert_close(module(x[:, :2], offset=7)[0], sinusoidal_encoding(9, 6)[7:])


def test_sinusoidal_positions_keeps_dtype():
    module = SinusoidalPositions(max_pos=8, d_model=4)
    assert module(torch.zeros(1, 3, 4, dtype=torch.float64)).dtype == torch.float64


def test_learned_positions():
    torch.manual_seed(0)
    module = LearnedPositions(max_pos=10, d_model=4)
    assert module.W_pos.shape == (10, 4) and module.W_pos.requires_grad
    x = torch.randn(3, 6, 4)
    torch.testing.assert_close(module(x), x + module.W_pos[:6])
    torch.testing.assert_close(module(x[:, :2], offset=8), x[:, :2] + module.W_pos[8:])
    module(x[:, :2], offset=1).sum().backward()
    used = module.W_pos.grad.abs().sum(-1) > 0
    assert used.tolist() == [False, True, True] + [False] * 7  # only rows 1 and 2 learn


def test_learned_positions_past_max_pos():
    module = LearnedPositions(max_pos=4, d_model=2)
    with pytest.raises(ValueError, match=r"cover 4 positions but positions 2\.\.5 were asked for"):
        module(torch.zeros(1, 4, 2), offset=2)


@pytest.mark.parametrize("cls", [SinusoidalPositions, LearnedPositions])
def test_positions_bad_input(cls):
    module = cls(8, 4)
    with pytest.raises(
        ValueError, match=r"expected x of shape \[\.\.\., pos, 4\], got \(2, 3, 5\)"
    ):
        module(torch.zeros(2, 3, 5))
    with pytest.raises(ValueError, match=r"offset must be a non-negative int, got -1"):
        module(torch.zeros(2, 3, 4), offset=-1)
    with pytest.raises(ValueError, match=r"offset must be a non-negative int, got 1.5"):
        module(torch.zeros(2, 3, 4), offset=1.5)
    x = torch.zeros(2, 3, 4)
    torch.testing.assert_close(module(x, offset=np.int64(2)), module(x, offset=2))
