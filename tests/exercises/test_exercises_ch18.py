"""Chapter 18's checkers pass right answers and name the usual mistakes."""

from __future__ import annotations

import pytest
import torch
from checker_helpers import assert_fails, assert_passes_right_and_names_mistake, verdict

from transformer_lab.exercises.ch18_data_parallel import check_global_batch, check_ring_all_reduce
from transformer_lab.training.distributed import ring_all_reduce


def right(tensors):
    return ring_all_reduce(tensors)[0]


def mean_instead(tensors):
    total = torch.stack(tensors).sum(0)
    return [total / len(tensors) for _ in tensors]


def test_ring_all_reduce_checker(capsys):
    assert_passes_right_and_names_mistake(
        check_ring_all_reduce, right, mean_instead, "the mean, not the sum", capsys
    )
    # a plain sum is a right answer too: the checker checks results, not the algorithm
    assert verdict(check_ring_all_reduce, lambda ts: [torch.stack(ts).sum(0) for _ in ts])


@pytest.mark.parametrize(
    ("fn", "phrases"),
    [
        (lambda ts: [t.clone() for t in ts], ["still holds its own tensor"]),
        (lambda ts: torch.stack(ts).sum(0), ["returned one tensor"]),
        (lambda ts: [torch.stack(ts).sum(0)], ["list of 2 tensors"]),
        (lambda ts: [torch.stack(ts).sum(0).flatten() for _ in ts], ["should have shape"]),
        (lambda ts: [torch.stack(ts).sum(0) + 1 for _ in ts], ["not the sum", "largest"]),
    ],
)
def test_ring_all_reduce_mistakes(fn, phrases):
    assert_fails(verdict(check_ring_all_reduce, fn), *phrases)


def test_ring_all_reduce_in_place_edit_is_named():
    def in_place(ts):
        for t in ts[1:]:
            ts[0] += t
        return [ts[0].clone() for _ in ts]

    assert_fails(verdict(check_ring_all_reduce, in_place), "changed the ranks' tensors in place")


def test_global_batch_checker():
    assert check_global_batch({"per_gpu": 8, "accumulation": 2}, verbose=False)
    for answer, phrase in [
        ({"per_gpu": 512, "accumulation": 2}, "shared by the 8 GPUs"),
        ({"per_gpu": 16, "accumulation": 2}, "not 16"),
        ({"per_gpu": 8, "accumulation": 4}, "micro-batch size"),
        ({"per_gpu": 8, "accumulation": 3}, "not 3"),
        ([8, 2], "give a dict"),
        ({"per_gpu": 0, "accumulation": 0}, "placeholder"),
    ]:
        assert_fails(check_global_batch(answer, verbose=False), phrase)
    with pytest.raises(AssertionError):
        check_global_batch({"per_gpu": 1, "accumulation": 1}, strict=True, verbose=False)
