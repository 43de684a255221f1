"""A tiny Transformer for the toy tasks: embeddings, learned positions, blocks, unembedding."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from transformer_lab.checks import check_token_range, instance_of, integer, one_of, token_batch
from transformer_lab.hooks import Hook
from transformer_lab.nn.blocks import EncoderBlock
from transformer_lab.nn.masks import causal_mask
from transformer_lab.nn.norms import LayerNorm
from transformer_lab.nn.positions import LearnedPositions, SinusoidalPositions

__all__ = ["ToyConfig", "TinyTransformer"]


@dataclass(frozen=True)
class ToyConfig:
    d_vocab: int = 16  # number of distinct tokens
    n_answers: int = 1  # answers per position (1 for previous_token, 2 for neighbours)
    d_model: int = 32  # width of the residual stream
    n_heads: int = 2  # attention heads per block
    d_mlp: int = 64  # hidden width of the feed-forward network
    n_layers: int = 1  # encoder blocks
    max_pos: int = 64  # positions the position table covers
    positional: str | None = "sinusoidal"  # "sinusoidal", "learned" or None (no positions)
    norm_first: bool = True  # pre-LN blocks (and a final layer norm) when True
    causal: bool = False  # mask the future (a decoder-only model) when True

    def __post_init__(self):
        for name in ("d_vocab", "n_answers", "d_model", "n_heads", "d_mlp", "max_pos"):
            integer(getattr(self, name), name, minimum=1)
        integer(self.n_layers, "n_layers", minimum=0)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        one_of(self.positional, ("sinusoidal", "learned", None), "positional")
        for name in ("norm_first", "causal"):
            instance_of(getattr(self, name), bool, name)


class TinyTransformer(nn.Module):
    """Token embedding (scaled by ``sqrt(d_model)``), optional positions, a stack of
    :class:`~transformer_lab.nn.blocks.EncoderBlock` and a linear read-out per position.

    ``model(x)`` maps ids ``[batch, pos]`` to logits ``[batch, pos, n_answers, d_vocab]``.
    Hooks: ``embed`` (tokens plus positions, the start of the residual stream), then every
    block's under ``blocks.N`` (``blocks.0.attn_out``, ``blocks.0.resid_post``, ...).
    """

    def __init__(self, cfg: ToyConfig):
        super().__init__()
        self.config = instance_of(cfg, ToyConfig, "cfg")
        self.W_E = nn.Embedding(cfg.d_vocab, cfg.d_model)
        nn.init.normal_(self.W_E.weight, std=cfg.d_model**-0.5)
        self.pos: SinusoidalPositions | LearnedPositions | None
        if cfg.positional == "sinusoidal":
            self.pos = SinusoidalPositions(cfg.max_pos, cfg.d_model)
        elif cfg.positional == "learned":  # drawn at the scale of the scaled token embeddings
            self.pos = LearnedPositions(cfg.max_pos, cfg.d_model, init_std=1.0)
        else:
            self.pos = None
        self.blocks = nn.ModuleList(
            EncoderBlock(cfg.d_model, cfg.n_heads, cfg.d_mlp, norm_first=cfg.norm_first)
            for _ in range(cfg.n_layers)
        )
        self.ln_final = LayerNorm(cfg.d_model) if cfg.norm_first else None
        self.W_U = nn.Linear(cfg.d_model, cfg.n_answers * cfg.d_vocab)
        self.embed = Hook()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        config = self.config
        token_batch(x, "x")
        check_token_range(x, config.d_vocab, "x")
        h = self.W_E(x) * math.sqrt(config.d_model)  # [batch, pos, d_model]
        if self.pos is not None:
            h = self.pos(h)
        h = self.embed(h)
        mask = causal_mask(x.shape[1], device=x.device) if config.causal else None
        for block in self.blocks:
            h = block(h, mask)  # [batch, pos, d_model]
        if self.ln_final is not None:
            h = self.ln_final(h)
        logits = self.W_U(h)  # [batch, pos, n_answers * d_vocab]
        return logits.unflatten(-1, (config.n_answers, config.d_vocab))
