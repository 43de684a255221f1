"""Checkers for chapter 3, sequence to sequence with attention: one decoder step of
dot-product attention over the encoder states."""

from __future__ import annotations

import torch

from transformer_lab.exercises.runner import (
    CheckResult,
    WrongAnswer,
    call,
    compare,
    need_tensor,
    run_check,
)
from transformer_lab.nn.scores import DotScore, attend

__all__ = ["check_attention_step"]


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
