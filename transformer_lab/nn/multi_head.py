"""Multi-head attention: project, split into heads, attend in each, merge, project."""

from __future__ import annotations

import torch
from torch import nn

from transformer_lab.checks import floating_tensor, fraction, integer, weights_dtype
from transformer_lab.hooks import Hook
from transformer_lab.nn.attention import scaled_dot_product_attention
from transformer_lab.nn.functional import affine
from transformer_lab.nn.kv_cache import KVCache

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(nn.Module):
    """Multi-head attention with heads as a batch dimension.

    ``Q = X_q W_Q``, ``K = X_kv W_K``, ``V = X_kv W_V`` are split into ``n_heads`` heads of
    ``d_head = d_model / n_heads`` features, attended per head, concatenated and projected
    by ``W_O``. Self-attention when ``key``/``value`` are omitted, cross-attention otherwise.

    Hooks: ``q``, ``k``, ``v`` ``[batch, n_heads, pos, d_head]`` (with a key/value cache,
    the new positions' only), ``pattern`` ``[batch, n_heads, query_pos, key_pos]``, ``z``
    (heads concatenated) and ``out``.
    """

    q: Hook
    k: Hook
    v: Hook
    pattern: Hook
    z: Hook
    out: Hook

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        bias: bool = True,
        dropout: float = 0.0,
        d_key_in: int | None = None,
        d_value_in: int | None = None,
    ):
        super().__init__()
        integer(n_heads, "n_heads", minimum=1)
        integer(d_model, "d_model", minimum=1)
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        fraction(dropout, "dropout", closed=False)
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.dropout = dropout
        d_key_in, d_value_in = d_key_in or d_model, d_value_in or d_model
        self.W_Q = nn.Parameter(torch.empty(d_model, d_model))
        self.W_K = nn.Parameter(torch.empty(d_key_in, d_model))
        self.W_V = nn.Parameter(torch.empty(d_value_in, d_model))
        self.W_O = nn.Parameter(torch.empty(d_model, d_model))
        for w in (self.W_Q, self.W_K, self.W_V, self.W_O):
            nn.init.xavier_uniform_(w)
        zeros = (lambda: nn.Parameter(torch.zeros(d_model))) if bias else (lambda: None)
        self.b_Q, self.b_K, self.b_V, self.b_O = zeros(), zeros(), zeros(), zeros()
        for name in ("q", "k", "v", "pattern", "z", "out"):
            setattr(self, name, Hook())

    def _project(self, x, W, b):
        y = affine(x, W, b)  # [batch, pos, d_model]
        batch, pos, _ = y.shape
        return y.view(batch, pos, self.n_heads, self.d_head).transpose(1, 2)

    def _project_qkv(self, x):
        """``_project`` for W_Q, W_K and W_V at once: one product with the three matrices
        side by side ``[d_model, 3 d_model]``, then split (the same numbers, fewer calls)."""
        W = torch.cat([self.W_Q, self.W_K, self.W_V], dim=1)  # [d_model, 3 d_model]
        b = None if self.b_Q is None else torch.cat([self.b_Q, self.b_K, self.b_V])
        qkv = affine(x, W, b)  # [batch, pos, 3 d_model]
        batch, pos, _ = qkv.shape
        qkv = qkv.view(batch, pos, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
        return qkv.unbind(0)  # 3 x [batch, n_heads, pos, d_head]

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        need_weights: bool = True,
        *,
        cache: KVCache | None = None,
        layer: int = 0,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``query [batch, query_pos, d_model]`` to ``key``/``value``
        ``[batch, key_pos, d_*]`` (both default to ``query``).

        ``mask`` is bool, True = may attend, broadcastable to
        ``[batch, n_heads, query_pos, key_pos]``. Returns ``(output, weights)`` with
        weights per head ``[batch, n_heads, query_pos, key_pos]``, or None when
        ``need_weights=False`` (the fused kernel then does the work) and nothing captures
        the pattern. A query with nothing to attend to gets a zero attention output
        (before ``W_O`` and its bias).

        With a ``cache`` (:class:`~transformer_lab.nn.kv_cache.KVCache`, self-attention
        only), ``query`` holds the newest positions: their keys and values join the
        cache's layer ``layer`` and the queries attend to every cached position, so
        ``key_pos`` counts the cached positions too.
        """
        key = query if key is None else key
        value = key if value is None else value
        self._check(query, key, value, cache)
        if key is query and value is query:  # self-attention: Q, K, V in one product
            q, k, v = self._project_qkv(query)
        else:
            q = self._project(query, self.W_Q, self.b_Q)  # [batch, n_heads, query_pos, d_head]
            k = self._project(key, self.W_K, self.b_K)  # [batch, n_heads, key_pos, d_head]
            v = self._project(value, self.W_V, self.b_V)  # [batch, n_heads, key_pos, d_head]
        q, k, v = self.q(q), self.k(k), self.v(v)
        if cache is not None:  # the earlier positions' keys and values, then these
            k, v = cache.update(layer, k, v)  # [batch, n_heads, key_pos, d_head]
        want = need_weights or self.pattern.active
        p = self.dropout if self.training else 0.0
        z, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p=p, need_weights=want)
        if weights is not None:
            weights = self.pattern(weights)  # [batch, n_heads, query_pos, key_pos]
        batch, _, query_pos, _ = z.shape
        z = z.transpose(1, 2).reshape(batch, query_pos, self.d_model)  # heads side by side
        z = self.z(z)  # [batch, query_pos, d_model]
        out = affine(z, self.W_O, self.b_O)  # [batch, query_pos, d_model]
        return self.out(out), (weights if need_weights else None)

    def _check(self, query, key, value, cache):
        """The inputs' types and sizes (the mask is checked with the scores' shape by
        ``scaled_dot_product_attention``); self-attention checks its one input once."""
        self._check_input("query", query, self.W_Q.shape[0])
        if key is query and value is query:
            return
        if cache is not None:
            raise ValueError("a key/value cache is for self-attention: pass no key or value")
        self._check_input("key", key, self.W_K.shape[0])
        self._check_input("value", value, self.W_V.shape[0])
        if key.shape[:2] != value.shape[:2]:
            raise ValueError(
                f"key is [batch, key_pos]={tuple(key.shape[:2])} "
                f"but value is {tuple(value.shape[:2])}"
            )
        if query.shape[0] != key.shape[0]:
            raise ValueError(f"query has batch={query.shape[0]} but key has batch={key.shape[0]}")

    def _check_input(self, name, t, d):
        floating_tensor(t, name, 3, "[batch, pos, d_model]")
        if t.shape[-1] != d:
            raise ValueError(f"{name} has {t.shape[-1]} features but the layer expects {d}")
        if t.shape[1] == 0:
            raise ValueError(f"{name} is an empty sequence (pos=0)")
        weights_dtype(t, self.W_Q, name)

    @classmethod
    def from_torch(cls, m: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy an ``nn.MultiheadAttention`` (batch-first or not; our module is batch-first)."""
        if not isinstance(m, nn.MultiheadAttention):
            raise TypeError(f"expected nn.MultiheadAttention, got {type(m).__name__}")
        if m.bias_k is not None or m.add_zero_attn:
            raise ValueError("add_bias_kv and add_zero_attn are not supported")
        d = m.embed_dim
        ours = cls(
            d,
            m.num_heads,
            bias=m.in_proj_bias is not None,
            dropout=m.dropout,
            d_key_in=m.kdim,
            d_value_in=m.vdim,
        )
        with torch.no_grad():
            if m._qkv_same_embed_dim:
                w_q, w_k, w_v = m.in_proj_weight.split(d, dim=0)
            else:
                w_q, w_k, w_v = m.q_proj_weight, m.k_proj_weight, m.v_proj_weight
            ours.W_Q.copy_(w_q.T)
            ours.W_K.copy_(w_k.T)
            ours.W_V.copy_(w_v.T)
            ours.W_O.copy_(m.out_proj.weight.T)
            if m.in_proj_bias is not None:
                b_q, b_k, b_v = m.in_proj_bias.split(d)
                assert ours.b_Q is not None and ours.b_K is not None and ours.b_V is not None
                ours.b_Q.copy_(b_q)
                ours.b_K.copy_(b_k)
                ours.b_V.copy_(b_v)
            if ours.b_O is not None:
                ours.b_O.copy_(m.out_proj.bias)
        return ours

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, d_head={self.d_head}"
