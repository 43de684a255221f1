"""Chapter 12's checkers pass the package's answers and name the usual mistakes."""

from __future__ import annotations

import pytest
import torch
from checker_helpers import assert_fails, verdict

from transformer_lab.exercises.ch12_bert import (
    check_mean_pool,
    check_previous_token_score,
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
