"""Transformer Lab: every component of the Transformer, from scratch and tested.

``transformer_lab.device()`` picks CUDA, then MPS, then the CPU; ``seed_everything``
seeds every generator the book uses.
"""

from . import attention, blocks, hooks, layers, masks, positional
from .device import device, seed_everything
from .hooks import capture, run_with_cache

__version__ = "0.1.0"
__all__ = [
    "attention",
    "blocks",
    "hooks",
    "layers",
    "masks",
    "positional",
    "device",
    "seed_everything",
    "capture",
    "run_with_cache",
]
