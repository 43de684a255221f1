"""Scaled dot-product attention against ``F.scaled_dot_product_attention``, its
properties, its errors, and the seq2seq score functions.

Tolerances: float32 on the CPU, ``atol=1e-5, rtol=1e-5`` for outputs and gradients
(the two implementations sum in different orders); float64, ``atol=1e-10``.
"""

from __future__ import annotations

import math
import re

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_lab.nn.attention import (
    attention_weights,
    broadcast_shape,
    empty_rows,
    scaled_dot_product_attention,
)
from transformer_lab.nn.masks import causal_mask
from transformer_lab.nn.scores import (
    AdditiveScore,
    DotScore,
    MultiplicativeScore,
    attend,
    make_score,
)

F32 = dict(atol=1e-5, rtol=1e-5)
F64 = dict(atol=1e-10, rtol=1e-10)
PROPERTY = settings(max_examples=25, deadline=None, database=None)

# (batch dims, query_pos, key_pos, d_head, d_value): batch 1, a single token, odd lengths
SHAPES = [
    ((1,), 1, 1, 4, 4),
    ((1, 1), 1, 7, 8, 8),
    ((2, 3), 5, 5, 8, 8),
    ((3, 2), 7, 9, 5, 3),
    ((2,), 13, 1, 16, 16),
    ((), 3, 11, 7, 2),
]


def qkv(batch, query_pos, key_pos, d_head, d_value, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, query_pos, d_head, generator=g, dtype=dtype)
    k = torch.randn(*batch, key_pos, d_head, generator=g, dtype=dtype)
    v = torch.randn(*batch, key_pos, d_value, generator=g, dtype=dtype)
    return q, k, v


def random_mask(batch, query_pos, key_pos, seed=0, empty_rows=False):
    """A random bool mask [*batch, query_pos, key_pos]; every row has a True unless
    ``empty_rows`` (then row 0 is all False)."""
    g = torch.Generator().manual_seed(seed + 1)
    mask = torch.rand(*batch, query_pos, key_pos, generator=g) < 0.6
    mask[..., torch.randint(key_pos, (1,), generator=g).item()] = True
    if empty_rows:
        mask[..., 0, :] = False
    return mask


def masks_for(batch, query_pos, key_pos):
    """Masks of several broadcast shapes for a given problem, all with no empty row."""
    out = {
        "none": None,
        "random": random_mask(batch, query_pos, key_pos),
        "shared [q, k]": random_mask((), query_pos, key_pos, seed=3),
        "keys only [k]": torch.arange(key_pos) < max(1, key_pos - 2),
    }
    if key_pos >= query_pos:
        out["causal"] = causal_mask(query_pos, key_pos)
    return out


# --- parity with F.scaled_dot_product_attention ------------------------------------------


@pytest.mark.parametrize("need_weights", [True, False], ids=["explicit", "fused"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_matches_torch_sdpa_outputs_and_gradients(shape, need_weights):
    for name, mask in masks_for(*shape[:3]).items():
        q, k, v = (t.requires_grad_() for t in qkv(*shape))
        q2, k2, v2 = (t.detach().clone().requires_grad_() for t in (q, k, v))
        out, weights = scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights)
        # torch's kernel wants a mask of at least [query_pos, key_pos]; ours broadcasts any
        torch_mask = None if mask is None else mask.expand(*mask.shape[:-2], shape[1], shape[2])
        ref = F.scaled_dot_product_attention(q2, k2, v2, attn_mask=torch_mask)
        torch.testing.assert_close(out, ref, **F32, msg=lambda m, n=name: f"{n}: {m}")
        assert (weights is None) == (not need_weights)
        grad_out = torch.randn_like(ref)
        (out * grad_out).sum().backward()
        (ref * grad_out).sum().backward()
        for ours, theirs in ((q, q2), (k, k2), (v, v2)):
            torch.testing.assert_close(ours.grad, theirs.grad, **F32)


@pytest.mark.parametrize("need_weights", [True, False], ids=["explicit", "fused"])
def test_matches_torch_sdpa_float64(need_weights):
    q, k, v = qkv((2, 3), 6, 9, 8, 8, dtype=torch.float64)
    mask = random_mask((2, 3), 6, 9)
    out, _ = scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), **F64)


def test_weights_are_the_softmax_of_scaled_scores():
    q, k, v = qkv((2,), 4, 6, 8, 5)
    out, weights = scaled_dot_product_attention(q, k, v)
    scores = torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(8)
    expected = scores.exp() / scores.exp().sum(-1, keepdim=True)
    torch.testing.assert_close(weights, expected, **F32)
    torch.testing.assert_close(out, expected @ v, **F32)


@pytest.mark.parametrize("need_weights", [True, False])
def test_custom_scale(need_weights):
    q, k, v = qkv((2,), 4, 6, 8, 8)
    out, _ = scaled_dot_product_attention(q, k, v, scale=0.3, need_weights=need_weights)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, scale=0.3), **F32)


def test_dropout_zeroes_and_rescales_weights():
    torch.manual_seed(0)
    q, k, v = qkv((4,), 8, 8, 4, 4)
    _, clean = scaled_dot_product_attention(q, k, v)
    _, dropped = scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    kept = dropped != 0
    assert 0 < kept.float().mean() < 1
    torch.testing.assert_close(dropped[kept], clean[kept] * 2.0, **F32)


# --- rows with nothing to attend to --------------------------------------------------------


@pytest.mark.parametrize("need_weights", [True, False], ids=["explicit", "fused"])
def test_fully_masked_rows_give_zeros_and_finite_gradients(need_weights):
    q, k, v = (t.requires_grad_() for t in qkv((2, 2), 5, 6, 4, 4))
    mask = random_mask((2, 2), 5, 6, empty_rows=True)
    out, weights = scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights)
    assert torch.equal(out[..., 0, :], torch.zeros_like(out[..., 0, :]))
    assert not out.isnan().any()
    if need_weights:
        assert torch.equal(weights[..., 0, :], torch.zeros_like(weights[..., 0, :]))
    out.sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    # an empty row contributes nothing, so its query gets no gradient
    assert torch.equal(q.grad[..., 0, :], torch.zeros_like(q.grad[..., 0, :]))
    # the other rows are exactly what torch computes for them
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(out[..., 1:, :], ref[..., 1:, :], **F32)


def test_attention_weights_with_all_masked_row():
    scores = torch.randn(3, 4)
    mask = torch.tensor([[True, False, True, True], [False] * 4, [True] * 4])
    weights = attention_weights(scores, mask)
    assert torch.equal(weights[1], torch.zeros(4))
    assert weights[0, 1] == 0
    torch.testing.assert_close(weights[2], torch.softmax(scores[2], -1))


def test_empty_rows_follows_in_place_edits_of_a_remembered_mask():
    q, k, v = qkv((2,), 4, 4, 4, 4)
    mask = causal_mask(4)
    assert empty_rows(mask) is None  # remembered: every row has a key
    assert empty_rows(mask) is None
    mask[2] = False  # an in-place edit bumps the version counter
    assert empty_rows(mask)[:, 0].tolist() == [False, False, True, False]
    for need_weights in (True, False):
        out, _ = scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights)
        assert torch.equal(out[:, 2], torch.zeros(2, 4))
    view = causal_mask(4)[None]  # a view shares its base's version counter
    assert empty_rows(view) is None
    view[0, 0] = False
    assert empty_rows(view)[0, :, 0].tolist() == [True, False, False, False]


def test_empty_rows_with_inference_tensors():
    with torch.inference_mode():
        mask = causal_mask(3)
        assert empty_rows(mask) is None
        mask[1] = False
        assert empty_rows(mask)[:, 0].tolist() == [False, True, False]


def test_empty_rows_follows_edits_that_bypass_the_version_counter():
    q, k, v = qkv((2,), 4, 4, 4, 4)
    mask = causal_mask(4)
    for need_weights in (True, False):  # used once with every row full
        scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights)
    mask.data[1] = False  # .data edits do not bump the version counter
    arr = torch.ones(4, 4, dtype=torch.bool).numpy()
    shared = torch.from_numpy(arr)
    scaled_dot_product_attention(q, k, v, shared)
    arr[3] = False  # an edit through NumPy neither
    for m, row in ((mask, 1), (shared, 3)):
        assert empty_rows(m)[row, 0]
        for need_weights in (True, False):
            out, w = scaled_dot_product_attention(q, k, v, m, need_weights=need_weights)
            assert not out.isnan().any()
            assert torch.equal(out[:, row], torch.zeros(2, 4))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_explicit_path_does_not_overflow_in_half_precision(dtype):
    # raw products q.k reach 102400 (> 65504, the float16 maximum); scaled by 1/8 they fit.
    # Keys of well-separated sizes keep the answer independent of half-precision rounding.
    g = torch.Generator().manual_seed(0)
    q = torch.full((2, 3, 5, 64), 40.0).to(dtype)
    sizes = (40.0 - 5.0 * torch.randperm(6, generator=g)).to(dtype)  # [key_pos]
    k = sizes[:, None].expand(2, 3, 6, 64)
    v = torch.randn(2, 3, 6, 8, generator=g).to(dtype)
    mask = causal_mask(5, 6).clone()
    mask[0] = False  # a fully masked row stays zeros
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask)
    ref[..., 0, :] = 0.0
    tol = dict(atol=5e-2, rtol=5e-2) if dtype is torch.bfloat16 else dict(atol=1e-2, rtol=1e-2)
    for need_weights in (True, False):
        out, _ = scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights)
        assert out.dtype == dtype and torch.isfinite(out).all()
        assert torch.equal(out[..., 0, :], torch.zeros_like(out[..., 0, :]))
        torch.testing.assert_close(out.float(), ref, **tol)
    fused = F.scaled_dot_product_attention(q, k, v, attn_mask=mask | ~mask.any(-1, True))
    torch.testing.assert_close(out[..., 1:, :], fused[..., 1:, :], **tol)


@pytest.mark.parametrize(
    "kwargs, error, fragment",
    [
        (dict(scale=0.0), ValueError, "scale must be a positive finite number"),
        (dict(scale=float("nan")), ValueError, "scale must be a positive finite number"),
        (dict(scale="big"), TypeError, "scale must be a number"),
        (dict(dropout_p=1.5), ValueError, "dropout_p must be in [0, 1)"),
        (dict(dropout_p=-0.1), ValueError, "dropout_p must be in [0, 1)"),
    ],
)
def test_attention_parameters_are_checked(kwargs, error, fragment):
    q, k, v = qkv((1,), 2, 2, 4, 4)
    with pytest.raises(error, match=re.escape(fragment)):
        scaled_dot_product_attention(q, k, v, **kwargs)


# --- properties (hypothesis) ----------------------------------------------------------------

dims = st.tuples(
    st.integers(1, 3),  # batch
    st.integers(1, 6),  # query_pos
    st.integers(1, 6),  # key_pos
    st.integers(1, 8),  # d_head
    st.integers(0, 2**16),  # seed
)


@PROPERTY
@given(dims, st.booleans())
def test_rows_sum_to_one_or_zero(d, need_empty):
    batch, query_pos, key_pos, d_head, seed = d
    q, k, v = (t.requires_grad_() for t in qkv((batch,), query_pos, key_pos, d_head, d_head, seed))
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(batch, query_pos, key_pos, generator=g) < 0.5
    if need_empty:
        mask[:, 0] = False
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    has_key = mask.any(-1)
    sums = weights.sum(-1)
    torch.testing.assert_close(sums[has_key], torch.ones_like(sums[has_key]), **F32)
    assert torch.equal(sums[~has_key], torch.zeros_like(sums[~has_key]))
    assert (weights[~mask] == 0).all()
    # fully masked rows: zero output, no NaN, finite gradients (explicit and fused paths)
    fused, _ = scaled_dot_product_attention(q, k, v, mask, need_weights=False)
    for o in (out, fused):
        assert not o.isnan().any()
        assert (o[~has_key] == 0).all()
    (out.sum() + fused.sum()).backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))


@PROPERTY
@given(dims, st.booleans())
def test_causal_outputs_ignore_future_tokens(d, need_weights):
    batch, pos, _, d_head, seed = d
    q, k, v = qkv((batch,), pos, pos, d_head, d_head, seed=seed)
    cut = seed % pos  # tokens after `cut` change
    k2, v2 = k.clone(), v.clone()
    k2[:, cut + 1 :] = torch.randn_like(k2[:, cut + 1 :]) * 5
    v2[:, cut + 1 :] = torch.randn_like(v2[:, cut + 1 :]) * 5
    mask = causal_mask(pos)
    out, _ = scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights)
    out2, _ = scaled_dot_product_attention(q, k2, v2, mask, need_weights=need_weights)
    torch.testing.assert_close(out[:, : cut + 1], out2[:, : cut + 1], **F32)


@PROPERTY
@given(dims, st.booleans())
def test_permutation_equivariance(d, need_weights):
    batch, query_pos, key_pos, d_head, seed = d
    q, k, v = qkv((batch,), query_pos, key_pos, d_head, d_head, seed=seed)
    g = torch.Generator().manual_seed(seed)
    perm_q = torch.randperm(query_pos, generator=g)
    perm_k = torch.randperm(key_pos, generator=g)
    out, _ = scaled_dot_product_attention(q, k, v, need_weights=need_weights)
    # permuting queries permutes outputs; permuting key-value pairs together changes nothing
    out2, _ = scaled_dot_product_attention(
        q[:, perm_q], k[:, perm_k], v[:, perm_k], need_weights=need_weights
    )
    torch.testing.assert_close(out2, out[:, perm_q], **F32)


# --- bad input ------------------------------------------------------------------------------


def test_mismatched_d_head():
    q, k, v = qkv((2,), 3, 4, 8, 8)
    with pytest.raises(ValueError, match=r"key has d_head=6 but query has d_head=8"):
        scaled_dot_product_attention(q, k[..., :6], v)


def test_mismatched_key_and_value_lengths():
    q, k, v = qkv((2,), 3, 4, 8, 8)
    with pytest.raises(ValueError, match=r"key has key_pos=4 but value has key_pos=3"):
        scaled_dot_product_attention(q, k, v[:, :3])


def test_batch_dimensions_that_do_not_broadcast():
    q, _, _ = qkv((2,), 3, 4, 8, 8)
    _, k, v = qkv((3,), 3, 4, 8, 8)
    with pytest.raises(ValueError, match=r"batch dimensions do not broadcast: query \(2,\)"):
        scaled_dot_product_attention(q, k, v)


@pytest.mark.parametrize("need_weights", [True, False])
def test_mask_that_does_not_broadcast(need_weights):
    q, k, v = qkv((2, 8), 5, 5, 4, 4)
    mask = torch.ones(4, 7, dtype=torch.bool)
    with pytest.raises(
        ValueError, match=r"mask shape \(4, 7\) does not broadcast to \(2, 8, 5, 5\)"
    ):
        scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.uint8])
def test_non_bool_mask(dtype):
    q, k, v = qkv((2,), 3, 3, 4, 4)
    mask = torch.ones(3, 3, dtype=dtype)
    with pytest.raises(TypeError, match=rf"mask must be bool .*got dtype {dtype}"):
        scaled_dot_product_attention(q, k, v, mask)


@pytest.mark.parametrize(("query_pos", "key_pos"), [(0, 3), (3, 0)])
def test_empty_sequences(query_pos, key_pos):
    q, k, v = qkv((2,), query_pos, key_pos, 4, 4)
    with pytest.raises(
        ValueError, match=rf"empty sequence: query_pos={query_pos}, key_pos={key_pos}"
    ):
        scaled_dot_product_attention(q, k, v)


def test_integer_query():
    q, k, v = qkv((2,), 3, 3, 4, 4)
    with pytest.raises(
        TypeError, match=r"query must be a floating-point tensor, got dtype torch.int64"
    ):
        scaled_dot_product_attention(q.long(), k, v)


def test_mixed_dtypes():
    q, k, v = qkv((2,), 3, 3, 4, 4)
    with pytest.raises(TypeError, match=r"dtypes differ: torch.float32, torch.float64"):
        scaled_dot_product_attention(q, k.double(), v)


def test_not_a_tensor_and_too_few_dims():
    q, k, v = qkv((2,), 3, 3, 4, 4)
    with pytest.raises(TypeError, match=r"value must be a torch.Tensor, got list"):
        scaled_dot_product_attention(q, k, v.tolist())
    with pytest.raises(
        ValueError, match=r"query must be \[\.\.\., pos, d_head\], got shape \(4,\)"
    ):
        scaled_dot_product_attention(q[0, 0], k, v)


def test_broadcast_shape():
    assert broadcast_shape((2, 1, 5), (3, 1), ()) == (2, 3, 5)
    assert broadcast_shape((2,), (3,)) is None
    assert broadcast_shape() == ()


# --- seq2seq scores and attend --------------------------------------------------------------


def test_dot_score():
    query, keys = torch.randn(2, 5), torch.randn(2, 7, 5)
    expected = torch.stack([keys[b] @ query[b] for b in range(2)])
    torch.testing.assert_close(DotScore()(query, keys), expected, **F32)
    with pytest.raises(ValueError, match=r"query has 4, keys have 5"):
        DotScore()(torch.randn(2, 4), keys)


def test_multiplicative_score():
    score = MultiplicativeScore(4, 6)
    query, keys = torch.randn(2, 4), torch.randn(2, 3, 6)
    expected = torch.stack(
        [torch.stack([query[b] @ score.W @ keys[b, j] for j in range(3)]) for b in range(2)]
    )
    torch.testing.assert_close(score(query, keys), expected, **F32)


def test_additive_score():
    score = AdditiveScore(4, 6, d_attn=5)
    query, keys = torch.randn(2, 4), torch.randn(2, 3, 6)
    W_1, W_2, b_2, v = score.W_1.weight, score.W_2.weight, score.W_2.bias, score.v.weight[0]
    expected = torch.stack(
        [
            torch.stack([v @ torch.tanh(W_1 @ query[b] + W_2 @ keys[b, j] + b_2) for j in range(3)])
            for b in range(2)
        ]
    )
    torch.testing.assert_close(score(query, keys), expected, **F32)


def test_make_score():
    assert isinstance(make_score("dot", 4, 4), DotScore)
    assert isinstance(make_score("multiplicative", 4, 6), MultiplicativeScore)
    assert isinstance(make_score("additive", 4, 6), AdditiveScore)
    with pytest.raises(
        ValueError, match=r"one of \['additive', 'dot', 'multiplicative'\], got 'cosine'"
    ):
        make_score("cosine", 4, 4)


@pytest.mark.parametrize("kind", ["dot", "multiplicative", "additive"])
def test_attend(kind):
    torch.manual_seed(0)
    score = make_score(kind, 6, 6)
    query, keys, values = torch.randn(3, 6), torch.randn(3, 5, 6), torch.randn(3, 5, 2)
    mask = torch.tensor([[True] * 5, [True, True, False, False, False], [False] * 5])
    context, weights = attend(score, query, keys, values, mask)
    assert context.shape == (3, 2) and weights.shape == (3, 5)
    torch.testing.assert_close(weights[:2].sum(-1), torch.ones(2), **F32)
    assert (weights[1, 2:] == 0).all()
    assert torch.equal(context[2], torch.zeros(2))  # no real source token
    expected = torch.softmax(score(query, keys)[1, :2], -1) @ values[1, :2]
    torch.testing.assert_close(context[1], expected, **F32)
    # values default to the keys
    torch.testing.assert_close(attend(score, query, keys)[0], attend(score, query, keys, keys)[0])
    with pytest.raises(ValueError, match=r"mask shape \(3, 4\) does not broadcast to \(3, 5\)"):
        attend(score, query, keys, values, mask[:, :4])


def test_sync_free_empty_row_handling_equals_the_cpu_shortcut(monkeypatch):
    # off the CPU the empty rows are always handled instead of asking the device first;
    # forced here on the CPU, both branches must give the same numbers
    import transformer_lab.nn.attention as attention_module

    q, k, v = qkv((2, 3), 5, 6, 4, 4)
    masks = [random_mask((2, 3), 5, 6), random_mask((2, 3), 5, 6, empty_rows=True)]
    masks += [causal_mask(5, 6), torch.tensor([True, False, True, True, False, True])]
    want = [
        scaled_dot_product_attention(q, k, v, m, need_weights=nw)[0]
        for m in masks
        for nw in (True, False)
    ]
    monkeypatch.setattr(
        attention_module, "_empty_rows", lambda mask: ~mask.any(dim=-1, keepdim=True)
    )
    got = [
        scaled_dot_product_attention(q, k, v, m, need_weights=nw)[0]
        for m in masks
        for nw in (True, False)
    ]
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, **F32)
