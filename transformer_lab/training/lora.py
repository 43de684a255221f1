"""Adapting a pretrained decoder with LoRA: prompts and answers, a loss on the answers
only, training through the book's loop, and the share of answers that are right.

The recipe, for a decoder ``model`` (the book's :class:`~transformer_lab.models.llama.Llama`)
and its tokenizer::

    add_lora(model, ["W_Q", "W_K", "W_V", "W_O"], rank=8, alpha=16)     # transformer_lab.nn.lora
    data = answer_batch(tokenizer, prompts, answers)
    run = train_lora(model, data, LoraRecipe(steps=200, batch_size=8, lr=2e-3))
    replies = greedy_answers(model, tokenizer, test_prompts)  # transformer_lab.generation.answers
    score = answer_exact_match(replies, test_answers)

Each example is the prompt's tokens followed by the answer's: the model reads both, and
the cross-entropy counts the answer's tokens only (:func:`answer_loss`), so the model is
not taught to write prompts. Only the adapters' ``A`` and ``B`` reach the optimizer
(AdamW, warmup then linear decay), through :func:`transformer_lab.training.loop.train`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from transformer_lab.checks import (
    IGNORE_INDEX,
    check_tokenizer,
    finite_number,
    fraction,
    instance_of,
    integer,
    seed_int,
    string_list,
    token_ids,
)
from transformer_lab.generation.answers import check_takes_attention_mask
from transformer_lab.nn.lora import lora_modules, lora_parameters
from transformer_lab.training.loop import TrainResult, to_device, train
from transformer_lab.training.run import Run
from transformer_lab.training.schedules import warmup_linear

__all__ = [
    "AnswerBatch",
    "answer_batch",
    "answer_batches",
    "answer_loss",
    "answer_exact_match",
    "LoraRecipe",
    "train_lora",
]


@dataclass
class AnswerBatch:
    """Prompts followed by answers, padded on the right."""

    input_ids: torch.Tensor  # [batch, pos] prompt then answer tokens, then padding
    attention_mask: torch.Tensor  # [batch, pos] 1 = real token, 0 = padding
    targets: (
        torch.Tensor
    )  # [batch, pos] the token itself at answer positions, IGNORE_INDEX elsewhere

    def __post_init__(self):
        ids = token_ids(self.input_ids, "input_ids")
        if ids.dim() != 2:
            raise ValueError(f"input_ids must be [batch, pos], got {tuple(ids.shape)}")
        for name in ("attention_mask", "targets"):
            if tuple(getattr(self, name).shape) != tuple(ids.shape):
                got = tuple(getattr(self, name).shape)
                raise ValueError(f"{name} must be [batch, pos] = {tuple(ids.shape)}, got {got}")
        mask = self.attention_mask
        if mask.numel() and bool(((mask != 0) & (mask != 1)).any()):
            raise ValueError("attention_mask must hold only 0 (padding) and 1 (real token)")

    def to(self, device) -> AnswerBatch:
        return AnswerBatch(*(to_device(t, device) for t in self._tensors()))

    def _tensors(self):
        return self.input_ids, self.attention_mask, self.targets

    def __len__(self) -> int:
        return len(self.input_ids)

    def __getitem__(self, rows) -> AnswerBatch:
        """Rows ``rows``, without the columns that are padding in every one of them (on the
        right, or on the left of a left-padded batch)."""
        ids, mask, targets = (t[rows] for t in self._tensors())
        if ids.dim() != 2:
            raise ValueError("index an AnswerBatch by rows: a slice, a list or a tensor")
        real = mask.any(0).nonzero()  # columns holding a real token of some row
        first, last = (int(real[0]), int(real[-1]) + 1) if len(real) else (0, 1)
        return AnswerBatch(ids[:, first:last], mask[:, first:last], targets[:, first:last])


def answer_batch(tokenizer, prompts: Sequence[str], answers: Sequence[str]) -> AnswerBatch:
    """Tokenize each prompt and its answer separately (as the model will see the prompt
    when it answers), join them, pad on the right; targets mark the answer's tokens."""
    check_tokenizer(tokenizer)
    prompts, answers = string_list(prompts, "prompts"), string_list(answers, "answers")
    if len(prompts) != len(answers):
        raise ValueError(f"prompts and answers must pair up, got {len(prompts)} and {len(answers)}")
    pairs = [
        (tokenizer.encode(p), tokenizer.encode(a)) for p, a in zip(prompts, answers, strict=True)
    ]
    if any(not p or not a for p, a in pairs):
        raise ValueError("every prompt and every answer must have at least one token")
    width = max(len(p) + len(a) for p, a in pairs)
    ids = torch.zeros(len(pairs), width, dtype=torch.long)
    mask = torch.zeros(len(pairs), width, dtype=torch.long)
    targets = torch.full((len(pairs), width), IGNORE_INDEX, dtype=torch.long)
    for row, (p, a) in enumerate(pairs):
        ids[row, : len(p) + len(a)] = torch.tensor(p + a)
        mask[row, : len(p) + len(a)] = 1
        targets[row, len(p) : len(p) + len(a)] = torch.tensor(a)
    return AnswerBatch(ids, mask, targets)


def answer_batches(data: AnswerBatch, batch_size: int, seed: int) -> Iterator[AnswerBatch]:
    """Endless shuffled mini-batches of ``data``, a new order every pass, from ``seed``."""
    instance_of(data, AnswerBatch, "data")
    batch_size, seed = integer(batch_size, "batch_size", minimum=1), seed_int(seed)
    if not len(data):
        raise ValueError("data must hold at least one example")

    def stream():
        gen = torch.Generator().manual_seed(seed)
        while True:
            order = torch.randperm(len(data), generator=gen)
            for start in range(0, len(data), batch_size):
                yield data[order[start : start + batch_size]]

    return stream()


def answer_loss(model: nn.Module, batch: AnswerBatch) -> torch.Tensor:
    """Mean cross-entropy of the answer tokens: position ``t``'s logits predict token
    ``t + 1``, and only targets that are not ``IGNORE_INDEX`` count. The model's forward
    must take ``attention_mask`` (the rows are padded on the right)."""
    instance_of(model, nn.Module, "model", "an nn.Module (a decoder)")
    instance_of(batch, AnswerBatch, "batch")
    check_takes_attention_mask(model, "LoRA answers")
    logits = model(batch.input_ids, attention_mask=batch.attention_mask)  # [batch, pos, d_vocab]
    targets = batch.targets[:, 1:]  # [batch, pos - 1]
    if not bool((targets != IGNORE_INDEX).any()):
        raise ValueError("the batch has no answer tokens to score")
    return F.cross_entropy(
        logits[:, :-1].flatten(0, 1), targets.flatten(), ignore_index=IGNORE_INDEX
    )


def answer_exact_match(predictions: Sequence[str], references: Sequence[str]) -> float:
    """Share of predictions equal to their reference after stripping spaces at both ends."""
    if isinstance(predictions, str) or isinstance(references, str):
        raise TypeError("predictions and references must be lists of strings, not one string")
    instance_of(predictions, (list, tuple), "predictions", "a list of strings")
    instance_of(references, (list, tuple), "references", "a list of strings")
    if len(predictions) != len(references) or not predictions:
        raise ValueError(
            f"predictions and references must pair up and not be empty, got "
            f"{len(predictions)} and {len(references)}"
        )
    for name, texts in (("predictions", predictions), ("references", references)):
        odd = [t for t in texts if not isinstance(t, str)]
        if odd:
            raise TypeError(
                f"{name} must hold only strings, got {type(odd[0]).__name__}: {odd[0]!r}"
            )
    return sum(
        str(p).strip() == str(r).strip() for p, r in zip(predictions, references, strict=True)
    ) / len(predictions)


@dataclass(frozen=True)
class LoraRecipe:
    """How :func:`train_lora` trains the adapters: ``steps`` mini-batches of
    ``batch_size`` examples with AdamW at ``lr`` (decoupled ``weight_decay``), the rate
    rising over the first ``warmup`` share of the steps and then falling linearly to zero
    at ``steps``."""

    steps: int  # optimizer steps: the length of the schedule
    batch_size: int = 8  # examples per step
    lr: float = 2e-3  # the peak learning rate
    weight_decay: float = 0.0  # AdamW's decoupled decay
    warmup: float = 0.1  # share of the steps spent rising to the peak

    def __post_init__(self):
        integer(self.steps, "steps", minimum=1)
        integer(self.batch_size, "batch_size", minimum=1)
        finite_number(self.lr, "lr", above=0)
        if self.lr > 1:
            raise ValueError(
                f"lr must be at most 1, got {self.lr:g}: AdamW moves every adapter weight by "
                "about lr at each step, and the adapters then swamp the weights they change"
            )
        finite_number(self.weight_decay, "weight_decay", at_least=0)
        fraction(self.warmup, "warmup", closed=False)


def train_lora(
    model: nn.Module, data: AnswerBatch, recipe: LoraRecipe, run: Run | None = None
) -> TrainResult:
    """Train the LoRA adapters of ``model`` (added by :func:`~transformer_lab.nn.lora.add_lora`)
    on ``data`` with ``recipe``: mini-batches of :func:`answer_loss`, AdamW on the adapters'
    ``A`` and ``B`` only, warmup then linear decay, through
    :func:`transformer_lab.training.loop.train`.

    ``run`` (default ``Run()``) says where this call stops: ``run.steps`` (default
    ``recipe.steps``) stops it early, exactly the first ``run.steps`` steps of the whole
    run. ``run.seed`` (0 when None) seeds the batches and the loop."""
    instance_of(model, nn.Module, "model", "an nn.Module with LoRA adapters")
    params = lora_parameters(model)
    if not params:
        raise ValueError("model has no LoRA adapters: add_lora(model, targets) first")
    instance_of(data, AnswerBatch, "data")
    instance_of(recipe, LoraRecipe, "recipe")
    run = Run() if run is None else run
    instance_of(run, Run, "run", "a transformer_lab.training.run.Run")
    steps = run.stop_in(recipe.steps)
    seed = 0 if run.seed is None else run.seed
    if next(lora_modules(model))[1].merged:
        raise ValueError("the adapters are merged: unmerge_lora(model) before training")
    optimizer = torch.optim.AdamW(params, lr=recipe.lr, weight_decay=recipe.weight_decay)
    return train(
        model,
        answer_batches(data, recipe.batch_size, seed),
        answer_loss,
        run.for_recipe(desc="LoRA", seed=seed).replace(steps=steps),
        optimizer=optimizer,
        lr_schedule=warmup_linear(recipe.steps, recipe.warmup),
    )
