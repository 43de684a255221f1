"""Toy sequence tasks and the tiny encoder-only model that solves them.

The Transformer chapters test one component at a time on tasks small enough to train in a
second or two on a CPU:

* :func:`previous_token`: at every position, name the token one place to the left. The
  answer depends on *order*, so a model without positions cannot learn it.
* :func:`neighbours`: name both the previous and the next token (two answers per
  position). Two heads can split the work, one looking left and one looking right.

Each task returns ``(x, y)``: token ids ``x [batch, pos]`` and targets
``y [batch, pos, n_answers]`` with :data:`IGNORE` where a position has no answer (the first
token has no left neighbour). :class:`TinyTransformer` maps ids to logits
``[batch, pos, n_answers, d_vocab]``; :func:`train_toy` fits it on fresh random batches
with the book's training loop.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .blocks import EncoderBlock
from .hooks import Hook
from .layers import LayerNorm
from .masks import causal_mask
from .positional import LearnedPositions, SinusoidalPositions
from .train import TrainResult, check_labels, num_threads, train

__all__ = [
    "IGNORE",
    "TASKS",
    "previous_token",
    "neighbours",
    "ToyConfig",
    "TinyTransformer",
    "toy_batches",
    "toy_loss",
    "train_toy",
    "accuracy",
]

IGNORE = -100  # target of a position without an answer (F.cross_entropy's ignore_index)


def _ids(batch: int, n: int, d_vocab: int, generator: torch.Generator | None) -> torch.Tensor:
    for name, value in (("batch", batch), ("n", n), ("d_vocab", d_vocab)):
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if n < 2:
        raise ValueError(f"sequences need at least 2 tokens to have neighbours, got n={n}")
    return torch.randint(d_vocab, (batch, n), generator=generator)  # [batch, pos]


def previous_token(batch: int, n: int, d_vocab: int, generator=None):
    """Random ids ``x [batch, pos]`` and ``y [batch, pos, 1]`` with ``y[:, i] = x[:, i-1]``
    (``IGNORE`` at position 0)."""
    x = _ids(batch, n, d_vocab, generator)
    y = torch.full_like(x, IGNORE)
    y[:, 1:] = x[:, :-1]
    return x, y[..., None]  # [batch, pos], [batch, pos, 1]


def neighbours(batch: int, n: int, d_vocab: int, generator=None):
    """Random ids ``x [batch, pos]`` and ``y [batch, pos, 2]``: ``y[..., 0]`` the previous
    token and ``y[..., 1]`` the next one (``IGNORE`` where there is none)."""
    x = _ids(batch, n, d_vocab, generator)
    y = torch.full((batch, n, 2), IGNORE, dtype=torch.long)
    y[:, 1:, 0] = x[:, :-1]
    y[:, :-1, 1] = x[:, 1:]
    return x, y  # [batch, pos], [batch, pos, 2]


TASKS: dict[str, tuple[Callable, int]] = {  # name -> (batch maker, answers per position)
    "previous_token": (previous_token, 1),
    "neighbours": (neighbours, 2),
}


@dataclass(frozen=True)
class ToyConfig:
    d_vocab: int = 16  # number of distinct tokens
    n_answers: int = 1  # answers per position (1 for previous_token, 2 for neighbours)
    d_model: int = 32  # width of the residual stream
    n_heads: int = 2  # attention heads per block
    d_mlp: int = 64  # hidden width of the feed-forward network
    n_layers: int = 1  # encoder blocks
    max_pos: int = 64  # positions the position table covers
    positional: str | None = "sinusoidal"  # "sinusoidal", "learned" or None (no positions)
    norm_first: bool = True  # pre-LN blocks (and a final layer norm) when True
    causal: bool = False  # mask the future (a decoder-only model) when True

    def __post_init__(self):
        for name in ("d_vocab", "n_answers", "d_model", "n_heads", "d_mlp", "max_pos"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(self.n_layers, int) or self.n_layers < 0:
            raise ValueError(f"n_layers must be a non-negative int, got {self.n_layers!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if self.positional not in ("sinusoidal", "learned", None):
            raise ValueError(
                f"positional must be 'sinusoidal', 'learned' or None, got {self.positional!r}"
            )


class TinyTransformer(nn.Module):
    """Token embedding (scaled by ``sqrt(d_model)``), optional positions, a stack of
    :class:`~transformer_lab.blocks.EncoderBlock` and a linear read-out per position.

    ``model(x)`` maps ids ``[batch, pos]`` to logits ``[batch, pos, n_answers, d_vocab]``.
    Hooks: ``embed`` (tokens plus positions, the start of the residual stream), then every
    block's under ``blocks.N`` (``blocks.0.attn_out``, ``blocks.0.resid_post``, ...).
    """

    def __init__(self, cfg: ToyConfig):
        super().__init__()
        if not isinstance(cfg, ToyConfig):
            raise TypeError(f"cfg must be a ToyConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        self.W_E = nn.Embedding(cfg.d_vocab, cfg.d_model)
        nn.init.normal_(self.W_E.weight, std=cfg.d_model**-0.5)
        if cfg.positional == "sinusoidal":
            self.pos = SinusoidalPositions(cfg.max_pos, cfg.d_model)
        elif cfg.positional == "learned":  # drawn at the scale of the scaled token embeddings
            self.pos = LearnedPositions(cfg.max_pos, cfg.d_model, init_std=1.0)
        else:
            self.pos = None
        self.blocks = nn.ModuleList(
            EncoderBlock(cfg.d_model, cfg.n_heads, cfg.d_mlp, norm_first=cfg.norm_first)
            for _ in range(cfg.n_layers)
        )
        self.ln_final = LayerNorm(cfg.d_model) if cfg.norm_first else None
        self.W_U = nn.Linear(cfg.d_model, cfg.n_answers * cfg.d_vocab)
        self.embed = Hook()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.dtype not in (torch.int64, torch.int32):
            got = getattr(x, "dtype", type(x).__name__)
            raise TypeError(f"x must be a tensor of integer token ids, got {got}")
        if x.dim() != 2 or x.shape[1] == 0:
            raise ValueError(f"x must be [batch, pos] integer ids, got shape {tuple(x.shape)}")
        low, high = (int(t) for t in torch.aminmax(x))
        if low < 0 or high >= self.cfg.d_vocab:
            raise ValueError(
                f"x must be in [0, {self.cfg.d_vocab}), got values from {low} to {high}"
            )
        h = self.W_E(x) * math.sqrt(self.cfg.d_model)  # [batch, pos, d_model]
        if self.pos is not None:
            h = self.pos(h)
        h = self.embed(h)
        mask = causal_mask(x.shape[1], device=x.device) if self.cfg.causal else None
        for block in self.blocks:
            h = block(h, mask)  # [batch, pos, d_model]
        if self.ln_final is not None:
            h = self.ln_final(h)
        logits = self.W_U(h)  # [batch, pos, n_answers * d_vocab]
        return logits.unflatten(-1, (self.cfg.n_answers, self.cfg.d_vocab))


def _check_toy_model(model) -> None:
    if not isinstance(model, nn.Module) or not hasattr(model, "cfg"):
        raise TypeError(
            f"model must be a TinyTransformer (an nn.Module with a cfg), got {type(model).__name__}"
        )


def _lengths(lengths: int | Sequence[int]) -> list[int]:
    out = [lengths] if isinstance(lengths, int) else list(lengths)
    if not out or any(not isinstance(n, int) or n < 2 for n in out):
        raise ValueError(f"lengths must be ints >= 2, got {lengths!r}")
    return out


def _task(task: str | Callable) -> Callable:
    if callable(task):
        return task
    if task not in TASKS:
        raise ValueError(f"task must be one of {sorted(TASKS)} or a function, got {task!r}")
    return TASKS[task][0]


def toy_batches(
    task: str | Callable,
    d_vocab: int,
    *,
    batch_size: int = 64,
    lengths: int | Sequence[int] = 12,
    seed: int = 0,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """An endless stream of fresh ``(x, y)`` batches of ``task``, each with a length drawn
    from ``lengths`` (an int or a list), all from one generator seeded by ``seed``."""
    make, lengths = _task(task), _lengths(lengths)
    generator = torch.Generator().manual_seed(seed)
    while True:
        n = lengths[int(torch.randint(len(lengths), (1,), generator=generator))]
        yield make(batch_size, n, d_vocab, generator)


def toy_loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Mean cross-entropy over every answered position of a batch ``(x, y)``."""
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise TypeError(f"batch must be a pair (x, y), got {type(batch).__name__}")
    x, y = batch
    logits = model(x)  # [batch, pos, n_answers, d_vocab]
    if not isinstance(y, torch.Tensor) or y.shape != logits.shape[:-1]:
        got = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
        raise ValueError(
            f"targets y must be [batch, pos, n_answers]={tuple(logits.shape[:-1])}, got {got}"
        )
    check_labels(y, logits.shape[-1], ignore_index=IGNORE)
    return F.cross_entropy(logits.flatten(0, 2), y.flatten(), ignore_index=IGNORE)


def train_toy(
    model: nn.Module,
    task: str | Callable = "previous_token",
    *,
    steps: int = 200,
    batch_size: int = 64,
    lengths: int | Sequence[int] = 12,
    lr: float = 3e-3,
    seed: int = 0,
    **train_kwargs,
) -> TrainResult:
    """Fit ``model`` with :func:`transformer_lab.train.train` (Adam) on ``steps`` fresh
    batches of ``task``. On the CPU it runs on one thread: these models are so small that
    splitting each operation across threads costs more than it saves (see
    :func:`transformer_lab.train.num_threads`). Other keyword arguments go to ``train``
    (``grad_clip=None``, ``eval_fn=...``)."""
    _check_toy_model(model)
    batches = toy_batches(
        task, model.cfg.d_vocab, batch_size=batch_size, lengths=lengths, seed=seed
    )
    train_kwargs.setdefault("progress", False)
    train_kwargs.setdefault("threads", 1 if next(model.parameters()).device.type == "cpu" else None)
    return train(model, batches, toy_loss, steps=steps, lr=lr, **train_kwargs)


@torch.no_grad()
def accuracy(
    model: nn.Module,
    task: str | Callable = "previous_token",
    *,
    n: int = 12,
    batch_size: int = 512,
    seed: int = 1234,
    device=None,
) -> torch.Tensor:
    """Share of correct answers at each position, ``[pos, n_answers]`` (NaN where a
    position has no answer), on one fresh batch of length ``n``."""
    _check_toy_model(model)
    make = _task(task)
    device = device or next(model.parameters()).device
    x, y = make(batch_size, n, model.cfg.d_vocab, torch.Generator().manual_seed(seed))
    model.eval()
    with num_threads(1 if torch.device(device).type == "cpu" else None):
        predicted = model(x.to(device)).argmax(-1).cpu()  # [batch, pos, n_answers]
    answered = y != IGNORE
    correct = ((predicted == y) & answered).sum(0).double()
    return correct / answered.sum(0).double()  # 0/0 = NaN where nothing is answered
