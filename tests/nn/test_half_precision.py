"""Every piece of ``transformer_lab.nn`` in bfloat16 and float16 against float32, forward
and backward: with the weights cast (``.to(dtype)``) and under CPU autocast.

Error measure: for each output and each gradient, the largest absolute difference to
float32 divided by the largest float32 magnitude of that tensor. The float32 reference of
cast weights runs on the same numbers, the weights and inputs rounded to the low dtype,
so that the error is the arithmetic's; under autocast it is the plain float32 model. A
gradient that is zero in exact arithmetic (the key bias: softmax ignores a shift of a
row's scores) has only rounding left and no relative error; such tensors (below 1e-5 of
the largest gradient) are checked for finiteness only.

Tolerances per dtype (``TOL``): float16 keeps 11 significant bits, bfloat16 8, so a few
roundings of 2^-11 and 2^-8 fit with a margin:

- float16: 1e-2;  bfloat16: 5e-2.

Inputs include magnitudes where float16 arithmetic overflows: rows of size 300 and more
(squares above 65504) in the norms, and attention scores above 65504.
"""

from __future__ import annotations

import copy
from contextlib import nullcontext

import pytest
import torch
import torch.nn.functional as F

from transformer_lab.nn.attention import (
    attention_weights,
    grouped_query_attention,
    scaled_dot_product_attention,
)
from transformer_lab.nn.blocks import DecoderBlock, EncoderBlock
from transformer_lab.nn.feed_forward import FeedForward, SwiGLU
from transformer_lab.nn.masks import causal_mask
from transformer_lab.nn.multi_head import MultiHeadAttention
from transformer_lab.nn.norms import LayerNorm, RMSNorm, rms_norm
from transformer_lab.nn.positions import (
    LearnedPositions,
    SinusoidalPositions,
    apply_rotary,
    rotary_cos_sin,
)
from transformer_lab.nn.scores import AdditiveScore, DotScore, MultiplicativeScore, attend

TOL = {torch.float16: 1e-2, torch.bfloat16: 5e-2}
MODES = [
    pytest.param(torch.float16, "cast", id="float16"),
    pytest.param(torch.bfloat16, "cast", id="bfloat16"),
    pytest.param(torch.float16, "autocast", id="autocast-float16"),
    pytest.param(torch.bfloat16, "autocast", id="autocast-bfloat16"),
]


def _as_list(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for t in out if isinstance(t, torch.Tensor)]


def rounded(module, inputs, dtype):
    """``module`` and ``inputs`` rounded to ``dtype`` and back to float32: the float32
    reference for cast weights, so that only the arithmetic differs, not the numbers."""
    module = copy.deepcopy(module).to(dtype).float() if module is not None else None
    return module, [x.to(dtype).float() if _floating(x) else x for x in inputs]


def _floating(x) -> bool:
    return isinstance(x, torch.Tensor) and x.is_floating_point()


def run(fn, module, inputs, dtype=torch.float32, mode="cast"):
    """``fn(module, *inputs)`` forward and backward in ``dtype`` (cast or autocast).

    Returns the outputs and the gradients (of the floating inputs, then of the
    parameters), all as float32, and the outputs' own dtypes. The backward pass starts
    from a fixed random weighting of every output, summed in float32."""
    module = copy.deepcopy(module) if module is not None else None
    cast = mode == "cast" and dtype is not torch.float32
    if cast and module is not None:
        module.to(dtype)
    leaves = []
    for x in inputs:
        if _floating(x):
            x = x.detach().to(dtype if cast else x.dtype).requires_grad_()
        leaves.append(x)
    context = torch.autocast("cpu", dtype=dtype) if mode == "autocast" else nullcontext()
    with context:
        outs = _as_list(fn(module, *leaves))
    g = torch.Generator().manual_seed(1)
    loss = sum((o.float() * torch.randn(o.shape, generator=g)).sum() for o in outs)
    loss.backward()
    params = list(module.parameters()) if module is not None else []
    wrt = [x for x in leaves if isinstance(x, torch.Tensor) and x.requires_grad] + params
    grads = [torch.zeros(w.shape) if w.grad is None else w.grad.float() for w in wrt]
    return [o.detach().float() for o in outs], grads, [o.dtype for o in outs]


def rel_errors(got: list[torch.Tensor], want: list[torch.Tensor]) -> list[float]:
    """Largest difference over the largest magnitude, per tensor. A tensor below 1e-5 of
    the group's largest is zero but for rounding (see the top) and is left out."""
    top = max(w.abs().max().item() for w in want)
    return [
        (g - w).abs().max().item() / w.abs().max().item()
        for g, w in zip(got, want, strict=True)
        if w.abs().max().item() > 1e-5 * top
    ]


def assert_matches_float32(fn, module, inputs, dtype, mode, out_dtype_is_input=True):
    """Outputs and gradients of ``dtype`` within ``TOL[dtype]`` of float32, all finite;
    with cast weights, the outputs come back in ``dtype``."""
    reference = rounded(module, inputs, dtype) if mode == "cast" else (module, inputs)
    want_out, want_grad, _ = run(fn, *reference)
    got_out, got_grad, dtypes = run(fn, module, inputs, dtype, mode)
    for t in got_out + got_grad:
        assert torch.isfinite(t).all(), "non-finite output or gradient"
    if mode == "cast" and out_dtype_is_input:
        assert all(d == dtype for d in dtypes), dtypes
    err_out, err_grad = rel_errors(got_out, want_out), rel_errors(got_grad, want_grad)
    assert max(err_out) <= TOL[dtype], f"outputs differ by {max(err_out):.3g}"
    assert max(err_grad) <= TOL[dtype], f"gradients differ by {max(err_grad):.3g}"
    return max(err_out + err_grad)


def randn(*shape, scale=1.0, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * scale


# ---- regression cases ---------------------------------------------------------------------


def test_rms_norm_of_large_features_is_not_zero_in_float16():
    x = torch.full((1, 4), 300.0).half()  # 300^2 = 90000 > 65504
    out = rms_norm(x, torch.ones(4).half())
    assert out.dtype == torch.float16
    torch.testing.assert_close(out, torch.ones(1, 4, dtype=torch.float16))
    torch.testing.assert_close(out, F.rms_norm(x, (4,), torch.ones(4).half()))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_layer_norm_written_out_equals_fused_on_large_inputs(dtype):
    ln = LayerNorm(8).to(dtype)
    x = randn(3, 8, scale=1000.0).to(dtype)  # squares of the centred values pass 65504
    written = ln(x)
    ln.fused = True
    assert written.dtype == dtype and torch.isfinite(written).all()
    torch.testing.assert_close(written.float(), ln(x).float(), atol=TOL[dtype], rtol=0)


@pytest.mark.parametrize("need_weights", [True, False])
def test_attention_scores_past_float16_max_stay_finite(need_weights):
    """Scaled scores of about 1.3e5, twice float16's largest number."""
    q = torch.full((1, 1, 3, 4), 200.0)
    k = torch.full((1, 1, 3, 4), 200.0) * torch.tensor([1.0, 0.9, 0.8])[:, None]
    v = randn(1, 1, 3, 4)
    want = F.scaled_dot_product_attention(q, k, v)
    out, w = scaled_dot_product_attention(q.half(), k.half(), v.half(), need_weights=need_weights)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.float(), want, atol=TOL[torch.float16], rtol=0)
    if need_weights:
        assert w.dtype == torch.float16 and torch.isfinite(w).all()
        torch.testing.assert_close(w.float().sum(-1), torch.ones(1, 1, 3))


def test_attention_weights_of_large_half_scores_match_float32():
    scores = randn(2, 5, 7, scale=1e4)  # finite in float16, far beyond exp's range
    mask = causal_mask(5, 7)
    want = attention_weights(scores, mask)
    for dtype in TOL:
        got = attention_weights(scores.to(dtype), mask)
        assert got.dtype == dtype
        torch.testing.assert_close(got.float(), want, atol=TOL[dtype], rtol=0)


def test_autocast_does_not_lower_the_explicit_scores():
    """Under float16 autocast a plain matmul would give scores of inf (then NaN)."""
    q, k, v = (torch.full((1, 1, 2, 4), 200.0) for _ in range(3))
    with torch.autocast("cpu", dtype=torch.float16):
        assert torch.isinf(q @ k.transpose(-2, -1)).all()  # what autocast alone does
        out, w = scaled_dot_product_attention(q, k, v)
    assert torch.isfinite(out).all() and torch.isfinite(w).all()
    torch.testing.assert_close(out.float(), v)


# ---- every component against float32 ------------------------------------------------------


@pytest.mark.parametrize("dtype, mode", MODES)
@pytest.mark.parametrize("scale", [1.0, 1000.0], ids=["unit", "large"])
@pytest.mark.parametrize("kind", ["layer_norm", "layer_norm_fused", "rms_norm"])
def test_norms(kind, scale, dtype, mode):
    norm = RMSNorm(16) if kind == "rms_norm" else LayerNorm(16, fused=kind.endswith("fused"))
    with torch.no_grad():
        norm.gain.copy_(1 + randn(16, scale=0.1, seed=2))
        if kind != "rms_norm":
            norm.bias.copy_(randn(16, scale=0.1, seed=3))
    x = randn(2, 5, 16, scale=scale) + scale  # an offset as large as the spread
    assert_matches_float32(lambda m, x: m(x), norm, [x], dtype, mode)


# large scores (queries 30x) in cast mode only: autocast rounds the float32 queries to the
# low dtype inside the fused kernel, and a softmax of scores near 100 magnifies that
# rounding of its input, not an error of the arithmetic
SCALED_MODES = [pytest.param(*p.values, 1.0, id=f"unit-{p.id}") for p in MODES] + [
    pytest.param(*p.values, 30.0, id=f"large-{p.id}") for p in MODES[:2]
]


@pytest.mark.parametrize("dtype, mode, scale", SCALED_MODES)
@pytest.mark.parametrize("need_weights", [True, False])
def test_scaled_dot_product_attention(need_weights, dtype, mode, scale):
    q, k, v = randn(2, 3, 5, 8, scale=scale), randn(2, 3, 6, 8, seed=1), randn(2, 3, 6, 8, seed=2)
    mask = causal_mask(5, 6).clone()
    mask[0] = False  # a row with nothing to attend to: zeros

    def fn(_, q, k, v):
        return scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights)

    assert_matches_float32(fn, None, [q, k, v], dtype, mode, out_dtype_is_input=False)


@pytest.mark.parametrize("dtype, mode", MODES)
@pytest.mark.parametrize("need_weights", [True, False])
def test_grouped_query_attention(need_weights, dtype, mode):
    q, k, v = randn(2, 4, 5, 8, scale=10.0), randn(2, 2, 5, 8, seed=1), randn(2, 2, 5, 8, seed=2)

    def fn(_, q, k, v):
        return grouped_query_attention(q, k, v, causal_mask(5), need_weights=need_weights)

    assert_matches_float32(fn, None, [q, k, v], dtype, mode, out_dtype_is_input=False)


@pytest.mark.parametrize("dtype, mode", MODES)
@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
def test_multi_head_attention(cross, dtype, mode):
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4)
    x, memory = randn(2, 5, 16), randn(2, 7, 16, seed=1)
    if cross:
        assert_matches_float32(lambda m, x, y: m(x, y, y), mha, [x, memory], dtype, mode)
    else:
        assert_matches_float32(lambda m, x: m(x, mask=causal_mask(5)), mha, [x], dtype, mode)


@pytest.mark.parametrize("dtype, mode", MODES)
def test_multi_head_attention_with_kv_cache(dtype, mode):
    """Step-by-step decoding with a cache in half precision against float32 uncached."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4)
    x = randn(1, 6, 16)

    def stepwise(m, x):
        from transformer_lab.nn.kv_cache import KVCache

        cache = KVCache(1)
        outs = [m(x[:, :3], mask=causal_mask(3), need_weights=False, cache=cache)[0]]
        outs += [m(x[:, i : i + 1], need_weights=False, cache=cache)[0] for i in range(3, 6)]
        return torch.cat(outs, dim=1)

    want = mha(x, mask=causal_mask(6))[0]
    torch.testing.assert_close(run(stepwise, mha, [x])[0][0], want.detach())
    assert_matches_float32(stepwise, mha, [x], dtype, mode)


@pytest.mark.parametrize("dtype, mode", MODES)
@pytest.mark.parametrize("kind", ["relu", "gelu", "gelu_tanh", "swiglu"])
def test_feed_forward(kind, dtype, mode):
    torch.manual_seed(0)
    ff = SwiGLU(16, 40, init_std=0.3) if kind == "swiglu" else FeedForward(16, 40, kind)
    assert_matches_float32(lambda m, x: m(x), ff, [randn(2, 5, 16)], dtype, mode)


@pytest.mark.parametrize("dtype, mode", MODES)
@pytest.mark.parametrize("kind", ["sinusoidal", "learned", "rotary"])
def test_positions(kind, dtype, mode):
    torch.manual_seed(0)
    x = randn(2, 3, 7, 8) if kind == "rotary" else randn(2, 7, 8)
    if kind == "rotary":
        cos, sin = rotary_cos_sin(torch.arange(3, 10), 8)
        assert_matches_float32(lambda _, x: apply_rotary(x, cos, sin), None, [x], dtype, mode)
    else:
        module = SinusoidalPositions(16, 8) if kind == "sinusoidal" else LearnedPositions(16, 8)
        assert_matches_float32(lambda m, x: m(x, offset=3), module, [x], dtype, mode)


@pytest.mark.parametrize("dtype, mode", MODES)
@pytest.mark.parametrize("kind", ["post_ln", "pre_ln", "decoder"])
def test_blocks(kind, dtype, mode):
    torch.manual_seed(0)
    if kind == "decoder":
        block = DecoderBlock(16, 4, 32, activation="gelu")
        src = randn(2, 6, 16, seed=1)
        fn = lambda m, x, s: m(x, s, self_mask=causal_mask(5))  # noqa: E731
        assert_matches_float32(fn, block, [randn(2, 5, 16), src], dtype, mode)
    else:
        # a pre-LN block normalises first, so its residual stream may be large; a post-LN
        # block reads the previous block's layer norm, of unit size. GELU, not ReLU: a
        # pre-activation within rounding of 0 would flip ReLU's derivative between 0 and 1
        block = EncoderBlock(16, 4, 32, norm_first=kind == "pre_ln", activation="gelu")
        x = randn(2, 5, 16, scale=50.0 if kind == "pre_ln" else 1.0)
        fn = lambda m, x: m(x, causal_mask(5))  # noqa: E731
        assert_matches_float32(fn, block, [x], dtype, mode)


@pytest.mark.parametrize("dtype, mode", MODES)
@pytest.mark.parametrize("kind", ["dot", "multiplicative", "additive"])
def test_scores_and_attend(kind, dtype, mode):
    torch.manual_seed(0)
    score = {"dot": DotScore, "multiplicative": MultiplicativeScore, "additive": AdditiveScore}
    module = score[kind]() if kind == "dot" else score[kind](8, 8)
    mask = torch.tensor([[True] * 6, [True] * 3 + [False] * 3])
    fn = lambda m, q, keys: attend(m, q, keys, mask=mask)  # noqa: E731
    assert_matches_float32(fn, module, [randn(2, 8), randn(2, 6, 8, seed=1)], dtype, mode)
