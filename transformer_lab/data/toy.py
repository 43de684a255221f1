"""Toy sequence tasks with a known answer: copy the previous token, sum the neighbours.

A position without an answer has the target ``IGNORE_INDEX`` (F.cross_entropy's
``ignore_index``, from :mod:`transformer_lab.checks`). Outside ``__all__``, the training
loop of :mod:`transformer_lab.training.toy` reads a task's batch maker with
:func:`batch_maker`, and its recipe checks the lengths with :func:`toy_lengths`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from transformer_lab.checks import IGNORE_INDEX, integer, is_int

__all__ = ["IGNORE_INDEX", "previous_token", "neighbours", "toy_batches"]


def _ids(batch: int, n: int, d_vocab: int, generator: torch.Generator | None) -> torch.Tensor:
    integer(batch, "batch", minimum=1)
    if integer(n, "n", minimum=1) < 2:
        raise ValueError(f"sequences need at least 2 tokens to have neighbours, got n={n}")
    integer(d_vocab, "d_vocab", minimum=1)
    return torch.randint(d_vocab, (batch, n), generator=generator)  # [batch, pos]


def previous_token(batch: int, n: int, d_vocab: int, generator=None):
    """Random ids ``x [batch, pos]`` and ``y [batch, pos, 1]`` with ``y[:, i] = x[:, i-1]``
    (``IGNORE_INDEX`` at position 0)."""
    x = _ids(batch, n, d_vocab, generator)
    y = torch.full_like(x, IGNORE_INDEX)
    y[:, 1:] = x[:, :-1]
    return x, y[..., None]  # [batch, pos], [batch, pos, 1]


def neighbours(batch: int, n: int, d_vocab: int, generator=None):
    """Random ids ``x [batch, pos]`` and ``y [batch, pos, 2]``: ``y[..., 0]`` the previous
    token and ``y[..., 1]`` the next one (``IGNORE_INDEX`` where there is none)."""
    x = _ids(batch, n, d_vocab, generator)
    y = torch.full((batch, n, 2), IGNORE_INDEX, dtype=torch.long)
    y[:, 1:, 0] = x[:, :-1]
    y[:, :-1, 1] = x[:, 1:]
    return x, y  # [batch, pos], [batch, pos, 2]


def toy_lengths(lengths: int | Sequence[int]) -> list[int]:
    """The sequence lengths a stream draws from: ``lengths`` (an int or a list of ints,
    each at least 2) as a list of Python ints."""
    out: list[Any]  # checked below
    if is_int(lengths):
        out = [lengths]
    elif isinstance(lengths, Sequence) and not isinstance(lengths, str):
        out = list(lengths)
    else:
        out = []
    if not out or any(not is_int(n) or n < 2 for n in out):
        raise ValueError(f"lengths must be ints >= 2, got {lengths!r}")
    return [int(n) for n in out]


TASKS: dict[str, tuple[Callable, int]] = {  # name -> (batch maker, answers per position)
    "previous_token": (previous_token, 1),
    "neighbours": (neighbours, 2),
}


def batch_maker(task: str | Callable) -> Callable:
    """The batch maker of ``task``: a name in :data:`TASKS` or a function, returned as is."""
    if callable(task):
        return task
    if task not in TASKS:
        raise ValueError(f"task must be one of {sorted(TASKS)} or a function, got {task!r}")
    return TASKS[task][0]


def toy_batches(
    task: str | Callable,
    d_vocab: int,
    *,
    batch_size: int = 64,
    lengths: int | Sequence[int] = 12,
    seed: int = 0,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """An endless stream of fresh ``(x, y)`` batches of ``task``, each with a length drawn
    from ``lengths`` (an int or a list), all from one generator seeded by ``seed``."""
    make, lengths = batch_maker(task), toy_lengths(lengths)
    generator = torch.Generator().manual_seed(seed)
    while True:
        n = lengths[int(torch.randint(len(lengths), (1,), generator=generator))]
        yield make(batch_size, n, d_vocab, generator)
