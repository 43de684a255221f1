"""Grouped-query attention: equal to F.scaled_dot_product_attention with the key/value
heads repeated, and to its enable_gqa path; masks, empty rows and bad inputs."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from transformer_lab.nn.attention import grouped_query_attention, repeat_kv
from transformer_lab.nn.masks import causal_mask


def qkv(n_heads=6, n_kv=2, q_pos=5, k_pos=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(2, n_heads, q_pos, 8, generator=g),
        torch.randn(2, n_kv, k_pos, 8, generator=g),
        torch.randn(2, n_kv, k_pos, 8, generator=g),
    )


def test_repeat_kv_order():
    x = torch.arange(3.0).view(1, 3, 1, 1)
    assert repeat_kv(x, 2).flatten().tolist() == [0, 0, 1, 1, 2, 2]


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("n_kv", [1, 2, 3, 6])
def test_equals_sdpa_with_repeated_heads(n_kv, need_weights):
    q, k, v = qkv(n_kv=n_kv)
    mask = causal_mask(5, 5)
    ref = F.scaled_dot_product_attention(
        q, repeat_kv(k, 6 // n_kv), repeat_kv(v, 6 // n_kv), attn_mask=mask
    )
    out, weights = grouped_query_attention(q, k, v, mask, need_weights=need_weights)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    assert (weights is None) != need_weights
    if weights is not None:
        torch.testing.assert_close(weights.sum(-1), torch.ones(2, 6, 5))


@pytest.mark.skipif(
    "enable_gqa" not in F.scaled_dot_product_attention.__doc__, reason="torch without enable_gqa"
)
def test_equals_sdpa_enable_gqa():
    q, k, v = qkv(n_kv=3, q_pos=4, k_pos=7)
    mask = torch.rand(2, 1, 4, 7, generator=torch.Generator().manual_seed(1)) > 0.3
    mask[..., 0] = True
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    for need_weights in (True, False):
        out, _ = grouped_query_attention(q, k, v, mask, need_weights=need_weights)
        torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_query_head_reads_its_group():
    q, k, v = qkv(n_heads=4, n_kv=2)
    out, _ = grouped_query_attention(q, k, v)
    # heads 2 and 3 use key/value head 1: running them alone with that head agrees
    alone, _ = grouped_query_attention(q[:, 2:4], k[:, 1:2], v[:, 1:2])
    torch.testing.assert_close(out[:, 2:4], alone)


@pytest.mark.parametrize("need_weights", [True, False])
def test_fully_masked_row_gives_zeros(need_weights):
    q, k, v = qkv()
    mask = torch.ones(5, 5, dtype=torch.bool)
    mask[2] = False
    out, _ = grouped_query_attention(q, k, v, mask, need_weights=need_weights)
    assert torch.equal(out[:, :, 2], torch.zeros_like(out[:, :, 2]))
    assert torch.isfinite(out).all()


@pytest.mark.parametrize(
    "thunk, error, fragment",
    [
        (lambda: repeat_kv(torch.ones(2, 3, 4), 2), ValueError, "[batch, heads, pos, d_head]"),
        (lambda: repeat_kv(torch.ones(1, 2, 3, 4), 0), ValueError, "n_rep"),
        (lambda: grouped_query_attention(*qkv(n_heads=6, n_kv=4)), ValueError, "does not divide"),
        (
            lambda: grouped_query_attention(qkv()[0], qkv()[1], qkv(n_kv=3)[2]),
            ValueError,
            "k has 2 heads but v has 3",
        ),
        (lambda: grouped_query_attention(qkv()[0].long(), *qkv()[1:]), TypeError, "floating"),
        (
            lambda: grouped_query_attention(qkv()[0], qkv()[1][:1], qkv()[2][:1]),
            ValueError,
            "one batch size",
        ),
        (
            lambda: grouped_query_attention(qkv()[0][:1], *qkv()[1:], need_weights=False),
            ValueError,
            "one batch size",
        ),
        (
            lambda: grouped_query_attention(*qkv(), torch.ones(4, 4, dtype=torch.bool)),
            ValueError,
            "does not broadcast",
        ),
    ],
)
def test_bad_inputs(thunk, error, fragment):
    with pytest.raises(error) as info:
        thunk()
    assert fragment in str(info.value)
