"""The GPT training recipe: AdamW with decoupled weight decay (:func:`make_optimizer`), a
warm-up and a cosine decay (:func:`lr_factor`), presets
sized for a CPU or a GPU (:data:`PRESETS`), and the held-out loss (:func:`evaluate_lm`).

:func:`train_gpt` runs the recipe through the book's loop
(:func:`~transformer_lab.training.loop.train`) on random windows of the training text, on
one process or, launched by torchrun, on several that split every global batch."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from transformer_lab.checks import (
    check_token_range,
    finite_number,
    fraction,
    instance_of,
    integer,
    is_int,
)
from transformer_lab.data.shakespeare import get_batch
from transformer_lab.device import evaluating
from transformer_lab.models.gpt import GPTConfig
from transformer_lab.training.distributed import DistInfo, info, shard
from transformer_lab.training.loop import TrainResult, train
from transformer_lab.training.losses import lm_loss
from transformer_lab.training.run import Run
from transformer_lab.training.schedules import warmup_decay

__all__ = [
    "evaluate_lm",
    "TrainRecipe",
    "lr_factor",
    "make_optimizer",
    "train_gpt",
    "PRESETS",
    "preset",
]


@torch.no_grad()
def evaluate_lm(
    model: nn.Module, data: torch.Tensor, batch_size: int = 64, n_ctx: int | None = None
) -> float:
    """Mean next-token loss (nats per token) over *all* of ``data`` (1-d token ids).

    ``data`` is cut into consecutive windows of ``n_ctx`` tokens (the model's context
    length by default), so every token but the first is predicted exactly once, from the
    tokens before it in its window, as in training. Deterministic: no sampling.
    """
    n_ctx = _check_lm_args(model, data, n_ctx, "data")
    integer(batch_size, "batch_size", minimum=1)
    device = next(model.parameters()).device
    n_windows = (len(data) - 1) // n_ctx
    inputs = data[: n_windows * n_ctx].view(n_windows, n_ctx)
    targets = data[1 : n_windows * n_ctx + 1].view(n_windows, n_ctx)
    chunks = [
        (inputs[i : i + batch_size], targets[i : i + batch_size])
        for i in range(0, n_windows, batch_size)
    ]
    rest = len(data) - 1 - n_windows * n_ctx
    if rest:
        chunks.append((data[-rest - 1 : -1][None], data[-rest:][None]))
    total, count = 0.0, 0
    with evaluating(model):
        for x, y in chunks:
            logits = model(x.to(device))  # [batch, pos, d_vocab]
            loss = F.cross_entropy(
                logits.flatten(0, 1).float(), y.to(device).flatten(), reduction="sum"
            )
            total += float(loss)
            count += y.numel()
    return total / count


@dataclass(frozen=True)
class TrainRecipe:
    batch_size: int = 12  # sequences of n_ctx tokens per optimizer step
    steps: int = 2000  # optimizer steps: a fixed number, so a run is the same on any machine
    lr: float = 1e-3  # peak learning rate
    warmup: int = 100  # steps of linear warmup from lr / warmup up to lr
    min_lr_ratio: float = 0.1  # the cosine decay ends at lr * min_lr_ratio on the last step
    weight_decay: float = 0.1  # AdamW decay, applied to weight matrices only
    beta2: float = 0.99  # AdamW's second-moment decay (0.999 is the default; small data: 0.99)
    grad_clip: float = 1.0  # clip the global gradient norm to this

    def __post_init__(self):
        integer(self.batch_size, "batch_size", minimum=1)
        integer(self.steps, "steps", minimum=1)
        if not is_int(self.warmup) or not 0 <= self.warmup <= self.steps:
            raise ValueError(
                f"warmup must be an int in [0, steps={self.steps}], got {self.warmup!r}"
            )
        finite_number(self.lr, "lr", above=0)
        fraction(self.min_lr_ratio, "min_lr_ratio")
        fraction(self.beta2, "beta2", closed=False)
        finite_number(self.weight_decay, "weight_decay", at_least=0)
        finite_number(self.grad_clip, "grad_clip", above=0)


def lr_factor(step: int, recipe: TrainRecipe) -> float:
    """Multiplier of the peak learning rate at ``step`` (0-based) in the GPT recipe: a linear
    warm-up over ``recipe.warmup`` steps, then a half cosine from 1 down to
    ``recipe.min_lr_ratio`` on the last step."""
    instance_of(recipe, TrainRecipe, "recipe")
    end = max(recipe.steps - 1, recipe.warmup)  # a warm-up over the whole run never decays
    return warmup_decay(recipe.warmup, recipe.warmup, end, floor=recipe.min_lr_ratio)(step)


def make_optimizer(model: nn.Module, recipe: TrainRecipe) -> torch.optim.Optimizer:
    """AdamW with weight decay on the weight matrices (and embeddings), none on biases and
    layer norm parameters (Loshchilov & Hutter 2019)."""
    instance_of(model, nn.Module, "model", "an nn.Module")
    instance_of(recipe, TrainRecipe, "recipe")
    return _adamw(model, recipe)


def _adamw(model: nn.Module, recipe: TrainRecipe) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": recipe.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    # the fused implementation updates every parameter in one kernel (CPU and CUDA)
    fused = all(p.device.type in ("cpu", "cuda") for p in params) or None
    return torch.optim.AdamW(groups, lr=recipe.lr, betas=(0.9, recipe.beta2), fused=fused)


def train_gpt(
    model: nn.Module,
    train_ids: torch.Tensor,
    recipe: TrainRecipe,
    run: Run | None = None,
    *,
    n_ctx: int | None = None,
    loss_fn=None,
) -> TrainResult:
    """Train ``model`` (any module mapping ids ``[batch, pos]`` to logits) on random windows
    of ``n_ctx`` tokens of ``train_ids`` (default ``model.config.n_ctx``) with ``recipe``;
    returns its :class:`~transformer_lab.training.loop.TrainResult`.

    ``run`` (a :class:`~transformer_lab.training.run.Run`, default ``Run()``) says where
    this call stops, where it runs and what it records. ``run.seed`` (0 when None) seeds
    the generator the batches come from and dropout's, so a run is reproducible.
    ``run.steps`` stops the run after that step (default ``recipe.steps``; the schedule
    still spans ``recipe.steps``), to continue it later with ``run.resume``. ``loss_fn``
    replaces :func:`lm_loss` (for example with one that runs under autocast).

    A checkpoint records the recipe, the seed, ``n_ctx``, the number and a digest of the
    training tokens, and ``run.config`` (the caller's further settings); a resume with any
    of them changed is refused, naming each change. ``run.steps`` may change: it says where
    this call stops. More ``recipe.steps`` is a change of the schedule, hence another run.

    Launched by torchrun (after :func:`transformer_lab.training.distributed.setup`), every process
    draws the same global batches of ``recipe.batch_size`` windows and trains on its own
    share of each (:func:`transformer_lab.training.distributed.shard`): N processes then see the
    examples that one process sees, in the same order, and take the same steps. Dropout
    draws from a generator seeded with ``seed + rank``.
    """
    run = Run() if run is None else run
    instance_of(run, Run, "run", "a transformer_lab.training.run.Run")
    seed = 0 if run.seed is None else run.seed
    n_ctx, place = _check_gpt_run(model, train_ids, recipe, n_ctx)
    batches = _windows(train_ids, recipe.batch_size, n_ctx, seed, place)
    settings = None  # what the checkpoint records and a resume must match
    if run.checkpoint is not None:
        settings = _settings(recipe, seed, n_ctx, train_ids) | (run.config or {})
    # dropout draws from the global generators: seed them for this run only (seed + rank,
    # which the loop's own seeding would overwrite, so it gets none), and give the caller's
    # random state back afterwards
    loop_run = run.replace(steps=run.stop_in(recipe.steps), seed=None, config=settings)
    cuda = [torch.cuda.current_device()] if torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=cuda):
        torch.manual_seed(seed + place.rank)
        return train(
            model,
            batches,
            lm_loss if loss_fn is None else loss_fn,
            loop_run,
            optimizer=_adamw(model, recipe),
            lr_schedule=lambda step: lr_factor(step, recipe),
            grad_clip=recipe.grad_clip,
        )


def _check_gpt_run(model, train_ids, recipe, n_ctx) -> tuple[int, DistInfo]:
    """What :func:`train_gpt` adds to the checks of :func:`train`: the token ids and the
    window length, the recipe, and a global batch that splits evenly
    over the processes. Returns the window length and this process's place."""
    n_ctx = _check_lm_args(model, train_ids, n_ctx, "train_ids")
    instance_of(recipe, TrainRecipe, "recipe")
    if len(train_ids) <= n_ctx:
        raise ValueError(
            f"train_ids has {len(train_ids)} tokens; windows of n_ctx={n_ctx} need more"
        )
    place = info()
    if recipe.batch_size % place.world_size:
        raise ValueError(
            f"recipe.batch_size={recipe.batch_size} (the global batch) does not split evenly "
            f"over {place.world_size} processes"
        )
    return n_ctx, place


def _settings(recipe: TrainRecipe, seed: int, n_ctx: int, ids: torch.Tensor) -> dict:
    """What decides a run of :func:`train_gpt` beyond the model and the optimizer."""
    digest = hashlib.sha256(ids.cpu().numpy().tobytes()).hexdigest()[:16]
    data = {"tokens": len(ids), "sha256": digest}
    return {"recipe": asdict(recipe), "seed": int(seed), "n_ctx": n_ctx, "data": data}


def _windows(ids: torch.Tensor, batch_size: int, n_ctx: int, seed: int, place: DistInfo):
    """Endless random batches of ``batch_size`` windows of ``n_ctx`` tokens from one
    generator seeded with ``seed``; in a distributed run, this process's share of each."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        batch = get_batch(ids, batch_size, n_ctx, generator=generator)
        yield shard(batch, place.rank, place.world_size) if place.distributed else batch


def _check_lm_args(model, ids, n_ctx, name: str) -> int:
    """Check a model and 1-d token ids for language modelling; return the window length."""
    instance_of(model, nn.Module, "model", "an nn.Module")
    if not isinstance(ids, torch.Tensor) or ids.dtype not in (torch.long, torch.int):
        got = getattr(ids, "dtype", type(ids).__name__)
        raise TypeError(f"{name} must be a tensor of integer token ids, got {got}")
    if ids.dim() != 1 or len(ids) < 2:
        raise ValueError(
            f"{name} must be a 1-d tensor of at least 2 token ids, got shape {tuple(ids.shape)}"
        )
    config = getattr(model, "config", None)
    if n_ctx is None:
        n_ctx = getattr(config, "n_ctx", None)
        if n_ctx is None:
            raise ValueError("n_ctx is needed for a model without config.n_ctx")
    integer(n_ctx, "n_ctx", minimum=1)
    d_vocab = getattr(config, "d_vocab", None)
    if d_vocab is not None and is_int(d_vocab):
        check_token_range(ids, d_vocab, name)
    return n_ctx


# Named settings: a model shape (GPTConfig fields except d_vocab) and a training recipe.
PRESETS: dict[str, tuple[dict, TrainRecipe]] = {
    # nanoGPT's README settings for a CPU run on Shakespeare characters
    "nanogpt-cpu": (
        dict(n_ctx=64, n_layers=4, n_heads=4, d_model=128, activation="gelu"),
        TrainRecipe(batch_size=12, steps=2000, lr=1e-3, warmup=100),
    ),
    # the chapter's final model: two of those blocks instead of four, which buys almost
    # twice the steps in the same time, and a schedule tuned for a short CPU budget
    "book-cpu": (
        dict(n_ctx=64, n_layers=2, n_heads=4, d_model=128, activation="gelu"),
        TrainRecipe(batch_size=12, steps=1300, lr=5e-3, warmup=100),
    ),
    # nanoGPT's GPU settings for Shakespeare characters (6 layers, 6 heads, 384 wide)
    "gpu": (
        dict(n_ctx=256, n_layers=6, n_heads=6, d_model=384, dropout=0.2),
        TrainRecipe(batch_size=64, steps=5000, lr=1e-3, warmup=100),
    ),
}


def preset(name: str, d_vocab: int) -> tuple[GPTConfig, TrainRecipe]:
    """The :class:`GPTConfig` and :class:`TrainRecipe` of a named preset in :data:`PRESETS`."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose from {sorted(PRESETS)}")
    shape, recipe = PRESETS[name]
    return GPTConfig(d_vocab=d_vocab, **shape), recipe
