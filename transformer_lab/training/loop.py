"""A small, model-agnostic training loop.

The loop knows nothing about the model: it draws batches, asks ``loss_fn(model, batch)``
for a scalar loss, steps the optimizer and records the loss::

    from transformer_lab.training.loop import train
    from transformer_lab.training.losses import seq2seq_loss

    result = train(model, data.batches("train", 64, seed=0), seq2seq_loss,
                   steps=400, lr=5e-3, seed=0)
    result.losses          # training loss at every step
    result.seconds         # wall time of the loop

It stops after ``steps`` steps, after ``seconds`` seconds of training, or when the batches
run out, whichever comes first. A fixed number of steps with fixed seeds gives the same
losses on every run on the same machine; a time budget gives as many steps as the machine
manages, which is handy on a slow or busy computer but not reproducible.

Batches go to the device with ``batch.to(device)`` when they have that method (tensors,
the data sets' ``Batch``), or element by element for tuples, lists and dicts.

Saving and resuming: with ``checkpoint=path`` the run is saved every ``checkpoint_every``
steps, if given, and when the loop ends; ``resume=True`` continues it exactly (see
:mod:`transformer_lab.training.checkpoint`). The checkpoint's folder is checked for
writing before the first step, so an unwritable path costs no training. The checkpoint
records the run's settings (model, optimizer, loss, seed, clipping, schedule, processes,
and a recipe's ``run_config``); a resume with other settings is refused with a message
naming each one that changed. ``steps`` and ``seconds`` say where this call stops, not what
the run is: a resume may go on for more steps (a schedule whose length matters belongs in
``run_config``, as :func:`~transformer_lab.training.gpt.train_gpt` puts its recipe there).

Several processes: launched by torchrun (see :mod:`transformer_lab.training.distributed`,
whose ``setup`` must have joined the process group), every process runs this same loop on
its own batches. The model is wrapped in ``DistributedDataParallel``, which averages the
gradients over the processes; the recorded losses are averages over the processes; only
rank 0 shows progress, evaluates and writes checkpoints; all processes stop at the same
step.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

from transformer_lab.checks import (
    finite_number,
    instance_of,
    is_int,
    non_negative_int,
    positive,
    positive_int,
    positive_number,
)
from transformer_lab.data.cache import check_writable
from transformer_lab.device import check_device, evaluating, num_threads, seed_everything
from transformer_lab.training import distributed
from transformer_lab.training.checkpoint import _check_plain, _resume_run, _run_settings, _save_run
from transformer_lab.training.losses import seq2seq_loss

__all__ = ["TrainResult", "to_device", "train", "evaluate"]


@dataclass
class TrainResult:
    """What a training run did."""

    losses: list[float] = field(default_factory=list)  # training loss of every step
    steps: int = 0  # optimizer steps taken
    seconds: float = 0.0  # wall time of the loop
    stopped_by: str = ""  # "steps", "seconds" or "data"
    evals: list[tuple[int, float]] = field(default_factory=list)  # (step, eval_fn value)
    first_step: int = 0  # the step this loop started from: 0, or the saved step when resumed
    step_seconds: list[float] = field(default_factory=list)  # wall time of each step
    step_cpu_seconds: list[float] = field(default_factory=list)  # this thread's CPU time of each

    def smoothed(self, window: int = 20) -> list[float]:
        """Running mean of the losses over the last ``window`` steps."""
        positive_int(window, "window")
        out, total = [], 0.0
        for i, loss in enumerate(self.losses):
            total += loss
            if i >= window:
                total -= self.losses[i - window]
            out.append(total / min(i + 1, window))
        return out


def to_device(batch, device):
    """Move a batch to ``device``: anything with ``.to``, or tuples/lists/dicts of those."""
    if isinstance(device, str):
        device = check_device(device)
    if hasattr(batch, "to"):
        return batch.to(device)
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(b, device) for b in batch)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    return batch


def _model_device(model: nn.Module) -> torch.device:
    param = next(model.parameters(), None)
    return param.device if param is not None else torch.device("cpu")


def train(
    model: nn.Module,
    batches: Iterable,
    loss_fn: Callable[[nn.Module, object], torch.Tensor] = seq2seq_loss,
    *,
    steps: int | None = None,
    seconds: float | None = None,
    lr: float = 1e-3,
    optimizer: torch.optim.Optimizer | None = None,
    lr_schedule: Callable[[int], float] | None = None,
    grad_clip: float | None = 1.0,
    device: torch.device | str | None = None,
    seed: int | None = None,
    progress: bool = True,
    desc: str = "training",
    eval_fn: Callable[[nn.Module], float] | None = None,
    eval_every: int | None = None,
    threads: int | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int | None = None,
    resume: bool = False,
    run_config: dict | None = None,
) -> TrainResult:
    """Train ``model`` on ``batches`` and return the loss history.

    Args:
        model: any ``nn.Module``; put in train mode during the loop and left in eval mode.
        batches: an iterable of batches; an endless one needs ``steps`` or ``seconds``.
        loss_fn: ``loss_fn(model, batch)`` -> scalar loss (default :func:`seq2seq_loss`).
        steps: stop after this many optimizer steps.
        seconds: stop once this much wall time has passed (checked after every step).
        lr: learning rate of the default optimizer, Adam.
        optimizer: use this optimizer instead (``lr`` is then ignored).
        lr_schedule: ``step -> factor`` multiplying the learning rate (``LambdaLR``; see
            :mod:`transformer_lab.training.schedules`).
        grad_clip: clip the gradient norm to this value; None turns clipping off.
        device: move the model and batches here; None keeps the model's device.
        seed: seed every generator first (dropout, shuffles drawn inside the loop).
            The model's initial weights come from the seed set before it was built.
        progress: show one progress line (tqdm on stderr, updated in place in a notebook);
            False for tests.
        desc: the progress bar's label.
        eval_fn: ``eval_fn(model) -> float`` run every ``eval_every`` steps and at the
            end (under ``torch.no_grad`` and in eval mode); results in ``.evals``.
        eval_every: how often to run ``eval_fn``.
        threads: CPU threads for the loop (see :func:`num_threads`); None keeps the
            current setting.
        checkpoint: a file to save the run in, every ``checkpoint_every`` steps and at the end.
        checkpoint_every: how often to save.
        resume: continue the run saved in ``checkpoint``, which must have been saved with
            the same settings (see the module's docstring).
        run_config: further plain values that determine the run (a recipe, the data's
            name...); saved in the checkpoint and compared on resume.
    """
    _check_train_args(
        model, batches, loss_fn, steps=steps, seconds=seconds, lr=lr, grad_clip=grad_clip,
        eval_fn=eval_fn, eval_every=eval_every, checkpoint=checkpoint,
        checkpoint_every=checkpoint_every, resume=resume, run_config=run_config,
    )  # fmt: skip
    with num_threads(threads):
        if seed is not None:
            seed_everything(seed)
        place = distributed.info()
        device = _place_model(model, device, place)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr) if optimizer is None else optimizer
        settings = _run_settings(
            model, optimizer, loss_fn, seed=seed, grad_clip=grad_clip, schedule=bool(lr_schedule),
            world_size=place.world_size, extra=run_config,
        ) if checkpoint is not None else None  # fmt: skip
        scheduler = LambdaLR(optimizer, lr_schedule) if lr_schedule else None
        step_fn = _loss_step(model, loss_fn, device, place)  # DDP-wrapped on several processes
        result, stream = TrainResult(), iter(batches)
        if resume:
            _resume_run(checkpoint, model, optimizer, scheduler, result, place, stream, settings)
        bar = _progress_bar(steps, desc, result.steps) if progress and place.is_main else None
        start = time.perf_counter()
        model.train()
        try:
            for batch, clocks in _batches(stream, steps, device, place, result):
                loss = _scalar(step_fn(batch))  # forward pass and loss
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if grad_clip is not None:
                    nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
                optimizer.step()
                if scheduler is not None:
                    scheduler.step()
                out_of_time = seconds is not None and time.perf_counter() - start >= seconds
                out_of_time = _record(result, loss, out_of_time, clocks, place, bar)
                if eval_every and result.steps % eval_every == 0 and place.is_main:
                    result.evals.append((result.steps, _run_eval(model, eval_fn)))
                if checkpoint_every and result.steps % checkpoint_every == 0:
                    _save_run(checkpoint, model, optimizer, scheduler, result, place, settings)
                if out_of_time:
                    result.stopped_by = "seconds"
                    break
        finally:
            if bar is not None:
                bar.close()
            model.eval()
        evaluated = result.evals and result.evals[-1][0] == result.steps
        if eval_fn is not None and place.is_main and not evaluated:
            result.evals.append((result.steps, _run_eval(model, eval_fn)))
        saved = checkpoint_every and result.steps % checkpoint_every == 0
        if checkpoint is not None and not saved:
            _save_run(checkpoint, model, optimizer, scheduler, result, place, settings)
        result.seconds = time.perf_counter() - start
        return result


def _check_train_args(
    model,
    batches,
    loss_fn,
    *,
    steps,
    seconds,
    lr,
    grad_clip,
    eval_fn,
    eval_every,
    checkpoint,
    checkpoint_every,
    resume,
    run_config,
) -> None:
    """The checks of :func:`train`'s arguments, each alone and how they go together."""
    _check_model_and_loss(model, loss_fn)
    instance_of(batches, Iterable, "batches", "an iterable of batches")
    if steps is None and seconds is None and not hasattr(batches, "__len__"):
        raise ValueError("an endless stream of batches needs steps= or seconds= to stop")
    if steps is not None:
        non_negative_int(steps, "steps")
    if seconds is not None:
        positive(seconds, "seconds")
    finite_number(lr, "lr", above=0)
    if grad_clip is not None:
        positive_number(grad_clip, "grad_clip")
    if eval_every is not None and (eval_fn is None or not is_int(eval_every) or eval_every <= 0):
        raise ValueError("eval_every needs an eval_fn and must be positive")
    if not any(p.requires_grad for p in model.parameters()):
        raise ValueError("the model has no trainable parameters")
    if checkpoint is not None:
        instance_of(checkpoint, (str, os.PathLike), "checkpoint", "a file path")
    every = checkpoint_every
    if every is not None and (checkpoint is None or not is_int(every) or every <= 0):
        raise ValueError("checkpoint_every needs a checkpoint path and must be a positive int")
    if resume and checkpoint is None:
        raise ValueError("resume=True needs the checkpoint path to resume from")
    if run_config is not None:
        instance_of(run_config, dict, "run_config", "a dict of plain values")
        _check_plain(run_config, "run_config")
    if checkpoint is not None:  # before any step: an unwritable path costs no training
        if os.path.isdir(checkpoint):
            raise ValueError(f"checkpoint must be a file path, got the folder {checkpoint}")
        check_writable(os.path.dirname(os.fspath(checkpoint)) or ".")


def _check_model_and_loss(model, loss_fn) -> None:
    instance_of(model, nn.Module, "model", "an nn.Module")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be a function (model, batch) -> loss, got {loss_fn!r}")


def _place_model(model: nn.Module, device, place: distributed.DistInfo) -> torch.device:
    """Move ``model`` to ``device`` (default: this process's device in a distributed run,
    else where the model is) and return that device."""
    if device is None:
        device = place.device if place.distributed else _model_device(model)
    device = check_device(device)
    model.to(device)
    return device


def _loss_step(model: nn.Module, loss_fn, device: torch.device, place: distributed.DistInfo):
    """``batch -> loss``. In a distributed run the loss is computed inside
    DistributedDataParallel's forward, so that any ``loss_fn`` (one calling
    ``model.some_method`` included) syncs the gradients."""
    step_fn = _LossModule(model, loss_fn)
    if place.distributed:
        ids = [device.index] if device.type == "cuda" else None
        step_fn = nn.parallel.DistributedDataParallel(step_fn, device_ids=ids)
    return step_fn


def _progress_bar(steps: int | None, desc: str, done: int):
    from transformer_lab.training.progress import progress_bar

    bar = progress_bar(total=steps, desc=desc)
    bar.update(done)
    return bar


def _batches(stream: Iterator, steps: int | None, device, place, result: TrainResult):
    """The batches of the loop, on ``device``, each with the clocks read before it was
    drawn; sets ``result.stopped_by`` to "steps", or to "data" when the stream ends (in a
    distributed run: when it ends on any process, so that all stop at the same step)."""
    result.stopped_by = "steps"
    while steps is None or result.steps < steps:
        clocks = time.perf_counter(), time.thread_time()
        batch = next(stream, _END)
        if place.distributed and _any_rank(batch is _END, device):
            batch = _END  # one rank ran out of data: all stop at this step
        if batch is _END:
            result.stopped_by = "data"
            return
        yield to_device(batch, device), clocks


def _scalar(loss: torch.Tensor) -> torch.Tensor:
    if loss.dim() != 0:
        raise ValueError(f"loss_fn must return a scalar, got shape {tuple(loss.shape)}")
    return loss


def _record(result: TrainResult, loss, out_of_time: bool, clocks, place, bar) -> bool:
    """Append the step's loss (averaged over the processes) and times to ``result`` and move
    the progress bar; return whether any process ran out of time."""
    if place.distributed:
        value, out_of_time = _mean_loss_and_any(loss, out_of_time, place.world_size)
    else:
        value = loss.item()
    if not math.isfinite(value):
        raise FloatingPointError(f"loss became {value} at step {result.steps}")
    result.losses.append(value)
    result.step_seconds.append(time.perf_counter() - clocks[0])
    result.step_cpu_seconds.append(time.thread_time() - clocks[1])
    result.steps += 1
    if bar is not None:
        bar.update(1)
        bar.set_postfix(loss=f"{value:.3f}", refresh=False)
    return out_of_time


_END = object()  # marks the end of the batches


class _LossModule(nn.Module):
    """``loss_fn(model, batch)`` as a module, so DistributedDataParallel can wrap it."""

    def __init__(self, model: nn.Module, loss_fn):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn

    def forward(self, batch):
        return self.loss_fn(self.model, batch)


def _any_rank(flag: bool, device: torch.device) -> bool:
    t = torch.tensor([float(flag)], device=device)
    torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
    return bool(t.item())


def _mean_loss_and_any(loss: torch.Tensor, flag: bool, world_size: int) -> tuple[float, bool]:
    """One all-reduce for two facts: the loss averaged over ranks, and whether any rank's
    flag is set."""
    t = torch.stack(
        [loss.detach().double(), torch.tensor(float(flag), device=loss.device).double()]
    )
    torch.distributed.all_reduce(t)
    return float(t[0]) / world_size, bool(t[1] > 0)


def _run_eval(model, eval_fn) -> float:
    with evaluating(model), torch.no_grad():
        return float(eval_fn(model))


@torch.no_grad()
def evaluate(
    model: nn.Module,
    batches: Iterable,
    loss_fn: Callable[[nn.Module, object], torch.Tensor] = seq2seq_loss,
    device: torch.device | str | None = None,
) -> float:
    """Mean of ``loss_fn`` over a finite iterable of batches, in eval mode, no gradients.
    Each batch counts in proportion to its length (``len(batch)``) when it has one."""
    _check_model_and_loss(model, loss_fn)
    device = _model_device(model) if device is None else check_device(device)
    model.eval()
    total, count = 0.0, 0
    for batch in batches:
        batch = to_device(batch, device)
        n = len(batch) if hasattr(batch, "__len__") and not isinstance(batch, (tuple, list)) else 1
        total += float(loss_fn(model, batch)) * n
        count += n
    if count == 0:
        raise ValueError("evaluate got no batches")
    return total / count
