"""A right answer is right whether it comes as a Python number, a NumPy scalar
(``np.int64``, ``np.float32``), a 0-d or one-element array, or a one-element tensor; a
``bool``, a string or several numbers stay wrong."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from checker_helpers import assert_fails, verdict
from test_exercises_ch05 import solve_half_temperature

from transformer_lab.exercises import (
    check_block_parameter_count,
    check_global_batch,
    check_gru_chain,
    check_half_weight_temperature,
    check_kv_cache_bytes,
    check_majority_baseline,
    check_nucleus,
    check_score_divisor,
)
from transformer_lab.exercises.ch15_fine_tuning import majority_baseline
from transformer_lab.exercises.runner import as_number
from transformer_lab.generation.sampling import next_token_probs

WRAPPERS = {
    "np.int64 / np.float64": lambda x: np.int64(x) if isinstance(x, int) else np.float64(x),
    "np.float32": np.float32,
    "0-d array": np.array,
    "one-element array": lambda x: np.array([x]),
    "one-element tensor": lambda x: torch.tensor([x]),
}


@pytest.mark.parametrize("wrap", WRAPPERS.values(), ids=WRAPPERS)
def test_numeric_checkers_accept_numpy_numbers(wrap):
    assert verdict(check_gru_chain, lambda n, n_layers: wrap(n_layers * n)).passed
    divisor = verdict(check_score_divisor, lambda s, d: wrap(s**2 * math.sqrt(d)))
    assert divisor.passed, divisor.message
    T = solve_half_temperature()
    assert verdict(check_half_weight_temperature, wrap(T)).passed
    per_head = 2 * 4  # keys and values, float32
    assert verdict(
        check_kv_cache_bytes,
        lambda c, n, b: wrap(per_head * c.n_layers * c.n_kv_heads * c.d_head * n * b),
    ).passed
    assert verdict(check_majority_baseline, lambda tr, te: wrap(majority_baseline(tr, te))).passed
    counts = verdict(
        check_block_parameter_count,
        lambda d, m: tuple(map(wrap, (4 * d * d + 4 * d, 2 * d * m + m + d, 4 * d))),
    )
    assert counts.passed, counts.message


def test_answers_given_as_numpy_values():
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05]).log()
    nucleus = {p: np.float32(next_token_probs(probs, top_p=p).numpy()) for p in (0.4, 0.7, 0.9)}
    assert check_nucleus(nucleus, verbose=False).passed
    assert check_global_batch({"per_gpu": np.int64(8), "accumulation": np.int64(2)}, verbose=False)


@pytest.mark.parametrize("bad", [True, np.bool_(True), "3", np.array([1, 2]), None])
def test_what_is_not_one_number_is_still_refused(bad):
    assert as_number(bad) is None
    assert_fails(verdict(check_gru_chain, lambda n, n_layers: bad), "whole number")
    assert_fails(verdict(check_majority_baseline, lambda tr, te: bad), "return one number")


def test_a_fractional_count_is_not_truncated_into_a_right_one():
    def almost(d, m):
        return 4 * d * d + 4 * d + 0.5, 2 * d * m + m + d, 4 * d

    assert_fails(verdict(check_block_parameter_count, almost), "whole numbers")
    assert_fails(verdict(check_gru_chain, lambda n, n_layers: np.float32(n_layers * n + 0.5)))
