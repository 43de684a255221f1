"""Chapter 19's checkers pass right answers and name the usual mistakes."""

from __future__ import annotations

import pytest
from checker_helpers import assert_fails, verdict

from transformer_lab.exercises.ch19_whisper import check_cache_numbers, check_frames_per_second


def test_frames_per_second_checker():
    assert verdict(check_frames_per_second, lambda rate, hop, stride: rate / hop / stride)


@pytest.mark.parametrize(
    ("fn", "phrase"),
    [
        (lambda rate, hop, stride: rate / hop, "divide by it"),
        (lambda rate, hop, stride: rate / hop * stride, "divide, not multiply"),
        (lambda rate, hop, stride: hop / rate / stride, "invert it"),
        (lambda rate, hop, stride: rate / stride, "per hop samples"),
        (lambda rate, hop, stride: 50, "expected"),
        (lambda rate, hop, stride: "50", "return a number"),
    ],
)
def test_frames_per_second_mistakes(fn, phrase):
    assert_fails(verdict(check_frames_per_second, fn), phrase)


def right(layers, d, frames, tokens):
    return 2 * layers * tokens * d, 2 * layers * frames * d


def test_cache_numbers_checker():
    assert verdict(check_cache_numbers, right)
    assert verdict(check_cache_numbers, lambda *a: list(right(*a)))


@pytest.mark.parametrize(
    ("fn", "phrase"),
    [
        (lambda layers, d, frames, tokens: right(layers, d, frames, tokens)[::-1], "swapped"),
        (lambda layers, d, frames, tokens: (layers * tokens * d, 2 * layers * frames * d),
         "keeps keys and values"),
        (lambda layers, d, frames, tokens: (2 * layers * tokens * d, 2 * frames * d),
         "times n_layers"),
        (lambda layers, d, frames, tokens: 2 * layers * tokens * d, "return a pair"),
        (lambda layers, d, frames, tokens: (1, 2), "expected"),
    ],
)  # fmt: skip
def test_cache_numbers_mistakes(fn, phrase):
    assert_fails(verdict(check_cache_numbers, fn), phrase)
