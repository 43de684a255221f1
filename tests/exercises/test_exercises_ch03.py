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


def test_check_mean_pooling_query_accepts_zero_and_names_mistakes():
    from transformer_lab.exercises.ch03_seq2seq import check_mean_pooling_query as check

    def masked_mean(H, mask):
        return (H * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)

    assert verdict(check, lambda H, mask: torch.zeros(H.shape[0], H.shape[-1])).passed
    assert verdict(check, lambda H, mask: 0 * H[:, 0]).passed
    assert_fails(verdict(check, masked_mean), "mean of the states", "same score")
    assert_fails(verdict(check, lambda H, mask: torch.ones(H.shape[0], H.shape[-1])), "1/6 each")
    assert_fails(verdict(check, lambda H, mask: torch.zeros(H.shape[-1])), "[batch, d]")
    assert_fails(verdict(check, lambda H, mask: 0.0), "expected a tensor")


def test_check_padding_weight_accepts_a_right_answer_and_names_mistakes():
    from transformer_lab.exercises.ch03_seq2seq import check_padding_weight as check

    def unmasked(s, H):
        return torch.softmax((H @ s[:, :, None]).squeeze(-1), dim=-1)

    def right_weight(s, H, mask):
        return (unmasked(s, H) * ~mask).sum(-1)

    assert verdict(check, right_weight).passed
    assert_fails(verdict(check, lambda s, H, m: unmasked(s, H) * ~m), "one number per sentence")
    assert_fails(verdict(check, lambda s, H, m: torch.zeros(len(m))), "with the mask")
    assert_fails(verdict(check, lambda s, H, m: (~m).sum(-1) / m.shape[1]), "as if every score")
    assert_fails(verdict(check, lambda s, H, m: 1 - right_weight(s, H, m)), "real words")


def test_check_score_costs_accepts_both_orders_and_names_mistakes():
    from transformer_lab.exercises.ch03_seq2seq import check_score_costs as check

    def costs(n, m, d, d_a, per_sentence=False, additions=False):
        w = n * d * d if per_sentence else m * d * d
        additive = n * d * d_a + m * d * d_a + (1 + additions) * n * m * d_a
        return n * m * d, w + n * m * d, additive

    assert verdict(check, costs).passed
    assert verdict(check, lambda *a: costs(*a, per_sentence=True, additions=True)).passed
    assert verdict(check, lambda *a: list(costs(*a))).passed
    assert_fails(verdict(check, lambda n, m, d, d_a: (n * m, *costs(n, m, d, d_a)[1:])), "dot:")
    per_pair = lambda n, m, d, d_a: (n * m * d, n * m * d * d + n * m * d, 0)  # noqa: E731
    assert_fails(verdict(check, per_pair), "multiplicative", "for every pair")
    no_projection = lambda n, m, d, d_a: (*costs(n, m, d, d_a)[:2], n * m * d_a)  # noqa: E731
    assert_fails(verdict(check, no_projection), "additive", "cost too")
    naive = lambda n, m, d, d_a: (n * m * d, n * m * d * d, 0)  # noqa: E731
    assert_fails(verdict(check, naive), "multiplicative", "once per step")
    assert_fails(verdict(check, lambda *a: 5), "tuple of 3 numbers")


def test_check_flatten_weights_accepts_a_right_answer_and_names_mistakes():
    from transformer_lab.exercises.ch03_seq2seq import check_flatten_weights as check

    assert verdict(check, lambda n, d_cell, d_state: (n * d_cell + 1) * d_state).passed
    assert_fails(verdict(check, lambda n, d_cell, d_state: n * d_cell * d_state), "bias")
    assert_fails(verdict(check, lambda n, d_cell, d_state: (d_cell + 1) * d_state), "one cell")
    assert_fails(verdict(check, lambda n, d_cell, d_state: 7), "expected 36,928, got 7")
    assert_fails(verdict(check, lambda n, d_cell, d_state: d_cell * d_state), "one cell and has no")
    assert_fails(verdict(check, lambda n, d_cell, d_state: "many"), "number of weights")


def test_the_chapters_checkers_are_re_exported():
    from transformer_lab import exercises
    from transformer_lab.exercises import ch03_seq2seq

    for name in ch03_seq2seq.__all__:
        assert getattr(exercises, name) is getattr(ch03_seq2seq, name)
