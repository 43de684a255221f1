"""The recall race: a GPT, a GRU and an LSTM of equal size, trained alike on associative recall.

Every arm gets the same budget: ``steps`` Adam steps on batches of ``batch_size`` sequences
drawn from the same seeded stream (the same sequences, in the same order, for every arm),
a constant learning rate and gradient clipping at 1. Each arm's learning rate is its own,
chosen by :func:`choose_lr` on the validation split; accuracy is then reported on the test
split. A run records its validation accuracy every ``steps // evals`` steps
(:class:`RecallRecipe`), so that a flat end (a plateau) can be checked, not assumed::

    task = RecallTask()
    model = new_model("gru", task)
    run = train_recall(model, task, 16, RecallRecipe(lr=3e-3), Run(steps=600, seed=0))
    recall_accuracy(model, task.split("test", 16))
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from transformer_lab.checks import finite_number, instance_of, integer, one_of
from transformer_lab.data.recall import IGNORE_INDEX, RecallBatch, RecallTask
from transformer_lab.device import evaluating, seed_everything
from transformer_lab.models.recall import KINDS, RecallConfig, RecallLM, matched_width
from transformer_lab.training.loop import TrainResult, train
from transformer_lab.training.run import Run

__all__ = [
    "recall_loss",
    "recall_accuracy",
    "new_model",
    "RecallRecipe",
    "train_recall",
    "choose_lr",
    "LEARNING_RATES",
]

LEARNING_RATES = (1e-3, 3e-3, 1e-2)  # the sweep of every arm: Adam's usual range


def recall_loss(model: nn.Module, batch: RecallBatch) -> torch.Tensor:
    """Cross-entropy of the answers at the look-ups (every other position has no label)."""
    instance_of(batch, RecallBatch, "batch")
    logits = model(batch.keys, batch.values)  # [batch, pos, n_values]
    return F.cross_entropy(logits.flatten(0, 1), batch.targets.flatten(), ignore_index=IGNORE_INDEX)


def recall_accuracy(model: nn.Module, batch: RecallBatch) -> float:
    """The fraction of look-ups in ``batch`` whose most likely value is the right one."""
    instance_of(batch, RecallBatch, "batch")
    with evaluating(model), torch.no_grad():
        logits = model(batch.keys, batch.values)  # [batch, pos, n_values]
    asked = batch.targets != IGNORE_INDEX
    return float((logits[asked].argmax(-1) == batch.targets[asked]).float().mean())


def new_model(kind: str, task: RecallTask, seed: int = 0, **gpt) -> RecallLM:
    """A ``kind`` model for ``task`` built after ``seed_everything(seed)``: the GPT of
    :class:`RecallConfig`'s defaults (``gpt`` overrides its fields), or a recurrent model
    of the width whose parameter count is closest to that GPT's."""
    one_of(kind, KINDS, "kind")
    instance_of(task, RecallTask, "task")
    sizes = dict(n_keys=task.n_keys, n_values=task.n_values)
    reference = RecallConfig("gpt", **sizes, **gpt)
    if kind == "gpt":
        config = reference
    else:
        target = RecallLM(reference).num_params()
        config = RecallConfig(kind, d_model=matched_width(kind, target, **sizes), **sizes)
    seed_everything(seed)
    return RecallLM(config)


@dataclass(frozen=True)
class RecallRecipe:
    """How :func:`train_recall` trains an arm of the race: Adam at a constant ``lr`` on
    batches of ``batch_size`` sequences, the gradient norm clipped at 1, and the validation
    accuracy measured ``evals`` times over the run (the last at its end)."""

    lr: float  # Adam's learning rate, constant
    batch_size: int = 64  # sequences per step
    evals: int = 5  # validation measurements over the run

    def __post_init__(self):
        finite_number(self.lr, "lr", above=0)
        integer(self.batch_size, "batch_size", minimum=1)
        integer(self.evals, "evals", minimum=1)


def train_recall(
    model: RecallLM, task: RecallTask, n_pairs: int, recipe: RecallRecipe, run: Run
) -> TrainResult:
    """Train ``model`` with ``recipe`` on ``run.steps`` batches of the training stream of
    ``task`` with ``n_pairs`` pairs, seeded with ``run.seed`` (0 when None);
    ``result.evals`` holds ``(step, validation accuracy)`` ``recipe.evals`` times, the
    last at the end; ``result.seconds`` the wall time."""
    instance_of(model, RecallLM, "model")
    instance_of(task, RecallTask, "task")
    instance_of(recipe, RecallRecipe, "recipe")
    instance_of(run, Run, "run", "a transformer_lab.training.run.Run")
    if run.steps is None:
        raise ValueError("train_recall needs Run(steps=...)")
    steps = integer(run.steps, "run.steps", minimum=1)
    seed = 0 if run.seed is None else run.seed
    validation = task.split("validation", n_pairs, seed=seed)
    measure = run.replace(eval_every=run.eval_every or max(1, steps // recipe.evals))
    return train(
        model,
        task.batches(n_pairs, recipe.batch_size, seed=seed),
        recall_loss,
        measure.for_recipe(
            desc=f"{model.config.kind}, {n_pairs} pairs",
            eval_fn=lambda m: recall_accuracy(m, validation),
            seed=seed,
        ),
        lr=recipe.lr,
        grad_clip=1.0,
    )


def choose_lr(
    kind: str,
    task: RecallTask,
    n_pairs: int,
    *,
    steps: int,
    lrs=LEARNING_RATES,
    seed: int = 0,
    batch_size: int = 64,
) -> tuple[float, dict[float, float]]:
    """Train a fresh ``kind`` model at each rate of ``lrs`` for ``steps`` steps and return
    the rate of the best final validation accuracy (the smaller rate on a tie) and every
    rate's accuracy."""
    one_of(kind, KINDS, "kind")
    instance_of(task, RecallTask, "task")
    integer(steps, "steps", minimum=1)
    if not isinstance(lrs, (tuple, list)) or not lrs:
        raise ValueError(f"lrs must be a non-empty tuple of learning rates, got {lrs!r}")
    lrs = [finite_number(lr, "lr", above=0) for lr in lrs]
    scores = {}
    for lr in lrs:
        model = new_model(kind, task, seed=seed)
        recipe = RecallRecipe(lr=lr, batch_size=batch_size)
        run = train_recall(model, task, n_pairs, recipe, Run(steps=steps, seed=seed))
        scores[lr] = run.evals[-1][1]
    best = max(sorted(scores), key=lambda lr: scores[lr])  # max keeps the first of a tie
    return best, scores
