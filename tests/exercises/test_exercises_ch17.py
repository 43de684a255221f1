"""Chapter 17's checkers pass right answers and name the usual mistakes."""

from __future__ import annotations

import math

import pytest
from checker_helpers import assert_fails

from transformer_lab.exercises.ch17_recall import check_entry_of, check_max_pairs


def right_entry_of(keys, n_pairs):
    return (keys[:, n_pairs:, None] == keys[:, None, :n_pairs]).int().argmax(-1)


def right_max_pairs(d, bits, n_values):
    return math.floor(d * bits / math.log2(n_values))


def test_right_answers_pass(capsys):
    assert check_entry_of(right_entry_of)
    assert check_max_pairs(right_max_pairs)
    assert "check_max_pairs" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("fn", "phrases"),
    [
        (lambda k, n: right_entry_of(k, n) + n, ["positions"]),
        (lambda k, n: k[:, n:], ["key ids"]),
        (lambda k, n: "x", ["tensor"]),
    ],
)
def test_wrong_entry_of_is_named(fn, phrases):
    assert_fails(check_entry_of(fn, verbose=False), *phrases)


@pytest.mark.parametrize(
    ("fn", "phrases"),
    [
        (lambda d, b, v: d * b / math.log2(v), ["round down"]),
        (lambda d, b, v: d * b // v, ["log2(n_values) bits"]),
        (lambda d, b, v: d * b, ["divide"]),
        (lambda d, b, v: None, ["return a number"]),
    ],
)
def test_wrong_max_pairs_is_named(fn, phrases):
    assert_fails(check_max_pairs(fn, verbose=False), *phrases)
