"""Checkers for chapter 17, where attention wins: recall from context.

:func:`check_entry_of` checks where a look-up's answer sits (the position the retrieving
heads should attend to); :func:`check_max_pairs` checks the counting argument for how many
entries a state of ``d`` numbers of ``bits`` bits each can hold.
"""

from __future__ import annotations

import math

import torch

from transformer_lab.data.recall import RecallTask
from transformer_lab.exercises.runner import (
    CheckResult,
    WrongAnswer,
    as_number,
    call,
    compare,
    need_tensor,
    run_check,
)

__all__ = ["check_entry_of", "check_max_pairs"]


def _entry_of(keys: torch.Tensor, n_pairs: int) -> torch.Tensor:
    """``[batch, n_queries]``: the position of the entry whose key each look-up asks for."""
    same = keys[:, n_pairs:, None] == keys[:, None, :n_pairs]  # [batch, n_queries, n_pairs]
    return same.float().argmax(-1)


def check_entry_of(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(keys, n_pairs)``: for ``keys [batch, pos]`` of a recall batch whose first
    ``n_pairs`` positions are the entries, the position ``[batch, pos - n_pairs]`` of the
    entry each look-up asks for."""
    gen = torch.Generator().manual_seed(17)

    def body():
        for n_keys, n_pairs, batch in ((8, 3, 2), (16, 6, 4), (64, 16, 3)):
            b = RecallTask(n_keys=n_keys, n_values=4).batch(n_pairs, batch, gen)
            describe = f"keys {tuple(b.keys.shape)}, n_pairs={n_pairs}"
            out = need_tensor(call(fn, (b.keys.clone(), n_pairs), describe))
            out = out.float() if not out.is_floating_point() else out  # compared as floats
            want = _entry_of(b.keys, n_pairs).float()
            mistakes = [
                ("you returned the look-ups' own positions; the answer sits at the entry "
                 "with the same key, among the first n_pairs positions",
                 torch.arange(n_pairs, b.keys.shape[1]).expand_as(want).float()),
                ("you returned the key ids; return the entries' positions",
                 b.keys[:, n_pairs:].float()),
                ("you counted positions from the look-ups; count from the first entry",
                 want - n_pairs),
                ("count positions from the first entry, starting at 0", want + n_pairs),
            ]  # fmt: skip
            compare(out, want, describe, mistakes)
        return "correct on 3 batches: each look-up reads the entry with its key."

    return run_check("check_entry_of", body, strict, verbose)


_CAPACITY = ((130, 32, 16), (64, 16, 2), (113, 8, 16), (1000, 1, 1024), (7, 3, 5))


def check_max_pairs(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(d, bits, n_values)``: the most entries whose values a state of ``d``
    numbers, each stored with ``bits`` bits, can tell apart, when each value is one of
    ``n_values`` (keys known): ``floor(d * bits / log2(n_values))``."""

    def body():
        for d, bits, n_values in _CAPACITY:
            describe = f"d={d}, bits={bits}, n_values={n_values}"
            out = call(fn, (d, bits, n_values), describe)
            got = as_number(out)
            if got is None:
                raise WrongAnswer(f"return a number of entries, got {type(out).__name__}.")
            per_value = math.log2(n_values)
            want = math.floor(d * bits / per_value)
            if got == want:
                continue
            wrong = [
                (d * bits / per_value, "a state holds whole entries: round down"),
                (math.ceil(d * bits / per_value), "round down, not up: a part of an entry "
                 "does not answer a look-up"),
                (d * bits // n_values, "a value among n_values takes log2(n_values) bits, "
                 "not n_values"),
                (d, "each number holds bits bits, not one entry"),
                (d * bits, "divide by the bits one value needs, log2(n_values)"),
            ]  # fmt: skip
            for value, message in wrong:
                if math.isclose(got, value):
                    raise WrongAnswer(f"{message} ({describe}).")
            raise WrongAnswer(
                f"expected {want} entries, got {got} ({describe}). The state has d * bits "
                "bits; each entry's value needs log2(n_values) of them."
            )
        return "correct on 5 states: floor(d * bits / log2(n_values)) entries."

    return run_check("check_max_pairs", body, strict, verbose)
