"""Checkers for chapter 10, the Transformer block: the position-wise feed-forward network
and the pre-LN block assembled from its parts."""

from __future__ import annotations

import torch

from ..layers import FeedForward, LayerNorm, MultiHeadAttention
from .runner import CheckResult, call, compare, need_tensor, run_check

__all__ = ["check_feed_forward", "check_pre_ln_block"]


def check_feed_forward(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(h, W_1, b_1, W_2, b_2)``: the position-wise network
    ``relu(h @ W_1 + b_1) @ W_2 + b_2`` for ``h [..., d_model]``, ``W_1 [d_model, d_mlp]``,
    ``b_1 [d_mlp]``, ``W_2 [d_mlp, d_model]``, ``b_2 [d_model]``."""
    gen = torch.Generator().manual_seed(3)

    def body():
        for shape, d_mlp in [((5, 6), 10), ((2, 4, 8), 12), ((3, 1, 4), 16)]:
            d = shape[-1]
            h = torch.randn(*shape, generator=gen)
            W_1, b_1 = torch.randn(d, d_mlp, generator=gen), torch.randn(d_mlp, generator=gen)
            W_2, b_2 = torch.randn(d_mlp, d, generator=gen), torch.randn(d, generator=gen)
            describe = f"h of shape {shape}, d_mlp={d_mlp}"
            out = need_tensor(call(fn, (h, W_1, b_1, W_2, b_2), describe))
            hd, W1, b1, W2, b2 = (t.double() for t in (h, W_1, b_1, W_2, b_2))
            want = torch.relu(hd @ W1 + b1) @ W2 + b2
            mistakes = [
                (
                    "the ReLU is missing: without it the two layers collapse into one linear map",
                    (hd @ W1 + b1) @ W2 + b2,
                ),
                (
                    "the ReLU belongs between the two layers only, not after W_2",
                    torch.relu(torch.relu(hd @ W1 + b1) @ W2 + b2),
                ),
                ("b_1 is missing: add it before the ReLU", torch.relu(hd @ W1) @ W2 + b2),
                ("b_2 is missing", torch.relu(hd @ W1 + b1) @ W2),
            ]
            compare(out, want, describe, mistakes)
        return "correct on 3 inputs, each position transformed on its own."

    return run_check("check_feed_forward", body, strict, verbose)


def _block_variants(x, attn, mlp, ln1, ln2):
    def pre(x):
        h = x + attn(ln1(x))
        return h + mlp(ln2(h))

    def post(x):
        h = ln1(x + attn(x))
        return ln2(h + mlp(h))

    def no_residual(x):
        return mlp(ln2(attn(ln1(x))))

    def normalized_residual(x):
        a = ln1(x)
        h = a + attn(a)
        b = ln2(h)
        return b + mlp(b)

    def parallel(x):
        return x + attn(ln1(x)) + mlp(ln2(x))

    return pre(x), [
        (
            "this is post-LN, LN(x + sublayer(x)); the pre-LN block normalizes the sublayer's "
            "input and adds its output to the un-normalized stream: x + sublayer(LN(x))",
            post(x),
        ),
        (
            "the residual connections are missing: add each sublayer's output to its input",
            no_residual(x),
        ),
        (
            "the residual adds the normalized vector; add to the stream itself: "
            "h = x + attn(LN1(x)), not LN1(x) + attn(LN1(x))",
            normalized_residual(x),
        ),
        (
            "both sublayers read the block's input; the feed-forward network must read the "
            "stream after attention has been added: h = x + attn(LN1(x)), then h + mlp(LN2(h))",
            parallel(x),
        ),
    ]


def check_pre_ln_block(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(x, attn, mlp, ln1, ln2)``: one pre-LN block given its parts as functions
    of ``[batch, pos, d_model]`` tensors (``attn`` is self-attention returning only its
    output). Expected: ``h = x + attn(ln1(x))`` then ``h + mlp(ln2(h))``."""
    d = 8
    with torch.random.fork_rng(devices=[]):  # leave the reader's random state alone
        torch.manual_seed(4)
        attention, network = MultiHeadAttention(d, 2), FeedForward(d, 16)
        norms = [LayerNorm(d), LayerNorm(d)]
        with torch.no_grad():
            for ln in norms:
                ln.gain.uniform_(0.5, 1.5)
                ln.bias.normal_(0, 0.3)

    def attn(h):
        return attention(h)[0]

    def body():
        gen = torch.Generator().manual_seed(5)
        for shape in [(2, 5, d), (1, 3, d)]:
            x = torch.randn(*shape, generator=gen) * 2
            describe = f"x of shape {shape}"
            with torch.no_grad():
                out = need_tensor(call(fn, (x, attn, network, *norms), describe))
                want, mistakes = _block_variants(x, attn, network, *norms)
            compare(out, want, describe, mistakes)
        return "correct: attention then the feed-forward network, each added into the stream."

    return run_check("check_pre_ln_block", body, strict, verbose)
