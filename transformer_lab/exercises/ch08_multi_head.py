"""Checkers for chapter 8, multi-head attention: splitting the features into heads, and
multi-head self-attention from its weight matrices."""

from __future__ import annotations

import math

import torch

from transformer_lab.exercises.runner import CheckResult, call, compare, need_tensor, run_check

__all__ = ["check_split_heads", "check_multi_head_attention"]


def _mha_reference(
    x, W_Q, W_K, W_V, W_O, n_heads, *, scale_by=None, transpose=True, merge=True, project=True
):
    """Multi-head self-attention in float64, with switches that reproduce common mistakes."""
    batch, pos, d = x.shape
    d_head = d // n_heads

    def split(t):
        if transpose:
            return t.view(batch, pos, n_heads, d_head).transpose(1, 2)
        return t.reshape(batch, n_heads, pos, d_head)  # mixes positions and features

    x = x.double()
    q, k, v = (split(x @ W.double()) for W in (W_Q, W_K, W_V))  # [batch, n_heads, pos, d_head]
    scores = q @ k.transpose(-2, -1) / math.sqrt(scale_by or d_head)
    z = torch.softmax(scores, dim=-1) @ v  # [batch, n_heads, pos, d_head]
    z = z.transpose(1, 2).reshape(batch, pos, d) if merge else z.reshape(batch, pos, d)
    return z @ W_O.double() if project else z


def check_split_heads(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(x, n_heads)``: ``x [batch, pos, d_model]`` reshaped to
    ``[batch, n_heads, pos, d_head]``, head ``h`` holding features
    ``h * d_head .. (h + 1) * d_head - 1`` of every position."""
    gen = torch.Generator().manual_seed(0)

    def body():
        for batch, pos, d, h in [(2, 5, 12, 3), (1, 7, 8, 2), (3, 4, 16, 8)]:
            x = torch.randn(batch, pos, d, generator=gen)
            describe = f"x of shape {(batch, pos, d)}, n_heads={h}"
            out = need_tensor(call(fn, (x, h), describe))
            want = x.view(batch, pos, h, d // h).transpose(1, 2)
            mistakes = [
                (
                    "you reshaped straight to [batch, n_heads, pos, d_head], which cuts the "
                    "sequence into pieces instead of the features of each token; view as "
                    "[batch, pos, n_heads, d_head] first, then transpose(1, 2)",
                    x.reshape(batch, h, pos, d // h),
                ),
                (
                    "the head axis must come before the position axis: transpose(1, 2) after "
                    "the view",
                    x.view(batch, pos, h, d // h),
                ),
            ]
            compare(out, want, describe, mistakes)
        return "correct on 3 shapes: each head holds its own slice of every token's features."

    return run_check("check_split_heads", body, strict, verbose)


def check_multi_head_attention(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(x, W_Q, W_K, W_V, W_O, n_heads)``: multi-head self-attention without
    biases or masks. ``x`` is ``[batch, pos, d_model]``, each weight ``[d_model, d_model]``
    (used as ``x @ W``); the result is ``[batch, pos, d_model]``."""
    gen = torch.Generator().manual_seed(1)

    def body():
        for batch, pos, d, h in [(2, 5, 12, 3), (1, 6, 16, 4), (3, 3, 8, 1)]:
            x = torch.randn(batch, pos, d, generator=gen)
            W = [torch.randn(d, d, generator=gen) / math.sqrt(d) for _ in range(4)]
            describe = f"x of shape {(batch, pos, d)}, n_heads={h}"
            out = need_tensor(call(fn, (x, *W, h), describe))
            want = _mha_reference(x, *W, h)
            mistakes = [
                (
                    f"you divided the scores by sqrt(d_model) = sqrt({d}); each head compares "
                    f"vectors of d_head = d_model / n_heads = {d // h} features, so divide by "
                    f"sqrt({d // h})",
                    _mha_reference(x, *W, h, scale_by=d),
                ),
                (
                    "the heads were cut out of the sequence, not out of the features: view as "
                    "[batch, pos, n_heads, d_head] and transpose(1, 2)",
                    _mha_reference(x, *W, h, transpose=False),
                ),
                (
                    "the heads were put back together without moving the head axis back: "
                    "transpose(1, 2) before reshaping to [batch, pos, d_model]",
                    _mha_reference(x, *W, h, merge=False),
                ),
                (
                    "the output projection W_O is missing: multiply the concatenated heads by W_O",
                    _mha_reference(x, *W, h, project=False),
                ),
                ("your function returns its input x unchanged; is it still the placeholder?", x),
            ]
            compare(out, want, describe, mistakes)
        return "correct with 3, 4 and 1 heads."

    return run_check("check_multi_head_attention", body, strict, verbose)
