"""Chapter 12's live run on whole words: the data, the neighbour-count guesser, the report
and a few steps of the recipe."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_lab.data.mlm import IGNORE_INDEX
from transformer_lab.training import bert_pretraining as WB
from transformer_lab.training.bert_reports import NeighbourCounts, word_mlm_report
from transformer_lab.training.run import Run


@pytest.fixture(scope="module")
def words():
    return WB.shakespeare_words()


def test_the_words_of_the_plays(words):
    assert words.vocab.vocab_size == 2000 and words.vocab.tokens[5] == "the"
    assert 0.85 < words.coverage < 0.88  # "87% of the running words"
    assert all(len(s) == 8 for d in words.train_spans + words.val_spans for s in d)
    assert len(words.val_spans) == 1 and len(words.train_spans) > 30
    assert words.counts[words.vocab.unk_id] > 0 and int(words.counts[:5].sum()) == int(
        words.counts[1]
    )  # of the special tokens only [UNK] occurs in the text


def test_held_out_batch_hides_words_never_unk_and_shows_every_one_as_mask(words):
    batch = WB.held_out_words(words)
    assert batch.input_ids.shape == (2000, 19)
    hidden = batch.labels[batch.labels != IGNORE_INDEX]
    assert (hidden >= 5).all(), "[UNK] and the special tokens are never hidden"
    shown = batch.input_ids[batch.labels != IGNORE_INDEX]
    assert (shown == words.vocab.mask_id).all(), "a fill-in-the-blank test: no answer in the input"
    ordinary = (batch.input_ids >= 5) | (batch.labels != IGNORE_INDEX)
    share = len(hidden) / int(((batch.labels != IGNORE_INDEX) | (batch.input_ids >= 5)).sum())
    assert abs(share - 0.15) < 4 * math.sqrt(0.15 * 0.85 / int(ordinary.sum())), share


def test_neighbour_counts_on_a_toy_text():
    # 5 special ids, then words 5..8; "5 6 7" is frequent, "5 8 7" rare
    guesser = NeighbourCounts([[5, 6, 7]] * 9 + [[5, 8, 7], [8, 8]], 9, range(5))
    ids = torch.tensor([[2, 5, 4, 7, 3], [2, 4, 4, 8, 3]])  # [MASK] = 4
    labels = torch.full_like(ids, IGNORE_INDEX)
    labels[0, 2] = 6
    labels[1, 2] = 8
    scores = guesser.log_scores(ids, labels)  # [2, 9]
    assert scores.shape == (2, 9) and torch.isinf(scores[:, :5]).all()
    assert scores[0].argmax() == 6  # between 5 and 7
    assert scores[1].argmax() == 8  # left neighbour hidden: only "what comes before 8"
    # with a special token on the left, the left term is the word's frequency
    p_word = (guesser.unigrams + 0.1) / (guesser.unigrams.sum() + 0.9)
    p_next = (guesser.bigrams + 0.1) / (guesser.bigrams.sum(1, keepdim=True) + 0.9)
    torch.testing.assert_close(scores[1, 5:], (p_word.log() + p_next[:, 8].log())[5:])


def test_report_without_a_model_gives_the_baselines(words):
    report = word_mlm_report(None, WB.held_out_words(words), words)
    assert set(report) == {"frequent_accuracy", "neighbour_accuracy", "n_hidden"}
    assert 0.025 < report["frequent_accuracy"] < 0.035 and report["n_hidden"] > 4000
    assert 0.12 < report["neighbour_accuracy"] < 0.14, report


@pytest.mark.parametrize(
    "mask_prob, message",
    [(0, r"mask_prob must be in \(0, 1\), got 0"), (1e-9, "mask_prob=1e-09 hid no word")],
)
def test_a_held_out_batch_that_hides_no_word_is_refused(words, mask_prob, message):
    with pytest.raises(ValueError, match=message):  # the report's accuracies were 0 / 0 = NaN
        WB.held_out_words(words, mask_prob=mask_prob)


def test_a_few_steps_of_the_recipe_are_deterministic_and_learn(words):
    recipe = WB.WordBertRecipe(steps=30, warmup=5)
    model, run = WB.pretrain_word_bert(recipe, Run(eval_every=30))
    _, again = WB.pretrain_word_bert(recipe)
    assert run.losses == again.losses
    assert sum(run.losses[-5:]) < sum(run.losses[:5]) - 5 * 0.5, run.losses
    report = word_mlm_report(model, WB.held_out_words(words), words)
    assert report["accuracy"] == pytest.approx(run.evals[-1][1])
    assert 0.0 <= report["nsp_accuracy"] <= 1.0
    assert model.config.max_pos == 19 and model.config.init_std == 0.05 and not model.training
