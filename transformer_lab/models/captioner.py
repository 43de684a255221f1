"""A small image captioner, with and without attention over the image (chapter 3).

A convolutional encoder turns a picture ``[batch, 3, H, W]`` into a grid of feature
vectors, one per cell of its last feature map, plus a learned position vector per cell::

    cells = encoder(images)                         # [batch, cells, d_model]

A GRU decoder writes the caption word by word, starting from a state made from the mean
of the cells. With attention (``attention=True``), at every step t its state ``s_t`` scores
every cell with a score module of :mod:`transformer_lab.nn.attention` (``score="dot"``,
``"multiplicative"`` or ``"additive"``), as the seq2seq decoder of
:mod:`transformer_lab.models.rnn` scores source words (Xu et al. 2015, "Show, Attend and
Tell")::

    alpha_t = softmax([score(s_t, c_1), ..., score(s_t, c_n)])  # weights  [batch, cells]
    a_t = sum_j alpha_t,j c_j                                   # context  [batch, d_model]
    logits_t = W_U tanh(W_c [a_t; s_t])                         # next     [batch, d_vocab]

Without attention the context is the mean of the cells at every step, ``a_t = mean_j c_j``
(uniform weights, the zero-query limit of attention): the decoder sees the picture only
through one pooled vector, the bottleneck of chapter 2 in images. The read-out, the
batched scores and the greedy loop are the seq2seq decoder's (``models.rnn``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from transformer_lab.checks import floating_tensor, index_in, instance_of, integer
from transformer_lab.models.rnn import RecurrentDecoder
from transformer_lab.nn.attention import attention_weights
from transformer_lab.nn.scores import attend

__all__ = ["CaptionerConfig", "ConvEncoder", "Captioner", "caption_accuracy"]


@dataclass(frozen=True)
class CaptionerConfig:
    d_vocab: int  # caption vocabulary size, special tokens included
    d_model: int = 64  # size of the cells' feature vectors and of the decoder state
    d_embed: int = 32  # size of the word embeddings
    channels: int = 32  # channels of the first convolution (the second has twice as many)
    canvas: int = 24  # pictures are canvas x canvas pixels
    patch: int = 8  # the first convolution reads patch x patch pixels with stride patch
    attention: bool = True  # False: the decoder reads the mean of the cells (bottleneck)
    score: str = "dot"  # how a decoder state scores a cell: "dot", "multiplicative", "additive"
    pad_id: int = 0  # padding id of the captions
    bos_id: int = 1  # the decoder's first input
    eos_id: int = 2  # greedy captioning stops after this word
    max_len: int = 12  # longest caption of greedy captioning

    def __post_init__(self):
        for name in ("d_vocab", "d_model", "d_embed", "channels", "canvas", "patch", "max_len"):
            integer(getattr(self, name), name, minimum=1)
        if self.canvas % self.patch:
            raise ValueError(f"canvas={self.canvas} is not a multiple of patch={self.patch}")
        instance_of(self.attention, bool, "attention")
        if self.score not in ("dot", "multiplicative", "additive"):
            raise ValueError(
                f"score must be 'dot', 'multiplicative' or 'additive', got {self.score!r}"
            )
        for name in ("pad_id", "bos_id", "eos_id"):
            index_in(getattr(self, name), self.d_vocab, name, "a word of the vocabulary")

    @property
    def side(self) -> int:
        """Cells per side of the feature map."""
        return self.canvas // self.patch


class ConvEncoder(nn.Module):
    """Pictures ``[batch, 3, canvas, canvas]`` -> cells ``[batch, side**2, d_model]``:
    a ``patch`` x ``patch`` convolution with stride ``patch`` (one output per patch of the
    picture, ``side = canvas / patch`` per side) and ReLU, then two 1x1 convolutions (to
    ``2 * channels`` with ReLU, and to ``d_model``), and a learned position vector ``W_pos``
    added to each cell."""

    def __init__(self, cfg: CaptionerConfig):
        super().__init__()
        self.config = instance_of(cfg, CaptionerConfig, "cfg")
        c = cfg.channels
        self.convs = nn.Sequential(
            nn.Conv2d(3, c, cfg.patch, stride=cfg.patch),
            nn.ReLU(),
            nn.Conv2d(c, 2 * c, 1),
            nn.ReLU(),
            nn.Conv2d(2 * c, cfg.d_model, 1),
        )
        self.W_pos = nn.Parameter(torch.randn(cfg.side**2, cfg.d_model))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        expected = (3, self.config.canvas, self.config.canvas)
        floating_tensor(images, "images")
        if images.dim() != 4 or tuple(images.shape[1:]) != expected or images.shape[0] == 0:
            raise ValueError(
                f"images must be [batch, {', '.join(map(str, expected))}], "
                f"got {tuple(images.shape)}"
            )
        maps = self.convs(images)  # [batch, d_model, side, side]
        return maps.flatten(2).transpose(1, 2) + self.W_pos  # [batch, cells, d_model]


class Captioner(RecurrentDecoder):
    """Encoder and decoder; ``model(images, tgt_in)`` returns logits ``[batch, tgt_pos,
    d_vocab]`` under teacher forcing (``tgt_in`` starts with ``<bos>``)."""

    config: CaptionerConfig

    def __init__(self, cfg: CaptionerConfig):
        super().__init__()
        self.config = instance_of(cfg, CaptionerConfig, "cfg")
        self.encoder = ConvEncoder(cfg)
        self.W_E = nn.Embedding(cfg.d_vocab, cfg.d_embed, padding_idx=cfg.pad_id)
        self.W_init = nn.Linear(cfg.d_model, cfg.d_model)  # mean of the cells -> s_0
        self.decoder = nn.GRU(cfg.d_embed, cfg.d_model, batch_first=True)
        score = cfg.score if cfg.attention else None
        self._init_read_out(score, cfg.d_model, cfg.d_vocab)  # score, W_c, W_U

    def _check_cells(self, cells) -> None:
        expected = (self.config.side**2, self.config.d_model)
        if not isinstance(cells, torch.Tensor) or cells.dim() != 3 or cells.shape[1:] != expected:
            got = tuple(cells.shape) if isinstance(cells, torch.Tensor) else type(cells).__name__
            raise ValueError(f"cells must be [batch, {expected[0]}, {expected[1]}], got {got}")
        floating_tensor(cells, "cells")

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """The cells ``[batch, cells, d_model]``: keys and values of the attention."""
        return self.encoder(images)

    def start(self, cells: torch.Tensor) -> torch.Tensor:
        """The decoder's first state ``[1, batch, d_model]``, from the mean of the cells."""
        self._check_cells(cells)
        return torch.tanh(self.W_init(cells.mean(dim=1))).unsqueeze(0)

    def decode_step(self, prev: torch.Tensor, state: torch.Tensor, cells: torch.Tensor):
        """One step: previous words ``prev [batch]``, GRU ``state [1, batch, d_model]``,
        ``cells`` -> ``(logits [batch, d_vocab], new state, weights [batch, cells])``;
        without attention the weights are uniform (the mean of the cells)."""
        self._check_cells(cells)
        if torch.is_tensor(prev) and prev.dim() != 1:
            raise ValueError(f"prev must be [batch], one word per caption, got {tuple(prev.shape)}")
        self._check_ids(
            prev[:, None] if torch.is_tensor(prev) else prev, "prev", self.config.d_vocab
        )
        want = (1, cells.shape[0], self.config.d_model)
        if floating_tensor(state, "state").shape != want or prev.shape[0] != want[1]:
            raise ValueError(
                f"prev must be [batch] and state {list(want)} for cells of batch {want[1]}, got "
                f"{tuple(prev.shape)} and {tuple(state.shape)}"
            )
        out, state = self.decoder(self.W_E(prev).unsqueeze(1), state)
        s = out[:, 0]  # [batch, d_model]
        if self.config.attention:
            assert self.score is not None  # made with attention
            context, weights = attend(self.score, s, cells)  # [batch, d_model], [batch, cells]
        else:
            weights = torch.full(cells.shape[:2], 1.0 / cells.shape[1], device=cells.device)
            context = cells.mean(dim=1)
        return self._combine(s, context), state, weights

    def decode(self, cells: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher forcing from given cells: logits ``[batch, tgt_pos, d_vocab]``."""
        self._check_cells(cells)
        self._check_ids(tgt_in, "tgt_in", self.config.d_vocab, "words")
        if tgt_in.shape[0] != cells.shape[0]:
            raise ValueError(f"cells have batch {cells.shape[0]} but tgt_in {tgt_in.shape[0]}")
        s, _ = self.decoder(self.W_E(tgt_in), self.start(cells))  # [batch, tgt_pos, d_model]
        if self.config.attention:  # all steps at once: [batch, tgt_pos, cells]
            weights = attention_weights(self.all_scores(s, cells))
            context = weights @ cells  # [batch, tgt_pos, d_model]
        else:
            context = cells.mean(dim=1, keepdim=True).expand_as(s)
        return self._combine(s, context)

    def forward(self, images: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(images), tgt_in)

    @torch.no_grad()
    def greedy_caption(self, images: torch.Tensor, max_len: int | None = None):
        """Greedy captioning: ``(ids [batch, out_pos], weights [batch, out_pos, cells])``;
        each row of ids ends with ``<eos>`` (when produced in time) then padding, and its
        weights are zeros after ``<eos>``. Reshape a row of weights to ``[side, side]`` to
        lay it over the picture."""
        max_len = self.config.max_len if max_len is None else integer(max_len, "max_len", minimum=1)
        cells = self.encode(images)
        return self._greedy(self.start(cells), cells, cells.shape[0], cells.device, max_len)


def caption_accuracy(predicted: torch.Tensor, reference: torch.Tensor, pad_id: int = 0):
    """``(exact, word)``: the fraction of captions right word for word up to ``<eos>``, and
    of reference words (``<eos>`` included, padding not) matched at their position.

    ``predicted [batch, out_pos]`` as from :meth:`Captioner.greedy_caption` (no ``<bos>``),
    ``reference [batch, ref_pos]`` the target without ``<bos>`` (``batch.tgt_out``)."""
    for name, t in (("predicted", predicted), ("reference", reference)):
        if not isinstance(t, torch.Tensor) or t.dtype not in (torch.int64, torch.int32):
            raise TypeError(
                f"{name} must be a tensor of word ids, got "
                f"{t.dtype if isinstance(t, torch.Tensor) else type(t).__name__}"
            )
        if t.dim() != 2 or t.shape[0] == 0:
            raise ValueError(
                f"{name} must be a non-empty [batch, pos] tensor, got {tuple(t.shape)}"
            )
    integer(pad_id, "pad_id", minimum=0)
    if predicted.shape[0] != reference.shape[0]:
        raise ValueError(
            f"predicted has {predicted.shape[0]} captions, reference {reference.shape[0]}"
        )
    width = max(predicted.shape[1], reference.shape[1])
    pred = torch.nn.functional.pad(predicted, (0, width - predicted.shape[1]), value=pad_id)
    ref = torch.nn.functional.pad(reference, (0, width - reference.shape[1]), value=pad_id)
    real = ref != pad_id
    if not bool(real.any()):
        raise ValueError(f"reference holds only padding (pad_id={pad_id}): no word to score")
    same = (pred == ref) | ~real
    exact = same.all(dim=1).float().mean().item()
    word = ((pred == ref) & real).sum().item() / real.sum().item()
    return exact, word
