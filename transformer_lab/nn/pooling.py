"""Pooling: one vector per sequence from the vectors of its positions."""

from __future__ import annotations

import torch

__all__ = ["mean_pool"]


def mean_pool(
    last_hidden_state: torch.Tensor, attention_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Average of the token vectors ``[batch, pos, d_model]`` over real tokens (padding
    excluded) -> ``[batch, d_model]``."""
    if not isinstance(last_hidden_state, torch.Tensor) or not last_hidden_state.is_floating_point():
        got = getattr(last_hidden_state, "dtype", type(last_hidden_state).__name__)
        raise TypeError(f"last_hidden_state must be a floating-point tensor, got {got}")
    if last_hidden_state.dim() != 3:
        raise ValueError(
            f"last_hidden_state must be [batch, pos, d_model], got {tuple(last_hidden_state.shape)}"
        )
    if attention_mask is None:
        return last_hidden_state.mean(dim=1)
    if not isinstance(attention_mask, torch.Tensor):
        raise TypeError(f"attention_mask must be a tensor, got {type(attention_mask).__name__}")
    if attention_mask.shape != last_hidden_state.shape[:2]:
        raise ValueError(
            f"attention_mask must be [batch, pos]={tuple(last_hidden_state.shape[:2])}, "
            f"got {tuple(attention_mask.shape)}"
        )
    weights = attention_mask.to(last_hidden_state.dtype).unsqueeze(-1)  # [batch, pos, 1]
    return (last_hidden_state * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
