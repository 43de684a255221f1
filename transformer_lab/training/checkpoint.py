"""Saving a training run and resuming it exactly.

A run's state is more than its weights: the optimizer's moments, the learning-rate
schedule's position, the step count and loss history, and the random generators that
dropout and data shuffling draw from. :func:`save_checkpoint` writes all of it in one file
(atomically: a crash while writing leaves the previous checkpoint intact);
:func:`load_checkpoint` reads it back with ``torch.load(..., weights_only=True)``, which
only rebuilds tensors and plain Python values and never runs code stored in the file.

:func:`transformer_lab.training.loop.train` uses both: ``checkpoint=path, checkpoint_every=k``
saves every ``k`` steps and at the end, ``resume=True`` continues from ``path``: weights,
optimizer, schedule, losses, step count and random generators are restored, and the first
``step`` batches are drawn and skipped, so that a stream that starts the same (a seeded one)
continues where the saved run left it. The result then covers the whole run, and ``steps``
counts from its start. In a run of several processes rank 0 writes the file, with the
generators of every rank, and each rank resumes its own.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from transformer_lab.checks import instance_of, int_at_least

__all__ = ["rng_state", "set_rng_state", "save_checkpoint", "load_checkpoint"]

FORMAT = 1  # bumped when the layout of the saved dict changes


def rng_state() -> dict:
    """The states of Python's, NumPy's and PyTorch's global generators (CPU and CUDA), as
    tensors and plain values that ``weights_only`` loading accepts."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state = {
        "python": random.getstate(),
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _as_tuple(value):
    return tuple(_as_tuple(v) for v in value) if isinstance(value, (list, tuple)) else value


def set_rng_state(state: dict) -> None:
    """Restore the generators saved by :func:`rng_state`."""
    if not isinstance(state, dict) or not {"python", "numpy", "torch"} <= state.keys():
        raise ValueError("state must be a dict from rng_state() with python, numpy and torch")
    random.setstate(_as_tuple(state["python"]))
    np_state = state["numpy"]
    np.random.set_state(
        (
            np_state["kind"],
            np_state["keys"].numpy().astype(np.uint32),
            np_state["pos"],
            np_state["has_gauss"],
            np_state["cached_gaussian"],
        )
    )
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(
    path: str | os.PathLike,
    *,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    step: int,
    scheduler=None,
    losses: list[float] | None = None,
    evals: list[tuple[int, float]] | None = None,
    rng_states: list[dict] | None = None,
    extra: dict | None = None,
) -> Path:
    """Write a run's state to ``path`` and return the path.

    ``rng_states``: one :func:`rng_state` per process (default: this process's only).
    ``extra``: any further plain values (a config as a dict, the data's name...).
    """
    instance_of(path, (str, os.PathLike), "path", "a file path")
    instance_of(model, torch.nn.Module, "model", "an nn.Module")
    instance_of(optimizer, torch.optim.Optimizer, "optimizer", "a torch optimizer")
    int_at_least(step, 0, "step")
    path = Path(path)
    state = {
        "format": FORMAT,
        "step": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "losses": [float(x) for x in (losses or [])],
        "evals": [(int(s), float(v)) for s, v in (evals or [])],
        "rng": rng_states if rng_states is not None else [rng_state()],
        "extra": extra or {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(path: str | os.PathLike, map_location="cpu") -> dict:
    """Read a checkpoint written by :func:`save_checkpoint` (safely: ``weights_only=True``)."""
    instance_of(path, (str, os.PathLike), "path", "a file path")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    state = torch.load(path, map_location=map_location, weights_only=True)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"{path} is not a transformer_lab checkpoint (format {FORMAT})")
    return state


def _save_run(path, model, optimizer, scheduler, result, place) -> None:
    """Save the run of :func:`~transformer_lab.training.loop.train` that ``result`` records;
    in a distributed run, rank 0 writes every rank's generators and all wait for the file."""
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


def _resume_run(path, model, optimizer, scheduler, result, place, stream: Iterator) -> None:
    """Continue the run saved in ``path``: restore the weights, the optimizer, the schedule
    and ``result``, draw and skip the batches the saved run used, and restore this process's
    random generators."""
    state = load_checkpoint(path, map_location=next(model.parameters()).device)
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
    for _ in range(result.steps):  # replay the stream up to the saved step
        next(stream)
    set_rng_state(states[place.rank])
