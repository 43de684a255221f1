"""Adapting a pretrained encoder to a labelled task: a classification head, freezing, and
a smaller learning rate for the encoder than for the head.

:class:`SequenceClassifier` puts a linear layer on a :class:`~.models.bert.BertModel`::

    clf = SequenceClassifier(encoder, n_classes=3, pooling="mean")   # or "cls"
    logits = clf(input_ids, attention_mask)                          # [batch, n_classes]

- ``pooling="cls"``: the pooled ``[CLS]`` vector, ``tanh(W_p h_[CLS] + b_p)`` (BERT's
  pooler), the input of ``transformers``' ``BertForSequenceClassification``;
- ``pooling="mean"``: the mean of the final vectors over the real tokens (what
  all-MiniLM-L6-v2 was trained to produce).

Then dropout and ``W_c p + b_c``. Three ways to get a classifier, all trained by
:func:`transformer_lab.training.loop.train` with :func:`classification_loss`:

- from scratch: a randomly initialised encoder, everything trained with one rate;
- a probe: :meth:`SequenceClassifier.freeze_encoder`, only the head learns (its input
  never changes, so :func:`encode_features` can compute it once);
- fine-tuning: everything learns, the encoder with a smaller rate
  (:meth:`SequenceClassifier.parameter_groups`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from transformer_lab.checks import (
    check_labels,
    finite_number,
    floating_tensor,
    fraction,
    instance_of,
    integer,
    is_int,
    one_of,
    seed_int,
    token_ids,
)
from transformer_lab.data.wordpiece import WordPieceTokenizer
from transformer_lab.device import evaluating
from transformer_lab.models.bert import BertConfig, BertModel
from transformer_lab.models.classifier import SequenceClassifier
from transformer_lab.nn.pooling import mean_pool
from transformer_lab.training.loop import TrainResult, to_device, train
from transformer_lab.training.run import Run
from transformer_lab.training.schedules import warmup_linear

__all__ = [
    "build_classifier",
    "ClassificationBatch",
    "tokenize_labelled",
    "classification_batches",
    "classification_loss",
    "predict",
    "classification_accuracy",
    "encode_features",
    "ClassifierRecipe",
    "train_classifier",
    "fit_probe",
]

METHODS = ("scratch", "probe", "finetune")


def build_classifier(
    encoder: BertModel,
    n_classes: int,
    method: str,
    *,
    pooling: str = "cls",
    seed: int = 0,
    config: BertConfig | None = None,
) -> SequenceClassifier:
    """A classifier for one of the three ways to get one, on a *copy* of ``encoder``:

    - ``"scratch"``: fresh random weights, in the encoder's architecture or, given
      ``config``, in that (smaller) one, with the encoder's vocabulary;
    - ``"probe"``: the pretrained weights, frozen;
    - ``"finetune"``: the pretrained weights, trainable.

    The random draws (a scratch encoder's weights, the new head) come from ``seed``."""
    instance_of(encoder, BertModel, "encoder")
    one_of(method, METHODS, "method")
    n_classes = integer(n_classes, "n_classes", minimum=2)
    if (
        config is not None
        and instance_of(config, BertConfig, "config").d_vocab != encoder.config.d_vocab
    ):
        raise ValueError(
            f"config.d_vocab must be the encoder's {encoder.config.d_vocab}, got {config.d_vocab}"
        )
    if config is not None and method != "scratch":
        raise ValueError(f"config= is for method='scratch' only, got method={method!r}")
    torch.manual_seed(seed_int(seed))
    body = BertModel(encoder.config if config is None else config)
    if method != "scratch":
        body.load_state_dict(encoder.state_dict())
    clf = SequenceClassifier(body, n_classes, pooling=pooling).to(next(encoder.parameters()).device)
    return clf.freeze_encoder() if method == "probe" else clf


@dataclass
class ClassificationBatch:
    """Token ids, mask and class labels of a batch: one label per row of ids, a mask of
    zeros and ones the shape of the ids (checked when the batch is made)."""

    input_ids: torch.Tensor  # [batch, pos] int64
    attention_mask: torch.Tensor  # [batch, pos] int64, 1 = real token
    labels: torch.Tensor  # [batch] int64 class ids

    def __post_init__(self):
        if token_ids(self.input_ids, "input_ids").dim() != 2:
            raise ValueError(f"input_ids must be [batch, pos], got {tuple(self.input_ids.shape)}")
        _check_mask(self.attention_mask, tuple(self.input_ids.shape))
        token_ids(self.labels, "labels")
        if tuple(self.labels.shape) != tuple(self.input_ids.shape[:1]):
            raise ValueError(
                f"labels must be [batch] = {tuple(self.input_ids.shape[:1])}, one per row of "
                f"input_ids, got {tuple(self.labels.shape)}"
            )

    def to(self, device) -> ClassificationBatch:
        return _batch(*(to_device(t, device) for t in self._tensors()))

    def _tensors(self):
        return self.input_ids, self.attention_mask, self.labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, rows) -> ClassificationBatch:
        """Rows ``rows`` of the batch, without the columns that are padding in every one of
        them (on the right, or on the left of a left-padded batch)."""
        ids, mask, labels = (t[rows] for t in self._tensors())
        if ids.dim() != 2:
            raise ValueError("index a ClassificationBatch by rows: a slice, a list or a tensor")
        real = mask.any(0).nonzero()  # columns holding a real token of some row
        if len(real):
            ids, mask = (t[:, int(real[0]) : int(real[-1]) + 1] for t in (ids, mask))
        elif len(labels):
            ids, mask = ids[:, :1], mask[:, :1]
        return _batch(ids, mask, labels)


def _check_mask(mask, shape: tuple) -> None:
    """Raise unless ``mask`` is a tensor of ``shape`` holding only zeros and ones (bool,
    integer or float)."""
    if not isinstance(mask, torch.Tensor) or mask.is_complex():
        got = getattr(mask, "dtype", type(mask).__name__)
        raise TypeError(f"attention_mask must be a tensor of zeros and ones, got {got}")
    if tuple(mask.shape) != shape:
        raise ValueError(f"attention_mask must be [batch, pos] = {shape}, got {tuple(mask.shape)}")
    if mask.dtype != torch.bool and mask.numel() and bool(((mask != 0) & (mask != 1)).any()):
        raise ValueError("attention_mask must hold only 0 (padding) and 1 (real token)")


def _batch(ids, mask, labels) -> ClassificationBatch:
    """A :class:`ClassificationBatch` of parts taken from a checked one (no second check)."""
    batch = object.__new__(ClassificationBatch)
    batch.input_ids, batch.attention_mask, batch.labels = ids, mask, labels
    return batch


def tokenize_labelled(
    tokenizer: WordPieceTokenizer,
    texts: Sequence[str],
    labels: Sequence[int],
    max_length: int | None,
) -> ClassificationBatch:
    """Tokenize ``texts`` (truncated to ``max_length`` tokens; None: not truncated) with
    their ``labels``."""
    instance_of(tokenizer, WordPieceTokenizer, "tokenizer")
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise TypeError(f"texts must be a list of strings, got {type(texts).__name__}")
    if isinstance(labels, torch.Tensor):
        labels = token_ids(labels, "labels").tolist()
    if isinstance(labels, str) or not isinstance(labels, Sequence):
        raise TypeError(f"labels must be a list of int class ids, got {type(labels).__name__}")
    if len(texts) != len(labels) or not len(texts):
        raise ValueError(
            f"texts must be as long as labels, and not empty, got {len(texts)} texts and "
            f"{len(labels)} labels"
        )
    bad = [y for y in labels if not is_int(y)]
    if bad:
        raise TypeError(f"labels must be int class ids, got {bad[:3]!r}")
    negative = [y for y in labels if y < 0]
    if negative:
        raise ValueError(f"labels must be class ids >= 0, got {negative[:3]!r}")
    b = tokenizer(list(texts), max_length=max_length)
    return ClassificationBatch(
        b.input_ids, b.attention_mask, torch.tensor([int(y) for y in labels])
    )


def classification_batches(
    data: ClassificationBatch, batch_size: int, seed: int
) -> Iterator[ClassificationBatch]:
    """Endless shuffled mini-batches of ``data``: a new order every epoch, from ``seed``
    (a ``batch_size`` larger than ``data`` gives all of it, shuffled, every time)."""
    _check_data(data)
    return _shuffled(data, integer(batch_size, "batch_size", minimum=1), seed_int(seed))


def _check_data(data) -> None:
    if not len(instance_of(data, ClassificationBatch, "data")):
        raise ValueError("data must hold at least one example, got an empty ClassificationBatch")


def _shuffled(data: ClassificationBatch, batch_size: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(len(data), generator=gen)
        for start in range(0, len(data), batch_size):
            yield data[order[start : start + batch_size]]


def classification_loss(model: SequenceClassifier, batch: ClassificationBatch) -> torch.Tensor:
    """Cross-entropy of ``model(batch.input_ids, batch.attention_mask)`` and the labels."""
    instance_of(model, torch.nn.Module, "model", "an nn.Module (a classifier)")
    _check_data(batch)
    logits = model(batch.input_ids, batch.attention_mask)  # [batch, n_classes]
    check_labels(batch.labels, logits.shape[-1])
    return F.cross_entropy(logits, batch.labels)


def _in_batches(model, data: ClassificationBatch, batch_size: int, fn) -> torch.Tensor:
    """``fn((input_ids, attention_mask))`` over ``data`` in slices of ``batch_size``, in eval
    mode on the model's device, concatenated on the CPU."""
    _check_data(data)
    batch_size = integer(batch_size, "batch_size", minimum=1)
    device = next(model.parameters()).device
    out = []
    with evaluating(model):
        for start in range(0, len(data), batch_size):
            b = data[slice(start, start + batch_size)].to(device)
            out.append(fn((b.input_ids, b.attention_mask)).cpu())
    return torch.cat(out)


@torch.no_grad()
def predict(model: nn.Module, data: ClassificationBatch, batch_size: int = 64) -> torch.Tensor:
    """Predicted classes ``[n]`` of ``model`` on ``data``, in eval mode."""
    instance_of(model, nn.Module, "model", "an nn.Module (a classifier)")
    instance_of(data, ClassificationBatch, "data")
    return _in_batches(model, data, batch_size, lambda b: model(*b).argmax(-1))


def classification_accuracy(
    model: nn.Module, data: ClassificationBatch, batch_size: int = 64
) -> float:
    """Share of ``data`` that ``model`` classifies correctly."""
    return (predict(model, data, batch_size) == data.labels).float().mean().item()


@torch.no_grad()
def encode_features(
    model: SequenceClassifier,
    data: ClassificationBatch,
    batch_size: int = 64,
    *,
    static: bool = False,
) -> torch.Tensor:
    """The pooled vectors ``[n, d_model]`` of a (frozen) classifier's encoder, in eval mode.

    With ``static=True``, the mean over the real tokens of the encoder's *input* token
    embeddings instead: rows of its word-embedding table, with no position, no
    normalization and no attention. That is what a bag of the encoder's word vectors
    knows, each word read alone, whatever the sentence around it."""
    instance_of(model, SequenceClassifier, "model")
    instance_of(data, ClassificationBatch, "data")
    if not isinstance(static, bool):
        raise TypeError(f"static must be True or False, got {static!r}")
    if static:
        table = model.encoder.embeddings.W_E
        return _in_batches(model, data, batch_size, lambda b: mean_pool(table(b[0]), b[1]))
    return _in_batches(model, data, batch_size, lambda b: model.features(*b))


@dataclass(frozen=True)
class ClassifierRecipe:
    """How :func:`train_classifier` trains a classifier: ``steps`` mini-batches of
    ``batch_size`` examples with AdamW, the head at ``lr`` and the (unfrozen) encoder at
    ``encoder_lr``, the rate rising over the first ``warmup`` share of the steps and then
    falling linearly to zero at ``steps``."""

    steps: int  # optimizer steps: the length of the schedule
    batch_size: int  # examples per step
    lr: float  # the head's peak learning rate
    encoder_lr: float | None = None  # the encoder's (None: lr); unused for a frozen encoder
    weight_decay: float = 0.01  # AdamW's decoupled decay, on every trainable weight
    warmup: float = 0.1  # share of the steps spent rising to the peak

    def __post_init__(self):
        integer(self.steps, "steps", minimum=1)
        integer(self.batch_size, "batch_size", minimum=1)
        finite_number(self.lr, "lr", above=0)
        if self.encoder_lr is not None:
            finite_number(self.encoder_lr, "encoder_lr", above=0)
        finite_number(self.weight_decay, "weight_decay", at_least=0)
        fraction(self.warmup, "warmup", closed=False)
        _decay_below_one(max(self.lr, self.encoder_lr or 0), self.weight_decay)


def train_classifier(
    model: SequenceClassifier,
    data: ClassificationBatch,
    recipe: ClassifierRecipe,
    run: Run | None = None,
    *,
    eval_data: ClassificationBatch | None = None,
) -> TrainResult:
    """Train ``model`` on ``data`` with ``recipe`` through
    :func:`transformer_lab.training.loop.train`; returns its
    :class:`~transformer_lab.training.loop.TrainResult`.

    ``run`` (default ``Run()``) says where this call stops in the recipe's ``steps``
    (``run.steps``, by default all of them), where it runs and what it records.
    ``run.seed`` (0 when None) seeds the batches and the loop; with ``run.eval_every``, the
    run records the accuracy on ``eval_data`` (unless ``run.eval_fn`` measures something
    else) every ``run.eval_every`` steps and at the end, in ``.evals``; ``run.checkpoint``
    saves it."""
    instance_of(model, SequenceClassifier, "model")
    instance_of(recipe, ClassifierRecipe, "recipe")
    run = Run() if run is None else run
    instance_of(run, Run, "run", "a transformer_lab.training.run.Run")
    seed = 0 if run.seed is None else run.seed
    batches = classification_batches(data, recipe.batch_size, seed)
    if eval_data is not None:
        _check_data(eval_data)
    groups = model.parameter_groups(recipe.lr, recipe.encoder_lr)
    accuracy = None if eval_data is None else (lambda m: classification_accuracy(m, eval_data))
    fused = next(model.parameters()).device.type in ("cpu", "cuda")
    optimizer = torch.optim.AdamW(groups, weight_decay=recipe.weight_decay, fused=fused)
    desc = "fine-tuning" if len(groups) > 1 else "training the head"
    steps, batch_size = int(recipe.steps), int(recipe.batch_size)
    settings = {"steps": steps, "warmup": float(recipe.warmup), "batch_size": batch_size}
    return train(
        model,
        batches,
        classification_loss,
        run.for_recipe(desc=desc, eval_fn=accuracy, seed=seed).replace(
            steps=run.stop_in(steps), config=settings | (run.config or {})
        ),
        optimizer=optimizer,
        lr_schedule=warmup_linear(steps, recipe.warmup),
    )


def _decay_below_one(lr: float, weight_decay: float) -> None:
    """AdamW multiplies the weights by ``1 - lr * weight_decay`` every step."""
    if lr * weight_decay >= 1:
        raise ValueError(
            f"lr * weight_decay must be < 1 (AdamW scales the weights by 1 - lr * weight_decay "
            f"each step), got lr={lr} and weight_decay={weight_decay}"
        )


def fit_probe(
    features: torch.Tensor,
    labels: torch.Tensor,
    n_classes: int,
    *,
    steps: int = 300,
    lr: float = 0.01,
    weight_decay: float = 0.01,
    seed: int = 0,
) -> nn.Linear:
    """A linear classifier on fixed ``features [n, d]``: the features are standardised
    (training mean and standard deviation), a linear layer is trained full-batch with
    AdamW through :func:`transformer_lab.training.loop.train`, and the standardisation is folded
    into the returned ``nn.Linear(d, n_classes)``, which acts on raw features (and so can
    replace the head of a :class:`SequenceClassifier`)."""
    floating_tensor(features, "features", dim=2, shape="a [n, d] tensor")
    if not isinstance(labels, torch.Tensor) or labels.shape != features.shape[:1]:
        got = tuple(labels.shape) if isinstance(labels, torch.Tensor) else labels
        raise ValueError(f"labels must be [n] = {tuple(features.shape[:1])}, got {got}")
    if not len(features) or not bool(torch.isfinite(features).all()):
        raise ValueError(
            f"features must be finite, with at least one row, got {tuple(features.shape)}"
        )
    n_classes = integer(n_classes, "n_classes", minimum=2)
    check_labels(labels, n_classes)
    steps, lr, seed = (
        integer(steps, "steps", minimum=1),
        finite_number(lr, "lr", above=0),
        seed_int(seed),
    )
    weight_decay = finite_number(weight_decay, "weight_decay", at_least=0)
    mu = features.mean(0)
    sigma = features.std(0, unbiased=False).clamp_min(1e-6)
    z = (features - mu) / sigma  # [n, d]
    _decay_below_one(lr, weight_decay)
    torch.manual_seed(seed)
    linear = nn.Linear(features.shape[1], n_classes, dtype=features.dtype)
    optimizer = torch.optim.AdamW(linear.parameters(), lr=lr, weight_decay=weight_decay)
    train(
        linear,
        [(z, labels)] * steps,
        lambda m, b: F.cross_entropy(m(b[0]), b[1]),
        run=Run(steps=steps, seed=seed),
        optimizer=optimizer,
        grad_clip=None,
    )
    folded = nn.Linear(features.shape[1], n_classes, dtype=features.dtype)
    with torch.no_grad():  # W (x - mu) / sigma + b = (W / sigma) x + (b - W mu / sigma)
        folded.weight.copy_(linear.weight / sigma)
        folded.bias.copy_(linear.bias - (linear.weight / sigma) @ mu)
    return folded
