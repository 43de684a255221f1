"""Checkers for chapter 11, the encoder-decoder Transformer: one head of cross-attention."""

from __future__ import annotations

import math

import torch

from transformer_lab.exercises.runner import CheckResult, call, compare, need_tensor, run_check

__all__ = ["check_cross_attention"]


def _cross(
    x, memory, W_Q, W_K, W_V, src_mask, *, swap=False, causal=False, scale=True, use_mask=True
):
    x, memory = x.double(), memory.double()
    if swap:
        x, memory = memory, x
    q, k, v = x @ W_Q.double(), memory @ W_K.double(), memory @ W_V.double()
    scores = q @ k.transpose(-2, -1)
    if scale:
        scores = scores / math.sqrt(q.shape[-1])
    allowed = torch.ones(scores.shape[-2:], dtype=torch.bool)
    if causal:
        allowed = torch.ones_like(allowed).tril()
    if use_mask and not swap:
        allowed = allowed & src_mask[:, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def check_cross_attention(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(x, memory, W_Q, W_K, W_V, src_mask)``: one head of cross-attention.

    ``x [batch, tgt_pos, d_model]`` is the decoder stream, ``memory [batch, src_pos,
    d_model]`` the encoder output, the weights are ``[d_model, d_k]`` (used as ``x @ W``)
    and ``src_mask [batch, src_pos]`` is True at real source tokens. Queries come from the
    decoder, keys and values from the encoder:
    ``softmax((x W_Q)(memory W_K)^T / sqrt(d_k))`` over the real source tokens, times
    ``memory W_V``; the result is ``[batch, tgt_pos, d_k]``."""
    gen = torch.Generator().manual_seed(6)

    def body():
        for batch, tgt, src, d, d_k in [(2, 3, 5, 8, 4), (3, 6, 4, 12, 6)]:
            x = torch.randn(batch, tgt, d, generator=gen)
            memory = torch.randn(batch, src, d, generator=gen)
            W = [torch.randn(d, d_k, generator=gen) / math.sqrt(d) for _ in range(3)]
            src_mask = torch.ones(batch, src, dtype=torch.bool)
            src_mask[0, -2:] = False  # the first source is padded
            args = (x, memory, *W, src_mask)
            describe = f"x {tuple(x.shape)}, memory {tuple(memory.shape)}, d_k={d_k}"
            out = need_tensor(call(fn, args, describe))
            want = _cross(*args)
            mistakes = [
                (
                    "the queries came from the encoder output and the keys and values from the "
                    "decoder; in cross-attention Q = x W_Q (decoder), K = memory W_K and "
                    "V = memory W_V (encoder)",
                    _cross(*args, swap=True),
                ),
                (
                    "a causal mask has no place in cross-attention: every target position may "
                    "read the whole source, which is known in full before decoding starts",
                    _cross(*args, causal=True),
                ),
                (
                    "the source padding is attended to: fill the scores of keys where src_mask "
                    "is False with -inf",
                    _cross(*args, use_mask=False),
                ),
                (
                    f"the scores were not divided by sqrt(d_k) = sqrt({d_k})",
                    _cross(*args, scale=False),
                ),
            ]
            compare(out, want, describe, mistakes)
        return "correct: queries from the decoder, keys and values from the encoder."

    return run_check("check_cross_attention", body, strict, verbose)
