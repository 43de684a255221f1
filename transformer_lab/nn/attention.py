"""Attention: scaled dot-product attention, and grouped-query attention, where groups of
query heads share one key/value head.

Shapes follow the book's names: ``q`` is ``[..., query_pos, d_head]``, ``k`` and ``v``
are ``[..., key_pos, d_head]`` (``v`` may have its own last size), and a mask is bool,
True = may attend, broadcastable to ``[..., query_pos, key_pos]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import zip_longest

import torch
import torch.nn.functional as F

from transformer_lab.checks import (
    finite_number,
    floating_tensor,
    fraction,
    instance_of,
    integer,
    torch_tensor,
)
from transformer_lab.nn.functional import at_least_float32
from transformer_lab.nn.masks import check_mask

_HALF = (torch.float16, torch.bfloat16)  # computed in float32 where they would overflow

__all__ = [
    "broadcast_shape",
    "check_qkv",
    "empty_rows",
    "attention_weights",
    "scaled_dot_product_attention",
    "repeat_kv",
    "grouped_query_attention",
]


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...] | None:
    """The shape ``shapes`` broadcast to, or None when they do not broadcast.

    Plain Python on purpose: it runs on every attention call, and
    ``torch.broadcast_shapes`` costs more than a small attention kernel.
    """
    for s in shapes:
        instance_of(s, (tuple, list, torch.Size), "shapes", "tuples of ints")
    out = []
    for sizes in zip_longest(*(reversed(s) for s in shapes), fillvalue=1):
        size = max(sizes)
        if any(n != 1 and n != size for n in sizes):
            return None
        out.append(size)
    return tuple(reversed(out))


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[int, ...]:
    """Raise a ValueError/TypeError that names the problem when q, k, v do not fit together.

    Returns the shape of the scores, ``[..., query_pos, key_pos]``.
    """
    try:  # the usual case, in a few attribute reads: it runs on every attention call
        qs, ks, vs = q.shape, k.shape, v.shape
        if (
            q.dtype is k.dtype is v.dtype
            and q.is_floating_point()
            and len(qs) >= 2
            and qs[:-2] == ks[:-2] == vs[:-2]
            and qs[-1] == ks[-1]
            and ks[-2] == vs[-2]
            and qs[-2] > 0
            and ks[-2] > 0
            and qs[-1] > 0
            and len(ks) == len(vs) == len(qs)
        ):
            return (*qs[:-1], ks[-2])
    except AttributeError:
        pass  # not tensors: the checks below say so
    for name, t in (("query", q), ("key", k), ("value", v)):
        if not torch_tensor(t, name).is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got dtype {t.dtype}")
        if t.dim() < 2:
            raise ValueError(f"{name} must be [..., pos, d_head], got shape {tuple(t.shape)}")
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"query, key and value dtypes differ: {q.dtype}, {k.dtype}, {v.dtype}")
    *q_batch, query_pos, d_head = q.shape
    *k_batch, key_pos, d_key = k.shape
    *v_batch, value_pos, _ = v.shape
    if d_key != d_head:
        raise ValueError(f"key has d_head={d_key} but query has d_head={d_head}")
    if key_pos != value_pos:
        raise ValueError(f"key has key_pos={key_pos} but value has key_pos={value_pos}")
    if query_pos == 0 or key_pos == 0:
        raise ValueError(
            f"empty sequence: query_pos={query_pos}, key_pos={key_pos}; need at least one token"
        )
    if d_head == 0:
        raise ValueError("d_head must be positive, got 0")
    batch = broadcast_shape(q_batch, k_batch, v_batch)
    if batch is None:
        raise ValueError(
            f"batch dimensions do not broadcast: query {tuple(q_batch)}, "
            f"key {tuple(k_batch)}, value {tuple(v_batch)}"
        )
    return (*batch, query_pos, key_pos)


def empty_rows(mask: torch.Tensor) -> torch.Tensor | None:
    """``[..., query_pos, 1]`` True where a query row of ``mask`` is all False, or None when
    every row may attend to something.

    Computed afresh on every call (no cache keyed by the tensor's identity or version
    counter, which edits through ``.data`` or NumPy would bypass); it reads only the mask.
    """
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(f"mask must be a bool tensor (True = may attend), got {got}")
    if mask.dim() == 0:
        raise ValueError("mask must have at least one dimension [..., key_pos], got a 0-d tensor")
    full = mask.any(dim=-1, keepdim=True)  # [..., query_pos, 1]
    return None if bool(full.all()) else ~full


def _empty_rows(mask: torch.Tensor) -> torch.Tensor | None:
    """``empty_rows`` of a mask already checked, and without a host sync off the CPU: there
    the rows are always handled (two cheap elementwise operations) instead of asking the
    device whether any is empty."""
    full = mask.any(dim=-1, keepdim=True)  # [..., query_pos, 1]
    if mask.device.type == "cpu" and bool(full.all()):
        return None
    return ~full


def attention_weights(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over keys with masked positions set to ``-inf`` first.

    A query row whose mask is all False (nothing to attend to) gets weights of zero
    instead of the NaN that ``softmax`` of an all ``-inf`` row would give. Computed in
    float32; returns ``scores``' dtype.
    """
    floating_tensor(scores, "scores")
    if mask is not None:
        check_mask(mask, scores.shape)
    return _masked_softmax(scores, mask)


def _masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
        empty = _empty_rows(mask)
        if empty is not None:
            scores = scores.masked_fill(empty, 0.0)
            return _softmax(scores).masked_fill(empty, 0.0)
    return _softmax(scores)


def _softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis, half precision widened to float32 (float32 and float64
    as they are), returned in ``scores``' dtype."""
    if scores.dtype in _HALF:
        return torch.softmax(scores, dim=-1, dtype=torch.float32).to(scores.dtype)
    return torch.softmax(scores, dim=-1)


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    scale: float | None = None,
    dropout_p: float = 0.0,
    need_weights: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``softmax(q k^T / sqrt(d_k)) v``, returning ``(output, weights)``.

    Args:
        q: queries ``[..., query_pos, d_head]``.
        k: keys ``[..., key_pos, d_head]``.
        v: values ``[..., key_pos, d_value]``.
        mask: bool, True = may attend, broadcastable to ``[..., query_pos, key_pos]``.
            A query whose row is all False attends to nothing and its output is zeros
            (not NaN); its weights row is zeros too.
        scale: multiplier of the scores; ``1/sqrt(d_head)`` when None.
        dropout_p: dropout on the weights (only use while training).
        need_weights: when False, the fused kernel ``F.scaled_dot_product_attention``
            computes the output without materialising the weights, and ``None`` is
            returned in their place.

    Half-precision inputs (or autocast) get scores and softmax in float32, so large finite
    scores never turn into inf or NaN; output and weights come back in ``q``'s dtype.

    Returns:
        output ``[..., query_pos, d_value]`` and weights ``[..., query_pos, key_pos]``.
    """
    scores_shape = check_qkv(q, k, v)
    if mask is not None:
        check_mask(mask, scores_shape)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    else:
        finite_number(scale, "scale", above=0)
    if dropout_p != 0.0 or isinstance(dropout_p, bool):  # the default 0.0 needs no check
        fraction(dropout_p, "dropout_p", closed=False)
    if not need_weights:
        return _fused(q, k, v, mask, scale, dropout_p), None
    if q.dtype in _HALF or torch.is_autocast_enabled(q.device.type):
        # float16 scores overflow past 65504 (inf, then NaN): the same steps in float32
        return _explicit_float32(q, k, v, mask, scale, dropout_p)
    scores = (q * scale) @ k.transpose(-2, -1)  # [..., query_pos, key_pos]
    weights = _masked_softmax(scores, mask)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ v, weights  # [..., query_pos, d_value]


def _explicit_float32(q, k, v, mask, scale, dropout_p):
    """The explicit path in float32 for half-precision inputs or under autocast: a float16
    score passes 65504 and becomes inf (then NaN after the softmax) long before a float32
    one would. Autocast is switched off here, or it would cast the products back down.
    The output and the weights come back in ``q``'s dtype."""
    with torch.autocast(q.device.type, enabled=False):
        wide = (at_least_float32(t) for t in (q, k, v))
        out, weights = scaled_dot_product_attention(*wide, mask, scale=scale, dropout_p=dropout_p)
    return out.to(q.dtype), weights.to(q.dtype)


def _fused(q, k, v, mask, scale, dropout_p):
    """The fused kernel, with empty query rows returning zeros as in the explicit path.

    Kernels disagree on a row with nothing to attend to (NaN, zeros or a uniform
    average), so such rows are given every key and their output is zeroed afterwards.
    """
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=scale)
    empty = _empty_rows(mask)
    if mask.dim() < 2:  # the kernel wants at least [query_pos, key_pos]
        mask = mask.view(*[1] * (2 - mask.dim()), *mask.shape)
    if empty is None:
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale
        )
    out = F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask | empty, dropout_p=dropout_p, scale=scale
    )
    return out.masked_fill(empty, 0.0)


# the fused kernel reads shared key/value heads itself from torch 2.5 on
_ENABLE_GQA = tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 5)


_HEADS = "[batch, heads, pos, d_head]"  # the layout of q, k and v in grouped-query attention


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """``[batch, n_kv_heads, pos, d_head] -> [batch, n_kv_heads * n_rep, pos, d_head]``: each
    key/value head repeated ``n_rep`` times in a row, so that head ``h`` of the result is
    head ``h // n_rep`` of ``x``."""
    floating_tensor(x, "x", 4, _HEADS)
    return x.repeat_interleave(integer(n_rep, "n_rep", minimum=1), dim=1)


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
        floating_tensor(t, name, 4, _HEADS)
    n_heads, n_kv = q.shape[1], k.shape[1]
    if v.shape[1] != n_kv:
        raise ValueError(f"k has {n_kv} heads but v has {v.shape[1]}")
    if n_heads % n_kv:
        raise ValueError(f"q has n_heads={n_heads}, which n_kv_heads={n_kv} does not divide")
    if not q.shape[0] == k.shape[0] == v.shape[0]:  # heads are shared, sequences never are
        raise ValueError(
            f"q, k and v must have one batch size, got q {tuple(q.shape)}, k {tuple(k.shape)} "
            f"and v {tuple(v.shape)}: grouped-query attention shares key/value heads, not "
            "sequences of a batch"
        )
    if need_weights or not _ENABLE_GQA:  # copy the shared heads; attention checks the rest
        k, v = (t.repeat_interleave(n_heads // n_kv, dim=1) for t in (k, v))
        return scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights)
    if mask is not None:
        check_mask(mask, (q.shape[0], n_heads, q.shape[2], k.shape[2]))
    if k.shape[2] != v.shape[2] or q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q {tuple(q.shape)}, k {tuple(k.shape)} and v {tuple(v.shape)} do not fit together"
        )
    empty = None if mask is None else _empty_rows(mask)
    if mask is not None and empty is not None:
        mask = mask | empty  # such rows attend to everything, then are zeroed
    z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=n_kv != n_heads)
    return (z if empty is None else z.masked_fill(empty, 0.0)), None
