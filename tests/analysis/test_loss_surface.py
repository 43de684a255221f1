"""The loss along a filter-normalised random line: directions of the weights' row sizes,
biases left alone, the loss of the moved weights, and the weights put back."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from transformer_lab.analysis.loss_surface import loss_slice, random_direction


def _model():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    with torch.no_grad():
        model[0].weight[2] *= 10  # one row ten times larger than the others
    return model


def test_each_row_of_the_direction_has_the_norm_of_its_weights_row():
    model = _model()
    direction = random_direction(model, torch.Generator().manual_seed(1))
    assert [d.shape for d in direction] == [p.shape for p in model.parameters()]
    for p, d in zip(model.parameters(), direction, strict=True):
        if p.dim() < 2:
            assert not d.any()  # biases stay
        else:
            torch.testing.assert_close(d.norm(dim=-1), p.detach().norm(dim=-1))
            cos = torch.nn.functional.cosine_similarity(d, p.detach(), dim=-1)
            assert cos.abs().max() < 0.99  # random, not the weights themselves
    again = random_direction(model, torch.Generator().manual_seed(1))
    assert all(torch.equal(a, b) for a, b in zip(direction, again, strict=True))


def test_the_slice_is_the_loss_of_the_moved_weights_and_the_weights_come_back():
    model = _model()
    x, y = torch.randn(16, 4, generator=torch.Generator().manual_seed(2)), torch.arange(16) % 3
    before = [p.detach().clone() for p in model.parameters()]
    direction = random_direction(model, torch.Generator().manual_seed(3))

    def loss(m):
        return nn.functional.cross_entropy(m(x), y)

    losses = loss_slice(model, loss, direction, [-1.0, 0.0, 0.5])
    assert losses[1] == pytest.approx(loss(model).item())
    moved = _model()
    with torch.no_grad():
        for p, d in zip(moved.parameters(), direction, strict=True):
            p.add_(0.5 * d)
    assert losses[2] == pytest.approx(loss(moved).item(), rel=1e-6)
    assert all(torch.equal(p, b) for p, b in zip(model.parameters(), before, strict=True))


def test_the_weights_come_back_when_the_loss_raises():
    model = _model()
    before = [p.detach().clone() for p in model.parameters()]
    direction = random_direction(model, torch.Generator().manual_seed(4))

    def failing(m):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        loss_slice(model, failing, direction, [1.0])
    assert all(torch.equal(p, b) for p, b in zip(model.parameters(), before, strict=True))
