"""Word times from cross-attention (transformer_lab.analysis.alignment) on hand-made cases."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from transformer_lab.analysis.alignment import (
    attention_word_times,
    dtw_path,
    spread_word_times,
    timing_errors,
    token_words,
    voiced_span,
)


def brute_force_best(cost: np.ndarray) -> float:
    """The least total cost over every monotone path, by enumeration (small matrices)."""
    n, m = cost.shape
    best = np.inf
    steps = [(1, 0), (0, 1), (1, 1)]

    def walk(i, j, total):
        nonlocal best
        total += cost[i, j]
        if (i, j) == (n - 1, m - 1):
            best = min(best, total)
            return
        for di, dj in steps:
            if i + di < n and j + dj < m:
                walk(i + di, j + dj, total)

    walk(0, 0, 0.0)
    return best


@pytest.mark.parametrize("seed", range(5))
def test_dtw_path_is_monotone_and_cheapest(seed):
    rng = np.random.default_rng(seed)
    cost = rng.random((4, 6))
    rows, cols = dtw_path(torch.tensor(cost))
    assert (rows[0], cols[0]) == (0, 0) and (rows[-1], cols[-1]) == (3, 5)
    steps = set(zip(np.diff(rows), np.diff(cols), strict=True))
    assert steps <= {(1, 0), (0, 1), (1, 1)}
    assert cost[rows, cols].sum() == pytest.approx(brute_force_best(cost))


def test_token_words_groups_pieces():
    pieces = [" The", " animal", " didn", "'t", " cross", " the", " street", "."]
    words = token_words(pieces)
    assert [w for w, _ in words] == ["The", "animal", "didn't", "cross", "the", "street."]
    assert words[2][1] == [2, 3] and words[-1][1] == [6, 7]
    assert [w for w, _ in token_words(["Hello", ",", " world", "!"])] == ["Hello,", "world!"]


def test_attention_word_times_follow_a_clean_diagonal():
    # three words of one token each, attending to frames 0-9, 10-19, 20-29 of 40, and the
    # end of text to frames 30-39
    weights = torch.full((2, 4, 40), 1e-3)
    for t in range(4):
        weights[:, t, 10 * t : 10 * t + 10] = 1.0
    times = attention_word_times(weights, [" one", " two", " three"], 40, 50.0, filter_width=3)
    assert [w for w, _, _ in times] == ["one", "two", "three"]
    np.testing.assert_allclose([s for _, s, _ in times], [0.0, 0.2, 0.4], atol=0.021)
    np.testing.assert_allclose([e for _, _, e in times], [0.2, 0.4, 0.6], atol=0.021)


def test_voiced_span_and_spread():
    sr = 1000
    audio = torch.zeros(3000)
    audio[500:2500] = torch.sin(torch.arange(2000) * 0.3)
    start, end = voiced_span(audio, sr)
    assert start == pytest.approx(0.5, abs=0.011) and end == pytest.approx(2.5, abs=0.011)
    spread = spread_word_times(["ab", "abcd", "ab"], 1.0, 3.0)
    np.testing.assert_allclose([(s, e) for _, s, e in spread], [(1.0, 1.5), (1.5, 2.5), (2.5, 3.0)])


def test_timing_errors_skip_words_the_guess_missed():
    truth = [("The", 0.0, 0.2), ("cat", 0.2, 0.5), ("sat", 0.5, 0.9)]
    guess = [("the", 0.05, 0.25), ("hat", 0.25, 0.5), ("sat.", 0.45, 1.0)]
    err = timing_errors(truth, guess)
    assert err["words"] == ["The", "sat"] and (err["matched"], err["of"]) == (2, 3)
    np.testing.assert_allclose(err["start"], [0.05, -0.05])
    np.testing.assert_allclose(err["end"], [0.05, 0.1])


@pytest.mark.parametrize("n,m", list(itertools.product([1, 2], [1, 3])))
def test_dtw_small_shapes(n, m):
    rows, cols = dtw_path(torch.ones(n, m))
    assert rows[-1] == n - 1 and cols[-1] == m - 1
