"""Chapter 13's checkers pass the package's answers and name the usual mistakes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from checker_helpers import assert_fails

from transformer_lab.exercises.ch13_gpt import check_next_token_loss, check_nucleus
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


def right_loss(logits, ids):
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())


def test_next_token_loss_passes_right_answers(capsys):
    assert check_next_token_loss(right_loss)
    assert "check_next_token_loss" in capsys.readouterr().out

    def by_hand(logits, ids):  # log-softmax, pick, average: a float, not a tensor
        logp = logits[:, :-1].log_softmax(-1).gather(-1, ids[:, 1:, None])
        return -logp.mean().item()

    assert check_next_token_loss(by_hand, verbose=False)


@pytest.mark.parametrize(
    ("wrong", "phrases"),
    [
        (lambda lg, ids: F.cross_entropy(lg.flatten(0, 1), ids.flatten()), ["own token"]),
        (
            lambda lg, ids: F.cross_entropy(lg[:, 1:].flatten(0, 1), ids[:, :-1].flatten()),
            ["wrong way"],
        ),
        (
            lambda lg, ids: F.cross_entropy(
                lg[:, :-1].flatten(0, 1), ids[:, 1:].flatten(), reduction="sum"
            ),
            ["summed"],
        ),
        (
            lambda lg, ids: -lg[:, :-1].softmax(-1).gather(-1, ids[:, 1:, None]).mean(),
            ["probabilities", "negative logarithms"],
        ),
        (
            lambda lg, ids: F.cross_entropy(
                lg[:, :-1].flatten(0, 1), ids[:, 1:].flatten(), reduction="none"
            ),
            ["shape", "one number"],
        ),
        (lambda lg, ids: 0.0, ["should be"]),
    ],
)
def test_next_token_loss_names_the_usual_slips(wrong, phrases):
    assert_fails(check_next_token_loss(wrong, verbose=False), *phrases)
    with pytest.raises(AssertionError):
        check_next_token_loss(wrong, strict=True, verbose=False)
