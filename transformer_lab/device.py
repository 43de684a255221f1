"""Where and how code runs: choosing a device, seeding every random number generator the
book uses, the number of CPU threads, and evaluation mode for a block of code."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from transformer_lab.checks import integer

__all__ = [
    "device",
    "gpu_branch",
    "seed_everything",
    "check_device",
    "num_threads",
    "evaluating",
]

FORCE_GPU_BRANCHES = "TRANSFORMER_LAB_FORCE_GPU_BRANCHES"


DEVICE_FORMS = "'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device"


def check_device(choice, name: str = "device") -> torch.device:
    """``torch.device(choice)``, or a ValueError that names the problem: a string that is
    not a device (the message names :data:`DEVICE_FORMS`, not torch's list of every kind
    it was built to know), or a CUDA/MPS device this machine does not have."""
    if not isinstance(choice, (str, torch.device)):
        raise TypeError(
            f"{name} must be a device name or torch.device, got {type(choice).__name__}"
        )
    try:
        dev = torch.device(choice)
    except RuntimeError:
        raise ValueError(f"{name} must be {DEVICE_FORMS}, got {choice!r}") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"{name}={choice!r} but CUDA is not available on this machine")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(
                f"{name}={choice!r} but this machine has {torch.cuda.device_count()} CUDA devices"
            )
    if dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError(f"{name}={choice!r} but MPS is not available on this machine")
    return dev


def device(prefer: str | None = None) -> torch.device:
    """Return the best available device: CUDA, then Apple's MPS, then the CPU.

    ``prefer`` (or the environment variable ``TRANSFORMER_LAB_DEVICE``) forces a
    choice, e.g. ``"cpu"`` to reproduce the CPU numbers on a GPU machine.
    """
    if prefer is not None and not isinstance(prefer, (str, torch.device)):
        raise TypeError(f"prefer must be a device name such as 'cpu', got {type(prefer).__name__}")
    choice = prefer or os.environ.get("TRANSFORMER_LAB_DEVICE")
    if choice:
        source = "prefer" if prefer else "TRANSFORMER_LAB_DEVICE"
        return check_device(choice, source)
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def gpu_branch() -> torch.device | None:
    """The device of a chapter's GPU-only cells: the CUDA device when there is one, else
    None (the cells show nothing).

    With the environment variable ``TRANSFORMER_LAB_FORCE_GPU_BRANCHES=1`` a machine without
    CUDA returns the CPU instead, so that those cells and their assertions run there too: the
    tests execute every chapter's GPU branch this way on the CPU, more slowly.
    """
    if torch.cuda.is_available():
        return torch.device("cuda")
    forced = os.environ.get(FORCE_GPU_BRANCHES, "")
    if forced not in ("", "0", "1"):
        raise ValueError(f"{FORCE_GPU_BRANCHES} must be 0 or 1, got {forced!r}")
    return torch.device("cpu") if forced == "1" else None


def seed_everything(seed: int = 0, deterministic: bool = False) -> torch.Generator:
    """Seed Python, NumPy and PyTorch (every device) and return a seeded CPU generator.

    With ``deterministic=True`` PyTorch is asked to use deterministic kernels only,
    which matters on CUDA; on the CPU the book's kernels are deterministic already.
    """
    seed = integer(seed, "seed", minimum=0)  # NumPy integers too, as plain ints
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
    generator = torch.Generator()
    generator.manual_seed(seed)
    return generator


@contextmanager
def num_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``n`` intra-op CPU threads (``torch.set_num_threads``), restoring
    the previous number afterwards; ``None`` leaves it alone.

    Small models (a GRU with 128 units, batches of 64) gain little from a second thread,
    and on a busy machine threads that wait for each other can make every step several
    times slower; one thread is then the faster and steadier choice.
    """
    if n is None:
        yield
        return
    integer(n, "the number of threads", minimum=1)
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextmanager
def evaluating(model: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """Run the block with ``model`` in evaluation mode (dropout off), then put back the mode
    it had: ``with evaluating(model): ...``."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)
