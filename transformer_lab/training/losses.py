"""Losses the training loop minimises: next-token cross-entropy for decoders and seq2seq.

Both take the cross-entropy of half-precision logits in float32: a log-sum-exp over
thousands of logits kept in bfloat16 (8 significant bits) or float16 (11) rounds the loss
and its gradient more than training can afford. The loss of half-precision logits is a
float32 scalar.

:func:`seq2seq_loss` can smooth its labels (Szegedy et al., 2016; the 2017 Transformer
used 0.1): with ``label_smoothing=eps`` the target of each token is ``1 - eps`` on the
reference word and ``eps`` spread evenly over the whole vocabulary, so the model is
rewarded for keeping some probability on the other words instead of pushing the reference
towards 1. Padding positions still count for nothing."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from transformer_lab.checks import check_labels, fraction
from transformer_lab.nn.functional import at_least_float32

__all__ = ["seq2seq_loss", "lm_loss"]


def seq2seq_loss(model: nn.Module, batch, label_smoothing: float = 0.0) -> torch.Tensor:
    """Teacher-forced cross-entropy of a sequence-to-sequence model.

    ``model(batch.src, batch.tgt_in)`` must return logits ``[batch, tgt_pos, d_vocab]``;
    the loss is the mean over target tokens that are not padding (``batch.pad_id``).
    ``label_smoothing`` in [0, 1) mixes the one-hot target with the uniform distribution
    over the vocabulary: ``(1 - eps) * CE(reference) + eps * mean over words of CE(word)``.
    In ``train``, pass ``loss_fn=functools.partial(seq2seq_loss, label_smoothing=0.1)``.
    """
    label_smoothing = fraction(label_smoothing, "label_smoothing", closed=False)
    for attr in ("src", "tgt_in", "tgt_out", "pad_id"):
        if not hasattr(batch, attr):
            raise TypeError(
                f"batch must have src, tgt_in, tgt_out and pad_id (a numbers.Batch), "
                f"got {type(batch).__name__} without {attr}"
            )
    logits = model(batch.src, batch.tgt_in)  # [batch, tgt_pos, d_vocab]
    if logits.shape[:2] != batch.tgt_out.shape:
        raise ValueError(
            f"model returned logits of shape {tuple(logits.shape)} for targets of shape "
            f"{tuple(batch.tgt_out.shape)}; expected [batch, tgt_pos, d_vocab]"
        )
    check_labels(batch.tgt_out, logits.shape[-1], ignore_index=batch.pad_id)
    return F.cross_entropy(
        at_least_float32(logits).flatten(0, 1),
        batch.tgt_out.flatten(),
        ignore_index=batch.pad_id,
        label_smoothing=label_smoothing,
    )


def lm_loss(model: nn.Module, batch) -> torch.Tensor:
    """Mean next-token cross-entropy (nats per token) of ``model`` on ``batch = (x, y)``,
    where ``y`` is ``x`` shifted one position to the left."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise TypeError(
            f"batch must be a pair (x, y) of token-id tensors, got {type(batch).__name__}"
        )
    x, y = batch
    logits = model(x)  # [batch, pos, d_vocab]
    if not isinstance(y, torch.Tensor) or logits.shape[:-1] != y.shape:
        got = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
        raise ValueError(
            f"targets y must have the shape of x {tuple(logits.shape[:-1])}, got {got}"
        )
    check_labels(y, logits.shape[-1])
    return F.cross_entropy(at_least_float32(logits).flatten(0, 1), y.flatten())
