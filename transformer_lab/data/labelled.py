"""A class-balanced draw of labelled examples, shared by the genre and topic tasks
(:func:`transformer_lab.data.genres.sample_labelled`,
:func:`transformer_lab.data.topics.sample_labelled`, which check their own arguments
through it and are the public names)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from transformer_lab.checks import integer, is_int

__all__: list[str] = []


def balanced_draw(
    pool, n: int, seed: int, *, item: type, classes: Sequence[str], source: str, kind: str
) -> tuple[list[str], list[int]]:
    """``n`` examples of type ``item`` from ``pool``, ``n / len(classes)`` of each label,
    drawn with ``seed`` and shuffled: ``(texts, labels)``. Each label's order depends on
    ``seed`` and the label only, so different ``n`` with one seed give nested draws.
    ``source`` names where a pool comes from and ``kind`` the examples, for the messages
    (``"genre_task().train"``, ``"passages"``)."""
    if isinstance(classes, str) or not isinstance(classes, (tuple, list)) or not classes:
        raise ValueError(f"classes must be a non-empty list of label names, got {classes!r}")
    if not is_int(n) or n <= 0 or n % len(classes):
        raise ValueError(f"n must be a positive multiple of {len(classes)}, got {n!r}")
    seed = integer(seed, "seed")
    name = f"{item.__name__}s"
    if isinstance(pool, str) or not isinstance(pool, (tuple, list)):
        raise TypeError(f"pool must be a list or tuple of {name}, got {type(pool).__name__}")
    if not all(isinstance(x, item) for x in pool):
        raise TypeError(f"pool must hold {name} only (as in {source})")
    per = int(n) // len(classes)
    chosen: list[Any] = []  # items of the class ``item``
    for label in range(len(classes)):
        of_label = [x for x in pool if x.label == label]
        if len(of_label) < per:
            raise ValueError(f"the pool has {len(of_label)} {classes[label]} {kind}, need {per}")
        order = random.Random(f"{seed}-{label}").sample(range(len(of_label)), len(of_label))
        chosen.extend(of_label[i] for i in order[:per])
    random.Random(seed).shuffle(chosen)
    return [x.text for x in chosen], [x.label for x in chosen]
