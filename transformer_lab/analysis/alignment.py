"""Word times from cross-attention: dynamic time warping over a decoder's attention to audio.

A speech decoder's cross-attention says, for each text token it wrote, which stretch of the
encoder's frames it read. Some heads read the frame where the token is spoken, so the
attention of those heads, tokens against frames, holds a monotone path from the first
word to the last. Dynamic time warping finds the cheapest such path through the matrix,
and the frames where the path moves from one word's tokens to the next are the words'
boundaries ([Radford et al., 2022] describe this use of "alignment heads" for Whisper).

- ``dtw_path(cost)``: the monotone path of least total cost through a matrix;
- ``token_words(pieces)``: group decoded token pieces into words (a piece that starts
  with a space starts a word; punctuation joins the word before it);
- ``attention_word_times(weights, pieces, n_frames, frames_per_second)``: each word's
  start and end from the attention of chosen heads;
- ``voiced_span(audio, sample_rate)`` and ``spread_word_times(words, start, end)``: the
  simple baseline, the words laid over the voiced stretch in proportion to their letters;
- ``timing_errors(truth, guess)``: per-word start and end errors in seconds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from transformer_lab.checks import finite_number, floating_tensor, instance_of, integer

__all__ = [
    "dtw_path",
    "token_words",
    "attention_word_times",
    "voiced_span",
    "spread_word_times",
    "timing_errors",
]


def dtw_path(cost: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """The path of least total cost through ``cost [n, m]`` from cell (0, 0) to cell
    (n - 1, m - 1), each step moving down one row, right one column, or both. Returns the
    path's row and column indices (equal length, both non-decreasing)."""
    c = floating_tensor(cost, "cost", 2, "[rows, columns]").detach().double().cpu().numpy()
    if 0 in c.shape:
        raise ValueError(f"cost must have at least one row and one column, got {c.shape}")
    if not np.isfinite(c).all():
        raise ValueError("cost must be finite")
    n, m = c.shape
    total = np.full((n + 1, m + 1), np.inf)
    total[0, 0] = 0.0
    step = np.zeros((n + 1, m + 1), dtype=np.int8)  # 0: diagonal, 1: from above, 2: from left
    for i in range(1, n + 1):
        row = c[i - 1]
        for j in range(1, m + 1):
            options = (total[i - 1, j - 1], total[i - 1, j], total[i, j - 1])
            k = int(np.argmin(options))
            total[i, j] = row[j - 1] + options[k]
            step[i, j] = k
    rows, cols = [], []
    i, j = n, m
    while i > 0 and j > 0:
        rows.append(i - 1)
        cols.append(j - 1)
        move = step[i, j]
        i, j = (i - 1, j - 1) if move == 0 else (i - 1, j) if move == 1 else (i, j - 1)
    return np.array(rows[::-1]), np.array(cols[::-1])


def token_words(pieces: Sequence[str]) -> list[tuple[str, list[int]]]:
    """Group the decoded text of each token into words: ``[(word, token indices), ...]``.

    A piece that starts with a space starts a new word; a piece of punctuation only, or one
    that does not start with a space ("'t" after " didn"), joins the word before it."""
    instance_of(pieces, (list, tuple), "pieces", "a list of token texts")
    if not all(isinstance(p, str) for p in pieces):
        raise TypeError("pieces must all be str (the text of one token each)")
    words: list[tuple[str, list[int]]] = []
    for i, piece in enumerate(pieces):
        starts = piece.startswith(" ") and piece.strip() != "" and any(ch.isalnum() for ch in piece)
        if not words or (starts and words[-1][0].strip()):
            words.append((piece.strip(), [i]))
        else:
            words[-1] = (words[-1][0] + piece.strip(), [*words[-1][1], i])
    return [(w, idx) for w, idx in words if any(ch.isalnum() for ch in w)]


def _median_filter(x: torch.Tensor, width: int) -> torch.Tensor:
    """A running median over the last axis, ``width`` wide (odd), edges padded by reflection."""
    if width <= 1 or x.shape[-1] < width:
        return x
    pad = width // 2
    flat = x.reshape(-1, 1, x.shape[-1])
    padded = torch.nn.functional.pad(flat, (pad, pad), mode="reflect")
    return padded.unfold(-1, width, 1).median(-1).values.reshape(x.shape)


def attention_word_times(
    weights: torch.Tensor,
    pieces: Sequence[str],
    n_frames: int,
    frames_per_second: float,
    *,
    filter_width: int = 7,
) -> list[tuple[str, float, float]]:
    """Each word's start and end in seconds from cross-attention ``weights [heads, tokens + 1,
    frames]``: the chosen heads' attention to the encoder's frames from the decoder position
    that predicts each text token of ``pieces``, plus a last row from the position that
    predicts the end of the text (its first frame ends the last word).

    The frames are cut to the ``n_frames`` that hold audio and each token's attention is
    renormalised over them; each head's matrix is standardised over the tokens (so that a
    frame every token reads does not dominate) and smoothed along time by a median filter
    ``filter_width`` frames wide; the heads are averaged, and the monotone path of greatest
    attention (``dtw_path`` of its negative) assigns frames to tokens. A word starts at the
    first frame of its first token and ends where the next word starts, or where the end of
    text starts for the last word."""
    w = floating_tensor(weights, "weights", 3, "[heads, tokens + 1, frames]").detach().float().cpu()
    n_frames = integer(n_frames, "n_frames", minimum=1)
    rate = finite_number(frames_per_second, "frames_per_second", above=0)
    filter_width = integer(filter_width, "filter_width", minimum=1)
    if filter_width % 2 == 0:
        raise ValueError(f"filter_width must be odd, got {filter_width}")
    if len(pieces) + 1 != w.shape[1]:
        raise ValueError(
            f"weights must hold one row per piece and one for the end of text "
            f"({len(pieces) + 1}), got {w.shape[1]}"
        )
    if n_frames > w.shape[2]:
        raise ValueError(
            f"n_frames must be at most the weights' {w.shape[2]} frames, got {n_frames}"
        )
    words = token_words(list(pieces))
    if not words:
        raise ValueError("pieces hold no word to time")
    w = w[:, :, :n_frames]
    w = w / w.sum(-1, keepdim=True).clamp_min(1e-12)
    std, mean = torch.std_mean(w, dim=-2, keepdim=True, correction=0)
    w = (w - mean) / std.clamp_min(1e-12)
    matrix = _median_filter(w, filter_width).mean(0)  # [tokens, frames]
    rows, cols = dtw_path(-matrix)
    first = np.full(w.shape[1], -1)
    for r, c in zip(rows, cols, strict=True):
        if first[r] < 0:
            first[r] = c
    starts = [first[idx[0]] / rate for _, idx in words]
    ends = [*starts[1:], first[-1] / rate]
    return [(word, float(s), float(e)) for (word, _), s, e in zip(words, starts, ends, strict=True)]


def voiced_span(
    audio: torch.Tensor, sample_rate: int, *, threshold: float = 0.02, window_s: float = 0.01
) -> tuple[float, float]:
    """The first and last moment (seconds) where the audio's short-window peak amplitude
    reaches ``threshold`` times its overall peak: where speech starts and stops."""
    a = floating_tensor(audio, "audio", 1, "[samples]").detach().float().cpu()
    sample_rate = integer(sample_rate, "sample_rate", minimum=1)
    threshold = finite_number(threshold, "threshold", above=0)
    hop = max(1, round(finite_number(window_s, "window_s", above=0) * sample_rate))
    if a.numel() < hop:
        raise ValueError(f"audio must hold at least one window ({hop} samples), got {a.numel()}")
    peaks = a.abs()[: a.numel() // hop * hop].view(-1, hop).amax(-1)
    loud = (peaks >= threshold * a.abs().max()).nonzero().flatten()
    if a.abs().max() == 0 or loud.numel() == 0:
        raise ValueError("audio is silent: no window reaches the threshold")
    return loud[0].item() * hop / sample_rate, (loud[-1].item() + 1) * hop / sample_rate


def spread_word_times(
    words: Sequence[str], start: float, end: float
) -> list[tuple[str, float, float]]:
    """The baseline: ``words`` laid end to end over ``[start, end]`` seconds, each given a
    share of the time in proportion to its letters."""
    instance_of(words, (list, tuple), "words", "a list of words")
    if not words or not all(isinstance(w, str) and w for w in words):
        raise ValueError("words must be a non-empty list of non-empty str")
    start, end = finite_number(start, "start"), finite_number(end, "end")
    if not end > start >= 0:
        raise ValueError(f"need 0 <= start < end, got start={start}, end={end}")
    sizes = np.array([sum(ch.isalnum() for ch in w) or 1 for w in words], dtype=float)
    edges = start + (end - start) * np.concatenate([[0.0], np.cumsum(sizes) / sizes.sum()])
    return [(w, float(a), float(b)) for w, a, b in zip(words, edges[:-1], edges[1:], strict=True)]


def _norm(word: str) -> str:
    return "".join(ch for ch in word.lower() if ch.isalnum() or ch == "'").strip("'")


def timing_errors(
    truth: Sequence[tuple[str, float, float]], guess: Sequence[tuple[str, float, float]]
) -> dict:
    """Start and end errors (seconds, guess minus truth) of the words both lists share.

    The lists are matched word by word in order, by their lowercase letters; words of the
    guess that match no word of the truth (a transcription error) are skipped, and so are
    words of the truth the guess misses. Returns ``{"words": [...], "start": array,
    "end": array, "matched": n, "of": len(truth)}``."""
    for name, value in (("truth", truth), ("guess", guess)):
        instance_of(value, (list, tuple), name, "a list of (word, start, end)")
        if not all(isinstance(t, tuple) and len(t) == 3 for t in value):
            raise TypeError(f"{name} must hold (word, start, end) tuples")
    if not truth:
        raise ValueError("truth must hold at least one word")
    words, starts, ends = [], [], []
    j = 0
    for word, s, e in truth:
        for k in range(j, len(guess)):
            if _norm(guess[k][0]) == _norm(word):
                words.append(word)
                starts.append(guess[k][1] - s)
                ends.append(guess[k][2] - e)
                j = k + 1
                break
    return {
        "words": words,
        "start": np.array(starts),
        "end": np.array(ends),
        "matched": len(words),
        "of": integer(len(truth), "truth length", minimum=1),
    }
