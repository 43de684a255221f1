"""Toy sequence tasks and the tiny encoder-only model that solves them.

The Transformer chapters test one component at a time on tasks small enough to train in a
second or two on a CPU:

* :func:`previous_token`: at every position, name the token one place to the left. The
  answer depends on *order*, so a model without positions cannot learn it.
* :func:`neighbours`: name both the previous and the next token (two answers per
  position). Two heads can split the work, one looking left and one looking right.

Each task returns ``(x, y)``: token ids ``x [batch, pos]`` and targets ``y [batch, pos,
n_answers]`` with :data:`~transformer_lab.checks.IGNORE_INDEX` where a position has no
answer (the first token has no left neighbour). :class:`TinyTransformer` maps ids to logits
``[batch, pos, n_answers, d_vocab]``; :func:`train_toy` fits it on fresh random batches with
the book's training loop, as a :class:`ToyRecipe` says.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from transformer_lab.checks import IGNORE_INDEX, check_labels, finite_number, instance_of, integer
from transformer_lab.data.toy import batch_maker, toy_batches, toy_lengths
from transformer_lab.device import num_threads
from transformer_lab.models.toy import ToyConfig
from transformer_lab.training.loop import TrainResult, train
from transformer_lab.training.run import Run

__all__ = ["toy_loss", "ToyRecipe", "train_toy", "position_accuracy"]


def _check_toy_model(model) -> None:
    if not isinstance(model, nn.Module) or not hasattr(model, "config"):
        raise TypeError(
            "model must be a TinyTransformer (an nn.Module with a config), "
            f"got {type(model).__name__}"
        )


def toy_loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Mean cross-entropy over every answered position of a batch ``(x, y)``."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise TypeError(f"batch must be a pair (x, y), got {type(batch).__name__}")
    x, y = batch
    logits = model(x)  # [batch, pos, n_answers, d_vocab]
    if not isinstance(y, torch.Tensor) or y.shape != logits.shape[:-1]:
        got = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
        raise ValueError(
            f"targets y must be [batch, pos, n_answers]={tuple(logits.shape[:-1])}, got {got}"
        )
    check_labels(y, logits.shape[-1], ignore_index=IGNORE_INDEX)
    return F.cross_entropy(logits.flatten(0, 2), y.flatten(), ignore_index=IGNORE_INDEX)


@dataclass(frozen=True)
class ToyRecipe:
    """How :func:`train_toy` trains: Adam at ``lr`` on fresh batches of ``batch_size``
    sequences, each batch of a length drawn from ``lengths`` (an int or a list), the
    gradient norm clipped to ``grad_clip`` (None: not clipped), and the rate multiplied by
    ``lr_schedule(step)`` when given (``LambdaLR``; see
    :mod:`transformer_lab.training.schedules`)."""

    batch_size: int = 64  # sequences per step
    lengths: int | Sequence[int] = 12  # tokens per sequence: one length, or a list to draw from
    lr: float = 3e-3  # Adam's learning rate
    grad_clip: float | None = 1.0  # clip the gradient norm to this; None: no clipping
    lr_schedule: Callable[[int], float] | None = None  # step -> factor of lr; None: constant

    def __post_init__(self):
        integer(self.batch_size, "batch_size", minimum=1)
        toy_lengths(self.lengths)
        finite_number(self.lr, "lr", above=0)
        if self.grad_clip is not None:
            finite_number(self.grad_clip, "grad_clip", above=0)
        if self.lr_schedule is not None and not callable(self.lr_schedule):
            raise TypeError(
                f"lr_schedule must be a function step -> factor, got {self.lr_schedule!r}"
            )


def train_toy(
    model: nn.Module,
    task: str | Callable = "previous_token",
    recipe: ToyRecipe | None = None,
    run: Run | None = None,
) -> TrainResult:
    """Fit ``model`` with :func:`transformer_lab.training.loop.train` on fresh batches of
    ``task`` with ``recipe`` (default ``ToyRecipe()``), for ``run`` (default
    ``Run(steps=200)``). The batches come from a generator seeded with ``run.seed`` (0 when
    None). On the CPU it runs on one thread unless ``run.threads`` says otherwise: these
    models are so small that splitting each operation across threads costs more than it
    saves (see :func:`transformer_lab.device.num_threads`)."""
    _check_toy_model(model)
    recipe = ToyRecipe() if recipe is None else instance_of(recipe, ToyRecipe, "recipe")
    run = Run(steps=200) if run is None else run
    instance_of(run, Run, "run", "a transformer_lab.training.run.Run")
    batches = toy_batches(
        task,
        cast(ToyConfig, model.config).d_vocab,
        batch_size=recipe.batch_size,
        lengths=recipe.lengths,
        seed=run.seed or 0,
    )
    if run.threads is None and next(model.parameters()).device.type == "cpu":
        run = run.replace(threads=1)
    return train(
        model,
        batches,
        toy_loss,
        run,
        lr=recipe.lr,
        grad_clip=recipe.grad_clip,
        lr_schedule=recipe.lr_schedule,
    )


@torch.no_grad()
def position_accuracy(
    model: nn.Module,
    task: str | Callable = "previous_token",
    *,
    n: int = 12,
    batch_size: int = 512,
    seed: int = 1234,
    device=None,
) -> torch.Tensor:
    """Share of correct answers at each position, ``[pos, n_answers]`` (NaN where a
    position has no answer), on one fresh batch of length ``n``."""
    _check_toy_model(model)
    make = batch_maker(task)
    device = device or next(model.parameters()).device
    d_vocab = cast(ToyConfig, model.config).d_vocab
    x, y = make(batch_size, n, d_vocab, torch.Generator().manual_seed(seed))
    model.eval()
    with num_threads(1 if torch.device(device).type == "cpu" else None):
        predicted = model(x.to(device)).argmax(-1).cpu()  # [batch, pos, n_answers]
    answered = y != IGNORE_INDEX
    correct = ((predicted == y) & answered).sum(0).double()
    return correct / answered.sum(0).double()  # 0/0 = NaN where nothing is answered
