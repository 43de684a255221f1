"""MultiHeadAttention against ``nn.MultiheadAttention`` after copying weights: outputs,
per-head weights and gradients; properties; bad input.

Tolerance: float32 on the CPU, ``atol=1e-5, rtol=1e-5`` for outputs and gradients.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from transformer_lab.nn.masks import causal_mask, combine_masks, from_torch_mask, to_torch_mask
from transformer_lab.nn.multi_head import MultiHeadAttention

F32 = dict(atol=1e-5, rtol=1e-5)
PROPERTY = settings(max_examples=20, deadline=None, database=None)


# --- LayerNorm ------------------------------------------------------------------------------


@pytest.mark.parametrize("bias", [True, False])
def test_self_attention_fused_qkv_equals_three_projections(bias):
    """Self-attention computes Q, K, V in one product; passing equal copies as key and
    value takes the path with three products. Both must agree, gradients included."""
    torch.manual_seed(3)
    mha = MultiHeadAttention(16, 4, bias=bias)
    if bias:
        with torch.no_grad():
            for b in (mha.b_Q, mha.b_K, mha.b_V):
                b.normal_()
    x = torch.randn(2, 6, 16, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    mask = causal_mask(6)
    out, w = mha(x, mask=mask)
    ref, w_ref = mha(x2, x2.clone(), x2.clone(), mask=mask)
    torch.testing.assert_close(out, ref, **F32)
    torch.testing.assert_close(w, w_ref, **F32)
    out.sum().backward()
    grads = [p.grad.clone() for p in (mha.W_Q, mha.W_K, mha.W_V)]
    mha.zero_grad()
    ref.sum().backward()
    for g, p in zip(grads, (mha.W_Q, mha.W_K, mha.W_V), strict=True):
        torch.testing.assert_close(g, p.grad, **F32)
    torch.testing.assert_close(x.grad, x2.grad, **F32)


# --- FeedForward ----------------------------------------------------------------------------


# --- MultiHeadAttention vs nn.MultiheadAttention -------------------------------------------


def make_pair(d_model=12, n_heads=3, seed=0, batch_first=True, **kwargs):
    torch.manual_seed(seed)
    theirs = nn.MultiheadAttention(d_model, n_heads, batch_first=batch_first, **kwargs).eval()
    with torch.no_grad():  # non-zero biases, so that copying them is tested too
        for name, p in theirs.named_parameters():
            if "bias" in name:
                p.normal_()
    return theirs, MultiHeadAttention.from_torch(theirs).eval()


def torch_call(theirs, query, key, value, batch_first, **kwargs):
    """Call ``theirs`` on batch-first tensors whatever its layout; return batch-first."""
    if not batch_first:
        query, key, value = (t.transpose(0, 1) for t in (query, key, value))
    out, weights = theirs(query, key, value, **kwargs)
    return (out if batch_first else out.transpose(0, 1)), weights


# (batch, query_pos, key_pos): batch 1, a single token, odd lengths
MHA_SHAPES = [(1, 1, 1), (1, 5, 5), (2, 7, 7), (3, 1, 9), (2, 9, 4)]


# every shape with a batch-first torch module, one shape with a sequence-first one
LAYOUTS = [(shape, True) for shape in MHA_SHAPES] + [((2, 5, 3), False)]


@pytest.mark.parametrize(("shape", "batch_first"), LAYOUTS, ids=str)
@pytest.mark.parametrize("kind", ["self", "cross", "key_padding", "causal", "causal+padding"])
def test_multihead_attention_matches_torch(kind, shape, batch_first):
    batch, query_pos, key_pos = shape
    # cross: other keys and values, of other widths; key_padding: cross-attention to a
    # padded memory of the same width; self and causal: keys and values are the queries
    cross = kind in ("cross", "key_padding")
    if not cross:
        key_pos = query_pos
    d_key, d_value = (5, 7) if kind == "cross" else (12, 12)
    extra = dict(kdim=d_key, vdim=d_value) if kind == "cross" else {}
    theirs, ours = make_pair(batch_first=batch_first, **extra)
    query = torch.randn(batch, query_pos, 12, requires_grad=True)
    key = torch.randn(batch, key_pos, d_key, requires_grad=True) if cross else query
    value = torch.randn(batch, key_pos, d_value, requires_grad=True) if cross else query
    lengths = torch.randint(1, key_pos + 1, (batch,))
    key_padding = torch.arange(key_pos)[None, :] >= lengths[:, None]  # torch: True = ignore
    kwargs, mask = {}, None
    if "padding" in kind:
        kwargs["key_padding_mask"] = key_padding
        mask = from_torch_mask(key_padding, key_padding=True)
    if kind.startswith("causal"):
        kwargs["attn_mask"] = to_torch_mask(causal_mask(query_pos))
        mask = combine_masks(mask, causal_mask(query_pos))

    out, weights = ours(query, key if cross else None, value if cross else None, mask=mask)
    leaves = [query] + ([key, value] if cross else [])
    copies = [t.detach().clone().requires_grad_() for t in leaves]
    q2, k2, v2 = (copies[0], copies[1], copies[2]) if cross else (copies[0],) * 3
    expected, expected_w = torch_call(theirs, q2, k2, v2, batch_first, **kwargs)
    torch.testing.assert_close(out, expected, **F32)
    assert weights.shape == (batch, 3, query_pos, key_pos)
    torch.testing.assert_close(weights.mean(dim=1), expected_w, **F32)
    _, per_head = torch_call(theirs, q2, k2, v2, batch_first, average_attn_weights=False, **kwargs)
    torch.testing.assert_close(weights, per_head, **F32)

    grad = torch.randn_like(out)
    (out * grad).sum().backward()
    (expected * grad).sum().backward()
    for ours_leaf, their_leaf in zip(leaves, copies, strict=True):
        torch.testing.assert_close(ours_leaf.grad, their_leaf.grad, **F32)
    torch.testing.assert_close(ours.W_O.grad, theirs.out_proj.weight.grad.T, **F32)
    torch.testing.assert_close(ours.b_O.grad, theirs.out_proj.bias.grad, **F32)
    if kind == "cross":
        torch.testing.assert_close(ours.W_K.grad, theirs.k_proj_weight.grad.T, **F32)
    else:
        grad_q, grad_k, grad_v = theirs.in_proj_weight.grad.split(12)
        torch.testing.assert_close(ours.W_Q.grad, grad_q.T, **F32)
        torch.testing.assert_close(ours.W_V.grad, grad_v.T, **F32)
    torch.testing.assert_close(ours.b_Q.grad, theirs.in_proj_bias.grad[:12], **F32)


def test_multihead_attention_without_bias():
    theirs, ours = make_pair(bias=False)
    assert ours.b_Q is None and ours.b_O is None
    x = torch.randn(2, 4, 12)
    torch.testing.assert_close(ours(x)[0], theirs(x, x, x)[0], **F32)


def test_need_weights_false_uses_the_fused_path():
    theirs, ours = make_pair()
    x = torch.randn(2, 6, 12)
    mask = causal_mask(6)
    out, weights = ours(x, mask=mask, need_weights=False)
    assert weights is None
    torch.testing.assert_close(out, ours(x, mask=mask)[0], **F32)


def test_query_with_nothing_to_attend_to():
    _, ours = make_pair()
    x = torch.randn(2, 4, 12)
    mask = torch.ones(2, 1, 4, 4, dtype=torch.bool)
    mask[1, :, 2] = False  # query 2 of sequence 1 sees nothing
    for need_weights in (False, True):
        out, weights = ours(x, mask=mask, need_weights=need_weights)
        assert not out.isnan().any()
        # a zero attention output, so only the output bias remains
        torch.testing.assert_close(out[1, 2], ours.b_O, **F32)
    assert torch.equal(weights[1, :, 2], torch.zeros(3, 4))


# --- properties -----------------------------------------------------------------------------

dims = st.tuples(st.integers(1, 3), st.integers(1, 7), st.integers(0, 2**16))


@PROPERTY
@given(dims, st.booleans())
def test_mha_permutation_equivariance(d, need_weights):
    batch, pos, seed = d
    _, ours = make_pair(d_model=8, n_heads=2)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, pos, 8, generator=g)
    perm = torch.randperm(pos, generator=g)
    with torch.no_grad():
        out, _ = ours(x, need_weights=need_weights)
        out_perm, _ = ours(x[:, perm], need_weights=need_weights)
    torch.testing.assert_close(out_perm, out[:, perm], **F32)


@PROPERTY
@given(dims, st.booleans())
def test_mha_causal_outputs_ignore_future_tokens(d, need_weights):
    batch, pos, seed = d
    _, ours = make_pair(d_model=8, n_heads=2)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, pos, 8, generator=g)
    cut = seed % pos
    x2 = x.clone()
    x2[:, cut + 1 :] = torch.randn(batch, pos - cut - 1, 8, generator=g) * 3
    with torch.no_grad():
        out, _ = ours(x, mask=causal_mask(pos), need_weights=need_weights)
        out2, _ = ours(x2, mask=causal_mask(pos), need_weights=need_weights)
    torch.testing.assert_close(out[:, : cut + 1], out2[:, : cut + 1], **F32)


# --- bad input ------------------------------------------------------------------------------


def test_d_model_not_divisible_by_n_heads():
    with pytest.raises(ValueError, match=r"d_model=10 is not divisible by n_heads=4"):
        MultiHeadAttention(10, 4)
    with pytest.raises(ValueError, match=r"n_heads must be a positive int, got 0"):
        MultiHeadAttention(8, 0)


def test_mha_bad_inputs():
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match=r"query has 6 features but the layer expects 8"):
        mha(torch.randn(2, 5, 6))
    with pytest.raises(TypeError, match=r"query must be a floating-point tensor .*torch.int64"):
        mha(x.long())
    with pytest.raises(ValueError, match=r"query is an empty sequence \(pos=0\)"):
        mha(x[:, :0])
    with pytest.raises(ValueError, match=r"query must be \[batch, pos, d_model\], got \(5, 8\)"):
        mha(x[0])
    with pytest.raises(ValueError, match=r"query has batch=2 but key has batch=3"):
        mha(x, torch.randn(3, 5, 8))
    with pytest.raises(
        ValueError, match=r"key is \[batch, key_pos\]=\(2, 5\) but value is \(2, 4\)"
    ):
        mha(x, x, x[:, :4])
    with pytest.raises(
        ValueError, match=r"mask shape \(5, 4\) does not broadcast to \(2, 2, 5, 5\)"
    ):
        mha(x, mask=torch.ones(5, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match=r"mask must be bool .*got dtype torch.float32"):
        mha(x, mask=torch.ones(5, 5))


def test_from_torch_bad_input():
    with pytest.raises(TypeError, match=r"expected nn.MultiheadAttention, got Linear"):
        MultiHeadAttention.from_torch(nn.Linear(4, 4))
    with pytest.raises(ValueError, match=r"add_bias_kv and add_zero_attn are not supported"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, add_bias_kv=True))
