"""Whisper's front end: a mono clip of 16 kHz audio becomes the log-mel spectrogram
[80, 3000] that the encoder reads.

SAMPLE_RATE, N_FFT, HOP_LENGTH, N_SAMPLES and N_FRAMES are Whisper's fixed sizes (16 kHz,
windows of 25 ms every 10 ms, 30 s, 3000 frames). mel_filters builds the triangular filters
on Slaney's mel scale with equal areas, and log_mel runs the short-time Fourier transform,
those filters, log10 and Whisper's scaling. The checks of a clip (one channel, floating
point, finite, 16 kHz, at most 30 s) are shared with transcribe in whisper_decoding.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from transformer_lab.checks import instance_of, integer, is_int, torch_tensor

__all__ = [
    "SAMPLE_RATE",
    "N_SAMPLES",
    "N_FRAMES",
    "mel_filters",
    "log_mel",
]

SAMPLE_RATE = 16000  # Hz
N_FFT = 400  # 25 ms windows
HOP_LENGTH = 160  # 10 ms between frames
CHUNK_SECONDS = 30
N_SAMPLES = CHUNK_SECONDS * SAMPLE_RATE  # 480000
N_FRAMES = N_SAMPLES // HOP_LENGTH  # 3000


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
    n_mels, n_fft = integer(n_mels, "n_mels", minimum=1), integer(n_fft, "n_fft", minimum=1)
    sample_rate = integer(sample_rate, "sample_rate", minimum=1)
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
    audio: torch.Tensor,
    *,
    sample_rate: int | None = None,
    truncate: bool = False,
    allow_silence: bool = True,
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
    allow_silence=False refuses a clip of zeros (transcribe's check: nothing to hear).
    """
    instance_of(allow_silence, bool, "allow_silence")
    audio = _audio(audio, sample_rate, truncate=truncate, silence_ok=allow_silence)
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
