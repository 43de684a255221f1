"""How a training run goes, apart from what it trains: one :class:`Run`.

:func:`~transformer_lab.training.loop.train` takes the model, the batches, the loss and the
optimization, and one ``Run`` for the rest: where the call stops, the seed, the device and
threads, the progress line, what is measured along the way, and where the run is saved and
resumed from. Every recipe built on it (``train_gpt``, ``train_classifier``, ``train_lora``,
``train_toy``, ``train_recall``, the BERT pretraining recipes) takes the model, the data,
its optimization as one frozen dataclass (``TrainRecipe``, ``ClassifierRecipe``,
``LoraRecipe``, ``ToyRecipe``, ``RecallRecipe``, ...) and one ``Run``::

    from transformer_lab.training.loop import train
    from transformer_lab.training.run import Run

    result = train(model, batches, loss_fn, Run(steps=400, seed=0), lr=5e-3)
    result = train(model, batches, loss_fn, Run(steps=400, seed=0, eval_fn=score,
                                                eval_every=50, progress=True), lr=5e-3)

A ``Run`` is a frozen dataclass: ``run.replace(steps=800)`` gives a copy with one setting
changed (``dataclasses.replace``). Its settings are checked when it is made, so a bad value
fails before the model or data are built.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass

import torch

from transformer_lab.checks import finite_number, instance_of, integer, is_int, seed_int
from transformer_lab.device import check_device
from transformer_lab.training.checkpoint import check_plain

__all__ = ["Run"]


@dataclass(frozen=True)
class Run:
    """Where a training call stops, where it runs, what it measures and where it is saved.

    Attributes:
        steps: stop after this many optimizer steps, counted from the run's start (a
            resumed run goes on to this step; one saved past it is refused). A recipe with
            a schedule of its own length (``TrainRecipe.steps``, ...) stops at the
            schedule's end when this is None.
        seconds: stop once this much wall time has passed (checked after every step).
        seed: seed every generator first (dropout, shuffles drawn inside the loop). The
            model's initial weights come from the seed set before it was built.
        device: move the model and batches here; None keeps the model's device.
        threads: CPU threads for the loop (see :func:`~transformer_lab.device.num_threads`);
            None keeps the current setting.
        progress: show one progress line (tqdm on stderr, updated in place in a notebook).
        desc: the progress line's label.
        eval_fn: ``eval_fn(model) -> float``, run every ``eval_every`` steps and at the end
            (under ``torch.no_grad`` and in eval mode); results in the result's ``.evals``.
        eval_every: how often to run ``eval_fn``. A recipe with a measurement of its own
            (a held-out accuracy) runs that one when ``eval_fn`` is None.
        checkpoint: a file to save the run in, every ``checkpoint_every`` steps and at the end.
        checkpoint_every: how often to save.
        resume: continue the run saved in ``checkpoint``, which must have been saved with
            the same settings (see :mod:`transformer_lab.training.checkpoint`).
        config: further plain values that determine the run (a recipe, the data's name...),
            saved in the checkpoint and compared on resume.
    """

    steps: int | None = None
    seconds: float | None = None
    seed: int | None = None
    device: torch.device | str | None = None
    threads: int | None = None
    progress: bool = False
    desc: str = "training"
    eval_fn: Callable[[torch.nn.Module], float] | None = None
    eval_every: int | None = None
    checkpoint: str | os.PathLike | None = None
    checkpoint_every: int | None = None
    resume: bool = False
    config: dict | None = None

    def __post_init__(self):
        if self.steps is not None:
            integer(self.steps, "steps", minimum=0)
        if self.seconds is not None:
            finite_number(self.seconds, "seconds", above=0)
        if self.seed is not None:
            seed_int(self.seed)
        if self.device is not None:
            check_device(self.device)
        if self.threads is not None:
            integer(self.threads, "threads", minimum=1)
        for name in ("progress", "resume"):
            instance_of(getattr(self, name), bool, name, "True or False")
        instance_of(self.desc, str, "desc", "a label")
        if self.eval_fn is not None and not callable(self.eval_fn):
            raise TypeError(f"eval_fn must be a function (model) -> float, got {self.eval_fn!r}")
        if self.eval_every is not None:
            integer(self.eval_every, "eval_every", minimum=1)
        if self.checkpoint is not None:
            instance_of(self.checkpoint, (str, os.PathLike), "checkpoint", "a file path")
        every = self.checkpoint_every
        if every is not None and (self.checkpoint is None or not is_int(every) or every <= 0):
            raise ValueError("checkpoint_every needs a checkpoint path and must be a positive int")
        if self.resume and self.checkpoint is None:
            raise ValueError("resume=True needs the checkpoint path to resume from")
        if self.config is not None:
            instance_of(self.config, dict, "config", "a dict of plain values")
            check_plain(self.config, "config")

    def replace(self, **changes) -> Run:
        """A copy of this run with ``changes`` (checked like a new one)."""
        return dataclasses.replace(self, **changes)

    def stop_in(self, schedule: int) -> int:
        """Where this run stops in a recipe whose learning-rate schedule spans ``schedule``
        steps: at ``steps``, or at the schedule's end when ``steps`` is None."""
        if self.steps is None:
            return schedule
        if not 0 < self.steps <= schedule:
            raise ValueError(
                f"run.steps must be in [1, {schedule}] (the recipe's schedule), got {self.steps}"
            )
        return self.steps

    def for_recipe(self, *, desc: str, eval_fn=None, seed: int | None = None) -> Run:
        """This run as a recipe hands it to the loop: the recipe's label unless the caller
        named one, the recipe's measurement unless the caller gave one (only when
        ``eval_every`` asks for one), and ``seed`` where the caller left it None."""
        return self.replace(
            desc=desc if self.desc == Run.desc else self.desc,
            eval_fn=self.eval_fn or (eval_fn if self.eval_every else None),
            seed=seed if self.seed is None else self.seed,
        )
