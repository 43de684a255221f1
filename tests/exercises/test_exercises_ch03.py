"""Chapter 3's checker of one attention step passes a right answer and names the usual
mistakes, in the weights and in the context."""

from __future__ import annotations

import torch
from checker_helpers import assert_fails, verdict

from transformer_lab.exercises.ch03_seq2seq import check_attention_step


def right(s, H, mask):
    scores = (H @ s.unsqueeze(-1)).squeeze(-1).masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return (weights.unsqueeze(-1) * H).sum(1), weights


def test_check_attention_step_accepts_a_right_answer_and_names_mistakes():
    def unmasked(s, H, mask):
        return right(s, H, torch.ones_like(mask))

    def wrong_way(s, H, mask):
        context, _ = right(s, H, mask)
        scores = (H @ s.unsqueeze(-1)).squeeze(-1).masked_fill(mask, float("-inf"))
        return context, torch.softmax(scores, dim=-1).nan_to_num(0.0)

    def mean_pool(s, H, mask):
        _, weights = right(s, H, mask)
        return (H * mask[..., None]).sum(1) / mask.sum(1, keepdim=True), weights

    assert verdict(check_attention_step, right).passed
    assert_fails(verdict(check_attention_step, unmasked), "not masked", "weights")
    assert_fails(verdict(check_attention_step, wrong_way), "wrong way round")
    assert_fails(verdict(check_attention_step, mean_pool), "mean pooling", "context")
    assert_fails(verdict(check_attention_step, lambda s, H, m: s), "pair")
    assert_fails(verdict(check_attention_step, lambda s, H, m: (s, None)), "expected a tensor")
