"""LayerNorm and RMSNorm: parity with torch.nn.LayerNorm and torch.nn.RMSNorm (float32,
atol 1e-5 / 1e-6), gradients included, the fused path, the missing mean, bad inputs."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from transformer_lab.nn.norms import LayerNorm, RMSNorm, rms_norm

F32 = dict(atol=1e-5, rtol=1e-5)


def assert_same_norm(ours, ref_module, x, param_pairs):
    """``ours(x)`` equals ``ref_module(x)``, and so do the gradients of a random linear
    function of the output with respect to ``x`` and to each ``(ours, ref)`` parameter."""
    x = x.clone().requires_grad_()
    x2 = x.detach().clone().requires_grad_()
    out, ref = ours(x), ref_module(x2)
    torch.testing.assert_close(out, ref, **F32)
    grad = torch.randn_like(ref)
    (out * grad).sum().backward()
    (ref * grad).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad, **F32)
    for mine, theirs in param_pairs:
        torch.testing.assert_close(mine.grad, theirs.grad, **F32)


@pytest.mark.parametrize("shape", [(5,), (2, 7, 5), (3, 1, 4, 5)])
def test_equals_torch_rmsnorm(shape):
    torch.manual_seed(0)
    ref = nn.RMSNorm(5, eps=1e-5)
    with torch.no_grad():
        ref.weight.copy_(torch.randn(5))
    x = torch.randn(*shape) * 3
    ours = RMSNorm.from_torch(ref)
    torch.testing.assert_close(ours(x), ref(x), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(rms_norm(x, ref.weight, 1e-5), ref(x), atol=1e-6, rtol=1e-6)


def test_from_torch_default_eps_is_machine_epsilon():
    ref = nn.RMSNorm(4)  # eps=None
    ours = RMSNorm.from_torch(ref)
    assert ours.eps == torch.finfo(torch.float32).eps
    x = torch.randn(3, 4) * 1e-3
    torch.testing.assert_close(ours(x), ref(x))


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 16), st.floats(-5, 5))
def test_unit_root_mean_square_and_the_mean_is_kept(d_model, shift):
    torch.manual_seed(d_model)
    x = torch.randn(4, d_model) + shift
    y = RMSNorm(d_model, eps=1e-8)(x)
    torch.testing.assert_close(y.pow(2).mean(-1), torch.ones(4), atol=1e-4, rtol=0)
    # unlike layer norm, the mean survives: same sign as the input's mean
    assert torch.equal(torch.sign(y.mean(-1)), torch.sign(x.mean(-1)))


def test_equals_layer_norm_on_zero_mean_input():
    torch.manual_seed(0)
    x = torch.randn(3, 8)
    x = x - x.mean(-1, keepdim=True)
    torch.testing.assert_close(RMSNorm(8)(x), LayerNorm(8)(x), atol=1e-5, rtol=1e-5)


def test_scale_invariance():
    x = torch.randn(2, 6)
    norm = RMSNorm(6, eps=1e-12)
    torch.testing.assert_close(norm(7.0 * x), norm(x))


@pytest.mark.parametrize(
    "thunk, error, fragment",
    [
        (
            lambda: rms_norm(torch.ones(3, 4, dtype=torch.long), torch.ones(4)),
            TypeError,
            "floating",
        ),
        (
            lambda: rms_norm(torch.ones(3, 4), torch.ones(5)),
            ValueError,
            "4 features but gain has 5",
        ),
        (lambda: rms_norm(torch.ones(3, 4), torch.ones(4), eps=0), ValueError, "eps"),
        (lambda: RMSNorm(0), ValueError, "d_model"),
        (lambda: RMSNorm(4, eps="1"), TypeError, "eps"),
        (lambda: RMSNorm.from_torch(nn.LayerNorm(4)), TypeError, "nn.RMSNorm"),
    ],
)
def test_bad_inputs(thunk, error, fragment):
    with pytest.raises(error, match=fragment):
        thunk()


@pytest.mark.parametrize("shape", [(1, 1, 8), (2, 5, 16), (3, 7, 5), (4, 9)], ids=str)
def test_layer_norm_matches_torch(shape):
    torch.manual_seed(0)
    theirs = nn.LayerNorm(shape[-1])
    with torch.no_grad():
        theirs.weight.normal_()
        theirs.bias.normal_()
    ours = LayerNorm.from_torch(theirs)
    x = torch.randn(shape) * 3 + 1
    assert_same_norm(ours, theirs, x, [(ours.gain, theirs.weight), (ours.bias, theirs.bias)])


@pytest.mark.parametrize("shape", [(2, 5, 16), (4, 9)], ids=str)
def test_fused_layer_norm_equals_the_written_out_one(shape):
    torch.manual_seed(1)
    written = LayerNorm(shape[-1], eps=1e-3)
    with torch.no_grad():
        written.gain.normal_()
        written.bias.normal_()
    fused = LayerNorm(shape[-1], eps=1e-3, fused=True)
    fused.load_state_dict(written.state_dict())
    assert_same_norm(fused, written, torch.randn(shape) * 2 - 1, [(fused.gain, written.gain)])
    with pytest.raises(ValueError, match="d_model"):
        fused(torch.randn(2, shape[-1] + 1))


def test_layer_norm_is_a_z_score_then_gain_and_bias():
    ln = LayerNorm(6, eps=1e-12)  # eps must be positive: 0 gives NaN on a constant row
    x = torch.randn(4, 6) * 5 + 2
    z = ln(x)
    torch.testing.assert_close(z.mean(-1), torch.zeros(4), atol=1e-5, rtol=0)
    torch.testing.assert_close(z.std(-1, unbiased=False), torch.ones(4), atol=1e-5, rtol=0)
    with torch.no_grad():
        ln.gain.fill_(3.0)
        ln.bias.fill_(-1.0)
    torch.testing.assert_close(ln(x), 3.0 * z - 1.0, **F32)


def test_layer_norm_eps_matches_torch():
    theirs = nn.LayerNorm(4, eps=0.5)
    x = torch.randn(3, 4) * 0.1
    torch.testing.assert_close(LayerNorm.from_torch(theirs)(x), theirs(x), **F32)


def test_layer_norm_bad_input():
    with pytest.raises(ValueError, match=r"LayerNorm expects d_model=8, got shape \(2, 6\)"):
        LayerNorm(8)(torch.randn(2, 6))
    with pytest.raises(ValueError, match=r"d_model must be a positive int, got 0"):
        LayerNorm(0)
    with pytest.raises(ValueError, match=r"only 1-d normalized_shape is supported, got \(2, 3\)"):
        LayerNorm.from_torch(nn.LayerNorm([2, 3]))
