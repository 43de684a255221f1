"""Tests of transformer_lab.nn.functional."""

from __future__ import annotations

import torch

from transformer_lab.nn.functional import affine

F32 = dict(atol=1e-5, rtol=1e-5)


def test_affine_is_x_times_w_plus_b():
    torch.manual_seed(2)
    x, W, b = torch.randn(3, 4, 5), torch.randn(5, 7), torch.randn(7)
    torch.testing.assert_close(affine(x, W, b), x @ W + b, **F32)
    torch.testing.assert_close(affine(x, W), x @ W, **F32)
