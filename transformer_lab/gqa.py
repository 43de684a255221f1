"""Grouped-query attention, GQA (Ainslie et al. 2023).

Multi-head attention gives every head its own keys and values. GQA lets a *group* of
query heads share one key/value head: ``n_heads`` query heads, ``n_kv_heads`` key/value
heads, ``n_heads / n_kv_heads`` queries per group. Query head ``h`` reads key/value head
``h // (n_heads / n_kv_heads)``. With ``n_kv_heads = n_heads`` it is ordinary multi-head
attention; with ``n_kv_heads = 1`` it is multi-query attention (Shazeer 2019). The keys
and values cached during generation shrink by the factor ``n_heads / n_kv_heads``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .attention import check_mask, empty_rows, scaled_dot_product_attention

__all__ = ["repeat_kv", "grouped_query_attention"]

# the fused kernel reads shared key/value heads itself from torch 2.5 on
_ENABLE_GQA = tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 5)


def _check_4d(name: str, t) -> None:
    if not isinstance(t, torch.Tensor) or not t.is_floating_point():
        got = t.dtype if isinstance(t, torch.Tensor) else type(t).__name__
        raise TypeError(f"{name} must be a floating-point tensor, got {got}")
    if t.dim() != 4:
        raise ValueError(f"{name} must be [batch, heads, pos, d_head], got {tuple(t.shape)}")


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """``[batch, n_kv_heads, pos, d_head] -> [batch, n_kv_heads * n_rep, pos, d_head]``: each
    key/value head repeated ``n_rep`` times in a row, so that head ``h`` of the result is
    head ``h // n_rep`` of ``x``."""
    _check_4d("x", x)
    if not isinstance(n_rep, int) or isinstance(n_rep, bool) or n_rep <= 0:
        raise ValueError(f"n_rep must be a positive int, got {n_rep!r}")
    return x.repeat_interleave(n_rep, dim=1)


def grouped_query_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    need_weights: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Attention of ``q [batch, n_heads, query_pos, d_head]`` over ``k``, ``v [batch,
    n_kv_heads, key_pos, d_head]``, where ``n_kv_heads`` divides ``n_heads``.

    ``mask`` is bool, True = may attend, broadcastable to ``[batch, n_heads, query_pos,
    key_pos]``; a query row with nothing to attend to gets zeros. Returns ``(output [batch,
    n_heads, query_pos, d_head], weights [batch, n_heads, query_pos, key_pos])``, weights
    None when ``need_weights=False``: the fused kernel then reads the shared heads directly
    (``enable_gqa``) without copying them.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        _check_4d(name, t)
    n_heads, n_kv = q.shape[1], k.shape[1]
    if v.shape[1] != n_kv:
        raise ValueError(f"k has {n_kv} heads but v has {v.shape[1]}")
    if n_heads % n_kv:
        raise ValueError(f"q has n_heads={n_heads}, which n_kv_heads={n_kv} does not divide")
    if mask is not None:
        check_mask(mask, (q.shape[0], n_heads, q.shape[2], k.shape[2]))
    if need_weights or not _ENABLE_GQA:
        n_rep = n_heads // n_kv
        return scaled_dot_product_attention(
            q, repeat_kv(k, n_rep), repeat_kv(v, n_rep), mask, need_weights=need_weights
        )
    if q.shape[0] != k.shape[0] or k.shape[:3] != v.shape[:3] or q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q {tuple(q.shape)}, k {tuple(k.shape)} and v {tuple(v.shape)} do not fit together"
        )
    empty = None if mask is None else empty_rows(mask)
    if empty is not None:
        mask = mask | empty  # such rows attend to everything, then are zeroed
    z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=n_kv != n_heads)
    return (z if empty is None else z.masked_fill(empty, 0.0)), None
