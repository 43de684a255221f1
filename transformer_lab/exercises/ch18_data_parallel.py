"""Checkers for chapter 18, data parallelism.

:func:`check_ring_all_reduce` runs the reader's ring all-reduce on a few simulated rings
and compares it with the sum (and with
:func:`transformer_lab.training.distributed.ring_all_reduce`);
:func:`check_global_batch` checks the arithmetic of splitting a global batch.
"""

from __future__ import annotations

import torch

from transformer_lab.exercises.runner import (
    CheckResult,
    WrongAnswer,
    call,
    close,
    largest_difference,
    run_check,
)
from transformer_lab.training.distributed import ring_all_reduce

__all__ = ["check_ring_all_reduce", "check_global_batch"]


def check_ring_all_reduce(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(tensors) -> list of tensors``: every rank's result must be the sum of all
    ranks' tensors, for rings of 1 to 5 ranks and tensors whose size the number of ranks
    does not divide; the inputs must not change."""

    def body():
        gen = torch.Generator().manual_seed(16)
        for n, shape in [(2, (4,)), (3, (7,)), (4, (3, 5)), (5, (11,)), (1, (6,))]:
            tensors = [torch.randn(shape, generator=gen) for _ in range(n)]
            describe = f"{n} ranks, each with a tensor of shape {shape}"
            given = [t.clone() for t in tensors]
            out = call(fn, (given,), describe)
            if not all(torch.equal(g, t) for g, t in zip(given, tensors, strict=True)):
                raise WrongAnswer(
                    f"your function changed the ranks' tensors in place ({describe}); work on "
                    "copies (t.clone()), the gradients they stand for are still needed."
                )
            if torch.is_tensor(out):
                raise WrongAnswer(
                    f"your function returned one tensor; return a list with each rank's "
                    f"result ({describe})."
                )
            if not isinstance(out, (list, tuple)) or len(out) != n:
                got = len(out) if isinstance(out, (list, tuple)) else type(out).__name__
                raise WrongAnswer(f"return a list of {n} tensors, one per rank; got {got}.")
            want, _ = ring_all_reduce(tensors)
            for r, (got, ref) in enumerate(zip(out, want, strict=True)):
                if not torch.is_tensor(got) or got.shape != ref.shape:
                    shape_got = tuple(got.shape) if torch.is_tensor(got) else type(got).__name__
                    raise WrongAnswer(
                        f"rank {r}'s result should have shape {tuple(ref.shape)}, got "
                        f"{shape_got} ({describe}); put the chunks back together and reshape."
                    )
                if close(got, ref):
                    continue
                if n > 1 and close(got, tensors[r]):
                    raise WrongAnswer(
                        f"rank {r} still holds its own tensor ({describe}): nothing was added."
                    )
                if n > 1 and close(got, ref / n):
                    raise WrongAnswer(
                        f"rank {r} holds the mean, not the sum ({describe}); an all-reduce "
                        "sums (DDP divides by the number of ranks afterwards)."
                    )
                raise WrongAnswer(
                    f"rank {r}'s result is not the sum of all ranks' tensors ({describe}): "
                    f"{largest_difference(got, ref)}. Check which chunk each rank passes on at "
                    "each step, and that the all-gather steps copy rather than add."
                )
        return "correct: every rank ends with the sum, for rings of 1 to 5 ranks."

    return run_check("check_ring_all_reduce", body, strict, verbose)


def check_global_batch(answer, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``answer = {"per_gpu": ..., "accumulation": ...}``: the ``gpu`` preset's global
    batch of 64 sequences on 8 GPUs (sequences per GPU per step), and, when one GPU holds
    only 4 sequences at a time, how many micro-batches each GPU must accumulate before the
    optimizer steps so that the global batch stays 64."""

    def body():
        if not isinstance(answer, dict) or not {"per_gpu", "accumulation"} <= answer.keys():
            raise WrongAnswer('give a dict {"per_gpu": ..., "accumulation": ...}.')
        per_gpu, accumulation = answer["per_gpu"], answer["accumulation"]
        if not per_gpu and not accumulation:
            raise WrongAnswer("both numbers are 0; is it still the placeholder?")
        if per_gpu == 512:
            raise WrongAnswer(
                "64 x 8 is what each GPU would hold if 64 were the batch per GPU; here 64 is "
                "the global batch, shared by the 8 GPUs."
            )
        if per_gpu != 64 // 8:
            raise WrongAnswer(f"not {per_gpu}: the global batch is per GPU batch x GPUs.")
        if accumulation == 4:
            raise WrongAnswer(
                "4 is the micro-batch size; how many micro-batches of 4 make one GPU's share?"
            )
        if accumulation != (64 // 8) // 4:
            raise WrongAnswer(
                f"not {accumulation}: each GPU's share of {64 // 8} sequences comes in "
                "micro-batches of 4."
            )
        return "correct: 8 sequences per GPU, in 2 micro-batches of 4 whose gradients add up."

    return run_check("check_global_batch", body, strict, verbose)
