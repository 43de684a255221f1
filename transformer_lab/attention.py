"""Attention: scaled dot-product attention and the score functions of seq2seq models.

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
from torch import nn

from .masks import check_mask

__all__ = [
    "scaled_dot_product_attention",
    "attention_weights",
    "empty_rows",
    "check_qkv",
    "broadcast_shape",
    "DotScore",
    "MultiplicativeScore",
    "AdditiveScore",
    "make_score",
    "attend",
]


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...] | None:
    """The shape ``shapes`` broadcast to, or None when they do not broadcast.

    Plain Python on purpose: it runs on every attention call, and
    ``torch.broadcast_shapes`` costs more than a small attention kernel.
    """
    for s in shapes:
        if not isinstance(s, (tuple, list, torch.Size)):
            raise TypeError(f"shapes must be tuples of ints, got {type(s).__name__}")
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
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if not t.is_floating_point():
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
    """``empty_rows`` without a host sync off the CPU: there the rows are always handled
    (two cheap elementwise operations) instead of asking the device whether any is empty."""
    if mask.device.type == "cpu":
        return empty_rows(mask)
    return ~mask.any(dim=-1, keepdim=True)


def attention_weights(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over keys with masked positions set to ``-inf`` first.

    A query row whose mask is all False (nothing to attend to) gets weights of zero
    instead of the NaN that ``softmax`` of an all ``-inf`` row would give.
    """
    if not isinstance(scores, torch.Tensor) or not scores.is_floating_point():
        got = scores.dtype if isinstance(scores, torch.Tensor) else type(scores).__name__
        raise TypeError(f"scores must be a floating-point tensor, got {got}")
    if mask is not None:
        check_mask(mask, scores.shape)
    return _masked_softmax(scores, mask)


def _masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    if mask is None:
        return torch.softmax(scores, dim=-1)
    scores = scores.masked_fill(~mask, float("-inf"))
    empty = _empty_rows(mask)
    if empty is None:
        return torch.softmax(scores, dim=-1)
    scores = scores.masked_fill(empty, 0.0)
    return torch.softmax(scores, dim=-1).masked_fill(empty, 0.0)


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

    Returns:
        output ``[..., query_pos, d_value]`` and weights ``[..., query_pos, key_pos]``.
    """
    scores_shape = check_qkv(q, k, v)
    if mask is not None:
        check_mask(mask, scores_shape)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    elif isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"scale must be a number or None, got {type(scale).__name__}")
    elif not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, (int, float)):
        raise TypeError(f"dropout_p must be a number in [0, 1), got {type(dropout_p).__name__}")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p must be in [0, 1), got {dropout_p!r}")
    if not need_weights:
        return _fused(q, k, v, mask, scale, dropout_p), None
    # scale the queries before the product, not the scores after it: in float16 a raw
    # score above 65504 would overflow to inf before the scaling could bring it back
    scores = (q * scale) @ k.transpose(-2, -1)  # [..., query_pos, key_pos]
    weights = _masked_softmax(scores, mask)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ v, weights  # [..., query_pos, d_value]


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


# --- Score functions for attention in seq2seq models ------------------------------------
# Each maps a decoder state ``query [batch, d_query]`` and encoder states
# ``keys [batch, key_pos, d_key]`` to scores ``[batch, key_pos]``.


def _check_sizes(**sizes) -> None:
    for name, value in sizes.items():
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")


def _check_score_inputs(query, keys, d_query=None, d_key=None) -> None:
    """``query [batch, d_query]`` and ``keys [batch, key_pos, d_key]``, floating point."""
    for name, t, dims, want in (
        ("query", query, 2, "[batch, d_query]"),
        ("keys", keys, 3, "[batch, key_pos, d_key]"),
    ):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            got = getattr(t, "dtype", type(t).__name__)
            raise TypeError(f"{name} must be a floating-point tensor {want}, got {got}")
        if t.dim() != dims:
            raise ValueError(f"{name} must be {want}, got shape {tuple(t.shape)}")
    if query.shape[0] != keys.shape[0]:
        raise ValueError(f"query has batch={query.shape[0]} but keys have batch={keys.shape[0]}")
    if keys.shape[1] == 0:
        raise ValueError("keys are an empty sequence (key_pos=0)")
    if d_query is not None and query.shape[-1] != d_query:
        raise ValueError(f"query has {query.shape[-1]} features but the score expects {d_query}")
    if d_key is not None and keys.shape[-1] != d_key:
        raise ValueError(f"keys have {keys.shape[-1]} features but the score expects {d_key}")


class DotScore(nn.Module):
    """Dot-product score ``s_j = h_dec . h_enc_j`` (Luong et al. 2015); needs equal sizes."""

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        _check_score_inputs(query, keys)
        if query.shape[-1] != keys.shape[-1]:
            raise ValueError(
                "dot score needs equal sizes: "
                f"query has {query.shape[-1]}, keys have {keys.shape[-1]}"
            )
        return (keys @ query.unsqueeze(-1)).squeeze(-1)  # [batch, key_pos]


class MultiplicativeScore(nn.Module):
    """Multiplicative ("general") score ``s_j = h_dec^T W h_enc_j`` (Luong et al. 2015)."""

    def __init__(self, d_query: int, d_key: int):
        super().__init__()
        _check_sizes(d_query=d_query, d_key=d_key)
        self.W = nn.Parameter(torch.empty(d_query, d_key))
        nn.init.xavier_uniform_(self.W)

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        _check_score_inputs(query, keys, *self.W.shape)
        projected = query @ self.W  # [batch, d_key]
        return (keys @ projected.unsqueeze(-1)).squeeze(-1)  # [batch, key_pos]


class AdditiveScore(nn.Module):
    """Additive score ``s_j = v^T tanh(W_1 h_dec + W_2 h_enc_j)`` (Bahdanau et al. 2015)."""

    def __init__(self, d_query: int, d_key: int, d_attn: int | None = None):
        super().__init__()
        _check_sizes(d_query=d_query, d_key=d_key)
        d_attn = d_key if d_attn is None else d_attn
        _check_sizes(d_attn=d_attn)
        self.W_1 = nn.Linear(d_query, d_attn, bias=False)
        self.W_2 = nn.Linear(d_key, d_attn, bias=True)
        self.v = nn.Linear(d_attn, 1, bias=False)

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        _check_score_inputs(query, keys, self.W_1.in_features, self.W_2.in_features)
        hidden = torch.tanh(
            self.W_1(query).unsqueeze(-2) + self.W_2(keys)
        )  # [batch, key_pos, d_attn]
        return self.v(hidden).squeeze(-1)  # [batch, key_pos]


def make_score(kind: str, d_query: int, d_key: int) -> nn.Module:
    """Build a score module by name: ``"dot"``, ``"multiplicative"`` or ``"additive"``."""
    for name, value in (("d_query", d_query), ("d_key", d_key)):
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    kinds = {
        "dot": lambda: DotScore(),
        "multiplicative": lambda: MultiplicativeScore(d_query, d_key),
        "additive": lambda: AdditiveScore(d_query, d_key),
    }
    if kind not in kinds:
        raise ValueError(f"score kind must be one of {sorted(kinds)}, got {kind!r}")
    return kinds[kind]()


def attend(
    score: nn.Module,
    query: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One decoder step of seq2seq attention: scores, softmax, weighted sum.

    Args:
        score: a score module (``DotScore``, ``MultiplicativeScore``, ``AdditiveScore``).
        query: decoder state ``[batch, d_query]``.
        keys: encoder states ``[batch, key_pos, d_key]``.
        values: what is averaged, ``[batch, key_pos, d_value]``; the keys when None.
        mask: bool ``[batch, key_pos]``, True for real (non-padding) source tokens.

    Returns:
        context ``[batch, d_value]`` and weights ``[batch, key_pos]`` (zeros for a row
        with no real source token).
    """
    if not isinstance(score, nn.Module):
        raise TypeError(
            f"score must be a score module (see make_score), got {type(score).__name__}"
        )
    values = keys if values is None else values
    scores = score(query, keys)  # [batch, key_pos]
    if (
        not isinstance(values, torch.Tensor)
        or values.dim() != 3
        or values.shape[:2] != keys.shape[:2]
    ):
        got = tuple(values.shape) if isinstance(values, torch.Tensor) else type(values).__name__
        raise ValueError(
            f"values must be [batch, key_pos, d_value] with [batch, key_pos]="
            f"{tuple(keys.shape[:2])}, got {got}"
        )
    if values.dtype != scores.dtype:
        raise TypeError(f"values have dtype {values.dtype} but the scores {scores.dtype}")
    if mask is not None:
        check_mask(mask, scores.shape)
    weights = attention_weights(scores, mask)  # [batch, key_pos]
    context = (weights.unsqueeze(-2) @ values).squeeze(-2)  # [batch, d_value]
    return context, weights
