"""Rotary position embeddings: parity with transformers' Llama implementation, the
relative-position property, norms kept, and bad inputs."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_lab.nn.positions import (
    apply_rotary,
    rotary_cos_sin,
    rotary_frequencies,
)


def test_frequencies():
    theta = rotary_frequencies(8, base=10000.0)
    torch.testing.assert_close(theta, torch.tensor([1.0, 0.1, 0.01, 0.001]))


def test_equals_transformers_llama_rope():
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    from transformers import LlamaConfig

    cfg = LlamaConfig(hidden_size=64, num_attention_heads=4, rope_theta=100000.0)
    torch.manual_seed(0)
    q, k = torch.randn(2, 4, 7, 16), torch.randn(2, 2, 7, 16)
    positions = torch.tensor([[0, 1, 2, 3, 4, 5, 6], [0, 0, 0, 1, 2, 3, 4]])
    hf_rope = llama.LlamaRotaryEmbedding(cfg)
    cos_hf, sin_hf = hf_rope(q, positions)
    q_hf, k_hf = llama.apply_rotary_pos_emb(q, k, cos_hf, sin_hf)
    cos, sin = rotary_cos_sin(positions, 16, 100000.0)
    torch.testing.assert_close(apply_rotary(q, cos, sin), q_hf, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(apply_rotary(k, cos, sin), k_hf, atol=1e-6, rtol=1e-5)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 500), st.integers(0, 500), st.integers(-50, 50))
def test_score_depends_only_on_distance(m, n, shift):
    """q at position m and k at position n score the same as at m + s and n + s."""
    torch.manual_seed(0)
    q, k = (
        torch.randn(1, 1, 1, 32, dtype=torch.float64),
        torch.randn(1, 1, 1, 32, dtype=torch.float64),
    )

    def rope(x, position):
        return apply_rotary(x, *rotary_cos_sin(torch.tensor([position]), 32))

    def score(a, b):
        qa = rope(q, a).to(torch.float64)
        kb = rope(k, b).to(torch.float64)
        return (qa * kb).sum()

    s = max(shift, -min(m, n))
    torch.testing.assert_close(score(m, n), score(m + s, n + s), atol=1e-3, rtol=1e-4)


def test_rotation_keeps_norms_and_position_zero_is_identity():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 9, 8)
    y = apply_rotary(x, *rotary_cos_sin(torch.arange(9), 8))
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(y[:, :, 0], x[:, :, 0])
    assert not torch.allclose(y[:, :, 1], x[:, :, 1])


def test_batched_positions_broadcast_over_heads():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4, 8)
    positions = torch.tensor([[0, 1, 2, 3], [5, 6, 7, 8]])
    y = apply_rotary(x, *rotary_cos_sin(positions, 8))
    for b in range(2):
        alone = apply_rotary(x[b : b + 1], *rotary_cos_sin(positions[b], 8))
        torch.testing.assert_close(y[b : b + 1], alone)


@pytest.mark.parametrize(
    "thunk, error, fragment",
    [
        (lambda: rotary_frequencies(7), ValueError, "positive even int"),
        (lambda: rotary_frequencies(8, base=1), ValueError, "base"),
        (lambda: rotary_frequencies(8, base="1e4"), TypeError, "base must be a number"),
        (lambda: rotary_cos_sin(torch.arange(3.0), 8), TypeError, "integer tensor"),
        (lambda: rotary_cos_sin(torch.zeros(1, 2, 3, dtype=torch.long), 8), ValueError, "[pos]"),
        (
            lambda: apply_rotary(torch.ones(2, 3, 8), *rotary_cos_sin(torch.arange(3), 8)),
            ValueError,
            "[batch, n_heads, pos, d_head]",
        ),
        (
            lambda: apply_rotary(torch.ones(1, 2, 3, 8), *rotary_cos_sin(torch.arange(4), 8)),
            ValueError,
            "cos must be",
        ),
    ],
)
def test_bad_inputs(thunk, error, fragment):
    with pytest.raises(error) as info:
        thunk()
    assert fragment in str(info.value)
