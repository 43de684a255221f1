"""Checkers for chapter 16, LoRA.

:func:`check_lora_forward` runs the reader's adapted projection ``x W + (alpha/r) x A^T B^T``
against :class:`transformer_lab.nn.lora.LoRA` and names the usual mistakes (no scale, the
scale ``alpha`` instead of ``alpha/r``, the change added to the input). :func:`check_lora_count`
checks the trainable-parameter count of adapters on a Llama against
:func:`transformer_lab.nn.lora.count_parameters`. :func:`check_merge` checks a merged weight.
"""

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
from transformer_lab.models.llama import Llama, LlamaConfig
from transformer_lab.nn.lora import LoRA, add_lora, count_parameters

__all__ = ["check_lora_forward", "check_lora_count", "check_merge"]

_SHAPES = ((2, 5, 8, 6, 2, 4.0), (3, 4, 16, 16, 4, 8.0), (1, 7, 6, 10, 1, 2.0))


def _inputs(gen, batch, pos, d_in, d_out, rank):
    x = torch.randn(batch, pos, d_in, generator=gen)
    W = torch.randn(d_in, d_out, generator=gen) / math.sqrt(d_in)
    A = torch.randn(rank, d_in, generator=gen) / math.sqrt(d_in)
    B = torch.randn(d_out, rank, generator=gen)  # nonzero, as after training
    return x, W, A, B


def _reference(W, A, B, alpha) -> torch.Tensor:
    """The package's ``W + (alpha/r) A^T B^T`` through :class:`LoRA`."""
    lora = LoRA(W.shape[0], W.shape[1], A.shape[0], alpha)
    with torch.no_grad():
        lora.A.copy_(A)
        lora.B.copy_(B)
        return lora(W)


def check_lora_forward(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(x, W, A, B, alpha)``: ``x @ W + (alpha / r) * (x @ A.T) @ B.T`` for
    ``x [..., d_in]``, ``W [d_in, d_out]``, ``A [r, d_in]``, ``B [d_out, r]``."""
    gen = torch.Generator().manual_seed(16)

    def body():
        for batch, pos, d_in, d_out, rank, alpha in _SHAPES:
            x, W, A, B = _inputs(gen, batch, pos, d_in, d_out, rank)
            describe = f"x {tuple(x.shape)}, W {tuple(W.shape)}, rank {rank}, alpha {alpha}"
            out = need_tensor(call(fn, (x, W, A, B, alpha), describe))
            want = x @ _reference(W, A, B, alpha)
            low = (x @ A.T) @ B.T  # [batch, pos, d_out]
            mistakes = [
                ("the scale is missing: multiply the low-rank path by alpha / r", x @ W + low),
                ("you scaled by alpha; LoRA scales by alpha / r", x @ W + alpha * low),
                ("you scaled by r / alpha; LoRA scales by alpha / r", x @ W + rank / alpha * low),
                ("you left out x @ W: LoRA adds to the frozen path", alpha / rank * low),
                ("you returned the frozen path only: add (alpha/r) (x A^T) B^T", x @ W),
            ]
            compare(out, want, describe, mistakes)
        return "correct on 3 inputs: the frozen path plus the scaled low-rank path."

    return run_check("check_lora_forward", body, strict, verbose)


def check_merge(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(W, A, B, alpha)``: the merged weight ``W + (alpha / r) A^T B^T``
    ``[d_in, d_out]``, which gives the adapted layer's output with no extra work."""
    gen = torch.Generator().manual_seed(61)

    def body():
        for _, _, d_in, d_out, rank, alpha in _SHAPES:
            _, W, A, B = _inputs(gen, 1, 1, d_in, d_out, rank)
            describe = f"W {tuple(W.shape)}, A {tuple(A.shape)}, B {tuple(B.shape)}, alpha {alpha}"
            out = need_tensor(call(fn, (W, A, B, alpha), describe))
            want = _reference(W, A, B, alpha)
            mistakes = [
                ("the scale is missing: add (alpha / r) A^T B^T", W + A.T @ B.T),
                ("you scaled by alpha; LoRA scales by alpha / r", W + alpha * A.T @ B.T),
                ("you returned the change alone; the merged weight is W plus it", want - W),
                ("B A is [d_out, d_in]; transpose it to W's [d_in, d_out] layout", W.T + 0 * W.T),
            ]
            compare(out, want, describe, mistakes)
        return "correct on 3 weights: W + (alpha / r) A^T B^T."

    return run_check("check_merge", body, strict, verbose)


_COUNT_CASES = (
    (dict(d_vocab=11, n_ctx=8, n_layers=3, n_heads=6, n_kv_heads=1, d_model=24, d_mlp=40), 2),
    (dict(d_vocab=11, n_ctx=8, n_layers=2, n_heads=4, n_kv_heads=2, d_model=16, d_mlp=24), 4),
    (dict(d_vocab=11, n_ctx=8, n_layers=1, n_heads=2, n_kv_heads=2, d_model=8, d_mlp=12), 8),
)


def check_lora_count(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(config, rank)``: how many numbers LoRA of ``rank`` on ``W_Q, W_K, W_V,
    W_O`` of every layer of a :class:`~transformer_lab.models.llama.Llama` with ``config``
    trains, compared with adapters really added to such a model."""

    def body():
        for cfg, rank in _COUNT_CASES:
            config = LlamaConfig(**cfg)
            describe = (
                f"n_layers={config.n_layers}, d_model={config.d_model}, n_heads={config.n_heads}, "
                f"n_kv_heads={config.n_kv_heads}, rank={rank}"
            )
            out = call(fn, (config, rank), describe)
            got = as_number(out)
            if got is None:
                raise WrongAnswer(f"return a number of parameters, got {type(out).__name__}.")
            torch.manual_seed(0)
            model = Llama(config)
            add_lora(model, ["W_Q", "W_K", "W_V", "W_O"], rank=rank, alpha=rank)
            want = count_parameters(model)[0]
            if got == want:
                continue
            c, d, kv = config, config.d_model, config.n_kv_heads * config.d_head
            wrong = [
                (c.n_layers * (2 * d * d + 2 * d * kv), "that is the count of the frozen "
                 "matrices themselves; LoRA trains r (d_in + d_out) numbers per matrix"),
                (c.n_layers * 4 * rank * 2 * d, "W_K and W_V have n_kv_heads * d_head outputs, "
                 "fewer than d_model under grouped-query attention"),
                (c.n_layers * rank * (2 * d * d + 2 * d * kv), "A and B are r x d_in and "
                 "d_out x r: add d_in and d_out, do not multiply them"),
                (want // c.n_layers, "you counted one layer; every layer has its own adapters"),
                (want // 2, "count both A and B of every matrix"),
            ]  # fmt: skip
            for value, message in wrong:
                if got == value:
                    raise WrongAnswer(f"{message} ({describe}).")
            raise WrongAnswer(
                f"expected {want:,} trainable numbers, got {got:,} ({describe}). Each adapted "
                "[d_in, d_out] matrix adds A [r, d_in] and B [d_out, r]."
            )
        return "correct on 3 models: r (d_in + d_out) per adapted matrix, every layer."

    return run_check("check_lora_count", body, strict, verbose)
