"""A sequence classifier: a BERT encoder, a pooling of its positions, and a linear head."""

from __future__ import annotations

import torch
from torch import nn

from transformer_lab.checks import finite_number, fraction, instance_of, integer, one_of
from transformer_lab.models.bert import BertModel
from transformer_lab.nn.pooling import mean_pool

__all__ = ["SequenceClassifier"]

POOLINGS = ("cls", "mean")


class SequenceClassifier(nn.Module):
    """An encoder with a classification head: pool, dropout, linear."""

    def __init__(
        self, encoder: BertModel, n_classes: int, pooling: str = "cls", dropout: float = 0.1
    ):
        super().__init__()
        instance_of(encoder, BertModel, "encoder")
        if integer(n_classes, "n_classes", minimum=2) >= 2**31:
            raise ValueError(f"n_classes must be < 2**31, got {n_classes}")
        one_of(pooling, POOLINGS, "pooling")
        dropout = fraction(dropout, "dropout", closed=False)
        self.encoder, self.n_classes, self.pooling = encoder, n_classes, pooling
        self.drop = nn.Dropout(dropout)
        self.classifier = nn.Linear(encoder.config.d_model, n_classes)
        with torch.no_grad():  # BERT's initialisation for the new layer
            self.classifier.weight.normal_(0.0, encoder.config.init_std)
            self.classifier.bias.zero_()

    def features(self, input_ids, attention_mask=None, segment_ids=None) -> torch.Tensor:
        """The pooled vector ``[batch, d_model]`` that the head classifies."""
        out = self.encoder(input_ids, attention_mask, segment_ids, output_attentions=False)
        if self.pooling == "cls":
            return out.pooler_output  # tanh(W_p h_[CLS] + b_p)
        return mean_pool(out.last_hidden_state, attention_mask)

    def forward(self, input_ids, attention_mask=None, segment_ids=None) -> torch.Tensor:
        pooled = self.features(input_ids, attention_mask, segment_ids)  # [batch, d_model]
        return self.classifier(self.drop(pooled))  # [batch, n_classes]

    def freeze_encoder(self) -> SequenceClassifier:
        """Stop every encoder parameter from learning (a probe trains the head only)."""
        self.encoder.requires_grad_(False)
        return self

    def parameter_groups(self, lr: float, encoder_lr: float | None = None) -> list[dict]:
        """Optimizer groups: the head at ``lr``, the encoder at ``encoder_lr`` (default
        ``lr``); frozen parameters are left out."""
        encoder_lr = lr if encoder_lr is None else encoder_lr
        lr = finite_number(lr, "lr", above=0)
        encoder_lr = finite_number(encoder_lr, "encoder_lr", above=0)
        head = [p for p in self.classifier.parameters() if p.requires_grad]
        body = [p for p in self.encoder.parameters() if p.requires_grad]
        groups = [{"params": head, "lr": lr, "name": "head"}]
        if body:
            groups.append({"params": body, "lr": encoder_lr, "name": "encoder"})
        return groups
