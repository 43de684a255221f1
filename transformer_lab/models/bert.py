"""BERT: a bidirectional Transformer encoder pretrained by masked-language modelling and
next-sentence prediction (Devlin et al. 2019).

The encoder is the post-LN :class:`~transformer_lab.nn.blocks.EncoderBlock` with GELU and no
causal mask: every token may attend to every real (non-padding) token on both sides.
Its input is the sum of three learned embeddings, token ``W_E``, position ``W_pos`` and
segment ``W_seg`` (sentence A or B), followed by a layer norm.

- :class:`BertModel`: embeddings, encoder blocks and the pooler; returns a
  :class:`BertOutput` with ``last_hidden_state``, ``pooler_output``, ``hidden_states`` and
  ``attentions`` (one ``[batch, n_heads, query_pos, key_pos]`` tensor per layer).
- :class:`BertForPreTraining`: the model plus the masked-LM head (a transform, then a
  decoder tied to ``W_E``) and the next-sentence head (a classifier on the pooled
  ``[CLS]`` vector), with :meth:`BertForPreTraining.pretraining_loss`.

Hooks: ``embed`` (after the embedding layer norm) and every block's hooks under
``blocks.N`` (``blocks.0.attn.pattern`` ...).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from transformer_lab.checks import (
    IGNORE_INDEX,
    check_labels,
    finite_number,
    fraction,
    index_in,
    instance_of,
    integer,
)
from transformer_lab.hooks import Hook
from transformer_lab.nn.blocks import EncoderBlock
from transformer_lab.nn.functional import at_least_float32
from transformer_lab.nn.norms import LayerNorm

__all__ = [
    "BertConfig",
    "BertOutput",
    "BertModel",
    "BertForPreTraining",
    "PreTrainingOutput",
    "PreTrainingLoss",
    "IGNORE_INDEX",
]


@dataclass(frozen=True)
class BertConfig:
    d_vocab: int  # vocabulary size (30522 for the uncased English WordPiece vocabulary)
    d_model: int = 128  # width of the residual stream (768 in BERT-base, 384 in MiniLM-L6)
    n_heads: int = 4  # attention heads per layer; d_head = d_model // n_heads
    d_mlp: int = 512  # hidden width of the feed-forward network (4 * d_model in BERT)
    n_layers: int = 2  # encoder blocks (12 in BERT-base, 6 in MiniLM-L6)
    max_pos: int = 128  # rows of the learned position table (512 in BERT)
    n_segments: int = 2  # segment embeddings: 0 = sentence A, 1 = sentence B
    dropout: float = 0.1  # dropout on embeddings, attention weights and sublayer outputs
    eps: float = 1e-12  # layer-norm epsilon (BERT's value; PyTorch's default is 1e-5)
    pad_id: int = 0  # id of the [PAD] token
    init_std: float = 0.02  # standard deviation of the normal initialisation (as in BERT)

    def __post_init__(self):
        for name in ("d_vocab", "d_model", "n_heads", "d_mlp", "n_layers", "max_pos", "n_segments"):
            integer(getattr(self, name), name, minimum=1)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        fraction(self.dropout, "dropout", closed=False)
        finite_number(self.eps, "eps", above=0)
        index_in(self.pad_id, self.d_vocab, "pad_id", "a token id")
        finite_number(self.init_std, "init_std", above=0)

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


@dataclass
class BertOutput:
    """What :class:`BertModel` returns."""

    last_hidden_state: torch.Tensor  # [batch, pos, d_model], output of the last block
    pooler_output: torch.Tensor  # [batch, d_model], tanh(dense(h_[CLS]))
    hidden_states: tuple[torch.Tensor, ...]  # n_layers + 1 of [batch, pos, d_model]
    attentions: tuple[torch.Tensor, ...] | None  # n_layers of [batch, n_heads, pos, pos]


class BertEmbeddings(nn.Module):
    """``LN(W_E[token] + W_pos[position] + W_seg[segment])``, then dropout."""

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.W_E = nn.Embedding(cfg.d_vocab, cfg.d_model)
        self.W_pos = nn.Embedding(cfg.max_pos, cfg.d_model)
        self.W_seg = nn.Embedding(cfg.n_segments, cfg.d_model)
        self.ln = LayerNorm(cfg.d_model, cfg.eps)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, input_ids: torch.Tensor, segment_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)  # [pos]
        x = self.W_E(input_ids) + self.W_pos(positions) + self.W_seg(segment_ids)
        return self.drop(self.ln(x))  # [batch, pos, d_model]


class BertBlock(EncoderBlock):
    """The post-LN encoder block, which can also hand back its attention weights."""

    def forward(  # type: ignore[override]  # by design: also the attention weights
        self, x: torch.Tensor, mask: torch.Tensor | None = None, return_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        self._want_weights, self._weights = return_weights, None
        out = super().forward(x, mask)
        weights, self._weights = self._weights, None
        return out, weights

    def _self_attn(self, h, mask):
        out, self._weights = self.attn(h, mask=mask, need_weights=self._want_weights)
        return out


class BertModel(nn.Module):
    """The BERT encoder: embeddings, ``n_layers`` post-LN GELU blocks, and the pooler.

    ``model(input_ids, attention_mask=None, segment_ids=None)``:

    - ``input_ids`` ``[batch, pos]`` token ids;
    - ``attention_mask`` ``[batch, pos]``, 1 (or True) for real tokens and 0 for padding;
      None means every position is real. It becomes the boolean key mask
      ``[batch, 1, 1, pos]`` (True = may attend). There is no causal mask: the encoder is
      bidirectional. Padding positions still get (meaningless) outputs; ignore them.
    - ``segment_ids`` ``[batch, pos]`` 0 for sentence A, 1 for sentence B (default 0).
    """

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.config = instance_of(cfg, BertConfig, "cfg")
        self.embeddings = BertEmbeddings(cfg)
        self.blocks = nn.ModuleList(
            BertBlock(
                cfg.d_model,
                cfg.n_heads,
                cfg.d_mlp,
                dropout=cfg.dropout,
                norm_first=False,
                activation="gelu",
                eps=cfg.eps,
            )
            for _ in range(cfg.n_layers)
        )
        self.pooler = nn.Linear(cfg.d_model, cfg.d_model)
        self.embed = Hook()
        self.apply(lambda m: _init_bert(m, cfg.init_std))

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        segment_ids: torch.Tensor | None = None,
        *,
        output_attentions: bool = True,
    ) -> BertOutput:
        mask = self.key_mask(input_ids, attention_mask)  # [batch, 1, 1, pos] or None
        if segment_ids is None:
            segment_ids = torch.zeros_like(input_ids)
        else:
            self._check_segments(input_ids, segment_ids)
        x = self.embed(self.embeddings(input_ids, segment_ids))  # [batch, pos, d_model]
        hidden, attentions = [x], []
        for block in self.blocks:
            x, weights = block(x, mask, return_weights=output_attentions)
            hidden.append(x)
            attentions.append(weights)  # [batch, n_heads, pos, pos]
        pooled = torch.tanh(self.pooler(x[:, 0]))  # [batch, d_model], from the [CLS] position
        return BertOutput(
            x, pooled, tuple(hidden), tuple(attentions) if output_attentions else None
        )

    def key_mask(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None):
        """Check ``input_ids`` and turn a 1/0 ``attention_mask`` ``[batch, pos]`` into the
        boolean key mask ``[batch, 1, 1, pos]`` (True = may attend); None stays None."""
        if not isinstance(input_ids, torch.Tensor) or input_ids.dtype not in (
            torch.int64,
            torch.int32,
        ):
            got = (
                input_ids.dtype if isinstance(input_ids, torch.Tensor) else type(input_ids).__name__
            )
            raise TypeError(f"input_ids must be an int64 or int32 tensor, got {got}")
        if input_ids.dim() != 2 or input_ids.shape[1] == 0:
            raise ValueError(
                f"input_ids must be a non-empty [batch, pos] tensor, got {tuple(input_ids.shape)}"
            )
        config = self.config
        if input_ids.shape[1] > config.max_pos:
            raise ValueError(
                f"sequence of {input_ids.shape[1]} tokens is longer than max_pos={config.max_pos}"
            )
        low, high = (int(t) for t in torch.aminmax(input_ids)) if input_ids.numel() else (0, 0)
        if low < 0 or high >= config.d_vocab:
            raise ValueError(f"token ids must lie in [0, {config.d_vocab}), got [{low}, {high}]")
        if attention_mask is None:
            return None
        if not isinstance(attention_mask, torch.Tensor) or attention_mask.shape != input_ids.shape:
            shape = (
                tuple(attention_mask.shape)
                if isinstance(attention_mask, torch.Tensor)
                else attention_mask
            )
            raise ValueError(
                f"attention_mask must be [batch, pos] = {tuple(input_ids.shape)} "
                f"(1 = real token, 0 = padding), got {shape}"
            )
        if not ((attention_mask == 0) | (attention_mask == 1)).all():
            raise ValueError("attention_mask must hold 1 for real tokens and 0 for padding")
        return (attention_mask != 0)[:, None, None, :]  # [batch, 1, 1, key_pos]

    def _check_segments(self, input_ids, segment_ids):
        if not isinstance(segment_ids, torch.Tensor) or segment_ids.shape != input_ids.shape:
            raise ValueError(f"segment_ids must be [batch, pos] = {tuple(input_ids.shape)}")
        if segment_ids.min() < 0 or segment_ids.max() >= self.config.n_segments:
            raise ValueError(f"segment_ids must lie in [0, {self.config.n_segments})")


@dataclass
class PreTrainingOutput:
    """What :class:`BertForPreTraining` returns."""

    mlm_logits: torch.Tensor  # [batch, pos, d_vocab], masked-LM scores at every position
    nsp_logits: torch.Tensor  # [batch, 2], next-sentence scores: index 1 = "B follows A"
    bert: BertOutput  # the encoder's output


@dataclass
class PreTrainingLoss:
    """The pretraining loss and its parts (tensors of shape [], the loss with gradient)."""

    loss: torch.Tensor  # mlm_loss + nsp_loss
    mlm_loss: torch.Tensor  # cross-entropy over the masked positions
    nsp_loss: torch.Tensor  # cross-entropy of the is-next classifier
    mlm_accuracy: torch.Tensor  # share of masked positions whose original token is the argmax
    nsp_accuracy: torch.Tensor  # share of pairs classified correctly


class BertForPreTraining(nn.Module):
    """BERT with its two pretraining heads.

    - Masked LM: ``h -> LN(GELU(h W_T + b_T))``, then scores ``W_E^T`` (the token embedding,
      tied) plus a bias over the vocabulary.
    - Next sentence: a linear classifier on the pooled ``[CLS]`` vector; class 1 means
      "sentence B follows sentence A", class 0 "B is a random sentence".
    """

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.config = instance_of(cfg, BertConfig, "cfg")
        self.bert = BertModel(cfg)
        self.mlm_transform = nn.Linear(cfg.d_model, cfg.d_model)
        self.mlm_ln = LayerNorm(cfg.d_model, cfg.eps)
        self.mlm_bias = nn.Parameter(torch.zeros(cfg.d_vocab))
        self.nsp = nn.Linear(cfg.d_model, 2)
        for m in (self.mlm_transform, self.nsp):
            _init_bert(m, cfg.init_std)

    def mlm_scores(self, h: torch.Tensor) -> torch.Tensor:
        """Scores over the vocabulary ``[..., d_vocab]`` for hidden states ``[..., d_model]``."""
        h = self.mlm_ln(F.gelu(self.mlm_transform(h)))
        return h @ self.bert.embeddings.W_E.weight.T + self.mlm_bias  # decoder tied to W_E

    def forward(
        self, input_ids, attention_mask=None, segment_ids=None, *, output_attentions: bool = False
    ) -> PreTrainingOutput:
        out = self.bert(input_ids, attention_mask, segment_ids, output_attentions=output_attentions)
        return PreTrainingOutput(
            self.mlm_scores(out.last_hidden_state), self.nsp(out.pooler_output), out
        )

    def pretraining_loss(
        self,
        input_ids: torch.Tensor,
        labels: torch.Tensor,
        is_next: torch.Tensor | None = None,
        attention_mask=None,
        segment_ids=None,
    ) -> PreTrainingLoss:
        """Masked-LM cross-entropy over the positions whose ``labels`` are not
        ``IGNORE_INDEX`` (only those go through the vocabulary projection, as in BERT)
        plus, when ``is_next [batch]`` (1 = true next sentence) is given, the
        next-sentence cross-entropy."""
        if not isinstance(labels, torch.Tensor) or not isinstance(input_ids, torch.Tensor):
            raise TypeError(
                f"input_ids and labels must be tensors, got {type(input_ids).__name__} "
                f"and {type(labels).__name__}"
            )
        if labels.shape != input_ids.shape:
            raise ValueError(
                f"labels must be [batch, pos] = {tuple(input_ids.shape)}, got {tuple(labels.shape)}"
            )
        check_labels(labels, self.config.d_vocab, ignore_index=IGNORE_INDEX)
        if is_next is not None:
            if not isinstance(is_next, torch.Tensor) or is_next.shape != input_ids.shape[:1]:
                got = tuple(is_next.shape) if isinstance(is_next, torch.Tensor) else is_next
                raise ValueError(f"is_next must be [batch]={tuple(input_ids.shape[:1])}, got {got}")
            if is_next.is_floating_point() or not bool(((is_next == 0) | (is_next == 1)).all()):
                raise ValueError(f"is_next must hold 0 or 1, got {is_next.tolist()}")
        out = self.bert(input_ids, attention_mask, segment_ids, output_attentions=False)
        chosen = labels != IGNORE_INDEX  # [batch, pos]
        if not chosen.any():
            raise ValueError("no position is masked (every label is IGNORE_INDEX)")
        scores = self.mlm_scores(out.last_hidden_state[chosen])  # [n_masked, d_vocab]
        targets = labels[chosen]  # [n_masked]
        mlm_loss = F.cross_entropy(at_least_float32(scores), targets)  # half precision widened
        mlm_acc = (scores.argmax(-1) == targets).float().mean()
        zero = mlm_loss.new_zeros(())
        nsp_loss, nsp_acc = zero, zero
        if is_next is not None:
            nsp_logits = self.nsp(out.pooler_output)  # [batch, 2]
            nsp_loss = F.cross_entropy(at_least_float32(nsp_logits), is_next.long())
            nsp_acc = (nsp_logits.argmax(-1) == is_next.long()).float().mean()
        return PreTrainingLoss(
            mlm_loss + nsp_loss, mlm_loss, nsp_loss, mlm_acc.detach(), nsp_acc.detach()
        )


def _init_bert(m: nn.Module, std: float) -> None:
    """BERT's initialisation: weights ~ N(0, std), biases 0, layer norms gain 1 and bias 0."""
    with torch.no_grad():
        if isinstance(m, nn.Linear):
            m.weight.normal_(0.0, std)
            if m.bias is not None:
                m.bias.zero_()
        elif isinstance(m, nn.Embedding):
            m.weight.normal_(0.0, std)
        elif isinstance(m, LayerNorm):
            m.gain.fill_(1.0)
            m.bias.zero_()
        else:
            for name, p in m.named_parameters(recurse=False):
                if name.startswith("W_"):
                    p.normal_(0.0, std)
                elif name.startswith("b_"):
                    p.zero_()
