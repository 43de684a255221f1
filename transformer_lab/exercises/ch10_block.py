"""Checkers for chapter 10, the Transformer block: the position-wise feed-forward network,
the pre-LN block assembled from its parts, and the count of a block's parameters."""

from __future__ import annotations

import math

import torch

from transformer_lab.exercises.runner import (
    CheckResult,
    WrongAnswer,
    as_number,
    call,
    compare,
    need_tensor,
    run_check,
)
from transformer_lab.nn.blocks import EncoderBlock
from transformer_lab.nn.feed_forward import FeedForward
from transformer_lab.nn.multi_head import MultiHeadAttention
from transformer_lab.nn.norms import LayerNorm

__all__ = ["check_feed_forward", "check_pre_ln_block", "check_block_parameter_count"]


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
                (
                    "the ReLU and both biases are missing: relu(h @ W_1 + b_1) @ W_2 + b_2",
                    hd @ W1 @ W2,
                ),
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


def _count_mistakes(d: int, d_mlp: int) -> list[tuple[int, str, int]]:
    """(part, message, what the mistake counts) for the usual slips; part 0 attention,
    1 feed-forward, 2 layer norms."""
    return [
        (0, "attention: the four biases are missing, 4 * d_model", 4 * d * d),
        (
            0,
            "attention: W_O is missing; there are four d_model x d_model matrices, "
            "W_Q, W_K, W_V and W_O, each with a bias",
            3 * d * d + 3 * d,
        ),
        (
            1,
            "feed-forward: the biases are missing, d_mlp for b_1 and d_model for b_2",
            2 * d * d_mlp,
        ),
        (
            1,
            "feed-forward: b_2 has d_model numbers, not d_mlp (it is added after W_2)",
            2 * d * d_mlp + 2 * d_mlp,
        ),
        (
            2,
            "layer norms: the block has two, one for each sublayer, and each has a gain and a "
            "bias of d_model numbers: 4 * d_model in all",
            2 * d,
        ),
    ]


def check_block_parameter_count(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(d_model, d_mlp)``: the parameters of one encoder block as three numbers
    ``(attention, feed_forward, layer_norms)``, compared with the package's ``EncoderBlock``
    for the 2017 base model (512, 2048) and two other sizes."""
    parts = ("attention", "feed-forward", "layer norms")

    def body():
        for d, d_mlp, heads in [(512, 2048, 8), (64, 256, 4), (6, 10, 2)]:
            describe = f"d_model={d}, d_mlp={d_mlp}"
            out = call(fn, (d, d_mlp), describe)
            if not isinstance(out, (tuple, list)) or len(out) != 3:
                raise WrongAnswer(
                    "return three numbers, (attention, feed_forward, layer_norms); got "
                    f"{type(out).__name__} ({describe})."
                )
            got = [as_number(v) for v in out]
            if any(g is None or not math.isfinite(g) or g != int(g) for g in got):
                raise WrongAnswer(f"the three counts must be whole numbers ({describe}).")
            got = [int(g) for g in got]
            block = EncoderBlock(d, heads, d_mlp)
            want = [
                sum(p.numel() for m in modules for p in m.parameters())
                for modules in ([block.attn], [block.mlp], [block.ln1, block.ln2])
            ]
            if got == want:
                continue
            for part, message, wrong in _count_mistakes(d, d_mlp):
                if got[part] == wrong and got[part] != want[part]:
                    raise WrongAnswer(f"{message} ({describe}: you have {got[part]:,}).")
            if not any(got):
                raise WrongAnswer(
                    f"all three counts are 0; is it still the placeholder? ({describe})."
                )
            wrong_parts = ", ".join(
                f"{parts[i]} ({got[i]:,} is too {'low' if got[i] < want[i] else 'high'})"
                for i in range(3)
                if got[i] != want[i]
            )
            raise WrongAnswer(f"not yet: {wrong_parts} ({describe}).")
        return (
            "correct: attention 4d^2 + 4d, feed-forward 2 d d_mlp + d_mlp + d, layer norms 4d "
            "(checked against EncoderBlock at three sizes)."
        )

    return run_check("check_block_parameter_count", body, strict, verbose)
