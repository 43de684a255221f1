"""RMSNorm: parity with torch.nn.RMSNorm (float32, atol 1e-6), the missing mean, bad inputs."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from transformer_lab.nn.norms import LayerNorm, RMSNorm, rms_norm


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
