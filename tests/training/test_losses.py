"""The training losses: label smoothing in the sequence-to-sequence loss, computed in
float32 with padding ignored, equal to its definition written out."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from transformer_lab.data.numbers import Batch
from transformer_lab.training.losses import seq2seq_loss

PAD = 0


class Fixed(torch.nn.Module):
    """A 'model' returning the same logits for any input."""

    def __init__(self, logits):
        super().__init__()
        self.logits = logits

    def forward(self, src, tgt_in):
        return self.logits


def batch_and_logits(dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    tgt = torch.tensor([[1, 5, 6, 2, PAD], [1, 4, 2, PAD, PAD]])
    logits = torch.randn(2, 4, 7, generator=g).to(dtype)
    return Batch(torch.ones(2, 3, dtype=torch.long), tgt, torch.arange(2)), logits


def smoothed_by_hand(logits, targets, eps):
    """(1 - eps) * -log p(reference) + eps * mean over the vocabulary of -log p(word), averaged
    over the positions that are not padding."""
    log_p = torch.log_softmax(logits.double(), dim=-1)
    nll = -log_p.gather(-1, targets.clamp(min=0)[..., None])[..., 0]
    uniform = -log_p.mean(-1)
    real = targets != PAD
    return ((1 - eps) * nll + eps * uniform)[real].mean()


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.5])
def test_label_smoothing_equals_its_definition_and_ignores_padding(eps):
    batch, logits = batch_and_logits()
    loss = seq2seq_loss(Fixed(logits), batch, label_smoothing=eps)
    want = smoothed_by_hand(logits, batch.tgt_out, eps)
    torch.testing.assert_close(loss.double(), want, atol=1e-6, rtol=1e-6)
    changed = logits.clone()
    changed[1, 2:] = 100.0  # logits at padded target positions count for nothing
    torch.testing.assert_close(seq2seq_loss(Fixed(changed), batch, label_smoothing=eps), loss)


def test_no_smoothing_is_the_plain_cross_entropy_and_smoothing_has_a_floor():
    batch, logits = batch_and_logits()
    plain = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD)
    torch.testing.assert_close(seq2seq_loss(Fixed(logits), batch), plain)
    sure = torch.full((2, 4, 7), -20.0).scatter(-1, batch.tgt_out.clamp(min=0)[..., None], 20.0)
    assert seq2seq_loss(Fixed(sure), batch) < 1e-6  # certainty is what plain CE wants
    assert seq2seq_loss(Fixed(sure), batch, label_smoothing=0.1) > 1.0  # smoothing punishes it


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_label_smoothing_of_half_precision_logits_is_taken_in_float32(dtype):
    batch, logits = batch_and_logits(dtype)
    loss = seq2seq_loss(Fixed(logits), batch, label_smoothing=0.1)
    assert loss.dtype == torch.float32
    want = smoothed_by_hand(logits.float(), batch.tgt_out, 0.1)
    torch.testing.assert_close(loss.double(), want, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("eps", [1.0, -0.1, "0.1", True, None])
def test_label_smoothing_must_be_a_fraction_below_one(eps):
    batch, logits = batch_and_logits()
    with pytest.raises(ValueError, match=r"label_smoothing must be in \[0, 1\)"):
        seq2seq_loss(Fixed(logits), batch, label_smoothing=eps)
