"""Checkers for chapter 3, sequence to sequence with attention: one decoder step of
dot-product attention over the encoder states (exercise 1), the query that turns attention
into mean pooling (2), the weight that padding takes when the mask is forgotten (3), the
cost of the three scores (4) and the weights of a flattened bottleneck (5)."""

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
from transformer_lab.nn.scores import DotScore, attend

__all__ = [
    "check_attention_step",
    "check_mean_pooling_query",
    "check_padding_weight",
    "check_score_costs",
    "check_flatten_weights",
]


def _padded_states(gen, batch: int, src_pos: int, d: int):
    """Random encoder states ``H [batch, src_pos, d]``, zero at padding as the model's are,
    the ``mask`` (True at real words; the first row has no padding) and the lengths."""
    lengths = torch.randint(1, src_pos + 1, (batch,), generator=gen)
    lengths[0] = src_pos
    mask = torch.arange(src_pos)[None] < lengths[:, None]
    H = torch.randn(batch, src_pos, d, generator=gen) * mask[..., None]
    return H, mask, lengths


def check_attention_step(
    fn, *, strict: bool = False, verbose: bool = True, seed: int = 0
) -> CheckResult:
    """Check ``fn(s, H, mask)`` -> ``(context [batch, d], weights [batch, src_pos])``: one
    step of dot-product attention of decoder states ``s [batch, d]`` over encoder states
    ``H [batch, src_pos, d]``, with ``mask [batch, src_pos]`` True at real tokens, against
    :func:`transformer_lab.nn.scores.attend`."""

    def body():
        gen = torch.Generator().manual_seed(seed)
        for batch, src_pos, d in [(2, 5, 4), (3, 1, 6), (4, 7, 3)]:
            s = torch.randn(batch, d, generator=gen)
            H = torch.randn(batch, src_pos, d, generator=gen)
            lengths = torch.randint(1, src_pos + 1, (batch,), generator=gen)
            lengths[0] = src_pos
            mask = torch.arange(src_pos)[None] < lengths[:, None]
            context, weights = attend(DotScore(), s, H, mask=mask)
            describe = f"s {tuple(s.shape)}, H {tuple(H.shape)}, source lengths {lengths.tolist()}"
            got = call(fn, (s, H, mask), describe)
            if not isinstance(got, tuple) or len(got) != 2:
                raise WrongAnswer("return a pair (context, weights).")
            got_context, got_weights = (need_tensor(t) for t in got)
            scores = (H @ s[:, :, None])[..., 0]
            unmasked = torch.softmax(scores, -1)
            mean = (H * mask[..., None]).sum(1) / lengths[:, None]
            weight_mistakes = [
                (
                    "the padding is not masked: set scores of padded positions to -inf before the "
                    "softmax",
                    unmasked,
                ),
                (
                    "the mask is the wrong way round: True means a real token, one that may be "
                    "attended to",
                    torch.softmax(scores.masked_fill(mask, float("-inf")), -1).nan_to_num(0.0),
                ),
                (
                    "these are the scores, not the weights: apply a softmax over the source "
                    "positions",
                    scores.masked_fill(~mask, 0.0),
                ),
            ]
            compare(got_weights, weights, describe + "; weights", weight_mistakes, row_sums=True)
            context_mistakes = [
                (
                    "the context is the plain mean of the encoder states (mean pooling); weight "
                    "each state by its attention weight",
                    mean,
                ),
                (
                    "the context sums the encoder states weighted by the scores, not by the "
                    "weights",
                    (scores.masked_fill(~mask, 0.0)[..., None] * H).sum(1),
                ),
            ]
            compare(got_context, context, describe + "; context", context_mistakes)
        return "your attention step matches transformer_lab.nn.scores.attend on 3 random inputs."

    return run_check("check_attention_step", body, strict, verbose)


def check_mean_pooling_query(
    fn, *, strict: bool = False, verbose: bool = True, seed: int = 0
) -> CheckResult:
    """Check ``fn(H, mask)`` -> ``s [batch, d]``: a decoder state for which dot-product
    attention over ``H [batch, src_pos, d]`` (``mask`` True at real words) returns the plain
    mean of the real encoder states."""

    def body():
        gen = torch.Generator().manual_seed(seed)
        for batch, src_pos, d in [(2, 6, 3), (3, 8, 4)]:
            H, mask, lengths = _padded_states(gen, batch, src_pos, d)
            describe = f"H {tuple(H.shape)}, source lengths {lengths.tolist()}"
            s = need_tensor(call(fn, (H, mask), describe), "a tensor s of shape [batch, d]")
            if tuple(s.shape) != (batch, d):
                raise WrongAnswer(f"s must be [batch, d] = {(batch, d)}, got {tuple(s.shape)}.")
            mean = H.sum(1) / lengths[:, None]
            context, weights = attend(DotScore(), s.to(H.dtype), H, mask=mask)
            if torch.allclose(context, mean, atol=1e-5):
                continue
            if torch.allclose(s.to(H.dtype), mean, atol=1e-5):
                raise WrongAnswer(
                    "s is the mean of the states, but attention with that query does not return "
                    "it: the scores s . h_j still differ from word to word, so the weights are "
                    f"not uniform ({describe}). Which s gives every word the same score?"
                )
            raise WrongAnswer(
                f"with your s the weights of the first sentence are "
                f"{[round(w, 3) for w in weights[0].tolist()]}, not 1/{src_pos} each "
                f"({describe}). The mean needs the same score for every real word."
            )
        return "attention with your query returns the mean of the real encoder states."

    return run_check("check_mean_pooling_query", body, strict, verbose)


def check_padding_weight(
    fn, *, strict: bool = False, verbose: bool = True, seed: int = 0
) -> CheckResult:
    """Check ``fn(s, H, mask)`` -> ``[batch]``: the total weight that dot-product attention
    of ``s [batch, d]`` over ``H [batch, src_pos, d]`` gives to the padded positions when the
    mask is left out (``H`` is zero at padding, ``mask`` True at real words)."""

    def body():
        gen = torch.Generator().manual_seed(seed)
        for batch, src_pos, d in [(3, 5, 4), (4, 7, 6)]:
            H, mask, lengths = _padded_states(gen, batch, src_pos, d)
            s = torch.randn(batch, d, generator=gen)
            describe = f"s {tuple(s.shape)}, H {tuple(H.shape)}, source lengths {lengths.tolist()}"
            got = need_tensor(call(fn, (s, H, mask), describe), "a tensor of shape [batch]")
            unmasked = torch.softmax((H @ s[:, :, None])[..., 0], dim=-1)
            want = (unmasked * ~mask).sum(-1)
            mistakes = [
                (
                    "return one number per sentence: add up the weights of its padded positions",
                    unmasked * ~mask,
                ),
                (
                    "these are the weights with the mask, which gives padding nothing; leave the "
                    "mask out and see what a score of 0 gets from the softmax",
                    torch.zeros(batch),
                ),
                (
                    "this is the share of padded positions, as if every score were 0; the real "
                    "words' scores s . h_j are not, so weigh exp(0) for each padded position "
                    "against exp(s . h_j) of the real words",
                    (~mask).sum(-1) / src_pos,
                ),
                ("this is the weight on the real words, not on the padding", 1 - want),
            ]
            compare(got, want, describe, mistakes)
        return (
            "right: a score of 0 still gets exp(0) / sum of the softmax, so padding takes weight."
        )

    return run_check("check_padding_weight", body, strict, verbose)


def _count(fn, args: tuple, describe: str, size: int):
    """The reader's ``fn(*args)`` as a tuple of ``size`` numbers, or :class:`WrongAnswer`."""
    out = call(fn, args, describe)
    values = tuple(as_number(v) for v in out) if isinstance(out, tuple | list) else ()
    if len(values) != size or None in values:
        raise WrongAnswer(f"return a tuple of {size} numbers, got {out!r} ({describe}).")
    return values


def _judge(got: float, right: tuple, wrong: list, what: str, describe: str) -> None:
    """Pass if ``got`` is one of the ``right`` counts; else name the matching mistake."""
    if any(math.isclose(got, r, rel_tol=1e-9) for r in right):
        return
    for value, message in wrong:
        if math.isclose(got, value, rel_tol=1e-9):
            raise WrongAnswer(f"{what}: {message} ({describe}).")
    raise WrongAnswer(f"{what}: expected {right[0]:,}, got {got:,} ({describe}).")


def check_score_costs(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(n, m, d, d_a)`` -> ``(dot, multiplicative, additive)``: the multiply-adds
    of each score for one sentence of ``n`` source and ``m`` target words, states of size
    ``d`` and an additive score of attention size ``d_a``, computing every part that does not
    change with the step (or the source word) once. For the multiplicative score either
    order is right (``s^T W`` once per step, or ``W h_j`` once per sentence); for the
    additive one the ``n m d_a`` additions of ``W_1 h_j + W_2 s`` may be counted or not."""

    def body():
        for n, m, d, d_a in [(23, 25, 64, 64), (7, 5, 16, 8), (3, 11, 6, 10)]:
            describe = f"n={n}, m={m}, d={d}, d_a={d_a}"
            dot, mult, add = _count(fn, (n, m, d, d_a), describe, 3)
            pairs = n * m
            _judge(dot, (pairs * d,), [
                (pairs, "each score is a dot product of two d-vectors: d multiply-adds"),
                (n * d, "that is one step; every one of the m steps scores all n words"),
            ], "dot", describe)  # fmt: skip
            _judge(mult, (m * d * d + pairs * d, n * d * d + pairs * d), [
                (pairs * d * d + pairs * d, "you multiplied by W for every pair; s^T W needs "
                 "computing once per step (m d^2), or W h_j once per sentence (n d^2)"),
                (pairs * d, "the product with W costs too: m d^2 (or n d^2) on top"),
                (pairs * d * d, "you multiplied by W for every pair; s^T W needs computing "
                 "once per step (m d^2), or W h_j once per sentence (n d^2), then n m d for the "
                 "dot products"),
            ], "multiplicative", describe)  # fmt: skip
            projections = n * d * d_a + m * d * d_a
            _judge(add, (projections + pairs * d_a, projections + 2 * pairs * d_a), [
                (2 * pairs * d * d_a + pairs * d_a, "you projected for every pair; W_1 h_j "
                 "does not change with the step and W_2 s not with the source word, so each is "
                 "computed once: n d d_a + m d d_a"),
                (pairs * d_a, "the projections W_1 h_j and W_2 s cost too: n d d_a + m d d_a"),
                (pairs * d * d_a, "only the dot product with v is done for each pair: "
                 "n m d_a, after projections of n d d_a + m d d_a"),
            ], "additive", describe)  # fmt: skip
        return (
            "right on 3 sizes: only the additive score pays d_a numbers for each of the n m pairs."
        )

    return run_check("check_score_costs", body, strict, verbose)


def check_flatten_weights(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(n_cells, d_cell, d_state)``: the weights (bias included) of the linear
    layer that maps ``n_cells`` cells of ``d_cell`` numbers, flattened into one vector, to a
    decoder state of ``d_state`` numbers."""

    def body():
        for n_cells, d_cell, d_state in [(9, 64, 64), (196, 512, 512), (4, 3, 5)]:
            describe = f"n_cells={n_cells}, d_cell={d_cell}, d_state={d_state}"
            out = call(fn, (n_cells, d_cell, d_state), describe)
            got = as_number(out)
            if got is None:
                raise WrongAnswer(f"return a number of weights, got {type(out).__name__}.")
            flat = n_cells * d_cell
            _judge(got, (flat * d_state + d_state,), [
                (flat * d_state, "the layer has a bias too: d_state more"),
                (d_cell * d_state + d_state, "that layer reads one cell; the flattened vector "
                 "holds all n_cells of them, n_cells * d_cell numbers"),
                (flat * d_state + flat, "the bias has one number per output, d_state of them"),
                (d_cell * d_state, "that layer reads one cell and has no bias; the flattened "
                 "vector holds n_cells * d_cell numbers, and the bias adds d_state"),
            ], "weights", describe)  # fmt: skip
        return "right: (n_cells * d_cell + 1) * d_state weights, growing with the grid."

    return run_check("check_flatten_weights", body, strict, verbose)
