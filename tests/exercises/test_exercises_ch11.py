"""Chapter 11's cross-attention checker passes the package's answer and names the usual
mistakes."""

from __future__ import annotations

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
