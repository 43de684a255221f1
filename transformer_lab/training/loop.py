"""A small, model-agnostic training loop.

The loop knows nothing about the model: it draws batches, asks ``loss_fn(model, batch)``
for a scalar loss, steps the optimizer and records the loss::

    from transformer_lab.training.loop import train
    from transformer_lab.training.losses import seq2seq_loss
    from transformer_lab.training.run import Run

    result = train(model, data.batches("train", 64, seed=0), seq2seq_loss,
                   Run(steps=400, seed=0), lr=5e-3)
    result.losses          # training loss at every step
    result.seconds         # wall time of the loop

The :class:`~transformer_lab.training.run.Run` holds everything about the run that is not
the model, the data or the optimization. The loop stops after ``run.steps`` steps, after
``run.seconds`` seconds of training, or when the batches run out, whichever comes first. A
fixed number of steps with fixed seeds gives the same losses on every run on the same
machine; a time budget gives as many steps as the machine manages, which is handy on a slow
or busy computer but not reproducible.

Batches go to the device with ``batch.to(device)`` when they have that method (tensors,
the data sets' ``Batch``), or element by element for tuples, lists and dicts.

Saving and resuming: with ``Run(checkpoint=path)`` the run is saved every
``checkpoint_every`` steps, if given, and when the loop ends; ``resume=True`` continues it
exactly (see :mod:`transformer_lab.training.checkpoint`). The checkpoint's folder is checked for
writing before the first step, so an unwritable path costs no training. The checkpoint
records the run's settings (model, optimizer, loss, seed, clipping, schedule, processes,
and the run's ``config``); a resume with other settings is refused with a message
naming each one that changed. ``steps`` and ``seconds`` say where this call stops, not what
the run is: a resume may go on for more steps (a schedule whose length matters belongs in
the run's ``config``, as :func:`~transformer_lab.training.gpt.train_gpt` puts its recipe there),
but not stop before the checkpoint's step, which is refused.

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
from typing import Any

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

from transformer_lab.checks import finite_number, instance_of, integer
from transformer_lab.data.cache import check_writable
from transformer_lab.device import check_device, evaluating, num_threads, seed_everything
from transformer_lab.training import distributed
from transformer_lab.training.checkpoint import resume_run, run_settings, save_run
from transformer_lab.training.losses import seq2seq_loss
from transformer_lab.training.run import Run

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
        integer(window, "window", minimum=1)
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
    loss_fn: Callable[[Any, Any], torch.Tensor] = seq2seq_loss,
    run: Run | None = None,
    *,
    lr: float = 1e-3,
    optimizer: torch.optim.Optimizer | None = None,
    lr_schedule: Callable[[int], float] | None = None,
    grad_clip: float | None = 1.0,
) -> TrainResult:
    """Train ``model`` on ``batches`` and return the loss history.

    Args:
        model: any ``nn.Module``; put in train mode during the loop and left in eval mode.
        batches: an iterable of batches; an endless one needs ``run.steps`` or
            ``run.seconds``.
        loss_fn: ``loss_fn(model, batch)`` -> scalar loss (default :func:`seq2seq_loss`).
        run: where the loop stops, its seed, device and threads, its progress line, its
            evaluations and checkpoints (:class:`~transformer_lab.training.run.Run`; the
            default ``Run()`` goes through the batches once, quietly).
        lr: learning rate of the default optimizer, Adam.
        optimizer: use this optimizer instead (``lr`` is then ignored).
        lr_schedule: ``step -> factor`` multiplying the learning rate (``LambdaLR``; see
            :mod:`transformer_lab.training.schedules`).
        grad_clip: clip the gradient norm to this value; None turns clipping off.
    """
    run = Run() if run is None else run
    _check_train_args(model, batches, loss_fn, run, lr=lr, grad_clip=grad_clip, optimizer=optimizer)
    with num_threads(run.threads):
        if run.seed is not None:
            seed_everything(run.seed)
        place = distributed.info()
        device = _place_model(model, run.device, place)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr) if optimizer is None else optimizer
        settings = run_settings(
            model, optimizer, loss_fn, seed=run.seed, grad_clip=grad_clip,
            schedule=bool(lr_schedule), world_size=place.world_size, extra=run.config,
        ) if run.checkpoint is not None else None  # fmt: skip
        scheduler = LambdaLR(optimizer, lr_schedule) if lr_schedule else None
        step_fn = _loss_step(model, loss_fn, device, place)  # DDP-wrapped on several processes
        result, stream = TrainResult(), iter(batches)
        saving = (run.checkpoint, model, optimizer, scheduler, result, place)
        if run.resume:
            resume_run(*saving, stream, settings, steps=run.steps)
        show = run.progress and place.is_main
        bar = _progress_bar(run.steps, run.desc, result.steps) if show else None
        start = time.perf_counter()
        model.train()
        try:
            for batch, clocks in _batches(stream, run.steps, device, place, result):
                loss = _scalar(step_fn(batch))  # forward pass and loss
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if grad_clip is not None:
                    nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
                optimizer.step()
                if scheduler is not None:
                    scheduler.step()
                out_of_time = run.seconds is not None and time.perf_counter() - start >= run.seconds
                out_of_time = _record(result, loss, out_of_time, clocks, place, bar)
                if run.eval_every and result.steps % run.eval_every == 0 and place.is_main:
                    result.evals.append((result.steps, _run_eval(model, run.eval_fn)))
                if run.checkpoint_every and result.steps % run.checkpoint_every == 0:
                    save_run(*saving, settings)
                if out_of_time:
                    result.stopped_by = "seconds"
                    break
        finally:
            if bar is not None:
                bar.close()
            model.eval()
        evaluated = result.evals and result.evals[-1][0] == result.steps
        if run.eval_fn is not None and place.is_main and not evaluated:
            result.evals.append((result.steps, _run_eval(model, run.eval_fn)))
        saved = run.checkpoint_every and result.steps % run.checkpoint_every == 0
        if run.checkpoint is not None and not saved:
            save_run(*saving, settings)
        result.seconds = time.perf_counter() - start
        return result


def _check_train_args(model, batches, loss_fn, run, *, lr, grad_clip, optimizer) -> None:
    """The checks of :func:`train`'s arguments, and of its ``run`` with them (the run's
    own settings were checked when it was made)."""
    _check_model_and_loss(model, loss_fn)
    instance_of(batches, Iterable, "batches", "an iterable of batches")
    instance_of(run, Run, "run", "a transformer_lab.training.run.Run")
    if run.steps is None and run.seconds is None and not hasattr(batches, "__len__"):
        raise ValueError("an endless stream of batches needs Run(steps=...) or Run(seconds=...)")
    if run.eval_every is not None and run.eval_fn is None:
        raise ValueError("eval_every needs an eval_fn: Run(eval_fn=..., eval_every=...)")
    finite_number(lr, "lr", above=0)
    if optimizer is None and lr > torch.finfo(torch.float32).max:  # Adam steps float32 weights
        raise ValueError(f"lr must be below float32's largest value (3.4e38), got {lr}")
    if grad_clip is not None:
        finite_number(grad_clip, "grad_clip", above=0)
    if not any(p.requires_grad for p in model.parameters()):
        raise ValueError("the model has no trainable parameters")
    if run.checkpoint is not None:  # before any step: an unwritable path costs no training
        if os.path.isdir(run.checkpoint):
            raise ValueError(f"checkpoint must be a file path, got the folder {run.checkpoint}")
        check_writable(os.path.dirname(os.fspath(run.checkpoint)) or ".")


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
    step_fn: nn.Module = _LossModule(model, loss_fn)
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
    loss_fn: Callable[[Any, Any], torch.Tensor] = seq2seq_loss,
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
