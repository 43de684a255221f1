"""The loss along a straight line through weight space, the one-dimensional version of the
pictures of Li et al. (2018).

A direction gives every weight matrix a random matrix of its own shape, each row rescaled
to the norm of the same row of the weights ("filter normalisation"), so that a step of
``alpha = 1`` changes every row by as much as its own size, whatever the scale of that
layer; biases and the gains of layer norms stay where they are. :func:`loss_slice` then
evaluates ``loss_fn(model)`` at ``weights + alpha * direction`` for each ``alpha`` and puts
the weights back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from transformer_lab.checks import finite_number, instance_of

__all__ = ["random_direction", "loss_slice"]


def random_direction(model: nn.Module, generator: torch.Generator) -> list[torch.Tensor]:
    """A filter-normalised random direction: one tensor per parameter of ``model`` (in the
    order of ``model.parameters()``), Gaussian rows scaled to the norms of the weights' rows
    for every parameter with two or more dimensions, zeros for the others."""
    instance_of(model, nn.Module, "model")
    instance_of(generator, torch.Generator, "generator")
    direction = []
    for p in model.parameters():
        if p.dim() < 2:  # biases and gains: left alone
            direction.append(torch.zeros_like(p))
            continue
        r = torch.randn(p.shape, generator=generator).to(p.device, p.dtype)
        rows = p.detach().norm(dim=-1, keepdim=True)
        direction.append(r / r.norm(dim=-1, keepdim=True).clamp_min(1e-12) * rows)
    return direction


def loss_slice(
    model: nn.Module,
    loss_fn: Callable[[nn.Module], torch.Tensor],
    direction: Sequence[torch.Tensor],
    alphas: Sequence[float],
) -> list[float]:
    """``loss_fn(model)`` with the weights moved to ``weights + alpha * direction``, for each
    ``alpha``; the weights are restored afterwards, also when ``loss_fn`` raises. Runs
    without gradients."""
    instance_of(model, nn.Module, "model")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable (model -> loss), got {type(loss_fn).__name__}")
    params = list(model.parameters())
    direction = list(direction)
    if len(direction) != len(params):
        raise ValueError(
            f"direction has {len(direction)} tensors but the model has {len(params)} parameters"
        )
    for i, (p, d) in enumerate(zip(params, direction, strict=True)):
        if not isinstance(d, torch.Tensor) or d.shape != p.shape:
            got = tuple(d.shape) if isinstance(d, torch.Tensor) else type(d).__name__
            raise ValueError(f"direction[{i}] must have the shape {tuple(p.shape)}, got {got}")
    alphas = [finite_number(a, f"alphas[{i}]") for i, a in enumerate(alphas)]
    saved = [p.detach().clone() for p in params]
    losses = []
    try:
        with torch.no_grad():
            for alpha in alphas:
                for p, w, d in zip(params, saved, direction, strict=True):
                    p.copy_(w + alpha * d)
                losses.append(float(loss_fn(model)))
    finally:
        with torch.no_grad():
            for p, w in zip(params, saved, strict=True):
                p.copy_(w)
    return losses
