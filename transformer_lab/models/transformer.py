"""The encoder-decoder Transformer of Vaswani et al. (2017)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from transformer_lab.checks import (
    check_token_range,
    fraction,
    index_in,
    instance_of,
    integer,
    one_of,
    token_batch,
)
from transformer_lab.hooks import Hook
from transformer_lab.nn.blocks import DecoderBlock, EncoderBlock
from transformer_lab.nn.masks import causal_mask, combine_masks, padding_mask_from_ids
from transformer_lab.nn.norms import LayerNorm
from transformer_lab.nn.positions import LearnedPositions, SinusoidalPositions

__all__ = ["TransformerConfig", "Encoder", "Decoder", "EncoderDecoder"]


@dataclass(frozen=True)
class TransformerConfig:
    d_vocab_src: int  # source vocabulary size
    d_vocab_tgt: int  # target vocabulary size
    d_model: int = 128  # width of the residual stream
    n_heads: int = 4  # attention heads per layer; d_head = d_model // n_heads
    d_mlp: int = 512  # hidden width of the feed-forward network
    n_layers_enc: int = 2  # encoder blocks
    n_layers_dec: int = 2  # decoder blocks
    max_pos: int = 256  # longest sequence the position table covers
    dropout: float = 0.0  # dropout probability (0.1 in the 2017 paper)
    norm_first: bool = False  # False: post-LN as in 2017; True: pre-LN
    final_norm: bool | None = None  # layer norm after each stack; None: only for pre-LN
    positional: str = "sinusoidal"  # "sinusoidal" or "learned"
    activation: str = "relu"  # FFN nonlinearity: "relu" or "gelu"
    pad_id: int | None = None  # token id of padding, masked out automatically when set
    tie_embeddings: bool = False  # share the target embedding with the output projection
    share_embeddings: bool = False  # one embedding for source and target (a joint vocabulary)
    scale_embeddings: bool = True  # multiply embeddings by sqrt(d_model) before the positions

    def __post_init__(self):
        for name in ("d_vocab_src", "d_vocab_tgt", "d_model", "n_heads", "d_mlp", "max_pos"):
            integer(getattr(self, name), name, minimum=1)
        for name in ("n_layers_enc", "n_layers_dec"):
            integer(getattr(self, name), name, minimum=0)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        fraction(self.dropout, "dropout", closed=False)
        for name in ("norm_first", "tie_embeddings", "share_embeddings", "scale_embeddings"):
            instance_of(getattr(self, name), bool, name)
        instance_of(self.final_norm, (bool, type(None)), "final_norm", "None or a bool")
        if self.pad_id is not None:  # the same id in both vocabularies
            smallest = min(self.d_vocab_src, self.d_vocab_tgt)
            index_in(self.pad_id, smallest, "pad_id", "a token of both vocabularies")
        if self.share_embeddings and self.d_vocab_src != self.d_vocab_tgt:
            raise ValueError(
                f"share_embeddings needs one joint vocabulary, but d_vocab_src={self.d_vocab_src} "
                f"and d_vocab_tgt={self.d_vocab_tgt} (numbers.load(joint_vocab=True) builds one)"
            )
        one_of(self.positional, ("sinusoidal", "learned"), "positional")
        one_of(self.activation, ("relu", "gelu"), "activation")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def use_final_norm(self) -> bool:
        return self.norm_first if self.final_norm is None else self.final_norm

    def block_kwargs(self) -> dict:
        return dict(dropout=self.dropout, norm_first=self.norm_first, activation=self.activation)


class Encoder(nn.Module):
    """A stack of encoder blocks (and a final layer norm when configured)."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        instance_of(cfg, TransformerConfig, "cfg")
        self.blocks = nn.ModuleList(
            EncoderBlock(cfg.d_model, cfg.n_heads, cfg.d_mlp, **cfg.block_kwargs())
            for _ in range(cfg.n_layers_enc)
        )
        self.ln_final = LayerNorm(cfg.d_model) if cfg.use_final_norm else None

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        for block in self.blocks:
            x = block(x, mask)  # [batch, src_pos, d_model]
        return x if self.ln_final is None else self.ln_final(x)


class Decoder(nn.Module):
    """A stack of decoder blocks (and a final layer norm when configured)."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        instance_of(cfg, TransformerConfig, "cfg")
        self.blocks = nn.ModuleList(
            DecoderBlock(cfg.d_model, cfg.n_heads, cfg.d_mlp, **cfg.block_kwargs())
            for _ in range(cfg.n_layers_dec)
        )
        self.ln_final = LayerNorm(cfg.d_model) if cfg.use_final_norm else None

    def forward(self, x, memory, self_mask=None, memory_mask=None) -> torch.Tensor:
        for block in self.blocks:
            x = block(x, memory, self_mask, memory_mask)  # [batch, tgt_pos, d_model]
        return x if self.ln_final is None else self.ln_final(x)


class EncoderDecoder(nn.Module):
    """Source and target embeddings (scaled by ``sqrt(d_model)`` unless
    ``scale_embeddings=False``) plus positions, an encoder and a decoder stack, and a
    projection of the decoder output onto the target vocabulary. ``model(src, tgt)``
    returns logits ``[batch, tgt_pos, d_vocab_tgt]``.

    The 2017 paper shares one weight matrix between the two embeddings and the read-out
    (section 3.4, Press & Wolf 2017): ``share_embeddings`` makes ``W_E_tgt`` the same table
    as ``W_E_src`` (one joint vocabulary), ``tie_embeddings`` makes ``W_U.weight`` the target
    embedding. Dropout (``cfg.dropout``) acts on the embeddings plus positions, on the
    attention weights, inside the feed-forward network and on every sublayer's output
    before it joins the residual stream.

    Hooks: ``embed_src``, ``embed_tgt`` (after positions), ``memory`` (encoder output),
    and every block's under ``encoder.blocks.N`` / ``decoder.blocks.N``.
    """

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.config = instance_of(cfg, TransformerConfig, "cfg")
        self.W_E_src = nn.Embedding(cfg.d_vocab_src, cfg.d_model)
        self.W_E_tgt = nn.Embedding(cfg.d_vocab_tgt, cfg.d_model)
        for emb in (self.W_E_src, self.W_E_tgt):
            nn.init.normal_(emb.weight, std=cfg.d_model**-0.5)
        if cfg.share_embeddings:
            self.W_E_tgt.weight = self.W_E_src.weight
        positions = SinusoidalPositions if cfg.positional == "sinusoidal" else LearnedPositions
        self.pos_src = positions(cfg.max_pos, cfg.d_model)
        self.pos_tgt = positions(cfg.max_pos, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)
        self.W_U = nn.Linear(cfg.d_model, cfg.d_vocab_tgt)
        if cfg.tie_embeddings:
            self.W_U.weight = self.W_E_tgt.weight
        self.embed_src, self.embed_tgt, self.memory = Hook(), Hook(), Hook()

    @staticmethod
    def _check_ids(ids, name: str, d_vocab: int) -> None:
        token_batch(ids, name)
        check_token_range(ids, d_vocab)

    def _embed(self, ids, W_E, pos, offset=0):
        x = W_E(ids)  # [batch, pos, d_model]
        if self.config.scale_embeddings:
            x = x * math.sqrt(self.config.d_model)
        return self.drop(pos(x, offset))  # [batch, pos, d_model]

    def _padding(self, ids: torch.Tensor) -> torch.Tensor | None:
        pad_id = self.config.pad_id
        return None if pad_id is None else padding_mask_from_ids(ids, pad_id)

    def source_mask(self, src: torch.Tensor) -> torch.Tensor | None:
        """Padding mask of the source ``[batch, 1, 1, src_pos]`` (None without ``pad_id``)."""
        self._check_ids(src, "src", self.config.d_vocab_src)
        return self._padding(src)

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Encoder output ``[batch, src_pos, d_model]`` for source ids ``[batch, src_pos]``."""
        self._check_ids(src, "src", self.config.d_vocab_src)
        src_mask = self._padding(src) if src_mask is None else src_mask
        x = self.embed_src(self._embed(src, self.W_E_src, self.pos_src))
        return self.memory(self.encoder(x, src_mask))

    def decode(self, tgt, memory, src_mask=None, tgt_mask=None, offset: int = 0) -> torch.Tensor:
        """Logits ``[batch, tgt_pos, d_vocab_tgt]`` for target ids given the encoder output
        ``memory`` (checked by the decoder blocks).

        ``tgt_mask`` defaults to the causal mask (and target padding when ``pad_id`` is
        set); ``src_mask`` is the source padding mask used by cross-attention.
        """
        self._check_ids(tgt, "tgt", self.config.d_vocab_tgt)
        if tgt_mask is None:
            tgt_mask = causal_mask(tgt.shape[1], device=tgt.device)
            if self.config.pad_id is not None:
                tgt_mask = combine_masks(tgt_mask, self._padding(tgt))
        x = self.embed_tgt(self._embed(tgt, self.W_E_tgt, self.pos_tgt, offset))
        return self.W_U(self.decoder(x, memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None) -> torch.Tensor:
        memory = self.encode(src, src_mask)  # checks src
        src_mask = self._padding(src) if src_mask is None else src_mask
        return self.decode(tgt, memory, src_mask, tgt_mask)

    def load_torch_transformer(self, m: nn.Transformer) -> EncoderDecoder:
        """Copy the encoder and decoder stacks of an ``nn.Transformer`` with the same shape
        (the embeddings and output projection, which ``nn.Transformer`` lacks, stay ours)."""
        if not isinstance(m, nn.Transformer):
            raise TypeError(f"expected nn.Transformer, got {type(m).__name__}")
        if m.d_model != self.config.d_model:
            raise ValueError(
                f"torch model has d_model={m.d_model} but ours has {self.config.d_model}"
            )
        if len(m.encoder.layers) != len(self.encoder.blocks) or len(m.decoder.layers) != len(
            self.decoder.blocks
        ):
            raise ValueError(
                f"layer counts differ: torch has {len(m.encoder.layers)}+{len(m.decoder.layers)}, "
                f"ours {len(self.encoder.blocks)}+{len(self.decoder.blocks)}"
            )
        self.encoder.blocks = nn.ModuleList(EncoderBlock.from_torch(b) for b in m.encoder.layers)
        self.decoder.blocks = nn.ModuleList(DecoderBlock.from_torch(b) for b in m.decoder.layers)
        self.encoder.ln_final = (
            LayerNorm.from_torch(m.encoder.norm) if m.encoder.norm is not None else None
        )
        self.decoder.ln_final = (
            LayerNorm.from_torch(m.decoder.norm) if m.decoder.norm is not None else None
        )
        return self
