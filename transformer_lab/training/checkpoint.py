"""Saving a training run and resuming it exactly.

A run's state is more than its weights: the optimizer's moments, the learning-rate
schedule's position, the step count and loss history, and the random generators that
dropout and data shuffling draw from. :func:`save_checkpoint` writes all of it in one file
(atomically: a crash while writing leaves the previous checkpoint intact);
:func:`load_checkpoint` reads it back with ``torch.load(..., weights_only=True)``, which
only rebuilds tensors and plain Python values and never runs code stored in the file.

:func:`transformer_lab.training.loop.train` uses both: ``checkpoint=path, checkpoint_every=k``
saves every ``k`` steps and at the end, ``resume=True`` continues from ``path``.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import torch

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
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path, got {type(path).__name__}")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch optimizer, got {type(optimizer).__name__}")
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise ValueError(f"step must be an int >= 0, got {step!r}")
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
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    state = torch.load(path, map_location=map_location, weights_only=True)
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"{path} is not a transformer_lab checkpoint (format {FORMAT})")
    return state
