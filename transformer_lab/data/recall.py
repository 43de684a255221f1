"""Multi-query associative recall: read a dictionary, then answer look-ups from it.

Each sequence opens with ``n_pairs`` dictionary entries: distinct keys drawn from
``n_keys``, each with a value drawn from ``n_values``. Then come ``n_queries`` look-ups:
keys drawn again from the entries (with repetition), and at each of them the model must
answer the value that the dictionary gave that key. It is the task of Arora et al. (2023,
"Zoology"), on which attention beats recurrent models of equal size, in a form that trains
in seconds on a CPU: each position carries two tokens side by side, a key and a value, and
a look-up carries its key and a blank value (id ``n_values``). Nothing but the context
tells the value of a key: the draw is new in every sequence, so no weight can memorise it.

A sequence of 3 entries and 2 look-ups, keys as letters, values as digits, ``_`` blank::

    keys    c  a  f  f  c
    values  7  2  4  _  _
    targets -  -  -  4  7        (- : no loss, the label IGNORE_INDEX)

Batches come from a seeded generator; the three splits draw from disjoint seeds
(``SPLIT_SEEDS``), so the validation set that chooses a learning rate and the test set that
reports accuracy are never trained on (a repeat of a whole sequence is about as likely as
drawing the same dictionary twice: negligible).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from transformer_lab.checks import IGNORE_INDEX, integer, one_of, seed_int

__all__ = ["RecallTask", "RecallBatch", "SPLIT_SEEDS", "IGNORE_INDEX"]


# the first seed of each split's generator: training batches use seed + SPLIT_SEEDS["train"]
SPLIT_SEEDS = {"train": 0, "validation": 1_000_003, "test": 2_000_003}


@dataclass
class RecallBatch:
    keys: torch.Tensor  # [batch, pos] key ids, entries then look-ups
    values: torch.Tensor  # [batch, pos] value ids; the blank id n_values at look-ups
    targets: torch.Tensor  # [batch, pos] the value to answer at look-ups, IGNORE_INDEX elsewhere

    def to(self, device) -> RecallBatch:
        return RecallBatch(self.keys.to(device), self.values.to(device), self.targets.to(device))

    def __len__(self) -> int:
        return self.keys.shape[0]

    @property
    def n_pairs(self) -> int:
        """Entries before the first look-up."""
        return int((self.targets[0] == IGNORE_INDEX).sum())


@dataclass(frozen=True)
class RecallTask:
    n_keys: int = 64  # distinct keys; a dictionary holds at most this many entries
    n_values: int = 16  # distinct values; chance accuracy is 1 / n_values

    def __post_init__(self):
        integer(self.n_keys, "n_keys", minimum=2)
        integer(self.n_values, "n_values", minimum=2)

    @property
    def blank(self) -> int:
        """The value id of a look-up position (no value given)."""
        return self.n_values

    def batch(
        self,
        n_pairs: int,
        batch_size: int,
        generator: torch.Generator,
        n_queries: int | None = None,
    ) -> RecallBatch:
        """``batch_size`` sequences of ``n_pairs`` entries and ``n_queries`` look-ups
        (default ``n_pairs``), drawn from ``generator``."""
        self._check(n_pairs)
        integer(batch_size, "batch_size", minimum=1)
        n_queries = n_pairs if n_queries is None else integer(n_queries, "n_queries", minimum=1)
        g = generator
        keys = torch.rand(batch_size, self.n_keys, generator=g).argsort(dim=1)[:, :n_pairs]
        values = torch.randint(0, self.n_values, (batch_size, n_pairs), generator=g)
        asked = torch.randint(0, n_pairs, (batch_size, n_queries), generator=g)
        blanks = torch.full((batch_size, n_queries), self.blank)
        ignored = torch.full((batch_size, n_pairs), IGNORE_INDEX)
        return RecallBatch(
            keys=torch.cat([keys, keys.gather(1, asked)], dim=1),
            values=torch.cat([values, blanks], dim=1),
            targets=torch.cat([ignored, values.gather(1, asked)], dim=1),
        )

    def batches(self, n_pairs: int, batch_size: int, seed: int = 0) -> Iterator[RecallBatch]:
        """Training batches without end, from the training split's generator."""
        self._check(n_pairs)
        generator = torch.Generator().manual_seed(seed_int(seed) + SPLIT_SEEDS["train"])
        while True:
            yield self.batch(n_pairs, batch_size, generator)

    def split(self, name: str, n_pairs: int, size: int = 512, seed: int = 0) -> RecallBatch:
        """A fixed set of ``size`` sequences of the ``"validation"`` or ``"test"`` split."""
        one_of(name, ("validation", "test"), "name")
        generator = torch.Generator().manual_seed(seed_int(seed) + SPLIT_SEEDS[name])
        return self.batch(n_pairs, size, generator)

    def _check(self, n_pairs: int) -> None:
        integer(n_pairs, "n_pairs", minimum=1)
        if n_pairs > self.n_keys:
            raise ValueError(f"n_pairs={n_pairs} is more than the task's n_keys={self.n_keys}")
