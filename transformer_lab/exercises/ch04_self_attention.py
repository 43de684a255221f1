"""Checkers for chapter 4, self-attention: the attention weights and the output of scaled
dot-product attention. The random inputs and the mistakes they name come from
:mod:`.attention_mistakes`."""

from __future__ import annotations

from functools import partial

import torch

from transformer_lab.exercises.attention_mistakes import (
    OUTPUT_TUPLE_NOTE,
    attention_cases,
    attention_mistakes,
    expect_attention_output,
    random_qkv,
    reference_weights,
    weight_mistakes,
)
from transformer_lab.exercises.runner import (
    CheckResult,
    call,
    compare,
    describe_shapes,
    need_tensor,
    run_check,
)

__all__ = ["check_attention_weights", "check_attention"]


def check_attention_weights(
    fn, *, strict: bool = False, verbose: bool = True, seed: int = 0
) -> CheckResult:
    """Check ``fn(q, k)``: the attention weights ``softmax(q k^T / sqrt(d_k))``.

    ``q`` is ``[..., query_pos, d_k]`` and ``k`` is ``[..., key_pos, d_k]`` (any batch
    dimensions in front); ``fn`` must return the weights ``[..., query_pos, key_pos]``,
    each row a probability distribution over the keys.
    """
    gen = torch.Generator().manual_seed(seed)

    def body():
        cases = attention_cases(gen)
        for i, case in enumerate(cases):
            q, k, _ = random_qkv(case, gen)
            describe = describe_shapes(q=q, k=k)
            out = need_tensor(call(fn, (q, k), describe, batch_hint=bool(case.batch) and i > 0))
            want = reference_weights(q, k).float()
            compare(out, want, describe, partial(weight_mistakes, q, k), row_sums=True)
        return f"correct on {len(cases)} random inputs, batch dimensions included."

    return run_check("check_attention_weights", body, strict, verbose)


def check_attention(
    fn, *, strict: bool = False, verbose: bool = True, seed: int = 0
) -> CheckResult:
    """Check ``fn(q, k, v)``: the output of scaled dot-product attention.

    ``q`` is ``[..., query_pos, d_k]``, ``k`` is ``[..., key_pos, d_k]`` and ``v`` is
    ``[..., key_pos, d_v]`` (any batch dimensions in front); ``fn`` must return only the
    output ``softmax(q k^T / sqrt(d_k)) v`` of shape ``[..., query_pos, d_v]``.
    """
    gen = torch.Generator().manual_seed(seed)

    def body():
        cases = attention_cases(gen)
        for i, case in enumerate(cases):
            q, k, v = random_qkv(case, gen)
            describe = describe_shapes(q=q, k=k, v=v)
            out = call(fn, (q, k, v), describe, batch_hint=bool(case.batch) and i > 0)
            out = need_tensor(out, "the output", OUTPUT_TUPLE_NOTE)
            want = expect_attention_output(out, q, k, v, None, describe)
            compare(out, want, describe, partial(attention_mistakes, q, k, v))
        return f"correct on {len(cases)} random inputs, batch dimensions included."

    return run_check("check_attention", body, strict, verbose)
