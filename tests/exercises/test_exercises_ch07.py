"""Chapter 7's checkers pass the package's answers and name the usual mistakes."""

from __future__ import annotations

import pytest
import torch
from checker_helpers import assert_fails, assert_passes_right_and_names_mistake, verdict

from transformer_lab.exercises.ch07_positions import (
    check_shift_matrix,
    check_sinusoidal_encoding,
    shift_matrix,
)
from transformer_lab.nn.positions import sinusoidal_encoding


def test_sinusoidal_encoding(capsys):
    def transposed(n, d):
        return sinusoidal_encoding(n, d).T

    assert_passes_right_and_names_mistake(
        check_sinusoidal_encoding, sinusoidal_encoding, transposed, "transposed", capsys
    )

    def swapped(n, d):
        return sinusoidal_encoding(n, d).view(n, d // 2, 2).flip(-1).reshape(n, d)

    assert_fails(verdict(check_sinusoidal_encoding, swapped), "swapped")
    as_list = verdict(check_sinusoidal_encoding, lambda n, d: [[0.0] * d] * n)
    assert_fails(as_list, "expected a tensor")


def test_shift_matrix_checker(capsys):
    def wrong_way(k, d):
        return shift_matrix(-k, d)

    assert_passes_right_and_names_mistake(
        check_shift_matrix, shift_matrix, wrong_way, "wrong way", capsys
    )
    assert_fails(verdict(check_shift_matrix, lambda k, d: torch.eye(d)), "identity")


def test_shift_matrix_moves_positions():
    pe = sinusoidal_encoding(30, 10)
    torch.testing.assert_close(pe[:-4] @ shift_matrix(4, 10), pe[4:], atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="even"):
        shift_matrix(1, 5)
