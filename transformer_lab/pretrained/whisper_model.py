"""Whisper's encoder-decoder in the package's own blocks.

WhisperConfig holds the sizes (tiny.en's by default) and WhisperGeneration how the model
decodes (special tokens, suppressed tokens, alignment heads). WhisperEncoder reads a
log-mel spectrogram through two convolutions, the fixed positions of whisper_sinusoids and
pre-LN EncoderBlocks; WhisperDecoderBlock is a DecoderBlock that also decodes step by step,
with a key/value cache for self-attention and cross-attention keys and values computed once;
WhisperDecoder stacks those blocks under a token embedding that is also the output
projection; Whisper joins encoder and decoder. The weights come from whisper_files and the
decoding loop is in whisper_decoding.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from transformer_lab.checks import (
    check_token_batch,
    finite_number,
    floating_tensor,
    instance_of,
    integer,
    is_int,
)
from transformer_lab.nn.attention import scaled_dot_product_attention
from transformer_lab.nn.blocks import DecoderBlock, EncoderBlock
from transformer_lab.nn.functional import affine
from transformer_lab.nn.kv_cache import KVCache
from transformer_lab.nn.masks import causal_mask
from transformer_lab.nn.norms import LayerNorm
from transformer_lab.nn.positions import LearnedPositions

__all__ = [
    "WhisperConfig",
    "WhisperGeneration",
    "whisper_sinusoids",
    "WhisperEncoder",
    "WhisperDecoderBlock",
    "WhisperDecoder",
    "Whisper",
]

# ---- configuration ----------------------------------------------------------------------


@dataclass(frozen=True)
class WhisperConfig:
    """Sizes of a Whisper model (tiny.en by default)."""

    n_mels: int = 80
    n_audio_ctx: int = 1500  # encoder positions (3000 frames after the stride-2 convolution)
    n_audio_layers: int = 4
    n_audio_heads: int = 6
    n_text_ctx: int = 448  # decoder positions
    n_text_layers: int = 4
    n_text_heads: int = 6
    d_model: int = 384
    d_mlp: int = 1536
    d_vocab: int = 51864
    eps: float = 1e-5

    def __post_init__(self):
        for name in self.__dataclass_fields__:
            if name != "eps":
                integer(getattr(self, name), name, minimum=1)
        finite_number(self.eps, "eps", above=0)
        for heads in ("n_audio_heads", "n_text_heads"):
            if self.d_model % getattr(self, heads):
                raise ValueError(
                    f"d_model={self.d_model} is not divisible by {heads}={getattr(self, heads)}"
                )


@dataclass(frozen=True)
class WhisperGeneration:
    """How Whisper decodes: the special tokens, the tokens to suppress (from the shipped
    config.json), the alignment heads (decoder layer, head) whose cross-attention
    follows the words in time, and the most positions a transcript may fill."""

    sot_id: int = 50257  # <|startoftranscript|>
    eot_id: int = 50256  # <|endoftext|>
    no_timestamps_id: int = 50362  # <|notimestamps|>
    suppress_ids: tuple[int, ...] = ()
    suppress_ids_begin: tuple[int, ...] = ()
    alignment_heads: tuple[tuple[int, int], ...] = ()
    max_length: int = 448

    def __post_init__(self):
        for name in ("sot_id", "eot_id", "no_timestamps_id"):
            integer(getattr(self, name), name, minimum=0)
        integer(self.max_length, "max_length", minimum=1)
        for name in ("suppress_ids", "suppress_ids_begin"):
            ids = getattr(self, name)
            if not isinstance(ids, (tuple, list)) or not all(is_int(i) and i >= 0 for i in ids):
                raise TypeError(f"{name} must be a tuple of token ids (ints >= 0), got {ids!r}")
        heads = self.alignment_heads
        if not isinstance(heads, (tuple, list)) or not all(
            isinstance(h, (tuple, list)) and len(h) == 2 and all(is_int(x) and x >= 0 for x in h)
            for h in heads
        ):
            raise TypeError(f"alignment_heads must be (layer, head) pairs of ints, got {heads!r}")

    @property
    def prompt(self) -> list[int]:
        """The decoder's first tokens for English transcription without timestamps."""
        return [self.sot_id, self.no_timestamps_id]


# ---- the model --------------------------------------------------------------------------


def whisper_sinusoids(length: int, channels: int, max_timescale: float = 10000.0) -> torch.Tensor:
    """Whisper's encoder positions [length, channels]: sin(p w_i) in the first half of the
    channels and cos(p w_i) in the second, where w_i = max_timescale^(-i / (channels/2 - 1))
    for i = 0 .. channels/2 - 1, so that the slowest wave has exactly 1 / max_timescale.
    The 2017 encoding (nn.positions.sinusoidal_encoding) interleaves sines and cosines and
    divides by channels instead."""
    length = integer(length, "length", minimum=1)
    channels = integer(channels, "channels", minimum=4)
    if channels % 2:
        raise ValueError(f"channels must be even, got {channels}")
    max_timescale = finite_number(max_timescale, "max_timescale", above=1)
    half = channels // 2
    increment = math.log(max_timescale) / (half - 1)
    inv = torch.exp(-increment * torch.arange(half, dtype=torch.float64))  # [half]
    angle = torch.arange(length, dtype=torch.float64)[:, None] * inv[None, :]  # [length, half]
    return torch.cat([angle.sin(), angle.cos()], dim=1).float()


def _check_mel(mel, config: WhisperConfig) -> torch.Tensor:
    want = 2 * config.n_audio_ctx
    floating_tensor(mel, "mel", shape=f"[batch, {config.n_mels}, {want}]")
    if mel.dim() != 3 or mel.shape[1:] != (config.n_mels, want):
        raise ValueError(
            f"mel must be [batch, {config.n_mels}, {want}] (log_mel of 30 s, with a batch "
            f"dimension), got {tuple(mel.shape)}"
        )
    return mel


class WhisperEncoder(nn.Module):
    """The audio encoder: mel [batch, n_mels, 3000] -> [batch, 1500, d_model].

    Two nn.Conv1d of width 3 with GELU (the second has stride 2), plus the fixed
    sinusoidal positions W_pos (a buffer; whisper_sinusoids computes the same
    table), then pre-LN encoder blocks with GELU and a final LayerNorm ln_post."""

    W_pos: torch.Tensor  # a buffer

    def __init__(self, config: WhisperConfig):
        super().__init__()
        self.config = instance_of(config, WhisperConfig, "config")
        d = config.d_model
        self.conv1 = nn.Conv1d(config.n_mels, d, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(d, d, kernel_size=3, stride=2, padding=1)
        self.register_buffer("W_pos", whisper_sinusoids(config.n_audio_ctx, d))
        self.blocks = nn.ModuleList(
            EncoderBlock(
                d,
                config.n_audio_heads,
                config.d_mlp,
                norm_first=True,
                activation="gelu",
                eps=config.eps,
            )
            for _ in range(config.n_audio_layers)
        )
        self.ln_post = LayerNorm(d, config.eps, fused=True)

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        _check_mel(mel, self.config)
        x = F.gelu(self.conv1(mel))  # [batch, d_model, 3000]
        x = F.gelu(self.conv2(x))  # [batch, d_model, 1500]
        x = x.transpose(1, 2) + self.W_pos  # [batch, 1500, d_model]
        for block in self.blocks:
            x = block(x)
        return self.ln_post(x)


class WhisperDecoderBlock(DecoderBlock):
    """A pre-LN DecoderBlock that decodes step by step.

    Its forward(x, memory, self_mask) is the plain block's. cross_kv projects the
    encoder output once into this layer's cross-attention keys and values, and step
    runs the block on new positions with a key/value cache for self-attention, those
    precomputed keys and values, optionally returning the cross-attention weights or
    leaving the cross-attention out (ablation)."""

    def __init__(self, d_model: int, n_heads: int, d_mlp: int, eps: float = 1e-5):
        super().__init__(d_model, n_heads, d_mlp, norm_first=True, activation="gelu", eps=eps)

    def _heads(self, y: torch.Tensor) -> torch.Tensor:
        batch, pos, _ = y.shape
        a = self.cross_attn
        return y.view(batch, pos, a.n_heads, a.d_head).transpose(1, 2)

    def cross_kv(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Cross-attention keys and values [batch, n_heads, src_pos, d_head] of
        memory [batch, src_pos, d_model]: this layer's W_K, W_V over the encoder
        output (the k and v hooks of cross_attn see them)."""
        a = self.cross_attn
        a._check_input("memory", memory, a.W_K.shape[0])
        k = a.k(self._heads(affine(memory, a.W_K, a.b_K)))
        v = a.v(self._heads(affine(memory, a.W_V, a.b_V)))
        return k, v

    def step(
        self,
        x: torch.Tensor,
        cross_kv: tuple[torch.Tensor, torch.Tensor],
        *,
        self_mask: torch.Tensor | None = None,
        cache: KVCache | None = None,
        layer: int = 0,
        need_cross_weights: bool = False,
        ablate_cross: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The block on x [batch, new_pos, d_model]: returns the new residual stream and
        the cross-attention weights [batch, n_heads, new_pos, src_pos] (None unless
        need_cross_weights). With ablate_cross the cross-attention sublayer adds
        nothing to the residual stream (its weights are still computed when asked for)."""
        x = self.resid_pre(x)

        def self_attn(h):
            return self.attn(h, mask=self_mask, need_weights=False, cache=cache, layer=layer)[0]

        x = self.resid_mid(self._sublayer(x, self.ln1, self_attn, self.attn_out))
        weights = None
        if need_cross_weights or not ablate_cross:
            a = self.cross_attn
            q = a.q(self._heads(affine(self.ln2(x), a.W_Q, a.b_Q)))  # [batch, heads, new, d_head]
            want = need_cross_weights or a.pattern.active
            z, weights = scaled_dot_product_attention(q, *cross_kv, need_weights=want)
            if weights is not None:
                weights = a.pattern(weights)
            batch, _, new, _ = z.shape
            z = a.z(z.transpose(1, 2).reshape(batch, new, a.d_model))
            if not ablate_cross:
                x = x + self.cross_out(a.out(affine(z, a.W_O, a.b_O)))
        x = self.resid_cross(x)
        x = self.resid_post(self._sublayer(x, self.ln3, self.mlp, self.mlp_out))
        return x, (weights if need_cross_weights else None)


def _layers(ablate_cross, n_layers: int) -> frozenset[int]:
    """The decoder layers whose cross-attention is ablated: None (none), "all", or ints."""
    if ablate_cross is None:
        return frozenset()
    if isinstance(ablate_cross, str):
        if ablate_cross != "all":
            raise ValueError(
                f"ablate_cross must be None, 'all' or layer numbers, got {ablate_cross!r}"
            )
        return frozenset(range(n_layers))
    if is_int(ablate_cross):
        ablate_cross = [ablate_cross]
    if not isinstance(ablate_cross, Iterable):
        raise TypeError(
            f"ablate_cross must be None, 'all' or a list of layer numbers, got "
            f"{type(ablate_cross).__name__}"
        )
    out = set()
    for i in ablate_cross:
        if not is_int(i) or not 0 <= i < n_layers:
            raise ValueError(
                f"ablate_cross names layer {i!r}; the decoder has layers 0..{n_layers - 1}"
            )
        out.add(int(i))
    return frozenset(out)


_Blocks = Iterable[WhisperDecoderBlock]  # the decoder's nn.ModuleList, as mypy should read it


class WhisperDecoder(nn.Module):
    """The text decoder: token embedding W_E [d_vocab, d_model] plus learned positions,
    WhisperDecoderBlocks, a final LayerNorm and logits x W_E^T (the output projection is
    the embedding)."""

    def __init__(self, config: WhisperConfig):
        super().__init__()
        self.config = instance_of(config, WhisperConfig, "config")
        d = config.d_model
        self.W_E = nn.Parameter(torch.randn(config.d_vocab, d) * 0.02)
        self.pos = LearnedPositions(config.n_text_ctx, d)
        self.blocks = nn.ModuleList(
            WhisperDecoderBlock(d, config.n_text_heads, config.d_mlp, config.eps)
            for _ in range(config.n_text_layers)
        )
        self.ln_final = LayerNorm(d, config.eps, fused=True)

    def new_cache(self) -> KVCache:
        """An empty key/value cache for the decoder's self-attention."""
        return KVCache(len(self.blocks))

    def ablated_layers(self, ablate_cross: str | Sequence[int] | None) -> frozenset[int]:
        """The layers whose cross-attention ablate_cross names: None (none), "all", or
        layer numbers; anything else is a clear error."""
        return _layers(ablate_cross, len(self.blocks))

    def cross_kv(self, memory: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Every layer's cross-attention keys and values of the encoder output memory."""
        return [block.cross_kv(memory) for block in cast(_Blocks, self.blocks)]

    def forward(
        self,
        tokens: torch.Tensor,
        memory: torch.Tensor | None = None,
        *,
        cross_kv: list[tuple[torch.Tensor, torch.Tensor]] | None = None,
        kv_cache: KVCache | None = None,
        need_cross_weights: bool = False,
        ablate_cross: str | Sequence[int] | None = None,
        last_only: bool = False,
    ) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
        """Logits [batch, pos, d_vocab] for tokens [batch, pos] (pos 1 with
        last_only) and, with need_cross_weights, each layer's cross-attention
        weights [batch, n_heads, pos, src_pos].

        Give the encoder output memory [batch, src_pos, d_model] or its projections
        cross_kv (from cross_kv). With a kv_cache (new_cache) the tokens
        are the newest positions and the earlier ones come from the cache.
        ablate_cross ("all" or layer numbers) leaves those layers' cross-attention out.
        """
        n_layers = len(self.blocks)
        instance_of(need_cross_weights, bool, "need_cross_weights")
        instance_of(last_only, bool, "last_only")
        offset = KVCache.offset_of(kv_cache, n_layers)
        check_token_batch(tokens, self.config.n_text_ctx, self.config.d_vocab, offset)
        ablate = _layers(ablate_cross, n_layers)
        if (memory is None) == (cross_kv is None):
            raise ValueError("give the decoder either memory (the encoder output) or cross_kv")
        if cross_kv is None:
            assert memory is not None  # one of the two was given
            cross_kv = self.cross_kv(memory)
        elif not isinstance(cross_kv, (list, tuple)) or len(cross_kv) != n_layers:
            raise ValueError(f"cross_kv must hold one (k, v) pair per layer ({n_layers})")
        n = tokens.shape[1]
        mask = causal_mask(n, offset + n, device=tokens.device) if n > 1 else None
        x = self.pos(self.W_E[tokens], offset)  # [batch, pos, d_model]
        weights: list[torch.Tensor] | None = [] if need_cross_weights else None
        for i, block in enumerate(cast(_Blocks, self.blocks)):
            x, w = block.step(
                x, cross_kv[i], self_mask=mask, cache=kv_cache, layer=i,
                need_cross_weights=need_cross_weights, ablate_cross=i in ablate,
            )  # fmt: skip
            if weights is not None:
                assert w is not None  # asked for with need_cross_weights
                weights.append(w)
        if last_only:
            x = x[:, -1:]
        return self.ln_final(x) @ self.W_E.T, weights


class Whisper(nn.Module):
    """Whisper: model(mel [batch, n_mels, 3000], tokens [batch, pos]) returns the logits
    [batch, pos, d_vocab] of the next token at every position. generation holds how
    it decodes (WhisperGeneration)."""

    def __init__(self, config: WhisperConfig, generation: WhisperGeneration | None = None):
        super().__init__()
        self.config = instance_of(config, WhisperConfig, "config")
        self.generation = instance_of(
            generation if generation is not None else WhisperGeneration(), WhisperGeneration,
            "generation",
        )  # fmt: skip
        self.encoder = WhisperEncoder(config)
        self.decoder = WhisperDecoder(config)

    def forward(self, mel: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        return self.decoder(tokens, self.encoder(mel))[0]
