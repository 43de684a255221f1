"""A Llama-style decoder (Touvron et al. 2023): the GPT of chapter 13 with today's parts.

The same decoder-only shape as :class:`~transformer_lab.models.gpt.GPT` (token embeddings,
``n_layers`` pre-norm blocks of masked self-attention and a feed-forward layer, a final
norm, a tied unembedding), with four parts changed:

- :class:`~transformer_lab.nn.norms.RMSNorm` instead of layer norm (no mean, no bias);
- rotary position embeddings (:mod:`~transformer_lab.nn.positions`) applied to queries and keys
  in every layer, instead of a learned ``W_pos`` added once at the bottom;
- grouped-query attention (:mod:`~transformer_lab.nn.attention`): ``n_kv_heads`` key/value heads
  shared by ``n_heads`` query heads, which shrinks the key/value cache;
- the SwiGLU feed-forward layer (:class:`~transformer_lab.nn.feed_forward.SwiGLU`); no biases
  anywhere.

``model(ids)`` maps ``[batch, pos]`` token ids to logits ``[batch, pos, d_vocab]``. With a
:class:`~transformer_lab.nn.kv_cache.KVCache` (the GPT's cache, here holding the shared
key/value heads only) it runs on new tokens only (cached generation equals uncached), so
:func:`transformer_lab.generation.sampling.generate` drives it like the GPT. Hooks as elsewhere:
``blocks.13.attn.pattern`` holds layer 13's weights ``[batch, n_heads, query_pos,
key_pos]`` while a :func:`~transformer_lab.hooks.capture` is active.

After :meth:`Llama.store_weights`, a decoding step (one new token at batch 1, with a cache
that holds the earlier ones) runs as one C call, :class:`~transformer_lab.nn.decode_step.
FusedDecoder`, where nothing needs the modules to run one by one: no gradient is wanted, no
hook captures or changes a value, no forward hook is registered, and the kernels run here.
Every other call, and a model kept in plain float32, takes the PyTorch path.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter, itemgetter
from typing import Any, NamedTuple, cast

import torch
from torch import nn

from transformer_lab.checks import check_token_batch, finite_number, instance_of, integer, one_of
from transformer_lab.hooks import Hook
from transformer_lab.nn.attention import grouped_query_attention
from transformer_lab.nn.decode_step import DecoderLayerWeights, FusedDecoder
from transformer_lab.nn.feed_forward import SwiGLU
from transformer_lab.nn.kv_cache import KVCache
from transformer_lab.nn.masks import causal_mask
from transformer_lab.nn.norms import RMSNorm
from transformer_lab.nn.positions import apply_rotary, rotary_cos_sin
from transformer_lab.nn.row_kernels import kernels_available
from transformer_lab.nn.stored_weights import STORAGES, StoredWeight, pack_rows, store_matrices

__all__ = ["LlamaConfig", "LlamaAttention", "LlamaBlock", "Llama"]


@dataclass(frozen=True)
class LlamaConfig:
    d_vocab: int  # vocabulary size
    n_ctx: int = 2048  # the longest sequence accepted (RoPE itself has no table to outgrow)
    n_layers: int = 4  # number of blocks
    n_heads: int = 4  # query heads per block; d_head = d_model // n_heads
    n_kv_heads: int = 2  # key/value heads shared by the query heads (divides n_heads)
    d_model: int = 128  # width of the residual stream
    d_mlp: int = 352  # hidden width of the SwiGLU layer
    rope_base: float = 10000.0  # RoPE's base: pair i turns by base^(-2i/d_head) per position
    eps: float = 1e-5  # RMSNorm epsilon
    tie_weights: bool = True  # unembedding = W_E transposed (no separate W_U)
    init_std: float = 0.02  # std of the normal initialisation of every weight matrix

    def __post_init__(self):
        for name in ("d_vocab", "n_ctx", "n_layers", "n_heads", "n_kv_heads", "d_model", "d_mlp"):
            integer(getattr(self, name), name, minimum=1)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if (self.d_model // self.n_heads) % 2:
            raise ValueError(f"d_head={self.d_model // self.n_heads} must be even for RoPE")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_heads={self.n_heads} is not divisible by n_kv_heads={self.n_kv_heads}"
            )
        finite_number(self.rope_base, "rope_base", above=1)
        finite_number(self.eps, "eps", above=0)
        finite_number(self.init_std, "init_std", above=0)
        instance_of(self.tie_weights, bool, "tie_weights")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


class LlamaAttention(nn.Module):
    """Causal grouped-query self-attention with RoPE on queries and keys, no biases.

    ``W_Q [d_model, n_heads d_head]``, ``W_K``/``W_V [d_model, n_kv_heads d_head]``,
    ``W_O [n_heads d_head, d_model]``. Hooks ``pattern`` and ``z``.
    """

    def __init__(self, config: LlamaConfig):
        super().__init__()
        c = instance_of(config, LlamaConfig, "config")
        self.n_heads, self.n_kv_heads, self.d_head = c.n_heads, c.n_kv_heads, c.d_head
        self.W_Q = nn.Parameter(torch.empty(c.d_model, c.n_heads * c.d_head))
        self.W_K = nn.Parameter(torch.empty(c.d_model, c.n_kv_heads * c.d_head))
        self.W_V = nn.Parameter(torch.empty(c.d_model, c.n_kv_heads * c.d_head))
        self.W_O = nn.Parameter(torch.empty(c.n_heads * c.d_head, c.d_model))
        self.pattern, self.z = Hook(), Hook()

    def forward(self, x, cos, sin, mask=None, cache: KVCache | None = None, layer: int = 0):
        """``x [batch, pos, d_model]`` (the newest positions when ``cache`` is given: their
        rotated keys and values join the cache's layer ``layer``)."""
        batch, pos, _ = x.shape
        q = (x @ self.W_Q).view(batch, pos, self.n_heads, self.d_head).transpose(1, 2)
        k = (x @ self.W_K).view(batch, pos, self.n_kv_heads, self.d_head).transpose(1, 2)
        v = (x @ self.W_V).view(batch, pos, self.n_kv_heads, self.d_head).transpose(1, 2)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)  # rotate, then cache
        if cache is not None:
            k, v = cache.update(layer, k, v)  # [batch, n_kv_heads, key_pos, d_head]
        want = self.pattern.active
        z, weights = grouped_query_attention(q, k, v, mask, need_weights=want)
        if weights is not None:
            self.pattern(weights)  # [batch, n_heads, query_pos, key_pos]
        z = self.z(z.transpose(1, 2).reshape(batch, pos, self.n_heads * self.d_head))
        return z @ self.W_O  # [batch, pos, d_model]


class LlamaBlock(nn.Module):
    """``x + attn(norm1(x))``, then ``x + mlp(norm2(x))``, with RMSNorm and SwiGLU."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        instance_of(config, LlamaConfig, "config")
        self.norm1 = RMSNorm(config.d_model, config.eps)
        self.attn = LlamaAttention(config)
        self.norm2 = RMSNorm(config.d_model, config.eps)
        self.mlp = SwiGLU(config.d_model, config.d_mlp, config.init_std)

    def forward(self, x, cos, sin, mask=None, cache: KVCache | None = None, layer: int = 0):
        x = x + self.attn(self.norm1(x), cos, sin, mask, cache=cache, layer=layer)
        return x + self.mlp(self.norm2(x))


PARTS = (LlamaAttention, SwiGLU, RMSNorm, RMSNorm)  # a block's parts where the step may run
MATRICES = ("W_Q", "W_K", "W_V", "W_O", "W_gate", "W_up", "W_down")
FORWARD_HOOKS, PRE_HOOKS = attrgetter("_forward_hooks"), attrgetter("_forward_pre_hooks")
ACTIVE, EDIT = attrgetter("active"), attrgetter("edit")  # a Hook's capture and intervention
CHILDREN, PARAMETERS = attrgetter("_modules"), attrgetter("_parameters")
ROWS, SCALE, EPS = attrgetter("rows"), attrgetter("scale"), attrgetter("eps")
ADDRESS = torch.Tensor.data_ptr
ATTENTION_MATRICES, SWIGLU_MATRICES = itemgetter(*MATRICES[:4]), itemgetter(*MATRICES[4:])


class _FusedPlan(NamedTuple):
    """The fused step of a :class:`Llama` (None where its parts do not allow one), the
    modules and hooks to look at before each use, and what it was built on (``key``)."""

    step: FusedDecoder | None
    modules: list[nn.Module]
    parents: list[nn.Module]  # the modules with children: a replaced part shows in them
    hooks: list[Hook]
    norms: list[RMSNorm]
    attention: list[dict]  # the attributes of the attention modules: their stored matrices
    swiglu: list[dict]  # and of the SwiGLU modules
    key: tuple | None


def _fused_key(model: Llama, plan: _FusedPlan) -> tuple | None:
    """What the model's fused step depends on: the children of every module that has any,
    the stored matrices with their rows and scales, the addresses of the norms' gains (a
    gain replaced, or given new ``.data``, has a new one) and their epsilons (None where a
    matrix is missing). Compared with ``==`` (identity for modules, stored matrices and
    their tensors) in ``map``: some tens of microseconds for SmolLM2's 30 layers."""
    try:
        attention = list(map(ATTENTION_MATRICES, plan.attention))
        swiglu = list(map(SWIGLU_MATRICES, plan.swiglu))
        stored = [model.stored_unembed, *chain.from_iterable(attention + swiglu)]
        rows, scales = list(map(ROWS, stored)), list(map(SCALE, stored))
    except (KeyError, AttributeError):
        return None
    gains = chain.from_iterable(map(dict.values, map(PARAMETERS, plan.norms)))
    addresses = list(map(ADDRESS, gains))  # a gain given new .data has a new address
    children = list(map(dict.copy, map(CHILDREN, plan.parents)))
    return model.config, stored, rows, scales, children, addresses, [*map(EPS, plan.norms)]


def _same_key(a: tuple | None, b: tuple | None) -> bool:
    """``a == b``, where a tensor that is not the same object compares elementwise (which
    ``bool`` refuses: a change); None (a matrix missing) is never the same."""
    if a is None or b is None:
        return False
    try:
        return bool(a == b)
    except (RuntimeError, TypeError):
        return False


def _fused_plan(model: Llama) -> _FusedPlan:
    """A new :class:`_FusedPlan` for ``model`` as it is now."""
    modules = list(model.modules())
    hooks = [m for m in modules if type(m) is Hook]
    norms = [m for m in modules if type(m) is RMSNorm]
    attention = [vars(m) for m in modules if type(m) is LlamaAttention]
    swiglu = [vars(m) for m in modules if type(m) is SwiGLU]
    parents = [m for m in modules if m._modules]
    plan = _FusedPlan(None, modules, parents, hooks, norms, attention, swiglu, None)
    key = _fused_key(model, plan)
    c, eps = model.config, model.ln_final.eps
    blocks_ok = all(
        type(b) is LlamaBlock
        and (type(b.attn), type(b.mlp), type(b.norm1), type(b.norm2)) == PARTS
        and b.norm1.eps == b.norm2.eps == eps
        for b in cast(Iterable[LlamaBlock], model.blocks)
    )
    if key is None or not blocks_ok or type(model.ln_final) is not RMSNorm:
        return plan._replace(key=key)
    float32 = all(n.gain.dtype == torch.float32 for n in plan.norms)
    if model.W_E.dtype != torch.float32 or not float32 or len(attention) != len(model.blocks):
        return plan._replace(key=key)  # a model in another dtype: the modules run
    step = FusedDecoder(
        model._layer_weights(), model.ln_final.gain, cast(StoredWeight, model.stored_unembed),
        n_heads=c.n_heads, n_kv_heads=c.n_kv_heads, eps=eps, rope_base=c.rope_base,
    )  # fmt: skip
    return plan._replace(step=step, key=key)


class Llama(nn.Module):
    """The decoder: ``model(ids)`` maps token ids ``[batch, pos]`` to next-token logits
    ``[batch, pos, d_vocab]``; position ``t`` sees tokens ``0..t`` only."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.config = c = instance_of(config, LlamaConfig, "config")
        self.W_E = nn.Parameter(torch.empty(c.d_vocab, c.d_model))  # token embeddings
        self.blocks = nn.ModuleList(LlamaBlock(c) for _ in range(c.n_layers))
        self.ln_final = RMSNorm(c.d_model, c.eps)
        self.W_U = None if c.tie_weights else nn.Parameter(torch.empty(c.d_model, c.d_vocab))
        self.storage = "float32"  # how the matrices are kept: see store_weights
        self.stored_unembed: StoredWeight | None = None
        self.fused_decoding = True  # False: stored weights decode through the modules too
        self._fused: _FusedPlan | None = None
        self.reset_parameters()

    def __getstate__(self) -> dict:
        """A copy (``copy.deepcopy``, pickling) builds its own fused step when it first
        decodes: the step holds C pointers to this model's weights."""
        return {**self.__dict__, "_fused": None}

    def reset_parameters(self) -> None:
        """Every matrix ``N(0, init_std^2)``; the two that write into the residual stream
        (``W_O``, ``W_down``) scaled by ``1/sqrt(2 n_layers)`` as in the GPT; gains one."""
        std = self.config.init_std
        with torch.no_grad():
            nn.init.normal_(self.W_E, std=std)
            if self.W_U is not None:
                nn.init.normal_(self.W_U, std=std)
            for block in cast(Iterable[LlamaBlock], self.blocks):
                a, m = block.attn, block.mlp
                for w in (a.W_Q, a.W_K, a.W_V, m.W_gate, m.W_up):
                    nn.init.normal_(w, std=std)
                for w in (a.W_O, m.W_down):
                    nn.init.normal_(w, std=std / math.sqrt(2 * self.config.n_layers))
                block.norm1.gain.fill_(1.0)
                block.norm2.gain.fill_(1.0)
            self.ln_final.gain.fill_(1.0)

    @property
    def unembed(self) -> torch.Tensor | StoredWeight:
        """``[d_model, d_vocab]``: ``W_E`` transposed when the weights are tied (its stored
        copy after :meth:`store_weights`)."""
        if self.stored_unembed is not None:
            return self.stored_unembed
        return self.W_E.T if self.W_U is None else self.W_U

    @torch.no_grad()
    def store_weights(self, storage: str, group_size: int | None = None) -> Llama:
        """Keep every block's matrices and the unembedding in ``storage`` ("float32-rows",
        "bfloat16" or "int8", :mod:`transformer_lab.nn.stored_weights`) for faster decoding
        on the CPU: the package's row kernels read each matrix in address order, and a token
        reads the same bytes, a half or a quarter of them. The token embedding stays float32
        (a token reads one row of it). The stored rows lie in one huge-page buffer in the
        order a token reads them (:func:`~transformer_lab.nn.stored_weights.pack_rows`), and a
        decoding step runs fused (see the module's notes). ``group_size`` (int8): one scale per
        that many inputs of a row instead of one per row. Inference only, once; returns the
        model."""
        if self.storage != "float32":
            raise ValueError(f"the weights are already stored as {self.storage}")
        if self.W_E.device.type != "cpu":
            raise ValueError(
                f"stored weights run on the CPU only; the model is on {self.W_E.device}"
            )
        one_of(storage, STORAGES, "storage")
        float_unembed = cast(torch.Tensor, self.unembed)  # not stored yet: a tensor
        unembed = StoredWeight(float_unembed.detach(), storage, group_size)
        for block in cast(Iterable[LlamaBlock], self.blocks):
            store_matrices(block.attn, ("W_Q", "W_K", "W_V", "W_O"), storage, group_size)
            store_matrices(block.mlp, ("W_gate", "W_up", "W_down"), storage, group_size)
        if self.W_U is not None:
            del self._parameters["W_U"]
            self.W_U = None
        self.stored_unembed, self.storage = unembed, storage
        pack_rows([getattr(b, n) for b in self._layer_weights() for n in MATRICES] + [unembed])
        return self.eval()

    def _layer_weights(self) -> list[DecoderLayerWeights]:
        """Every block's gains and matrices, as the fused step reads them."""
        layers = []
        for b in cast(Iterable[LlamaBlock], self.blocks):
            a, m = cast(Any, b.attn), cast(Any, b.mlp)  # their matrices: StoredWeights by now
            layers.append(
                DecoderLayerWeights(b.norm1.gain, a.W_Q, a.W_K, a.W_V, a.W_O, b.norm2.gain,
                                    m.W_gate, m.W_up, m.W_down)
            )  # fmt: skip
        return layers

    def _fused_step(self) -> FusedDecoder | None:
        """The fused decoding step for the stored weights, or None where the modules must
        run: the fused step is turned off or the kernels are, a gradient is wanted, a hook is
        active or registered, or a part is not the one this class builds. Every call checks
        (at C speed, with ``map``) that the modules, parameters, stored matrices and their
        rows are those the step was built on, and builds it again if any was replaced."""
        if not getattr(self, "fused_decoding", False) or not kernels_available():
            return None
        if torch.is_grad_enabled() and any(p.requires_grad for p in self.parameters()):
            return None
        torch_hooks = nn.modules.module
        if torch_hooks._global_forward_hooks or torch_hooks._global_forward_pre_hooks:
            return None
        plan = getattr(self, "_fused", None)
        if plan is None or not _same_key(plan.key, _fused_key(self, plan)):
            plan = self._fused = _fused_plan(self)
        modules, hooks = plan.modules, plan.hooks
        if any(map(FORWARD_HOOKS, modules)) or any(map(PRE_HOOKS, modules)):
            return None
        if any(map(ACTIVE, hooks)) or any(e is not None for e in map(EDIT, hooks)):
            return None
        return plan.step

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def new_cache(self) -> KVCache:
        return KVCache(self.config.n_layers)

    def _check_idx(self, idx, offset: int) -> None:
        check_token_batch(idx, self.config.n_ctx, self.config.d_vocab, offset)

    def forward(
        self,
        idx: torch.Tensor,
        kv_cache: KVCache | None = None,
        attention_mask: torch.Tensor | None = None,
        *,
        last_only: bool = False,
    ) -> torch.Tensor:
        """Logits ``[batch, pos, d_vocab]`` for token ids ``idx [batch, pos]``.

        ``attention_mask`` (bool or 0/1, ``[batch, pos]``, True = real token) marks padding;
        padded keys are never attended to and each sequence's positions count its real
        tokens only, so a left-padded sequence gets the same numbers as alone. With
        ``kv_cache``, ``idx`` holds only the new tokens; the mask then covers the new
        tokens (the cache remembers the earlier ones' mask). ``last_only=True`` unembeds
        the last position only (``[batch, 1, d_vocab]``), all that generation needs: for a
        prompt it saves the largest product, ``d_model x d_vocab``, at every other position.
        """
        offset = KVCache.offset_of(kv_cache, len(self.blocks))  # positions already cached
        self._check_idx(idx, offset)
        if (
            offset
            and kv_cache is not None
            and self.storage != "float32"
            and idx.shape == (1, 1)
            and attention_mask is None
            and kv_cache.padding is None
            and idx.device.type == "cpu"
        ):
            step = self._fused_step()  # one new token at batch 1: one C call
            if step is not None:
                return step(self.W_E[int(idx[0, 0])], kv_cache)
        batch, pos = idx.shape
        padding = None if kv_cache is None else kv_cache.padding
        if attention_mask is not None:
            if not isinstance(attention_mask, torch.Tensor) or attention_mask.shape != idx.shape:
                got = getattr(attention_mask, "shape", type(attention_mask).__name__)
                raise ValueError(
                    f"attention_mask must be [batch, pos]={tuple(idx.shape)} like idx, got {got}"
                )
            if not ((attention_mask == 0) | (attention_mask == 1)).all():
                raise ValueError(
                    "attention_mask must hold 1 (or True) for real tokens and 0 for padding"
                )
            new = attention_mask.to(torch.bool)
            old = padding
            if old is None and offset:
                old = torch.ones(batch, offset, dtype=torch.bool, device=idx.device)
            padding = new if old is None else torch.cat([old, new], dim=1)
        elif padding is not None:
            ones = torch.ones(batch, pos, dtype=torch.bool, device=idx.device)
            padding = torch.cat([padding, ones], dim=1)
        if kv_cache is not None:
            kv_cache.padding = padding
        if padding is None:
            positions = torch.arange(offset, offset + pos, device=idx.device)  # [pos]
            mask = None if pos == 1 else causal_mask(pos, offset + pos, device=idx.device)
        else:
            positions = (padding.long().cumsum(dim=1) - 1).clamp(min=0)[:, offset:]  # [batch, pos]
            causal = causal_mask(pos, offset + pos, device=idx.device)  # [pos, key_pos]
            mask = causal & padding[:, None, None, :]  # [batch, 1, pos, key_pos]
        cos, sin = rotary_cos_sin(positions, self.config.d_head, self.config.rope_base)
        x = self.W_E[idx]  # [batch, pos, d_model]
        for layer, block in enumerate(self.blocks):
            x = block(x, cos, sin, mask, cache=kv_cache, layer=layer)
        if last_only:
            x = x[:, -1:]  # [batch, 1, d_model]
        return self.ln_final(x) @ self.unembed  # [batch, pos, d_vocab]
