"""Capturing intermediate values by name during a forward pass.

Modules place a :class:`Hook` wherever a value is worth looking at; its name in the
model (``encoder.blocks.0.attn.pattern``) is the name of the captured tensor::

    out, cache = run_with_cache(model, src, tgt)
    cache["encoder.blocks.0.attn.pattern"]   # [batch, n_heads, query_pos, key_pos]

and the same names let an experiment change a value on its way (an ablation)::

    with intervene(model, {"blocks.1.attn.z": lambda z: z * 0}):
        out = model(idx)                     # as if block 1's heads wrote nothing
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

__all__ = ["Hook", "capture", "run_with_cache", "intervene"]


class Hook(nn.Module):
    """An identity module that stores what passes through it while a capture is active,
    and passes on ``edit(x)`` instead of ``x`` while an intervention is."""

    def __init__(self) -> None:
        super().__init__()
        self.name: str | None = None
        self._store: dict[str, torch.Tensor] | None = None
        self.edit: Callable[[torch.Tensor], torch.Tensor] | None = None

    @property
    def active(self) -> bool:
        return self._store is not None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"a hook passes tensors through, got {type(x).__name__}")
        if self.edit is not None:
            edited = self.edit(x)
            if not isinstance(edited, torch.Tensor) or edited.shape != x.shape:
                raise ValueError(
                    f"the intervention on {self.name} must return a tensor of shape "
                    f"{tuple(x.shape)}, got {getattr(edited, 'shape', type(edited).__name__)}"
                )
            x = edited
        if self._store is not None:
            assert self.name is not None  # capture sets the name with the store
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


@contextmanager
def intervene(model: nn.Module, edits: dict[str, Callable[[torch.Tensor], torch.Tensor]]):
    """Within the block, the hook of ``model`` named ``name`` (exact names, as
    :func:`capture` stores them) passes on ``edits[name](x)`` instead of ``x``: the value
    the rest of the model computes with. The function must keep the shape."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if not isinstance(edits, dict) or not all(callable(f) for f in edits.values()):
        raise TypeError("edits must be a dict of hook name -> function of a tensor")
    hooks = {name: m for name, m in model.named_modules() if isinstance(m, Hook)}
    unknown = [name for name in edits if name not in hooks]
    if unknown:
        raise ValueError(f"no hook named {unknown}; available: {list(hooks)[:8]}...")
    previous = {name: (hooks[name].name, hooks[name].edit) for name in edits}
    for name, fn in edits.items():
        hooks[name].name, hooks[name].edit = name, fn
    try:
        yield model
    finally:
        for name, (old_name, old_edit) in previous.items():
            hooks[name].name, hooks[name].edit = old_name, old_edit
