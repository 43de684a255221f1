"""Choosing a device and seeding every random number generator the book uses."""

from __future__ import annotations

import os
import random

import numpy as np
import torch

__all__ = ["device", "seed_everything"]


def device(prefer: str | None = None) -> torch.device:
    """Return the best available device: CUDA, then Apple's MPS, then the CPU.

    ``prefer`` (or the environment variable ``TRANSFORMER_LAB_DEVICE``) forces a
    choice, e.g. ``"cpu"`` to reproduce the CPU numbers on a GPU machine.
    """
    choice = prefer or os.environ.get("TRANSFORMER_LAB_DEVICE")
    if choice:
        try:
            return torch.device(choice)
        except RuntimeError as err:
            source = "prefer" if prefer else "TRANSFORMER_LAB_DEVICE"
            raise ValueError(
                f"{source} must name a device such as 'cpu', 'cuda' or 'mps', got {choice!r}"
            ) from err
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def seed_everything(seed: int = 0, deterministic: bool = False) -> torch.Generator:
    """Seed Python, NumPy and PyTorch (every device) and return a seeded CPU generator.

    With ``deterministic=True`` PyTorch is asked to use deterministic kernels only,
    which matters on CUDA; on the CPU the book's kernels are deterministic already.
    """
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
    generator = torch.Generator()
    generator.manual_seed(seed)
    return generator
