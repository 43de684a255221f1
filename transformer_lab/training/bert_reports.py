"""How well a BERT pretrained on Shakespeare fills the hidden tokens of the held-out play,
against guessers that read less (chapter 12).

- :func:`masked_lm_report`: the WordPiece model's held-out numbers (the tiny BERT the
  package ships), against always answering the most frequent token and against the
  training text's token frequencies.
- :class:`NeighbourCounts`: a simple guesser for a hidden token that uses the tokens beside
  it: a table of how often each token follows each other token; it scores a candidate ``w``
  between the visible neighbours ``l`` and ``r`` by ``log p(w | l) + log p(r | w)``.
- :func:`word_mlm_report`: held-out accuracy of the word-level model and of the baselines on
  the same hidden words.
- :func:`blank_fill_report`: the same comparison on the WordPiece tokens, counting only the
  blanks shown as ``[MASK]`` that hold a word.

The text, the recipes and the held-out batches are in
:mod:`transformer_lab.training.bert_pretraining`.
"""

from __future__ import annotations

import torch

from transformer_lab.checks import IGNORE_INDEX, finite_number, instance_of, integer
from transformer_lab.data.mlm import PretrainingBatch
from transformer_lab.models.bert import BertForPreTraining
from transformer_lab.training.bert_pretraining import (
    ShakespeareCorpus,
    ShakespeareWords,
    mlm_outputs,
    word_tokens,
)

__all__ = ["masked_lm_report", "NeighbourCounts", "word_mlm_report", "blank_fill_report"]


def _check_d_vocab(model: BertForPreTraining, size: int, what: str) -> None:
    if model.config.d_vocab != size:
        raise ValueError(f"model has d_vocab={model.config.d_vocab}, {what} {size}")


@torch.no_grad()
def masked_lm_report(
    model: BertForPreTraining, batch: PretrainingBatch, corpus: ShakespeareCorpus
) -> dict[str, float]:
    """Held-out numbers of a pretrained model on ``batch`` (a dict of floats):

    - ``accuracy``: share of the hidden positions where the top guess is the original token;
    - ``word_accuracy``: the same over the hidden *word* tokens
      (:func:`~transformer_lab.training.bert_pretraining.word_tokens`);
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
    _check_d_vocab(model, corpus.tokenizer.vocab_size, "the corpus's tokenizer")
    if not (batch.labels != IGNORE_INDEX).any():
        raise ValueError("batch has no hidden positions to score (every label is IGNORE_INDEX)")
    out, b = mlm_outputs(model, batch)
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
    _check_d_vocab(model, words.vocab.vocab_size, "the vocabulary")
    out, b = mlm_outputs(model, batch)
    guess = out.mlm_logits[b.labels != IGNORE_INDEX].argmax(-1).cpu()
    report["accuracy"] = (guess == target).float().mean().item()
    report["nsp_accuracy"] = (out.nsp_logits.argmax(-1) == b.is_next).float().mean().item()
    return report


@torch.no_grad()
def blank_fill_report(
    model: BertForPreTraining | None,
    batch: PretrainingBatch,
    corpus: ShakespeareCorpus,
    table: NeighbourCounts | None = None,
) -> dict[str, float]:
    """How often the blanks of ``batch`` are filled right, on the WordPiece tokens of
    chapter 12's tiny BERT: only the hidden positions shown as ``[MASK]`` that hold a word
    token (:func:`~transformer_lab.training.bert_pretraining.word_tokens`) count. A dict of:

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
        _check_d_vocab(model, tok.vocab_size, "the corpus's tokenizer")
        logits = mlm_outputs(model, batch)[0].mlm_logits
        guess = logits[hidden.to(logits.device)].argmax(-1).cpu()[blank]
        report["model"] = (guess == target).float().mean().item()
    if table is not None:
        guess = table.log_scores(batch.input_ids, batch.labels).argmax(-1)[blank]
        report["table"] = (guess == target).float().mean().item()
    return report
