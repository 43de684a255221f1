"""Chapter 12's checkers pass the package's answers and name the usual mistakes."""

from __future__ import annotations

import pytest
import torch
from checker_helpers import assert_fails, verdict

from transformer_lab.analysis import head_patterns
from transformer_lab.exercises.ch12_bert import (
    bag_of_words_score,
    check_bag_of_words_score,
    check_mask_counts,
    check_mean_pool,
    check_previous_token_score,
    mask_counts,
    previous_token_score,
)
from transformer_lab.nn.pooling import mean_pool


def test_previous_token_score_reference():
    pattern = torch.zeros(2, 4, 4)
    pattern[0, 1, 0] = pattern[0, 2, 1] = pattern[0, 3, 2] = 1.0
    pattern[1, 1, 0] = 0.5
    torch.testing.assert_close(previous_token_score(pattern), torch.tensor([1.0, 0.5 / 3]))


def test_previous_token_checker(capsys):
    assert check_previous_token_score(previous_token_score)
    assert "✓ check_previous_token_score" in capsys.readouterr().out

    def loop(p):
        n = p.shape[1]
        return torch.stack(
            [sum(p[h, i, i - 1] for i in range(1, n)) / (n - 1) for h in range(len(p))]
        )

    assert verdict(check_previous_token_score, loop)
    cases = {
        "NEXT": lambda p: p.diagonal(offset=1, dim1=-2, dim2=-1).mean(-1),
        "divided by pos": lambda p: p.diagonal(offset=-1, dim1=-2, dim2=-1).sum(-1) / p.shape[-1],
        "summed": lambda p: p.diagonal(offset=-1, dim1=-2, dim2=-1).sum(-1),
        "itself": lambda p: p.diagonal(dim1=-2, dim2=-1).mean(-1),
        "raised": lambda p: 1 / 0,
        "returned float": lambda p: 0.5,
    }
    for words, fn in cases.items():
        assert_fails(verdict(check_previous_token_score, fn), words)
    with pytest.raises(AssertionError):
        check_previous_token_score(cases["NEXT"], strict=True, verbose=False)


def test_mean_pool_checker():
    assert verdict(check_mean_pool, mean_pool)
    cases = {
        "over padding": lambda h, m: h.mean(1),
        "divided by pos": lambda h, m: (h * m[..., None]).sum(1) / h.shape[1],
        "summed": lambda h, m: (h * m[..., None]).sum(1),
        "[CLS]": lambda h, m: h[:, 0],
        "shape": lambda h, m: h.mean(),
    }
    for words, fn in cases.items():
        assert_fails(verdict(check_mean_pool, fn), words)


def test_bag_of_words_score_agrees_with_the_package():
    torch.manual_seed(0)
    pattern = torch.softmax(torch.randn(3, 7, 7) * 2, -1)  # [n_heads, pos, pos]
    tokens = ["[CLS]", "a", "b", "c", "d", "e", "[SEP]"]
    want = head_patterns.bag_of_words_scores([pattern[None]], tokens)[0]  # [n_heads]
    torch.testing.assert_close(bag_of_words_score(pattern), torch.tensor(want, dtype=torch.float32))
    even = torch.zeros(1, 5, 5)
    even[:, :, 1:4] = 1 / 3  # every query spread evenly over the 3 sentence tokens
    torch.testing.assert_close(bag_of_words_score(even), torch.tensor([1.0]))


def test_bag_of_words_checker():
    assert verdict(check_bag_of_words_score, bag_of_words_score)
    cases = {
        "1/pos": lambda p: p.clamp(max=1 / p.shape[-1]).sum(-1).mean(-1),
        "kept [CLS]": lambda p: p.clamp(max=1 / (p.shape[-1] - 2)).sum(-1).mean(-1),
        "without capping": lambda p: p[:, 1:-1, 1:-1].sum(-1).mean(-1),
        "average them": lambda p: p[:, 1:-1, 1:-1].clamp(max=1 / (p.shape[-1] - 2)).sum((-1, -2)),
        "returned float": lambda p: 0.5,
    }
    for words, fn in cases.items():
        assert_fails(verdict(check_bag_of_words_score, fn), words)


def test_mask_counts_and_its_checker():
    torch.testing.assert_close(
        mask_counts(4096), torch.tensor([614.4, 491.52, 61.44, 61.44], dtype=torch.float64)
    )
    assert verdict(check_mask_counts, mask_counts)
    assert verdict(
        check_mask_counts, lambda n, p: torch.tensor([n * p, 0.8 * n * p, 0.1 * n * p, 0.1 * n * p])
    )
    cases = {
        "shares of the picked": lambda n, p: torch.tensor([n * p, 0.8 * n, 0.1 * n, 0.1 * n]),
        "0.15 where mask_prob": lambda n, p: mask_counts(n),
        "the order": lambda n, p: mask_counts(n, p)[[1, 0, 2, 3]],
        "returned list": lambda n, p: [1, 2, 3, 4],
    }
    for words, fn in cases.items():
        assert_fails(verdict(check_mask_counts, fn), words)
