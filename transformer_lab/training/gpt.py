"""The GPT training recipe: AdamW with decoupled weight decay, warm-up and cosine decay,
presets sized for a CPU or a GPU, and held-out loss."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from transformer_lab.checks import check_token_range
from transformer_lab.models.gpt import GPTConfig
from transformer_lab.training.losses import lm_loss

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
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    n_windows = (len(data) - 1) // n_ctx
    total, count = 0.0, 0
    inputs = data[: n_windows * n_ctx].view(n_windows, n_ctx)
    targets = data[1 : n_windows * n_ctx + 1].view(n_windows, n_ctx)
    chunks = [
        (inputs[i : i + batch_size], targets[i : i + batch_size])
        for i in range(0, n_windows, batch_size)
    ]
    rest = len(data) - 1 - n_windows * n_ctx
    if rest:
        chunks.append((data[-rest - 1 : -1][None], data[-rest:][None]))
    for x, y in chunks:
        logits = model(x.to(device))  # [batch, pos, d_vocab]
        loss = F.cross_entropy(
            logits.flatten(0, 1).float(), y.to(device).flatten(), reduction="sum"
        )
        total += float(loss)
        count += y.numel()
    model.train(was_training)
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
        for name in ("batch_size", "steps"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(self.warmup, int) or not 0 <= self.warmup <= self.steps:
            raise ValueError(
                f"warmup must be an int in [0, steps={self.steps}], got {self.warmup!r}"
            )
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr!r}")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ValueError(f"min_lr_ratio must be in [0, 1], got {self.min_lr_ratio!r}")
        if not 0 <= self.beta2 < 1:
            raise ValueError(f"beta2 must be in [0, 1), got {self.beta2!r}")
        for name in ("lr", "min_lr_ratio", "weight_decay", "beta2", "grad_clip"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value!r}")
        if self.weight_decay < 0 or not self.grad_clip > 0:
            raise ValueError("weight_decay must be >= 0 and grad_clip positive")


def lr_factor(step: int, recipe: TrainRecipe) -> float:
    """Multiplier of the peak learning rate at ``step`` (0-based): a linear warmup over
    ``recipe.warmup`` steps, then a half cosine from 1 down to ``min_lr_ratio``."""
    if not isinstance(recipe, TrainRecipe):
        raise TypeError(f"recipe must be a TrainRecipe, got {type(recipe).__name__}")
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise ValueError(f"step must be an int >= 0, got {step!r}")
    if step < recipe.warmup:
        return (step + 1) / recipe.warmup
    progress = min(1.0, (step - recipe.warmup) / max(1, recipe.steps - 1 - recipe.warmup))
    return recipe.min_lr_ratio + (1 - recipe.min_lr_ratio) * 0.5 * (
        1 + math.cos(math.pi * progress)
    )


def make_optimizer(model: nn.Module, recipe: TrainRecipe) -> torch.optim.Optimizer:
    """AdamW with weight decay on the weight matrices (and embeddings), none on biases and
    layer norm parameters (Loshchilov & Hutter 2019)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if not isinstance(recipe, TrainRecipe):
        raise TypeError(f"recipe must be a TrainRecipe, got {type(recipe).__name__}")
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
    *,
    n_ctx: int | None = None,
    seed: int = 0,
    device=None,
    eval_fn=None,
    eval_every: int | None = None,
    progress: bool = False,
    checkpoint=None,
    checkpoint_every: int | None = None,
    resume: bool = False,
    loss_fn=None,
    until: int | None = None,
):
    """Train ``model`` (any module mapping ids ``[batch, pos]`` to logits) on random windows
    of ``n_ctx`` tokens of ``train_ids`` (default ``model.config.n_ctx``) with ``recipe``;
    returns :class:`transformer_lab.training.loop.TrainResult`.

    The batches come from a generator seeded with ``seed``, so a run is reproducible.
    ``checkpoint``, ``checkpoint_every`` and ``resume`` save and continue the run (see
    :func:`transformer_lab.training.loop.train`); ``loss_fn`` replaces :func:`lm_loss` (for
    example with one that runs under autocast). ``until`` stops the run after that step
    (the schedule still spans ``recipe.steps``), to continue it later with ``resume``.

    Launched by torchrun (after :func:`transformer_lab.training.distributed.setup`), every process
    draws the same global batches of ``recipe.batch_size`` windows and trains on its own
    share of each (:func:`transformer_lab.training.distributed.shard`): N processes then see the
    examples that one process sees, in the same order, and take the same steps. Dropout
    draws from a generator seeded with ``seed + rank``.
    """
    from transformer_lab.data.shakespeare import get_batch
    from transformer_lab.training.distributed import info, shard
    from transformer_lab.training.loop import train

    n_ctx = _check_lm_args(model, train_ids, n_ctx, "train_ids")
    if not isinstance(recipe, TrainRecipe):
        raise TypeError(f"recipe must be a TrainRecipe, got {type(recipe).__name__}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if len(train_ids) <= n_ctx:
        raise ValueError(
            f"train_ids has {len(train_ids)} tokens; windows of n_ctx={n_ctx} need more"
        )
    if until is not None and (
        not isinstance(until, int) or isinstance(until, bool) or not 0 < until <= recipe.steps
    ):
        raise ValueError(f"until must be an int in [1, recipe.steps={recipe.steps}], got {until!r}")
    place = info()
    if recipe.batch_size % place.world_size:
        raise ValueError(
            f"recipe.batch_size={recipe.batch_size} (the global batch) does not split evenly "
            f"over {place.world_size} processes"
        )
    generator = torch.Generator().manual_seed(seed)

    def batches():
        while True:
            batch = get_batch(train_ids, recipe.batch_size, n_ctx, generator=generator)
            yield shard(batch, place.rank, place.world_size) if place.distributed else batch

    # dropout draws from the global generators: seed them for this run only, and give the
    # caller's random state back afterwards
    cuda = [torch.cuda.current_device()] if torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=cuda):
        torch.manual_seed(seed + place.rank)
        return train(
            model,
            batches(),
            lm_loss if loss_fn is None else loss_fn,
            steps=recipe.steps if until is None else until,
            optimizer=make_optimizer(model, recipe),
            lr_schedule=lambda step: lr_factor(step, recipe),
            grad_clip=recipe.grad_clip,
            device=device,
            progress=progress,
            eval_fn=eval_fn,
            eval_every=eval_every,
            checkpoint=checkpoint,
            checkpoint_every=checkpoint_every,
            resume=resume,
        )


def _check_lm_args(model, ids, n_ctx, name: str) -> int:
    """Check a model and 1-d token ids for language modelling; return the window length."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
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
    if not isinstance(n_ctx, int) or isinstance(n_ctx, bool) or n_ctx <= 0:
        raise ValueError(f"n_ctx must be a positive int, got {n_ctx!r}")
    d_vocab = getattr(config, "d_vocab", None)
    if isinstance(d_vocab, int):
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
