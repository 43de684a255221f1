"""A decoder-only Transformer language model in the style of GPT-2 (Radford et al. 2019).

Token embeddings ``W_E`` plus learned positions ``W_pos`` enter the residual stream;
``n_layers`` pre-LN blocks (masked self-attention, then an MLP, each added back into the
stream) transform it; a final layer norm and the unembedding give next-token logits. The
unembedding is ``W_E`` transposed (weight tying, Press & Wolf 2017) unless
``tie_weights=False``. Each block is the package's :class:`~transformer_lab.blocks.EncoderBlock`
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

from ..blocks import EncoderBlock
from ..layers import ACTIVATIONS, LayerNorm, affine
from ..masks import causal_mask
from ..positional import LearnedPositions
from ..train import check_labels

__all__ = [
    "GPTConfig",
    "GPT",
    "GPTBlock",
    "KVCache",
    "lm_loss",
    "evaluate_lm",
    "TrainRecipe",
    "lr_factor",
    "make_optimizer",
    "train_gpt",
    "PRESETS",
    "preset",
]


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


def check_token_batch(idx, n_ctx: int, d_vocab: int, offset: int = 0, hint: str = "") -> None:
    """Check a decoder's input: an integer tensor ``[batch, pos]``, ``pos >= 1``, that fits
    the context after ``offset`` cached positions, with ids in ``[0, d_vocab)``. ``hint`` is
    appended to the context-length message."""
    if not isinstance(idx, torch.Tensor) or idx.dtype not in (torch.long, torch.int):
        got = getattr(idx, "dtype", type(idx).__name__)
        raise TypeError(f"idx must be an integer tensor of token ids, got {got}")
    if idx.dim() != 2 or idx.shape[1] == 0:
        raise ValueError(f"idx must be [batch, pos] with pos >= 1, got shape {tuple(idx.shape)}")
    if offset + idx.shape[1] > n_ctx:
        raise ValueError(
            f"{offset + idx.shape[1]} positions exceed the context length n_ctx={n_ctx}{hint}"
        )
    check_token_range(idx, d_vocab, "idx")


def check_token_range(ids: torch.Tensor, d_vocab: int, name: str = "token ids") -> None:
    """Raise a ValueError unless every id is in ``[0, d_vocab)`` (one min/max: negative
    ids would silently index from the end of ``W_E``)."""
    if ids.numel() == 0:
        return
    low, high = torch.aminmax(ids)
    low, high = int(low), int(high)
    if low < 0 or high >= d_vocab:
        raise ValueError(f"{name} must be in [0, {d_vocab}), got values from {low} to {high}")


def _copy_ln(ours: LayerNorm, theirs: nn.LayerNorm) -> None:
    ours.gain.copy_(theirs.weight)
    ours.bias.copy_(theirs.bias)
    ours.eps = theirs.eps


def lm_loss(model: nn.Module, batch) -> torch.Tensor:
    """Mean next-token cross-entropy (nats per token) of ``model`` on ``batch = (x, y)``,
    where ``y`` is ``x`` shifted one position to the left."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise TypeError(
            f"batch must be a pair (x, y) of token-id tensors, got {type(batch).__name__}"
        )
    x, y = batch
    logits = model(x)  # [batch, pos, d_vocab]
    if not isinstance(y, torch.Tensor) or logits.shape[:-1] != y.shape:
        got = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
        raise ValueError(
            f"targets y must have the shape of x {tuple(logits.shape[:-1])}, got {got}"
        )
    check_labels(y, logits.shape[-1])
    return F.cross_entropy(logits.flatten(0, 1), y.flatten())


@torch.no_grad()
def evaluate_lm(
    model: nn.Module, data: torch.Tensor, batch_size: int = 64, n_ctx: int | None = None
) -> float:
    """Mean next-token loss (nats per token) over *all* of ``data`` (1-d token ids).

    ``data`` is cut into consecutive windows of ``n_ctx`` tokens (the model's context
    length by default), so every token but the first is predicted exactly once, from the
    tokens before it in its window, as in training. Deterministic: no sampling.
    """
    n_ctx = _check_lm_args(model, data, n_ctx, "data")
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    n_windows = (len(data) - 1) // n_ctx
    total, count = 0.0, 0
    inputs = data[: n_windows * n_ctx].view(n_windows, n_ctx)
    targets = data[1 : n_windows * n_ctx + 1].view(n_windows, n_ctx)
    chunks = [
        (inputs[i : i + batch_size], targets[i : i + batch_size])
        for i in range(0, n_windows, batch_size)
    ]
    rest = len(data) - 1 - n_windows * n_ctx
    if rest:
        chunks.append((data[-rest - 1 : -1][None], data[-rest:][None]))
    for x, y in chunks:
        logits = model(x.to(device))  # [batch, pos, d_vocab]
        loss = F.cross_entropy(
            logits.flatten(0, 1).float(), y.to(device).flatten(), reduction="sum"
        )
        total += float(loss)
        count += y.numel()
    model.train(was_training)
    return total / count


# --- training ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainRecipe:
    batch_size: int = 12  # sequences of n_ctx tokens per optimizer step
    steps: int = 2000  # optimizer steps: a fixed number, so a run is the same on any machine
    lr: float = 1e-3  # peak learning rate
    warmup: int = 100  # steps of linear warmup from lr / warmup up to lr
    min_lr_ratio: float = 0.1  # the cosine decay ends at lr * min_lr_ratio on the last step
    weight_decay: float = 0.1  # AdamW decay, applied to weight matrices only
    beta2: float = 0.99  # AdamW's second-moment decay (0.999 is the default; small data: 0.99)
    grad_clip: float = 1.0  # clip the global gradient norm to this

    def __post_init__(self):
        for name in ("batch_size", "steps"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(self.warmup, int) or not 0 <= self.warmup <= self.steps:
            raise ValueError(
                f"warmup must be an int in [0, steps={self.steps}], got {self.warmup!r}"
            )
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr!r}")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ValueError(f"min_lr_ratio must be in [0, 1], got {self.min_lr_ratio!r}")
        if not 0 <= self.beta2 < 1:
            raise ValueError(f"beta2 must be in [0, 1), got {self.beta2!r}")
        for name in ("lr", "min_lr_ratio", "weight_decay", "beta2", "grad_clip"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value!r}")
        if self.weight_decay < 0 or not self.grad_clip > 0:
            raise ValueError("weight_decay must be >= 0 and grad_clip positive")


def lr_factor(step: int, recipe: TrainRecipe) -> float:
    """Multiplier of the peak learning rate at ``step`` (0-based): a linear warmup over
    ``recipe.warmup`` steps, then a half cosine from 1 down to ``min_lr_ratio``."""
    if not isinstance(recipe, TrainRecipe):
        raise TypeError(f"recipe must be a TrainRecipe, got {type(recipe).__name__}")
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise ValueError(f"step must be an int >= 0, got {step!r}")
    if step < recipe.warmup:
        return (step + 1) / recipe.warmup
    progress = min(1.0, (step - recipe.warmup) / max(1, recipe.steps - 1 - recipe.warmup))
    return recipe.min_lr_ratio + (1 - recipe.min_lr_ratio) * 0.5 * (
        1 + math.cos(math.pi * progress)
    )


def make_optimizer(model: nn.Module, recipe: TrainRecipe) -> torch.optim.Optimizer:
    """AdamW with weight decay on the weight matrices (and embeddings), none on biases and
    layer norm parameters (Loshchilov & Hutter 2019)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if not isinstance(recipe, TrainRecipe):
        raise TypeError(f"recipe must be a TrainRecipe, got {type(recipe).__name__}")
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": recipe.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    # the fused implementation updates every parameter in one kernel (CPU and CUDA)
    fused = all(p.device.type in ("cpu", "cuda") for p in params) or None
    return torch.optim.AdamW(groups, lr=recipe.lr, betas=(0.9, recipe.beta2), fused=fused)


def train_gpt(
    model: nn.Module,
    train_ids: torch.Tensor,
    recipe: TrainRecipe,
    *,
    n_ctx: int | None = None,
    seed: int = 0,
    device=None,
    eval_fn=None,
    eval_every: int | None = None,
    progress: bool = False,
    checkpoint=None,
    checkpoint_every: int | None = None,
    resume: bool = False,
    loss_fn=None,
    until: int | None = None,
):
    """Train ``model`` (any module mapping ids ``[batch, pos]`` to logits) on random windows
    of ``n_ctx`` tokens of ``train_ids`` (default ``model.config.n_ctx``) with ``recipe``;
    returns :class:`transformer_lab.train.TrainResult`.

    The batches come from a generator seeded with ``seed``, so a run is reproducible.
    ``checkpoint``, ``checkpoint_every`` and ``resume`` save and continue the run (see
    :func:`transformer_lab.train.train`); ``loss_fn`` replaces :func:`lm_loss` (for
    example with one that runs under autocast). ``until`` stops the run after that step
    (the schedule still spans ``recipe.steps``), to continue it later with ``resume``.

    Launched by torchrun (after :func:`transformer_lab.distributed.setup`), every process
    draws the same global batches of ``recipe.batch_size`` windows and trains on its own
    share of each (:func:`transformer_lab.distributed.shard`): N processes then see the
    examples that one process sees, in the same order, and take the same steps. Dropout
    draws from a generator seeded with ``seed + rank``.
    """
    from ..data.shakespeare import get_batch
    from ..distributed import info, shard
    from ..train import train

    n_ctx = _check_lm_args(model, train_ids, n_ctx, "train_ids")
    if not isinstance(recipe, TrainRecipe):
        raise TypeError(f"recipe must be a TrainRecipe, got {type(recipe).__name__}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if len(train_ids) <= n_ctx:
        raise ValueError(
            f"train_ids has {len(train_ids)} tokens; windows of n_ctx={n_ctx} need more"
        )
    if until is not None and (
        not isinstance(until, int) or isinstance(until, bool) or not 0 < until <= recipe.steps
    ):
        raise ValueError(f"until must be an int in [1, recipe.steps={recipe.steps}], got {until!r}")
    place = info()
    if recipe.batch_size % place.world_size:
        raise ValueError(
            f"recipe.batch_size={recipe.batch_size} (the global batch) does not split evenly "
            f"over {place.world_size} processes"
        )
    generator = torch.Generator().manual_seed(seed)

    def batches():
        while True:
            batch = get_batch(train_ids, recipe.batch_size, n_ctx, generator=generator)
            yield shard(batch, place.rank, place.world_size) if place.distributed else batch

    # dropout draws from the global generators: seed them for this run only, and give the
    # caller's random state back afterwards
    cuda = [torch.cuda.current_device()] if torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=cuda):
        torch.manual_seed(seed + place.rank)
        return train(
            model,
            batches(),
            lm_loss if loss_fn is None else loss_fn,
            steps=recipe.steps if until is None else until,
            optimizer=make_optimizer(model, recipe),
            lr_schedule=lambda step: lr_factor(step, recipe),
            grad_clip=recipe.grad_clip,
            device=device,
            progress=progress,
            eval_fn=eval_fn,
            eval_every=eval_every,
            checkpoint=checkpoint,
            checkpoint_every=checkpoint_every,
            resume=resume,
        )


def _check_lm_args(model, ids, n_ctx, name: str) -> int:
    """Check a model and 1-d token ids for language modelling; return the window length."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if not isinstance(ids, torch.Tensor) or ids.dtype not in (torch.long, torch.int):
        got = getattr(ids, "dtype", type(ids).__name__)
        raise TypeError(f"{name} must be a tensor of integer token ids, got {got}")
    if ids.dim() != 1 or len(ids) < 2:
        raise ValueError(
            f"{name} must be a 1-d tensor of at least 2 token ids, got shape {tuple(ids.shape)}"
        )
    config = getattr(model, "config", None)
    if n_ctx is None:
        n_ctx = getattr(config, "n_ctx", None)
        if n_ctx is None:
            raise ValueError("n_ctx is needed for a model without config.n_ctx")
    if not isinstance(n_ctx, int) or isinstance(n_ctx, bool) or n_ctx <= 0:
        raise ValueError(f"n_ctx must be a positive int, got {n_ctx!r}")
    d_vocab = getattr(config, "d_vocab", None)
    if isinstance(d_vocab, int):
        check_token_range(ids, d_vocab, name)
    return n_ctx


# Named settings: a model shape (GPTConfig fields except d_vocab) and a training recipe.
PRESETS: dict[str, tuple[dict, TrainRecipe]] = {
    # nanoGPT's README settings for a CPU run on Shakespeare characters
    "nanogpt-cpu": (
        dict(n_ctx=64, n_layers=4, n_heads=4, d_model=128, activation="gelu"),
        TrainRecipe(batch_size=12, steps=2000, lr=1e-3, warmup=100),
    ),
    # the chapter's final model: two of those blocks instead of four, which buys almost
    # twice the steps in the same time, and a schedule tuned for a short CPU budget
    "book-cpu": (
        dict(n_ctx=64, n_layers=2, n_heads=4, d_model=128, activation="gelu"),
        TrainRecipe(batch_size=12, steps=1300, lr=5e-3, warmup=100),
    ),
    # nanoGPT's GPU settings for Shakespeare characters (6 layers, 6 heads, 384 wide)
    "gpu": (
        dict(n_ctx=256, n_layers=6, n_heads=6, d_model=384, dropout=0.2),
        TrainRecipe(batch_size=64, steps=5000, lr=1e-3, warmup=100),
    ),
}


def preset(name: str, d_vocab: int) -> tuple[GPTConfig, TrainRecipe]:
    """The :class:`GPTConfig` and :class:`TrainRecipe` of a named preset in :data:`PRESETS`."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose from {sorted(PRESETS)}")
    shape, recipe = PRESETS[name]
    return GPTConfig(d_vocab=d_vocab, **shape), recipe
