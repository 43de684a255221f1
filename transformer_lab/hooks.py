"""Capturing intermediate values by name during a forward pass.

Modules place a :class:`Hook` wherever a value is worth looking at; its name in the
model (``encoder.blocks.0.attn.pattern``) is the name of the captured tensor::

    out, cache = run_with_cache(model, src, tgt)
    cache["encoder.blocks.0.attn.pattern"]   # [batch, n_heads, query_pos, key_pos]
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

__all__ = ["Hook", "capture", "run_with_cache"]


class Hook(nn.Module):
    """An identity module that stores what passes through it while a capture is active."""

    def __init__(self):
        super().__init__()
        self.name: str | None = None
        self._store: dict[str, torch.Tensor] | None = None

    @property
    def active(self) -> bool:
        return self._store is not None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"a hook passes tensors through, got {type(x).__name__}")
        if self._store is not None:
            self._store[self.name] = x.detach()
        return x


@contextmanager
def capture(model: nn.Module, names: str | Iterable[str] | None = None) -> Iterator[dict]:
    """Within the block, every :class:`Hook` of ``model`` whose name matches one of
    ``names`` (shell patterns such as ``"*.pattern"``; all when None) stores its value
    in the yielded dict."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if isinstance(names, str):
        names = [names]
    patterns = list(names) if names is not None else ["*"]
    store: dict[str, torch.Tensor] = {}
    hooks = [
        (name, module)
        for name, module in model.named_modules()
        if isinstance(module, Hook) and any(fnmatch.fnmatchcase(name, p) for p in patterns)
    ]
    if not hooks:
        available = [n for n, m in model.named_modules() if isinstance(m, Hook)]
        raise ValueError(f"no hook matches {patterns}; available: {available[:8]}...")
    previous = [(module.name, module._store) for _, module in hooks]
    for name, module in hooks:
        module.name, module._store = name, store
    try:
        yield store
    finally:
        # restore what an enclosing capture had set (usually nothing)
        for (_, module), (name, old_store) in zip(hooks, previous, strict=True):
            module.name, module._store = name, old_store


def run_with_cache(model: nn.Module, *args, names=None, **kwargs):
    """Run ``model(*args, **kwargs)`` and return ``(output, cache)`` of captured tensors."""
    with capture(model, names) as cache:
        out = model(*args, **kwargs)
    return out, dict(cache)
