"""The genre task: passages, whole plays held out, balanced test set, nested draws."""

from __future__ import annotations

from collections import Counter

import pytest

from transformer_lab.data import genres
from transformer_lab.data.genres import (
    GENRES,
    HELD_OUT,
    GenreTask,
    Passage,
    genre_task,
    majority_baseline,
    sample_labelled,
    split_passages,
)


@pytest.fixture(scope="module")
def task():
    return genre_task()


def test_held_out_plays_share_no_text_with_training(task):
    train_plays = {p.play for p in task.train}
    test_plays = {p.play for p in task.test}
    assert test_plays == set(HELD_OUT)
    assert not train_plays & test_plays
    assert len(train_plays) == 19  # 8 + 11 + 6 plays in the three folders, 6 held out
    assert not {p.text for p in task.train} & {p.text for p in task.test}


def test_test_set_is_balanced_and_baseline_is_a_third(task):
    assert Counter(p.label for p in task.test) == {0: 200, 1: 200, 2: 200}
    assert majority_baseline(task) == pytest.approx(1 / 3)
    counts = Counter(p.label for p in task.train)
    assert counts.most_common(1)[0][0] == GENRES.index("history")
    assert all(c > 3000 for c in counts.values()), counts  # a pool of thousands per genre


def test_genre_labels_follow_the_folders(task):
    label_of = {p.play: p.label for p in task.train + task.test}
    assert label_of["macbeth"] == 2 and label_of["henry-v"] == 1 and label_of["twelfth-night"] == 0
    assert "the-tempest" not in label_of and "julius-caesar" not in label_of


def test_passages_have_enough_words_and_no_speaker_names(task):
    words = [len(p.text.split()) for p in task.train[:2000]]
    assert min(words) >= genres.PASSAGE_WORDS
    assert sum(words) / len(words) < 2 * genres.PASSAGE_WORDS
    text = "HAMLET:\nTo be, or not to be,\nthat is the question\n\nFirst Player:\nAy, my lord.\n"
    assert split_passages(text, words=5) == [
        "To be, or not to be,",
        "that is the question Ay, my lord.",
    ]
    assert split_passages(text, words=100) == []  # the short remainder is dropped


def test_sample_labelled_is_balanced_nested_and_seeded(task):
    texts, labels = sample_labelled(task.train, 96, seed=0)
    assert len(texts) == 96 and Counter(labels) == {0: 32, 1: 32, 2: 32}
    small, small_labels = sample_labelled(task.train, 24, seed=0)
    assert set(small) <= set(texts)  # nested draws
    assert sample_labelled(task.train, 24, seed=0) == (small, small_labels)
    assert sample_labelled(task.train, 24, seed=1)[0] != small
    pool_label = {p.text: p.label for p in task.train}
    assert all(pool_label[t] == y for t, y in zip(texts, labels, strict=True))


def test_bad_inputs(task):
    with pytest.raises(ValueError, match="multiple of 3"):
        sample_labelled(task.train, 10, seed=0)
    with pytest.raises(ValueError, match="need 20000"):
        sample_labelled(task.train, 60_000, seed=0)
    with pytest.raises(TypeError, match="GenreTask"):
        majority_baseline([Passage("a", 0, "x")])
    with pytest.raises(ValueError, match="test_per_genre"):
        genre_task(0)
    with pytest.raises(ValueError, match="fewer than test_per_genre"):
        genre_task(100_000)
    assert isinstance(task, GenreTask)
