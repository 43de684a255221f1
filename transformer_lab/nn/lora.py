"""Low-rank adaptation, LoRA (Hu et al. 2021): a frozen weight plus a trainable low-rank change.

A weight ``W`` is kept frozen and a change of rank ``r`` is learned beside it, written as in
the paper (column vectors, ``h = W x``)::

    h = W x + (alpha / r) B A x        A: [r, d_in],  B: [d_out, r]

``A`` starts random and ``B`` at zero, so the adapted model starts out *equal* to the
pretrained one and only moves as far as training takes ``B``. The trainable count of one
matrix falls from ``d_in d_out`` to ``r (d_in + d_out)``.

The book's decoders multiply row vectors by ``[d_in, d_out]`` matrices (``x @ W_Q``), so
the change of such a matrix is ``(alpha / r) (B A)^T = (alpha / r) A^T B^T``. :class:`LoRA`
adds it as a ``torch.nn.utils.parametrize`` parametrization: ``module.W_Q`` then *reads*
``W + (alpha/r) A^T B^T``, and the model's code stays as it is (a piece knows no model).
``A`` and ``B`` keep the shapes of the paper and of ``peft``, so adapters copy across.

- :func:`add_lora` adapts the named matrices of a module and freezes everything else;
- :func:`merge_lora` adds ``(alpha/r) A^T B^T`` into the stored ``W`` (inference then
  costs what the base model costs), :func:`unmerge_lora` takes it out again,
  :func:`merged` does both around a block;
- :func:`remove_lora` drops the parametrizations (keeping the merged weights, or the
  base weights);
- :func:`lora_parameters`, :func:`lora_state_dict` and :func:`load_lora_state_dict` give
  the adapter alone: a few megabytes where the model takes hundreds.

Written this way, the forward pass forms ``W + dW`` (one ``r``-rank product per matrix and
step) and the backward pass forms the gradient of the whole ``W + dW`` before passing it to
``A`` and ``B``: the saving is in what is *stored* (no gradient or optimizer state for
``W``), not in arithmetic. Libraries such as ``peft`` compute ``x A^T B^T`` on the side
instead; the function, and so the trained model, is the same.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import cast

import torch
from torch import nn
from torch.nn.utils import parametrize

from transformer_lab.checks import finite_number, instance_of, integer, seed_int

__all__ = [
    "LoRA",
    "add_lora",
    "lora_modules",
    "lora_parameters",
    "merge_lora",
    "unmerge_lora",
    "merged",
    "remove_lora",
    "lora_state_dict",
    "load_lora_state_dict",
    "count_parameters",
]


class LoRA(nn.Module):
    """The low-rank change of one ``[d_in, d_out]`` matrix, used as a parametrization:
    ``forward(W) = W + (alpha / rank) A^T B^T`` (just ``W`` once merged).

    ``A [rank, d_in]`` starts uniform in ``+-1/sqrt(d_in)`` (``nn.Linear``'s and ``peft``'s
    Kaiming-uniform start), ``B [d_out, rank]`` at zero.
    """

    def __init__(self, d_in: int, d_out: int, rank: int, alpha: float, *, dtype=None, device=None):
        super().__init__()
        d_in, d_out = integer(d_in, "d_in", minimum=1), integer(d_out, "d_out", minimum=1)
        self.rank = integer(rank, "rank", minimum=1)
        self.alpha = finite_number(alpha, "alpha", above=0)
        self.scale = self.alpha / self.rank
        kw = {"dtype": dtype, "device": device}
        self.A = nn.Parameter(torch.empty(self.rank, d_in, **kw))  # [rank, d_in]
        self.B = nn.Parameter(torch.zeros(d_out, self.rank, **kw))  # [d_out, rank]
        nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))
        self.merged = False  # True while the change sits inside the stored weight

    def delta(self) -> torch.Tensor:
        """``(alpha / rank) A^T B^T``, the change in the ``[d_in, d_out]`` layout."""
        return self.scale * (self.A.T @ self.B.T)  # [d_in, d_out]

    def forward(self, W: torch.Tensor) -> torch.Tensor:
        return W if self.merged else W + self.delta()

    def extra_repr(self) -> str:
        return (
            f"d_in={self.A.shape[1]}, d_out={self.B.shape[0]}, rank={self.rank}, alpha={self.alpha}"
        )


def _owner(module: nn.Module, name: str) -> tuple[nn.Module, str]:
    """The submodule holding parameter ``name`` ("blocks.0.attn.W_Q") and its own name."""
    path, _, attr = name.rpartition(".")
    return (module.get_submodule(path) if path else module), attr


def add_lora(
    module: nn.Module,
    targets: Sequence[str],
    rank: int = 8,
    alpha: float = 16.0,
    *,
    seed: int = 0,
) -> list[str]:
    """Adapt every 2-d parameter of ``module`` whose own name is in ``targets`` (for the
    book's Llama: ``"W_Q", "W_K", "W_V", "W_O", "W_gate", "W_up", "W_down"``) with a
    :class:`LoRA` of ``rank`` and ``alpha``; freeze every other parameter. The ``A``
    matrices are drawn from ``seed``. Returns the adapted parameters' names, in order."""
    instance_of(module, nn.Module, "module", "an nn.Module")
    if isinstance(targets, str) or not isinstance(targets, Sequence) or not targets:
        raise TypeError(f"targets must be a non-empty list of parameter names, got {targets!r}")
    rank, seed = integer(rank, "rank", minimum=1), seed_int(seed)
    finite_number(alpha, "alpha", above=0)
    if any(True for _ in lora_modules(module)):
        raise ValueError("module already has LoRA adapters: remove_lora(module) first")
    names = [n for n, p in module.named_parameters() if n.rpartition(".")[2] in targets]
    found = {n.rpartition(".")[2] for n in names}
    if missing := [t for t in targets if t not in found]:
        raise ValueError(f"targets {missing} name no parameter of the module")
    if flat := [n for n in names if module.get_parameter(n).dim() != 2]:
        raise ValueError(f"LoRA adapts matrices, but {flat[:3]} are not 2-d")
    for p in module.parameters():
        p.requires_grad_(False)
    gen = torch.Generator().manual_seed(seed)
    for name in names:
        owner, attr = _owner(module, name)
        W = getattr(owner, attr)
        d_in, d_out = W.shape
        lora = LoRA(d_in, d_out, rank, alpha, dtype=W.dtype)
        with torch.no_grad():  # the A of every matrix from one seeded stream, on the CPU
            bound = 1 / math.sqrt(W.shape[0])
            lora.A.copy_(torch.rand(lora.A.shape, generator=gen, dtype=W.dtype) * 2 * bound - bound)
        parametrize.register_parametrization(owner, attr, lora.to(W.device))
    return names


def lora_modules(module: nn.Module) -> Iterator[tuple[str, LoRA]]:
    """``(name of the adapted parameter, its LoRA)`` for every adapter inside ``module``."""
    instance_of(module, nn.Module, "module", "an nn.Module")
    for path, sub in module.named_modules():
        if parametrize.is_parametrized(sub):
            for attr, plist in sub.parametrizations.items():
                for p in plist:
                    if isinstance(p, LoRA):
                        yield (f"{path}.{attr}" if path else attr), p


def lora_parameters(module: nn.Module) -> list[nn.Parameter]:
    """The ``A`` and ``B`` of every adapter: what the optimizer gets."""
    return [p for _, lora in lora_modules(module) for p in (lora.A, lora.B)]


def _adapters(module: nn.Module) -> list[tuple[nn.Parameter, LoRA]]:
    """``(stored base weight, its LoRA)`` pairs; an error if there are none."""
    pairs = []
    for name, lora in lora_modules(module):
        owner, attr = _owner(module, name)
        plists = cast(nn.ModuleDict, owner.parametrizations)  # set by register_parametrization
        pairs.append((cast(nn.Parameter, plists[attr].original), lora))
    if not pairs:
        raise ValueError("module has no LoRA adapters: add_lora(module, targets) first")
    return pairs


@torch.no_grad()
def merge_lora(module: nn.Module) -> nn.Module:
    """Add each adapter's ``(alpha/r) A^T B^T`` into its stored weight (the function is
    unchanged; a forward pass then costs what the base model's does). Merging twice is
    refused: the change would be added twice."""
    for _, lora in _adapters(module):
        if lora.merged:
            raise ValueError("the LoRA adapters are merged already")
    for W, lora in _adapters(module):
        W.add_(lora.delta())
        lora.merged = True
    return module


@torch.no_grad()
def unmerge_lora(module: nn.Module) -> nn.Module:
    """Take each adapter's change out of its stored weight again (the inverse of
    :func:`merge_lora`, exact up to float rounding), so training can go on."""
    for _, lora in _adapters(module):
        if not lora.merged:
            raise ValueError("the LoRA adapters are not merged")
    for W, lora in _adapters(module):
        W.sub_(lora.delta())
        lora.merged = False
    return module


@contextmanager
def merged(module: nn.Module) -> Iterator[nn.Module]:
    """Run the block with the adapters merged (fast generation), unmerged afterwards."""
    merge_lora(module)
    try:
        yield module
    finally:
        unmerge_lora(module)


@torch.no_grad()
def remove_lora(module: nn.Module, merge: bool = True) -> nn.Module:
    """Drop the parametrizations: the weights become plain parameters again, holding
    ``W + (alpha/r) A^T B^T`` (``merge=True``) or the base ``W`` (``merge=False``)."""
    instance_of(merge, bool, "merge")
    for W, lora in _adapters(module):
        if merge and not lora.merged:
            W.add_(lora.delta())
        elif not merge and lora.merged:
            W.sub_(lora.delta())
        lora.merged = True  # the stored weight is now the answer
    for name, _ in list(lora_modules(module)):
        owner, attr = _owner(module, name)
        parametrize.remove_parametrizations(owner, attr, leave_parametrized=False)
    return module


def lora_state_dict(module: nn.Module) -> dict[str, torch.Tensor]:
    """The adapters alone: ``"<parameter>.A"`` and ``"<parameter>.B"`` for each, on the CPU."""
    pairs = list(lora_modules(module))
    if not pairs:
        raise ValueError("module has no LoRA adapters: add_lora(module, targets) first")
    out = {}
    for name, lora in pairs:
        out[f"{name}.A"] = lora.A.detach().cpu().clone()
        out[f"{name}.B"] = lora.B.detach().cpu().clone()
    return out


@torch.no_grad()
def load_lora_state_dict(module: nn.Module, state: dict[str, torch.Tensor]) -> nn.Module:
    """Copy adapters saved by :func:`lora_state_dict` into ``module``'s adapters (same
    names and shapes; the adapters must not be merged)."""
    instance_of(state, dict, "state", "a dict of tensors from lora_state_dict")
    pairs = dict(lora_modules(module))
    want = {f"{n}.{m}" for n in pairs for m in ("A", "B")}
    if set(state) != want:
        extra, missing = sorted(set(state) - want), sorted(want - set(state))
        raise ValueError(
            f"state does not match the adapters: missing {missing[:3]}, extra {extra[:3]}"
        )
    for name, lora in pairs.items():
        if lora.merged:
            raise ValueError("load into unmerged adapters: unmerge_lora(module) first")
        for m in ("A", "B"):
            target, value = getattr(lora, m), state[f"{name}.{m}"]
            if not isinstance(value, torch.Tensor) or value.shape != target.shape:
                got = getattr(value, "shape", type(value).__name__)
                raise ValueError(f"{name}.{m} must have shape {tuple(target.shape)}, got {got}")
            target.copy_(value)
    return module


def count_parameters(module: nn.Module) -> tuple[int, int]:
    """``(trainable, total)`` parameter counts of ``module`` (a LoRA's ``A`` and ``B``
    count once; a tied weight once)."""
    instance_of(module, nn.Module, "module", "an nn.Module")
    params = {id(p): p for p in module.parameters()}.values()
    return sum(p.numel() for p in params if p.requires_grad), sum(p.numel() for p in params)
