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
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch
from torch import nn

from transformer_lab.device import check_device, num_threads, seed_everything
from transformer_lab.training import distributed
from transformer_lab.training.checkpoint import (
    load_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
)
from transformer_lab.training.losses import seq2seq_loss

__all__ = ["TrainResult", "to_device", "num_threads", "train", "evaluate"]


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
        if not isinstance(window, int) or isinstance(window, bool) or window <= 0:
            raise ValueError(f"window must be a positive int, got {window!r}")
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
        lr_schedule: ``step -> factor`` multiplying the learning rate (``LambdaLR``).
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
        checkpoint: a file to save the run in (see :mod:`transformer_lab.training.checkpoint`): every
            ``checkpoint_every`` steps, if given, and when the loop ends.
        checkpoint_every: how often to save.
        resume: continue the run saved in ``checkpoint``: weights, optimizer, schedule,
            losses, step count and random generators are restored, and the first
            ``step`` batches of ``batches`` are drawn and skipped, so that a stream that
            starts the same (a seeded one) continues where the saved run left it. The
            result then covers the whole run, and ``steps`` counts from its start.

    Launched by torchrun (see :mod:`transformer_lab.training.distributed`, whose ``setup`` must
    have joined the process group), every process runs this same loop on its own batches:
    the model is wrapped in ``DistributedDataParallel``, which averages the gradients over
    the processes; the recorded losses are averages over the processes; only rank 0 shows
    progress, evaluates and writes checkpoints; all processes stop at the same step.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be a function (model, batch) -> loss, got {loss_fn!r}")
    if not hasattr(batches, "__iter__"):
        raise TypeError(f"batches must be an iterable of batches, got {type(batches).__name__}")
    if (
        isinstance(lr, bool)
        or not isinstance(lr, (int, float))
        or not (lr > 0 and math.isfinite(lr))
    ):
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    if grad_clip is not None and not (isinstance(grad_clip, (int, float)) and grad_clip > 0):
        raise ValueError(f"grad_clip must be None or a positive number, got {grad_clip!r}")
    if steps is None and seconds is None and not hasattr(batches, "__len__"):
        raise ValueError("an endless stream of batches needs steps= or seconds= to stop")
    if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool) or steps < 0):
        raise ValueError(f"steps must be a non-negative int, got {steps!r}")
    if seconds is not None and not seconds > 0:
        raise ValueError(f"seconds must be positive, got {seconds!r}")
    if eval_every is not None and (eval_fn is None or eval_every <= 0):
        raise ValueError("eval_every needs an eval_fn and must be positive")
    if not any(p.requires_grad for p in model.parameters()):
        raise ValueError("the model has no trainable parameters")
    if checkpoint is not None and not isinstance(checkpoint, (str, os.PathLike)):
        raise TypeError(f"checkpoint must be a file path, got {type(checkpoint).__name__}")
    if checkpoint_every is not None and (
        checkpoint is None
        or not isinstance(checkpoint_every, int)
        or isinstance(checkpoint_every, bool)
        or checkpoint_every <= 0
    ):
        raise ValueError("checkpoint_every needs a checkpoint path and must be a positive int")
    if resume and checkpoint is None:
        raise ValueError("resume=True needs the checkpoint path to resume from")
    with num_threads(threads):
        if seed is not None:
            seed_everything(seed)
        place = distributed.info()
        if device is None:
            device = place.device if place.distributed else _model_device(model)
        device = check_device(device)
        model.to(device)
        if optimizer is None:
            optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        scheduler = (
            torch.optim.lr_scheduler.LambdaLR(optimizer, lr_schedule) if lr_schedule else None
        )
        # in a distributed run the loss is computed inside DistributedDataParallel's forward,
        # so that any loss_fn (one calling model.some_method included) syncs the gradients
        step_fn = _LossModule(model, loss_fn)
        if place.distributed:
            ids = [device.index] if device.type == "cuda" else None
            step_fn = nn.parallel.DistributedDataParallel(step_fn, device_ids=ids)

        result = TrainResult()
        iterator = iter(batches)
        saved_rng = None
        if resume:
            saved_rng = _restore(checkpoint, model, optimizer, scheduler, result, place)
            for _ in range(result.steps):  # replay the stream up to the saved step
                next(iterator)
        bar = None
        if progress and place.is_main:
            from transformer_lab.training.progress import progress_bar

            bar = progress_bar(total=steps, desc=desc)
            bar.update(result.steps)
        if saved_rng is not None:
            set_rng_state(saved_rng)
        start = time.perf_counter()
        model.train()
        result.stopped_by = "steps"
        try:
            while steps is None or result.steps < steps:
                step_start, step_cpu = time.perf_counter(), time.thread_time()
                batch = next(iterator, _END)
                if place.distributed and _any_rank(batch is _END, device):
                    batch = _END  # one rank ran out of data: all stop at this step
                if batch is _END:
                    result.stopped_by = "data"
                    break
                batch = to_device(batch, device)
                loss = step_fn(batch)
                if loss.dim() != 0:
                    raise ValueError(f"loss_fn must return a scalar, got shape {tuple(loss.shape)}")
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if grad_clip is not None:
                    nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
                optimizer.step()
                if scheduler is not None:
                    scheduler.step()
                out_of_time = seconds is not None and time.perf_counter() - start >= seconds
                if place.distributed:
                    value, out_of_time = _mean_loss_and_any(loss, out_of_time, place.world_size)
                else:
                    value = loss.item()
                if not math.isfinite(value):
                    raise FloatingPointError(f"loss became {value} at step {result.steps}")
                result.losses.append(value)
                result.step_seconds.append(time.perf_counter() - step_start)
                result.step_cpu_seconds.append(time.thread_time() - step_cpu)
                result.steps += 1
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loss=f"{value:.3f}", refresh=False)
                if eval_every and result.steps % eval_every == 0 and place.is_main:
                    result.evals.append((result.steps, _run_eval(model, eval_fn)))
                if checkpoint_every and result.steps % checkpoint_every == 0:
                    _save(checkpoint, model, optimizer, scheduler, result, place)
                if out_of_time:
                    result.stopped_by = "seconds"
                    break
        finally:
            if bar is not None:
                bar.close()
            model.eval()
        if (
            eval_fn is not None
            and place.is_main
            and (not result.evals or result.evals[-1][0] != result.steps)
        ):
            result.evals.append((result.steps, _run_eval(model, eval_fn)))
        if checkpoint is not None and not (
            checkpoint_every and result.steps % checkpoint_every == 0
        ):
            _save(checkpoint, model, optimizer, scheduler, result, place)
        result.seconds = time.perf_counter() - start
        return result


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


def _save(path, model, optimizer, scheduler, result, place) -> None:
    states = [rng_state()]
    if place.distributed:  # every rank's generators, so each rank resumes its own
        states = [None] * place.world_size
        torch.distributed.all_gather_object(states, rng_state())
    if place.is_main:
        save_checkpoint(
            path,
            model=model,
            optimizer=optimizer,
            scheduler=scheduler,
            step=result.steps,
            losses=result.losses,
            evals=result.evals,
            rng_states=states,
        )
    if place.distributed:
        torch.distributed.barrier()  # nobody reads the file before it is complete


def _restore(path, model, optimizer, scheduler, result, place) -> dict:
    state = load_checkpoint(path, map_location=_model_device(model))
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if (scheduler is None) != (state["scheduler"] is None):
        raise ValueError(
            "the checkpoint was saved "
            + ("with" if state["scheduler"] is not None else "without")
            + " a learning-rate schedule; resume it the same way"
        )
    if scheduler is not None:
        scheduler.load_state_dict(state["scheduler"])
    result.steps = result.first_step = state["step"]
    result.losses = list(state["losses"])
    result.evals = [tuple(e) for e in state["evals"]]
    states = state["rng"]
    if len(states) != place.world_size:
        raise ValueError(
            f"the checkpoint was saved by {len(states)} process(es); resume it with as many "
            f"(this run has {place.world_size})"
        )
    return states[place.rank]


def _run_eval(model, eval_fn) -> float:
    was_training = model.training
    model.eval()
    with torch.no_grad():
        value = float(eval_fn(model))
    model.train(was_training)
    return value


@torch.no_grad()
def evaluate(
    model: nn.Module,
    batches: Iterable,
    loss_fn: Callable[[nn.Module, object], torch.Tensor] = seq2seq_loss,
    device: torch.device | str | None = None,
) -> float:
    """Mean of ``loss_fn`` over a finite iterable of batches, in eval mode, no gradients.
    Each batch counts in proportion to its length (``len(batch)``) when it has one."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be a function (model, batch) -> loss, got {loss_fn!r}")
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
