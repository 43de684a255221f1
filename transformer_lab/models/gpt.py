"""A decoder-only Transformer language model in the style of GPT-2 (Radford et al. 2019).

Token embeddings ``W_E`` plus learned positions ``W_pos`` enter the residual stream;
``n_layers`` pre-LN blocks (masked self-attention, then an MLP, each added back into the
stream) transform it; a final layer norm and the unembedding give next-token logits. The
unembedding is ``W_E`` transposed (weight tying, Press & Wolf 2017) unless
``tie_weights=False``. Each block is the package's :class:`~transformer_lab.nn.blocks.EncoderBlock`
with ``norm_first=True`` and a causal mask, so hooks such as ``blocks.0.attn.pattern``
work as everywhere else in the book. With a :class:`~transformer_lab.nn.kv_cache.KVCache`
the model runs on new tokens only, through the same blocks (hooks and dropout included).

Loading real GPT-2 weights (needs network access once; the book itself never downloads)::

    from transformers import GPT2LMHeadModel
    hf = GPT2LMHeadModel.from_pretrained("gpt2")   # 124M parameters, fetched from the Hub
    model = GPT.from_hf_gpt2(hf).eval()
    # GPT-2's own byte-level BPE: transformers.GPT2TokenizerFast.from_pretrained("gpt2")

The same call works on a randomly initialised ``GPT2LMHeadModel(GPT2Config(...))``, which
is how the tests check it offline.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import cast

import torch
from torch import nn

from transformer_lab.checks import (
    check_token_batch,
    finite_number,
    fraction,
    instance_of,
    integer,
    one_of,
)
from transformer_lab.nn.blocks import EncoderBlock
from transformer_lab.nn.feed_forward import ACTIVATIONS
from transformer_lab.nn.kv_cache import KVCache
from transformer_lab.nn.masks import causal_mask
from transformer_lab.nn.norms import LayerNorm
from transformer_lab.nn.positions import LearnedPositions

__all__ = ["GPTConfig", "GPTBlock", "GPT", "init_blocks"]


@dataclass(frozen=True)
class GPTConfig:
    d_vocab: int  # vocabulary size (characters or BPE tokens)
    n_ctx: int = 64  # context length: the most tokens the model sees (learned positions)
    n_layers: int = 4  # number of blocks
    n_heads: int = 4  # attention heads per block; d_head = d_model // n_heads
    d_model: int = 128  # width of the residual stream
    d_mlp: int | None = None  # hidden width of each MLP; None means 4 * d_model
    dropout: float = 0.0  # dropout on attention weights and sublayer outputs while training
    activation: str = "gelu_tanh"  # MLP nonlinearity; GPT-2's "gelu_new" is the tanh GELU
    eps: float = 1e-5  # layer norm epsilon (GPT-2: 1e-5)
    tie_weights: bool = True  # unembedding = W_E transposed (no separate W_U)
    init_std: float = 0.02  # std of the normal initialisation of every weight matrix
    fused_norm: bool = True  # layer norms in one kernel (F.layer_norm): same values, faster
    _d_mlp: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self):
        for name in ("d_vocab", "n_ctx", "n_layers", "n_heads", "d_model"):
            integer(getattr(self, name), name, minimum=1)
        if self.d_mlp is not None:
            integer(self.d_mlp, "d_mlp", minimum=1)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        fraction(self.dropout, "dropout", closed=False)
        one_of(self.activation, sorted(ACTIVATIONS), "activation")
        finite_number(self.eps, "eps", above=0)
        finite_number(self.init_std, "init_std", above=0)
        instance_of(self.tie_weights, bool, "tie_weights")
        instance_of(self.fused_norm, bool, "fused_norm")
        object.__setattr__(self, "_d_mlp", self.d_mlp or 4 * self.d_model)

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def mlp_width(self) -> int:
        """The MLP's hidden width: ``d_mlp``, or ``4 * d_model`` when that is None."""
        return self._d_mlp


class GPTBlock(EncoderBlock):
    """A pre-LN block with a causal mask (``x + attn(LN(x))``, then ``x + mlp(LN(x))``)
    that can also run on the newest positions only, reading earlier keys and values from a
    :class:`~transformer_lab.nn.kv_cache.KVCache`."""

    def forward_cached(
        self, x: torch.Tensor, cache: KVCache, layer: int, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``x [batch, new_pos, d_model]`` are the newest positions; ``cache`` holds the
        keys and values of every earlier one and receives this call's in layer ``layer``;
        ``mask [new_pos, key_pos]`` (None: every key). The sublayers, hooks and dropout of
        :meth:`forward`; only self-attention also reads the cache."""
        instance_of(cache, KVCache, "cache")

        def attend(h):  # the cached self-attention sublayer
            return self.attn(h, mask=mask, need_weights=False, cache=cache, layer=layer)[0]

        x = self.resid_mid(self._sublayer(self.resid_pre(x), self.ln1, attend, self.attn_out))
        return self.resid_post(self._sublayer(x, self.ln2, self.mlp, self.mlp_out))


def init_blocks(blocks: nn.ModuleList, std: float) -> None:
    """GPT-2's initialisation of a stack of blocks: every weight matrix ``N(0, std^2)``, the
    two that write into the residual stream (``W_O``, ``W_2``) scaled down by
    ``1/sqrt(2 n_layers)``, biases zero."""
    instance_of(blocks, nn.ModuleList, "blocks", "an nn.ModuleList of blocks")
    finite_number(std, "std", above=0)
    with torch.no_grad():
        for block in cast(Iterable[EncoderBlock], blocks):
            a, m = block.attn, block.mlp
            for w in (a.W_Q, a.W_K, a.W_V, m.W_1):
                nn.init.normal_(w, std=std)
            for w in (a.W_O, m.W_2):
                nn.init.normal_(w, std=std / math.sqrt(2 * len(blocks)))
            for b in (a.b_Q, a.b_K, a.b_V, a.b_O, m.b_1, m.b_2):
                if b is not None:
                    b.zero_()


class GPT(nn.Module):
    """The GPT language model: ``model(idx)`` maps token ids ``[batch, pos]`` to next-token
    logits ``[batch, pos, d_vocab]``; position ``t`` sees tokens ``0..t`` only."""

    mask: torch.Tensor  # a buffer: the causal mask [n_ctx, n_ctx]

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = c = instance_of(config, GPTConfig, "config")
        self.W_E = nn.Parameter(torch.empty(c.d_vocab, c.d_model))  # token embeddings
        self.pos = LearnedPositions(c.n_ctx, c.d_model, init_std=c.init_std)  # W_pos
        self.drop = nn.Dropout(c.dropout) if c.dropout else nn.Identity()  # no call when p = 0
        self.blocks = nn.ModuleList(
            GPTBlock(c.d_model, c.n_heads, c.mlp_width, dropout=c.dropout, norm_first=True,
                     activation=c.activation, eps=c.eps)
            for _ in range(c.n_layers)
        )  # fmt: skip
        self.ln_final = LayerNorm(c.d_model, c.eps)
        self.W_U = None if c.tie_weights else nn.Parameter(torch.empty(c.d_model, c.d_vocab))
        self.register_buffer("mask", causal_mask(c.n_ctx), persistent=False)
        for module in self.modules():
            if isinstance(module, LayerNorm):
                module.fused = c.fused_norm
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """GPT-2's initialisation: every weight matrix ``N(0, init_std^2)``, the two that
        write into the residual stream (``W_O``, ``W_2``) scaled down by
        ``1/sqrt(2 n_layers)`` so the stream's variance does not grow with depth; biases
        zero, layer norms the identity."""
        std = self.config.init_std
        with torch.no_grad():
            nn.init.normal_(self.W_E, std=std)
            nn.init.normal_(self.pos.W_pos, std=std)
            if self.W_U is not None:
                nn.init.normal_(self.W_U, std=std)
        init_blocks(self.blocks, std)

    @property
    def unembed(self) -> torch.Tensor:
        """``[d_model, d_vocab]``: ``W_E`` transposed when the weights are tied."""
        return self.W_E.T if self.W_U is None else self.W_U

    def num_params(self, include_positions: bool = True) -> int:
        n = sum(p.numel() for p in self.parameters())
        return n if include_positions else n - self.pos.W_pos.numel()

    def _check_idx(self, idx: torch.Tensor, offset: int = 0) -> None:
        check_token_batch(
            idx, self.config.n_ctx, self.config.d_vocab, offset,
            hint="; crop the input to its last n_ctx tokens",
        )  # fmt: skip

    def forward(self, idx: torch.Tensor, kv_cache: KVCache | None = None) -> torch.Tensor:
        """Logits ``[batch, pos, d_vocab]`` for token ids ``idx [batch, pos]``.

        With ``kv_cache``, ``idx`` holds only the *new* tokens: they take the positions
        after the cached ones, attend to the cached keys and values, and add their own to
        the cache. The logits equal those of running the whole sequence without a cache.
        """
        offset = KVCache.offset_of(kv_cache, len(self.blocks))  # positions already cached
        self._check_idx(idx, offset)
        pos = idx.shape[1]
        x = self.drop(self.pos(self.W_E[idx], offset=offset))  # [batch, pos, d_model]
        # the causal mask's rows of the new positions [pos, key_pos]; one token sees every key
        mask = None if pos == 1 else self.mask[offset : offset + pos, : offset + pos]
        for layer, block in enumerate(cast(Iterable[GPTBlock], self.blocks)):
            if kv_cache is None:
                x = block(x, mask)
            else:
                x = block.forward_cached(x, kv_cache, layer, mask)
        return self.ln_final(x) @ self.unembed  # [batch, pos, d_vocab]

    def new_cache(self) -> KVCache:
        return KVCache(self.config.n_layers)

    @classmethod
    def from_hf_gpt2(cls, hf_model) -> GPT:
        """Build our GPT from a Hugging Face ``GPT2LMHeadModel`` (or ``GPT2Model``) with the
        same weights.

        GPT-2 stores its projections as ``Conv1D`` modules whose weight is
        ``[d_in, d_out]`` and computes ``x W + b``: already our layout (``Q = X W_Q``),
        i.e. the transpose of an ``nn.Linear`` weight. Its attention uses one fused
        ``c_attn`` of width ``3 d_model`` that we split into ``W_Q, W_K, W_V``;
        ``gelu_new`` is the tanh approximation of GELU; the layer norm epsilon is
        ``layer_norm_epsilon``; the language-model head is tied to ``wte``.
        """
        transformer = getattr(hf_model, "transformer", hf_model)
        hf_config = getattr(hf_model, "config", None)
        if (
            not isinstance(hf_model, nn.Module)
            or not all(hasattr(transformer, name) for name in ("wte", "wpe", "h", "ln_f"))
            or hf_config is None
            or getattr(hf_config, "model_type", None) != "gpt2"
        ):
            raise TypeError(
                "expected a Hugging Face GPT2LMHeadModel or GPT2Model, "
                f"got {type(hf_model).__name__}"
            )
        act = hf_config.activation_function
        if act not in ("gelu_new", "gelu_pytorch_tanh", "gelu"):
            raise ValueError(f"unsupported GPT-2 activation_function {act!r}")
        if getattr(hf_config, "scale_attn_by_inverse_layer_idx", False):
            raise ValueError("scale_attn_by_inverse_layer_idx=True is not supported")
        if not getattr(hf_config, "scale_attn_weights", True):
            raise ValueError("scale_attn_weights=False is not supported")
        head = getattr(hf_model, "lm_head", None)
        tied = head is None or head.weight.data_ptr() == transformer.wte.weight.data_ptr()
        config = GPTConfig(
            d_vocab=hf_config.vocab_size,
            n_ctx=hf_config.n_positions,
            n_layers=hf_config.n_layer,
            n_heads=hf_config.n_head,
            d_model=hf_config.n_embd,
            d_mlp=hf_config.n_inner or 4 * hf_config.n_embd,
            activation="gelu" if act == "gelu" else "gelu_tanh",
            eps=hf_config.layer_norm_epsilon,
            tie_weights=tied,
        )
        ours = cls(config)
        d = config.d_model
        with torch.no_grad():
            ours.W_E.copy_(transformer.wte.weight)
            ours.pos.W_pos.copy_(transformer.wpe.weight)
            if not tied:
                assert ours.W_U is not None and head is not None  # made untied, read from head
                ours.W_U.copy_(head.weight.T)
            for block, h in zip(cast(Iterable[GPTBlock], ours.blocks), transformer.h, strict=True):
                _copy_ln(block.ln1, h.ln_1)
                _copy_ln(block.ln2, h.ln_2)
                w_q, w_k, w_v = h.attn.c_attn.weight.split(d, dim=1)  # each [d_model, d_model]
                b_q, b_k, b_v = h.attn.c_attn.bias.split(d)
                for ours_w, w in (
                    (block.attn.W_Q, w_q),
                    (block.attn.W_K, w_k),
                    (block.attn.W_V, w_v),
                    (block.attn.W_O, h.attn.c_proj.weight),
                    (block.mlp.W_1, h.mlp.c_fc.weight),
                    (block.mlp.W_2, h.mlp.c_proj.weight),
                ):
                    ours_w.copy_(w)
                for ours_b, b in (
                    (block.attn.b_Q, b_q),
                    (block.attn.b_K, b_k),
                    (block.attn.b_V, b_v),
                    (block.attn.b_O, h.attn.c_proj.bias),
                    (block.mlp.b_1, h.mlp.c_fc.bias),
                    (block.mlp.b_2, h.mlp.c_proj.bias),
                ):
                    ours_b.copy_(b)
            _copy_ln(ours.ln_final, transformer.ln_f)
        return ours


def _copy_ln(ours: LayerNorm, theirs: nn.LayerNorm) -> None:
    ours.gain.copy_(theirs.weight)
    ours.bias.copy_(theirs.bias)
    ours.eps = theirs.eps
