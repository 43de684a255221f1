"""Learning-rate schedules: one shape, a linear warm-up and then a decay chosen by name.

A schedule is a factor per optimizer step that multiplies the peak learning rate
(``train(lr_schedule=...)`` hands it to PyTorch's ``LambdaLR``). Every schedule of the
book is one shape, :func:`warmup_decay`::

    factor(step) = ramp(step) * decay(step)
    ramp(step)   = min(1, (step + 1) / warmup)         1/warmup, 2/warmup, ..., 1
    decay(step)  = 1 before ``start``; from ``start`` to ``end`` it falls from 1 to
                   ``floor`` along half a cosine ("cosine") or a straight line ("linear")
                   and stays at ``floor`` after ``end``

The warm-up keeps the first steps small while Adam's moment estimates are still noise; the
decay lets the last steps settle into a minimum instead of bouncing around it. The three
schedules the book trains with differ only in where the decay starts and ends:

- :func:`~transformer_lab.training.gpt.lr_factor`, the GPT recipe's (chapter 13, nanoGPT's):
  the cosine starts when the warm-up ends and reaches ``recipe.min_lr_ratio`` on the last step;
- :func:`warmup_linear`, BERT's fine-tuning schedule (chapter 15): a linear decay from the
  end of the warm-up to zero after the last step;
- :func:`warmup_cosine`, the tiny BERT's pretraining: the cosine spans the whole run,
  warm-up included, and reaches zero after the last step.

One schedule has another tail: :func:`warmup_inverse_sqrt`, the 2017 Transformer's
(Vaswani et al., section 5.3, chapter 11), keeps the linear warm-up and then falls as
``sqrt(warmup / (step + 1))``, without an end::

    factor(step) = min((step + 1) / warmup, sqrt(warmup / (step + 1)))

The paper writes the learning rate itself, ``d_model**-0.5 * min(s**-0.5, s * warmup**-1.5)``
with ``s = step + 1``; that is this factor times the peak ``d_model**-0.5 * warmup**-0.5``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from transformer_lab.checks import fraction, integer, one_of

__all__ = [
    "DECAYS",
    "warmup_decay",
    "warmup_linear",
    "warmup_cosine",
    "warmup_inverse_sqrt",
    "transformer_peak_lr",
]

DECAYS = ("cosine", "linear")


def warmup_decay(
    warmup: int, start: int, end: int, decay: str = "cosine", floor: float = 0.0
) -> Callable[[int], float]:
    """The schedule ``step -> factor`` of the shape above: a linear warm-up over ``warmup``
    steps (0: none), and a ``decay`` ("cosine" or "linear") from 1 at step ``start`` to
    ``floor`` at step ``end``. Where the two overlap (``start < warmup``) they multiply."""
    integer(warmup, "warmup", minimum=0)
    integer(start, "start", minimum=0)
    integer(end, "end", minimum=0)
    if end < start:
        raise ValueError(
            f"end must be at least start={start}: the decay runs from start to end, got end={end}"
        )
    one_of(decay, DECAYS, "decay")
    fraction(floor, "floor")
    length = max(1, end - start)

    def factor(step: int) -> float:
        integer(step, "step", minimum=0)
        ramp = min(1.0, (step + 1) / warmup) if warmup else 1.0
        if step < start:
            return ramp
        if decay == "cosine":
            progress = min(1.0, (step - start) / length)
            left = 0.5 * (1 + math.cos(math.pi * progress))
        else:
            left = max(0.0, (end - step) / length)
        return ramp * (floor + (1 - floor) * left)

    return factor


def warmup_linear(steps: int, warmup: float = 0.1) -> Callable[[int], float]:
    """BERT's fine-tuning schedule for ``train(lr_schedule=...)``: a linear warm-up over the
    first ``warmup`` share of ``steps`` (at least one step), then a linear decay to zero."""
    integer(steps, "steps", minimum=1)
    warmup = fraction(warmup, "warmup (a share of the steps)", closed=False)
    n_warm = max(1, math.ceil(warmup * steps))
    return warmup_decay(n_warm, n_warm, steps, "linear")


def warmup_cosine(steps: int, warmup: int) -> Callable[[int], float]:
    """The tiny BERT's pretraining schedule: a linear warm-up over ``warmup`` steps times
    half a cosine that spans the whole run, from 1 at step 0 to zero at ``steps``."""
    integer(steps, "steps", minimum=1)
    return warmup_decay(warmup, 0, steps, "cosine")


def warmup_inverse_sqrt(warmup: int) -> Callable[[int], float]:
    """The 2017 Transformer's schedule for ``train(lr_schedule=...)``: a linear warm-up to 1
    over ``warmup`` steps, then ``sqrt(warmup / (step + 1))``, which halves the learning rate
    every time the step count grows fourfold and never reaches zero."""
    integer(warmup, "warmup", minimum=1)

    def factor(step: int) -> float:
        integer(step, "step", minimum=0)
        s = step + 1
        return min(s / warmup, math.sqrt(warmup / s))

    return factor


def transformer_peak_lr(d_model: int, warmup: int) -> float:
    """The peak learning rate of the 2017 recipe, ``d_model**-0.5 * warmup**-0.5``: with it,
    ``lr * warmup_inverse_sqrt(warmup)(step)`` is the paper's formula (section 5.3)."""
    integer(d_model, "d_model", minimum=1)
    integer(warmup, "warmup", minimum=1)
    return (d_model * warmup) ** -0.5
