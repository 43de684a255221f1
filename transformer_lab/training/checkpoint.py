"""Saving a training run and resuming it exactly.

A run's state is more than its weights: the optimizer's moments, the learning-rate
schedule's position, the step count and loss history, and the random generators that
dropout and data shuffling draw from. :func:`save_checkpoint` writes all of it in one file
(atomically: a crash while writing leaves the previous checkpoint intact);
:func:`load_checkpoint` reads it back with ``torch.load(..., weights_only=True)``, which
only rebuilds tensors and plain Python values and never runs code stored in the file.

:func:`transformer_lab.training.loop.train` uses both: ``Run(checkpoint=path,
checkpoint_every=k)`` saves every ``k`` steps and at the end, ``resume=True`` continues from
``path``: weights, optimizer, schedule, losses, step count and random generators are
restored, and the first ``step`` batches are drawn and skipped, so that a stream that starts
the same (a seeded one) continues where the saved run left it. The result then covers the
whole run, and ``steps`` counts from its start. In a run of several processes rank 0 writes
the file, with the generators of every rank, and each rank resumes its own.

A resumed run is the run it says it is. The checkpoint records the settings that produced
it: the model's class and config, the optimizer's class and hyperparameters (learning
rate, betas, weight decay... of every parameter group), the loss function's name, the seed,
the gradient clipping, whether a learning-rate schedule runs, the number of processes, and
whatever the run adds (``Run(config=...)``; ``train_gpt`` adds its recipe,
its seed, the window length and a digest of the training tokens). Resuming with other
settings is refused before anything is restored, with a message naming each setting that
changed, its saved value and the new one. What may change on resume is only
what does not change the steps already taken or still to come: where the loop stops
(the run's ``steps`` and ``seconds``), evaluation, progress, threads, the device
and how often to save.

Nothing is lost to a disk: :func:`save_checkpoint` refuses, at save time and naming the key,
an ``extra`` or ``config`` value that ``weights_only`` loading would refuse later; the file is
written atomically (:func:`~transformer_lab.data.cache.write_atomically`), so a failed save
leaves the previous checkpoint and no temporary file; :func:`load_checkpoint` refuses a
truncated or foreign file with a message that names it; and the loop checks that the
checkpoint's folder is writable before its first step.
"""

from __future__ import annotations

import dataclasses
import os
import random
from pathlib import Path
from typing import cast

import numpy as np
import torch

from transformer_lab.checks import instance_of, integer
from transformer_lab.data.cache import disk_error, write_atomically

__all__ = ["rng_state", "set_rng_state", "save_checkpoint", "load_checkpoint"]

FORMAT = 2  # bumped when the layout of the saved dict changes (2: the run's settings)
# what np.random.get_state() returns (its stub also allows the dict of legacy=False)
_LegacyState = tuple[str, np.ndarray, int, int, float]
_READABLE = (1, 2)  # format 1 lacks the settings: it loads, but does not resume


def rng_state() -> dict:
    """The states of Python's, NumPy's and PyTorch's global generators (CPU and CUDA), as
    tensors and plain values that ``weights_only`` loading accepts."""
    kind, keys, pos, has_gauss, cached = cast(_LegacyState, np.random.get_state())
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
    config: dict | None = None,
) -> Path:
    """Write a run's state to ``path`` in one step and return the path.

    ``rng_states``: one :func:`rng_state` per process (default: this process's only).
    ``extra``: any further plain values (a config as a dict, the data's name...).
    ``config``: the settings that produced the run, which a resume compares with its own.
    Both hold only what ``weights_only`` loading reads back: None, bool, int, float, str,
    tensors, and lists, tuples and dicts of them; anything else is refused here, naming
    its key, rather than at resume time. A failed write leaves the previous file as it was.
    """
    instance_of(path, (str, os.PathLike), "path", "a file path")
    instance_of(model, torch.nn.Module, "model", "an nn.Module")
    instance_of(optimizer, torch.optim.Optimizer, "optimizer", "a torch optimizer")
    integer(step, "step", minimum=0)
    for name, value in (("extra", extra), ("config", config)):
        if value is not None:
            instance_of(value, dict, name, "a dict of plain values")
            check_plain(value, name)
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
        "config": config,
    }
    return write_atomically(path, lambda file: torch.save(state, file))


def load_checkpoint(path: str | os.PathLike, map_location="cpu") -> dict:
    """Read a checkpoint written by :func:`save_checkpoint` (safely: ``weights_only=True``).
    A truncated or foreign file is refused with a ``ValueError`` that names it."""
    instance_of(path, (str, os.PathLike), "path", "a file path")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except PermissionError as err:
        raise disk_error(err, path, "read") from err
    except Exception as err:  # the reader fails in many ways on a damaged or foreign file
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise ValueError(
            f"{path} is not a readable transformer_lab checkpoint (truncated, damaged or "
            f"written by something else than save_checkpoint): {reason}"
        ) from err
    if not isinstance(state, dict) or state.get("format") not in _READABLE:
        raise ValueError(f"{path} is not a transformer_lab checkpoint (format {FORMAT})")
    missing = [key for key in ("model", "optimizer", "step") if key not in state]
    if missing:
        raise ValueError(f"{path} is a damaged checkpoint: it has no {', '.join(missing)}")
    if not isinstance(state["model"], dict) or not isinstance(state["step"], int):
        raise ValueError(f"{path} is a damaged checkpoint: 'model' or 'step' has the wrong type")
    return state


_PLAIN = (type(None), bool, int, float, str, torch.Tensor, torch.nn.Parameter)
_ADVICE = {  # how to turn a refused value into one that loads
    "numpy": "int(value), float(value) or torch.from_numpy(value)",
    "dataclass": "dataclasses.asdict(value)",
    "path": "str(value)",
}


def check_plain(value, where: str) -> None:
    """Refuse, naming where it sits, a value that ``weights_only`` loading would refuse."""
    kind = type(value)
    if kind in _PLAIN:
        return
    if kind in (list, tuple):
        for i, item in enumerate(value):
            check_plain(item, f"{where}[{i}]")
        return
    if kind is dict:
        for key, item in value.items():
            if type(key) not in (str, int):
                raise TypeError(f"{where} has the key {key!r}; keys must be str or int")
            check_plain(item, f"{where}[{key!r}]")
        return
    if kind.__module__.split(".")[0] == "numpy":
        advice = _ADVICE["numpy"]
    elif dataclasses.is_dataclass(value):
        advice = _ADVICE["dataclass"]
    elif isinstance(value, os.PathLike):
        advice = _ADVICE["path"]
    else:
        advice = "one of those"
    raise TypeError(
        f"{where} is a {kind.__module__}.{kind.__qualname__}, which load_checkpoint "
        "(weights_only=True) would refuse; a checkpoint holds None, bool, int, float, str, "
        f"tensors, and lists, tuples and dicts of them: store {advice} instead"
    )


def _plain(value):
    """``value`` as checkpoint-safe plain data (tuples as lists, anything odd as its repr)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, torch.Tensor):
        return _plain(value.tolist())
    if isinstance(value, (bool, int, float, str)) or value is None:
        return type(value)(value) if value is not None else None
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    return repr(value)


# optimizer entries that say how it computes, not what: they may differ on resume
_HOW = {"params", "initial_lr", "foreach", "fused", "capturable", "differentiable"}


def run_settings(model, optimizer, loss_fn, *, seed, grad_clip, schedule, world_size, extra):
    """What determines a run of :func:`~transformer_lab.training.loop.train`: the model, the
    optimizer's hyperparameters (base learning rate of a scheduled group), the loss, the
    seed, the clipping, the schedule's presence, the processes, and ``extra`` (a recipe's
    own settings, under their own names)."""
    config = getattr(model, "config", None)
    model_settings = {"class": type(model).__qualname__}
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        model_settings.update(_plain(dataclasses.asdict(config)))
    groups = [
        {
            k: _plain(g.get("initial_lr", v) if k == "lr" else v)
            for k, v in g.items()
            if k not in _HOW
        }
        for g in optimizer.param_groups
    ]
    loss = getattr(loss_fn, "__qualname__", type(loss_fn).__qualname__)
    settings = {
        "model": model_settings,
        "optimizer": {"class": type(optimizer).__qualname__, "groups": groups},
        "loop": {
            "loss_fn": f"{getattr(loss_fn, '__module__', '')}.{loss}",
            "seed": _plain(seed),
            "grad_clip": _plain(grad_clip),
            "lr_schedule": schedule,
            "world_size": world_size,
        },
    }
    if extra:
        clash = sorted(settings.keys() & extra.keys())
        if clash:
            raise ValueError(f"the run's config may not use the loop's own names {clash}")
        settings.update(extra)
    return settings


def _flat(value, prefix: str = "") -> dict:
    """Nested settings as ``{"recipe.lr": 0.001, "optimizer.groups[0].lr": ...}``."""
    if isinstance(value, dict):
        items = [(f"{prefix}.{k}" if prefix else str(k), v) for k, v in value.items()]
    elif isinstance(value, (list, tuple)) and value and all(isinstance(v, dict) for v in value):
        items = [(f"{prefix}[{i}]", v) for i, v in enumerate(value)]
    else:
        return {prefix: list(value) if isinstance(value, tuple) else value}
    return {k: v for key, item in items for k, v in _flat(item, key).items()}


def _check_same_run(path, saved: dict | None, now: dict) -> None:
    """Refuse to resume the run saved in ``path`` with other settings, naming each change."""
    if saved is None:
        raise ValueError(
            f"{path} was saved without the settings of its run (an older format), so a "
            "resume cannot be checked against them; start the run again"
        )
    old, new = _flat(saved), _flat(now)
    missing = "(absent)"
    changed = [
        f"{key}: {old.get(key, missing)!r} -> {new.get(key, missing)!r}"
        for key in dict.fromkeys([*old, *new])
        if old.get(key, missing) != new.get(key, missing)
    ]
    if changed:
        raise ValueError(
            f"{path} holds a run with other settings; resume it with the settings it was "
            "saved with, or start a new run elsewhere. Changed (saved -> now): "
            + "; ".join(changed)
        )


def save_run(path, model, optimizer, scheduler, result, place, settings) -> None:
    """Save the run of :func:`~transformer_lab.training.loop.train` that ``result`` records;
    in a distributed run, rank 0 writes every rank's generators and all wait for the file."""
    states = [rng_state()]
    if place.distributed:  # every rank's generators, so each rank resumes its own
        gathered: list[dict | None] = [None] * place.world_size
        torch.distributed.all_gather_object(gathered, rng_state())
        states = cast(list[dict], gathered)  # every rank's slot is filled
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
            config=settings,
        )
    if place.distributed:
        torch.distributed.barrier()  # nobody reads the file before it is complete


def resume_run(
    path, model, optimizer, scheduler, result, place, stream, settings, steps=None
) -> None:
    """Continue the run saved in ``path`` if ``settings`` are the saved run's and its step
    is not past ``steps`` (where this call stops; None: no bound): restore the weights, the
    optimizer, the schedule and ``result``, draw and skip the batches the saved run used,
    and restore this process's random generators."""
    state = load_checkpoint(path, map_location=next(model.parameters()).device)
    _check_same_run(path, state.get("config"), settings)
    if steps is not None and state["step"] > steps:
        raise ValueError(
            f"the checkpoint {path} is at step {state['step']}, past the run's steps={steps}: "
            "ask for more steps to go on, or start a new run without resume"
        )
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
