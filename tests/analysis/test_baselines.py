"""The bag-of-words baselines: they learn words from labels and see nothing else."""

from __future__ import annotations

import pytest

from transformer_lab.analysis.baselines import BASELINES, baseline_accuracy, fit_baseline


@pytest.mark.parametrize("kind", BASELINES)
def test_a_word_seen_in_training_decides_the_class(kind):
    texts = ["the cat sat", "a cat ran", "the car sped", "a car stopped"]
    labels = [0, 0, 1, 1]
    assert baseline_accuracy(kind, texts, labels, ["my cat", "my car"], [0, 1]) == 1.0


@pytest.mark.parametrize("kind", BASELINES)
def test_an_unseen_word_gives_no_evidence(kind):
    model = fit_baseline(kind, ["the cat", "the car"], [0, 1])
    p = model.predict_proba(["the kayak"])[0]
    assert p[0] == pytest.approx(p[1])  # "kayak" is not in the vocabulary; "the" is neutral


def test_naive_bayes_matches_counting_by_hand():
    texts, labels = ["ox ox bee", "bee cow", "cow cow cow"], [0, 1, 1]
    model = fit_baseline("naive_bayes", texts, labels)
    # class 1 word counts: bee 1, cow 4, ox 0 of 5 (columns in alphabetical order);
    # add-one: (0+1)/(5+3), (1+1)/8, (4+1)/8
    log_p = model[-1].feature_log_prob_[1]
    assert log_p.tolist() == pytest.approx([-1.3863, -0.47, -2.0794], abs=1e-3)
