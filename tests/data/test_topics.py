"""The topic task: disjoint training and test words, class-neutral templates, nested draws."""

from __future__ import annotations

from collections import Counter

import pytest

from transformer_lab.data.topics import (
    TEMPLATES,
    TOPICS,
    WORDS,
    fill,
    sample_labelled,
    topic_task,
)


def test_word_lists_are_disjoint_and_of_one_size():
    every = [w for topic in TOPICS for w in WORDS[topic]]
    assert len(every) == len(set(every)) == 250
    assert {len(WORDS[t]) for t in TOPICS} == {50}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_test_words_never_occur_in_the_labelled_pool(seed):
    task = topic_task(seed)
    pool_words = {w.strip(".?,'").lower() for s in task.train for w in s.text.split()}
    assert not pool_words & {s.word for s in task.test_unseen}
    assert {s.word for s in task.test_seen} <= pool_words
    assert not {s.text for s in task.train} & {s.text for s in task.test_seen}
    assert (len(task.train), len(task.test_seen), len(task.test_unseen)) == (2000, 1000, 1000)


def test_every_template_serves_every_topic_equally():
    task = topic_task(0)
    for sentences in (task.train, task.test_seen, task.test_unseen):
        counts = Counter(s.label for s in sentences)
        assert len(set(counts.values())) == 1 and len(counts) == len(TOPICS)


def test_fill_chooses_the_article():
    assert fill("I saw {a} {w}.", "owl") == "I saw an owl."
    assert fill("I saw {a} {w}.", "dog") == "I saw a dog."
    assert all("{w}" in t for t in TEMPLATES)


def test_draws_are_balanced_nested_and_seeded():
    pool = topic_task(0).train
    texts, labels = sample_labelled(pool, 40, 0)
    assert Counter(labels) == {k: 8 for k in range(5)}
    bigger, _ = sample_labelled(pool, 160, 0)
    assert set(texts) <= set(bigger)
    assert sample_labelled(pool, 40, 0) == (texts, labels)
    assert sample_labelled(pool, 40, 1)[0] != texts


def test_seeds_split_the_words_differently():
    assert topic_task(0).test_words != topic_task(1).test_words
