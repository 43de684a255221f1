"""A decoder-only Transformer language model in the style of GPT-2 (Radford et al. 2019).

Token embeddings ``W_E`` plus learned positions ``W_pos`` enter the residual stream;
``n_layers`` pre-LN blocks (masked self-attention, then an MLP, each added back into the
stream) transform it; a final layer norm and the unembedding give next-token logits. The
unembedding is ``W_E`` transposed (weight tying, Press & Wolf 2017) unless
``tie_weights=False``. Each block is the package's :class:`~transformer_lab.nn.blocks.EncoderBlock`
with ``norm_first=True`` and a causal mask, so hooks such as ``blocks.0.attn.pattern``
work as everywhere else in the book.

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
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from transformer_lab.checks import check_token_batch
from transformer_lab.nn.blocks import EncoderBlock
from transformer_lab.nn.feed_forward import ACTIVATIONS
from transformer_lab.nn.functional import affine
from transformer_lab.nn.masks import causal_mask
from transformer_lab.nn.norms import LayerNorm
from transformer_lab.nn.positions import LearnedPositions

__all__ = ["GPTConfig", "KVCache", "GPTBlock", "GPT"]


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
        def is_int(value):
            return isinstance(value, int) and not isinstance(value, bool)

        for name in ("d_vocab", "n_ctx", "n_layers", "n_heads", "d_model"):
            value = getattr(self, name)
            if not is_int(value) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.d_mlp is not None and (not is_int(self.d_mlp) or self.d_mlp <= 0):
            raise ValueError(f"d_mlp must be None or a positive int, got {self.d_mlp!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if not isinstance(self.dropout, (int, float)) or not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be a number in [0, 1), got {self.dropout!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}"
            )
        if not self.eps > 0:
            raise ValueError(f"eps must be positive, got {self.eps!r}")
        if not isinstance(self.tie_weights, bool):
            raise TypeError(f"tie_weights must be a bool, got {self.tie_weights!r}")
        if not (self.init_std > 0 and math.isfinite(self.init_std)):
            raise ValueError(f"init_std must be a positive finite number, got {self.init_std!r}")
        if not (self.eps > 0 and math.isfinite(self.eps)):
            raise ValueError(f"eps must be a positive finite number, got {self.eps!r}")
        if not isinstance(self.fused_norm, bool):
            raise TypeError(f"fused_norm must be a bool, got {self.fused_norm!r}")
        object.__setattr__(self, "_d_mlp", self.d_mlp or 4 * self.d_model)

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def mlp_width(self) -> int:
        """The MLP's hidden width: ``d_mlp``, or ``4 * d_model`` when that is None."""
        return self._d_mlp


class KVCache:
    """Keys and values of the tokens seen so far, one ``(k, v)`` pair per layer, each
    ``[batch, n_heads, pos, d_head]``. A new token then needs only its own query, key and
    value: attention to the earlier tokens reads their cached keys and values."""

    def __init__(self, n_layers: int):
        if not isinstance(n_layers, int) or isinstance(n_layers, bool) or n_layers <= 0:
            raise ValueError(f"n_layers must be a positive int, got {n_layers!r}")
        self.layers: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * n_layers

    @property
    def length(self) -> int:
        """How many positions are cached."""
        first = self.layers[0]
        return 0 if first is None else first[0].shape[-2]

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        """Append the new positions' ``k``, ``v`` and return the whole cached keys/values."""
        old = self.layers[layer]
        if old is not None and (old[0].shape[:2] != k.shape[:2] or old[0].shape[3] != k.shape[3]):
            raise ValueError(
                f"the cache holds [batch, n_heads, pos, d_head]={tuple(old[0].shape)} but the new "
                f"keys are {tuple(k.shape)}; use model.new_cache() for another batch"
            )
        if old is not None:
            k, v = torch.cat([old[0], k], dim=-2), torch.cat([old[1], v], dim=-2)
        self.layers[layer] = (k, v)
        return k, v


class GPTBlock(EncoderBlock):
    """A pre-LN block with a causal mask (``x + attn(LN(x))``, then ``x + mlp(LN(x))``)
    that can also run on new tokens only, reading earlier keys and values from a cache."""

    def forward_cached(self, x: torch.Tensor, cache: KVCache, layer: int) -> torch.Tensor:
        """``x [batch, new_pos, d_model]`` are the newest positions; ``cache`` holds the
        keys and values of every earlier one and receives this call's."""
        if not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache, got {type(cache).__name__}")
        attn = self.attn
        h = self.ln1(x)
        q, k, v = attn._project_qkv(h)  # each [batch, n_heads, new_pos, d_head]
        k, v = cache.update(layer, k, v)  # [batch, n_heads, key_pos, d_head]
        mask = causal_mask(q.shape[-2], k.shape[-2], device=x.device)  # bottom-right aligned
        z = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask
        )  # [batch, n_heads, new_pos, d_head]
        batch, _, new_pos, _ = z.shape
        z = z.transpose(1, 2).reshape(batch, new_pos, attn.d_model)  # [batch, new_pos, d_model]
        x = x + affine(z, attn.W_O, attn.b_O)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """The GPT language model: ``model(idx)`` maps token ids ``[batch, pos]`` to next-token
    logits ``[batch, pos, d_vocab]``; position ``t`` sees tokens ``0..t`` only."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"config must be a GPTConfig, got {type(config).__name__}")
        self.config = c = config
        self.W_E = nn.Parameter(torch.empty(c.d_vocab, c.d_model))  # token embeddings
        self.pos = LearnedPositions(c.n_ctx, c.d_model, init_std=c.init_std)  # W_pos
        self.drop = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            GPTBlock(c.d_model, c.n_heads, c.mlp_width, dropout=c.dropout, norm_first=True,
                     activation=c.activation, eps=c.eps)
            for _ in range(c.n_layers)
        )  # fmt: skip
        self.ln_f = LayerNorm(c.d_model, c.eps)
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
            for block in self.blocks:
                a, m = block.attn, block.mlp
                for w in (a.W_Q, a.W_K, a.W_V, m.W_1):
                    nn.init.normal_(w, std=std)
                for w in (a.W_O, m.W_2):
                    nn.init.normal_(w, std=std / math.sqrt(2 * self.config.n_layers))
                for b in (a.b_Q, a.b_K, a.b_V, a.b_O, m.b_1, m.b_2):
                    if b is not None:
                        b.zero_()

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
        if kv_cache is not None and not isinstance(kv_cache, KVCache):
            raise TypeError(f"kv_cache must be a KVCache or None, got {type(kv_cache).__name__}")
        if kv_cache is not None and len(kv_cache.layers) != len(self.blocks):
            raise ValueError(
                f"kv_cache has {len(kv_cache.layers)} layers but the model has {len(self.blocks)}"
            )
        offset = 0 if kv_cache is None else kv_cache.length
        self._check_idx(idx, offset)
        x = self.drop(self.pos(self.W_E[idx], offset=offset))  # [batch, pos, d_model]
        if kv_cache is None:
            pos = idx.shape[1]
            mask = self.mask[:pos, :pos]  # [pos, pos]
            for block in self.blocks:
                x = block(x, mask)
        else:
            for layer, block in enumerate(self.blocks):
                x = block.forward_cached(x, kv_cache, layer)
        return self.ln_f(x) @ self.unembed  # [batch, pos, d_vocab]

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
                ours.W_U.copy_(head.weight.T)
            for block, h in zip(ours.blocks, transformer.h, strict=True):
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
            _copy_ln(ours.ln_f, transformer.ln_f)
        return ours


def _copy_ln(ours: LayerNorm, theirs: nn.LayerNorm) -> None:
    ours.gain.copy_(theirs.weight)
    ours.bias.copy_(theirs.bias)
    ours.eps = theirs.eps
