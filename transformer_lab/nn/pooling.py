"""Pooling: one vector per sequence from the vectors of its positions."""

from __future__ import annotations

import torch

from transformer_lab.checks import floating_tensor, torch_tensor

__all__ = ["mean_pool"]


def mean_pool(
    last_hidden_state: torch.Tensor, attention_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Average of the token vectors ``[batch, pos, d_model]`` over real tokens (padding
    excluded) -> ``[batch, d_model]``. ``attention_mask [batch, pos]`` holds 1 (or True) for
    a real token and 0 for padding; a row with no real token pools to zeros."""
    floating_tensor(last_hidden_state, "last_hidden_state", 3, "[batch, pos, d_model]")
    if last_hidden_state.shape[1] == 0:
        raise ValueError("last_hidden_state must have pos >= 1, got (batch, 0, d_model)")
    if attention_mask is None:
        return last_hidden_state.mean(dim=1)
    if torch_tensor(attention_mask, "attention_mask").shape != last_hidden_state.shape[:2]:
        raise ValueError(
            f"attention_mask must be [batch, pos]={tuple(last_hidden_state.shape[:2])}, "
            f"got {tuple(attention_mask.shape)}"
        )
    if attention_mask.dtype != torch.bool and bool(
        ((attention_mask != 0) & (attention_mask != 1)).any()
    ):
        raise ValueError("attention_mask must hold only 0 (padding) and 1 (real token)")
    weights = attention_mask.to(last_hidden_state.dtype).unsqueeze(-1)  # [batch, pos, 1]
    return (last_hidden_state * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
