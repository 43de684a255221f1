"""Chapter 11's cross-attention checker passes the package's answer and names the usual
mistakes."""

from __future__ import annotations

import torch
from checker_helpers import assert_fails, assert_passes_right_and_names_mistake, verdict

from transformer_lab.exercises.ch11_encoder_decoder import check_cross_attention
from transformer_lab.nn.attention import scaled_dot_product_attention


def cross(x, memory, W_Q, W_K, W_V, src_mask):
    mask = src_mask[:, None, :]  # [batch, 1, src_pos]: every query sees the real source tokens
    return scaled_dot_product_attention(x @ W_Q, memory @ W_K, memory @ W_V, mask)[0]


def test_cross_attention(capsys):
    def swapped(x, memory, W_Q, W_K, W_V, src_mask):
        return scaled_dot_product_attention(memory @ W_Q, x @ W_K, x @ W_V)[0]

    assert_passes_right_and_names_mistake(
        check_cross_attention, cross, swapped, "queries came from the encoder", capsys
    )

    def unmasked(x, memory, W_Q, W_K, W_V, src_mask):
        return scaled_dot_product_attention(x @ W_Q, memory @ W_K, memory @ W_V)[0]

    assert_fails(verdict(check_cross_attention, unmasked), "source padding is attended to")


def test_sequence_score(capsys):
    from transformer_lab.exercises.ch11_encoder_decoder import check_sequence_score

    def right(log_probs, outputs, eos_id):
        picked = log_probs.gather(-1, outputs[..., None])[..., 0]
        is_eos = (outputs == eos_id).long()
        return (picked * ((is_eos.cumsum(1) - is_eos) == 0)).sum(1)

    def everything(log_probs, outputs, eos_id):
        return log_probs.gather(-1, outputs[..., None])[..., 0].sum(1)

    assert_passes_right_and_names_mistake(
        check_sequence_score, right, everything, "after the first <eos> were counted", capsys
    )

    def without_eos(log_probs, outputs, eos_id):
        picked = log_probs.gather(-1, outputs[..., None])[..., 0]
        is_eos = (outputs == eos_id).long()
        return (picked * (is_eos.cumsum(1) == 0)).sum(1)

    assert_fails(verdict(check_sequence_score, without_eos), "<eos> itself was left out")


def test_cross_attention_cache(capsys):
    from transformer_lab.exercises.ch11_encoder_decoder import check_cross_attention_cache

    def split(t, attn):
        return t.view(t.shape[0], t.shape[1], attn.n_heads, -1).transpose(1, 2)

    def right(model, memory):
        out = []
        for block in model.decoder.blocks:
            a = block.cross_attn
            out.append((split(memory @ a.W_K + a.b_K, a), split(memory @ a.W_V + a.b_V, a)))
        return out

    def first_layer_everywhere(model, memory):
        a = model.decoder.blocks[0].cross_attn
        kv = (split(memory @ a.W_K + a.b_K, a), split(memory @ a.W_V + a.b_V, a))
        return [kv] * len(model.decoder.blocks)

    assert_passes_right_and_names_mistake(
        check_cross_attention_cache, right, first_layer_everywhere, "used layer 0's weights", capsys
    )

    def unsplit(model, memory):
        return [
            (
                memory @ b.cross_attn.W_K + b.cross_attn.b_K,
                memory @ b.cross_attn.W_V + b.cross_attn.b_V,
            )
            for b in model.decoder.blocks
        ]

    assert_fails(verdict(check_cross_attention_cache, unsplit), "not split into heads")
    assert_fails(
        verdict(check_cross_attention_cache, lambda m, x: right(m, x)[:1]),
        "one (K, V) pair per decoder layer",
    )


def test_label_smoothing(capsys):
    import functools

    from transformer_lab.data.numbers import Batch
    from transformer_lab.exercises.ch11_encoder_decoder import check_label_smoothing
    from transformer_lab.training.losses import seq2seq_loss

    def right(logits, targets, eps, pad_id):  # the package's loss on a model that returns logits
        bos = torch.ones(targets.shape[0], 1, dtype=torch.long)
        batch = Batch(targets, torch.cat([bos, targets], 1), torch.arange(len(targets)), pad_id)
        return functools.partial(seq2seq_loss, label_smoothing=eps)(lambda s, t: logits, batch)

    def other_words(logits, targets, eps, pad_id):
        log_p = torch.log_softmax(logits, -1)
        nll = -log_p.gather(-1, targets[..., None])[..., 0]
        rest = (-log_p.sum(-1) - nll) / (logits.shape[-1] - 1)
        return ((1 - eps) * nll + eps * rest)[targets != pad_id].mean()

    assert_passes_right_and_names_mistake(
        check_label_smoothing, right, other_words, "other d_vocab - 1 words", capsys
    )

    def with_padding(logits, targets, eps, pad_id):
        return torch.nn.functional.cross_entropy(
            logits.flatten(0, 1), targets.flatten(), label_smoothing=eps
        )

    assert_fails(verdict(check_label_smoothing, with_padding), "padding positions were counted")


def test_smallest_margin(capsys):
    from transformer_lab.exercises.ch11_encoder_decoder import check_smallest_margin

    def right(ours, theirs):
        return min(a - b for a, b in zip(ours, theirs, strict=True))

    def unpaired(ours, theirs):
        return min(ours) - max(theirs)

    assert_passes_right_and_names_mistake(
        check_smallest_margin, right, unpaired, "not paired", capsys
    )
    assert_fails(
        verdict(check_smallest_margin, lambda a, b: sum(a) / len(a) - sum(b) / len(b)),
        "mean difference",
    )
