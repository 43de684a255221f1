"""Ablating attention heads: run a model as if some heads wrote nothing.

A head's contribution to the residual stream is its slice of ``z`` (the heads' outputs side
by side, before ``W_O``) times ``W_O``; zeroing that slice through the hook
``blocks.<layer>.attn.z`` removes the head and nothing else (``W_O``'s bias stays)::

    with ablate_heads(model, {1: [2]}):          # block 1, head 2
        accuracy_without = measure(model)
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import cast

import torch
from torch import nn

from transformer_lab.checks import index_in, instance_of
from transformer_lab.hooks import intervene
from transformer_lab.nn.multi_head import MultiHeadAttention

__all__ = ["ablate_heads"]


@contextmanager
def ablate_heads(model: nn.Module, heads: dict[int, list[int]]):
    """Within the block, the heads ``heads[layer]`` of each block ``model.blocks[layer]``
    (a :class:`~transformer_lab.nn.multi_head.MultiHeadAttention` at ``.attn``) write zero."""
    d_head = _check(model, heads)  # {layer: d_head}, once the blocks and heads are known

    def zero_heads(layer):
        def edit(z: torch.Tensor) -> torch.Tensor:  # [batch, pos, n_heads * d_head]
            z = z.clone()
            for h in heads[layer]:  # the heads sit side by side: zero head h's columns
                z[..., h * d_head[layer] : (h + 1) * d_head[layer]] = 0
            return z

        return edit

    with intervene(model, {f"blocks.{layer}.attn.z": zero_heads(layer) for layer in heads}):
        yield model


def _check(model: nn.Module, heads) -> dict[int, int]:
    instance_of(heads, dict, "heads", "a dict of layer -> list of heads")
    blocks = getattr(model, "blocks", None)
    if not isinstance(blocks, nn.ModuleList):
        raise TypeError(f"model must have blocks (an nn.ModuleList), got {type(model).__name__}")
    d_head = {}
    for layer, chosen in heads.items():
        block = blocks[index_in(layer, len(blocks), "layer", "a block of the model")]
        attn = cast(MultiHeadAttention, block.attn)
        for h in chosen:
            index_in(h, attn.n_heads, "head", f"a head of block {layer}")
        d_head[layer] = attn.d_head
    return d_head
