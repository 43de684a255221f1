"""Chapter 13's checkers pass the package's answers and name the usual mistakes."""

from __future__ import annotations

import pytest
import torch
from checker_helpers import assert_fails

from transformer_lab.exercises.ch13_gpt import check_masked_attention, check_nucleus
from transformer_lab.generation.sampling import next_token_probs

PROBS = torch.tensor([0.5, 0.3, 0.15, 0.05])
RIGHT = {
    0.4: [1.0, 0, 0, 0],
    0.7: [0.625, 0.375, 0, 0],
    0.9: [0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0],
}


def with_row(p, row):
    return {**RIGHT, p: row}


def test_nucleus_right_answer_passes_and_matches_the_sampler(capsys):
    assert check_nucleus(RIGHT)
    assert "check_nucleus" in capsys.readouterr().out
    for p, row in RIGHT.items():
        torch.testing.assert_close(next_token_probs(PROBS.log(), top_p=p), torch.tensor(row))
    computed = {p: next_token_probs(PROBS.log(), top_p=p).tolist() for p in RIGHT}
    assert check_nucleus(computed, verbose=False)


@pytest.mark.parametrize(
    ("answer", "phrases"),
    [
        (with_row(0.7, [0.5, 0.3, 0, 0]), ["p = 0.7", "did not renormalise"]),
        (with_row(0.7, [1.0, 0, 0, 0]), ["p = 0.7", "stopped one token early", "at least"]),
        (with_row(0.4, [0.625, 0.375, 0, 0]), ["p = 0.4", "one token too many"]),
        (with_row(0.9, [0.5, 0.3, 0.15, 0.05]), ["p = 0.9", "one token too many"]),
        (with_row(0.4, [0.5, 0.3, 0.15, 0.05]), ["p = 0.4", "kept every token"]),
        (with_row(0.9, [0, 0, 0, 0]), ["p = 0.9", "placeholder"]),
        (with_row(0.9, [0.5, 0.5, 0, 0]), ["not yet for p = 0.9"]),
        (with_row(0.7, [0.6, 0.3, 0, 0]), ["add up to 0.900"]),
        (with_row(0.7, [0.625, 0.375]), ["four numbers; got 2"]),
        ({0.4: RIGHT[0.4], 0.7: RIGHT[0.7]}, ["no entry for p = [0.9]"]),
        ([1.0, 0, 0, 0], ["give a dict"]),
    ],
)
def test_nucleus_names_the_mistake(answer, phrases):
    assert_fails(check_nucleus(answer, verbose=False), *phrases)


def test_nucleus_strict_raises():
    with pytest.raises(AssertionError, match="renormalise"):
        check_nucleus(with_row(0.7, [0.5, 0.3, 0, 0]), strict=True, verbose=False)


def test_masked_attention_is_chapter_6s_checker():
    from transformer_lab.exercises.ch06_masking import check_masked_attention as ch06

    assert check_masked_attention is ch06
