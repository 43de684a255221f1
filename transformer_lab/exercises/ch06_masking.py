"""Checkers for chapter 6, masking: the causal mask, the padding mask and masked attention
(the last also used by chapter 13)."""

from __future__ import annotations

from functools import partial

import torch

from transformer_lab.exercises.attention_mistakes import (
    MASK_HINT,
    OUTPUT_TUPLE_NOTE,
    attention_cases,
    attention_mistakes,
    expect_attention_output,
    probe_float16,
    probe_fully_masked,
    random_mask,
    random_qkv,
)
from transformer_lab.exercises.runner import (
    CheckResult,
    WrongAnswer,
    call,
    compare,
    describe_shapes,
    need_tensor,
    run_check,
)
from transformer_lab.nn.masks import causal_mask, padding_mask

__all__ = ["check_causal_mask", "check_padding_mask", "check_masked_attention"]


def check_masked_attention(
    fn,
    *,
    fully_masked_rows: bool = False,
    strict: bool = False,
    verbose: bool = True,
    seed: int = 0,
) -> CheckResult:
    """Check ``fn(q, k, v, mask)``: scaled dot-product attention with a boolean mask.

    Shapes as in :func:`~.ch04_self_attention.check_attention`; ``mask`` is bool,
    **True = may attend**, broadcastable to ``[..., query_pos, key_pos]`` (a causal
    ``[query_pos, key_pos]`` mask, a padding mask ``[batch, 1, 1, key_pos]`` or a full one).
    ``fn`` must return the output ``[..., query_pos, d_v]``. Two edge cases are probed as
    well: float16 inputs (where ``-1e9`` overflows) and a query whose keys are all masked.
    The package returns zeros for such a query; with ``fully_masked_rows=True`` that is
    required, otherwise the result only notes what your function does there.
    """
    gen = torch.Generator().manual_seed(seed)

    def body():
        cases = attention_cases(gen)
        cases[1] = attention_cases(gen, square=True)[1]
        kinds = ["random", "causal", "random", "padding"]
        for i, (case, kind) in enumerate(zip(cases, kinds, strict=True)):
            q, k, v = random_qkv(case, gen)
            mask = random_mask(case, gen, kind)
            describe = describe_shapes(q=q, k=k, v=v, mask=mask)
            out = call(fn, (q, k, v, mask), describe, batch_hint=bool(case.batch) and i > 0)
            out = need_tensor(out, "the output", OUTPUT_TUPLE_NOTE)
            want = expect_attention_output(out, q, k, v, mask, describe)
            compare(out, want, describe, partial(attention_mistakes, q, k, v, mask))
        probe_float16(fn, gen)
        note = probe_fully_masked(fn, gen, fully_masked_rows)
        return f"correct on {len(cases)} random inputs and on float16 inputs.{note}"

    return run_check("check_masked_attention", body, strict, verbose)


def _compare_masks(out, want, describe: str, mistakes) -> None:
    """Like :func:`~.runner.compare`, for bool masks: exact, with the dtype named."""
    if tuple(out.shape) != tuple(want.shape):
        raise WrongAnswer(
            f"wrong mask shape: expected {tuple(want.shape)}, got {tuple(out.shape)} ({describe})."
        )
    if out.dtype != torch.bool:
        additive = out.is_floating_point() and bool(out.min() < 0)
        as_bool = out == 0 if additive else out != 0
        extra = " (an additive 0 / -inf mask)" if additive else ""
        if torch.equal(as_bool, want):
            raise WrongAnswer(
                f"the pattern is right but the mask has dtype {out.dtype}{extra}; this book's "
                "masks are bool with True = may attend."
            )
        raise WrongAnswer(
            f"the mask must be bool with True = may attend, got dtype {out.dtype}{extra}."
        )
    if torch.equal(out, want):
        return
    for message, model in mistakes:
        if torch.equal(out, model):
            raise WrongAnswer(f"{message} ({describe}).")
    wrong = tuple((out != want).nonzero()[0].tolist())
    raise WrongAnswer(
        f"the mask differs from the reference at index {wrong} ({describe}): "
        f"got {bool(out[wrong])}, expected {bool(want[wrong])}."
    )


def check_causal_mask(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(n)``: the causal mask for ``n`` tokens.

    ``fn`` must return a bool tensor ``[n, n]`` in which entry ``[i, j]`` is True when
    query ``i`` may attend to key ``j``, that is when ``j <= i`` (itself and the past).
    """

    def body():
        for n in (5, 8, 1, 2):
            out = need_tensor(call(fn, (n,), f"n={n}"), "a bool tensor")
            want = causal_mask(n)
            mistakes = [
                (
                    f"True marks the blocked (future) positions, which is PyTorch's convention "
                    f"for nn.Transformer masks; {MASK_HINT}, so use torch.tril",
                    ~want,
                ),
                ("the diagonal must be True: a token may attend to itself", want.tril(-1)),
                ("query i may see keys j >= i, the future; use tril, not triu", want.T),
                ("every token may see every other: nothing is masked", torch.ones_like(want)),
            ]
            _compare_masks(out, want, f"n={n}", mistakes)
        return "correct for n = 5, 8, 1 and 2."

    return run_check("check_causal_mask", body, strict, verbose)


def check_padding_mask(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(lengths, max_len)``: the key padding mask of a batch.

    ``lengths`` is a LongTensor ``[batch]`` with the true length of each sequence and
    ``max_len`` the padded length. ``fn`` must return a bool tensor
    ``[batch, 1, 1, max_len]`` (broadcastable over heads and queries) that is True at key
    position ``j`` of sequence ``b`` when ``j < lengths[b]`` (a real token).
    """

    def body():
        for lengths, max_len in [([3, 5, 1], 5), ([2, 7, 7, 4], 9), ([4], 4)]:
            lengths = torch.tensor(lengths)
            describe = f"lengths={lengths.tolist()}, max_len={max_len}"
            out = need_tensor(call(fn, (lengths, max_len), describe), "a bool tensor")
            want = padding_mask(lengths, max_len)
            if tuple(out.shape) == (len(lengths), max_len) and torch.equal(out, want[:, 0, 0]):
                raise WrongAnswer(
                    f"the values are right but the shape is {tuple(out.shape)}; add the head and "
                    "query axes, mask[:, None, None, :], so it broadcasts to [batch, n_heads, "
                    "query_pos, key_pos]."
                )
            longest = int(lengths.max())
            if tuple(out.shape) == (len(lengths), 1, 1, longest) and max_len > longest:
                raise WrongAnswer(
                    f"the mask has the length of the longest sequence, not max_len={max_len}."
                )
            positions = torch.arange(max_len)
            mistakes = [
                (
                    f"True marks the padding, as in nn.MultiheadAttention's key_padding_mask; "
                    f"{MASK_HINT} (a real token)",
                    ~want,
                ),
                (
                    "one position too many is allowed: position j is real when j < length "
                    "(positions count from 0)",
                    (positions <= lengths[:, None])[:, None, None, :],
                ),
                (
                    "one real position is blocked: position j is real when j < length",
                    (positions < lengths[:, None] - 1)[:, None, None, :],
                ),
            ]
            _compare_masks(out, want, describe, mistakes)
        return "correct on 3 batches of different lengths."

    return run_check("check_padding_mask", body, strict, verbose)
