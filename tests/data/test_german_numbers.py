"""The German numbers task: words from num2words, disjoint splits, prompts and readers."""

from __future__ import annotations

import pytest
from num2words import num2words

from transformer_lab.data import german_numbers as G


def test_words_are_num2words():
    for n in (0, 11, 21, 101, 763, 999, 123456):
        assert G.german_words(n) == num2words(n, lang="de")
    assert G.german_words(763) == "siebenhundertdreiundsechzig"
    with pytest.raises(ValueError, match="below 1,000,000"):
        G.german_words(10**6)


def test_split_is_disjoint_seeded_and_nested():
    a = G.german_number_split(400, 100, seed=0)
    train, test = {p.number for p in a.train}, {p.number for p in a.test}
    assert len(train) == 400 and len(test) == 100 and not train & test
    assert all(100 <= n < 1000 for n in train | test)
    assert a == G.german_number_split(400, 100, seed=0)
    assert test != {p.number for p in G.german_number_split(400, 100, seed=1).test}
    small = G.german_number_split(50, 100, seed=0)
    assert small.test == a.test and small.train == a.train[:50]
    with pytest.raises(ValueError, match="must fit"):
        G.german_number_split(900, 1)


def test_prompt_answer_prefix_and_readers():
    assert G.prompt("elf") == "elf =" and G.answer(11) == " 11\n"
    pairs = [G.NumberPair("elf", 11), ("zwölf", 12)]
    assert G.few_shot_prefix(pairs) == "elf = 11\nzwölf = 12\n"
    assert G.read_number(" 312\nelf") == 312 and G.read_number("keine") is None
    assert G.read_number("Fünfhundert: 1.000") == 1
    train = G.german_number_split(300, 10, seed=0).train
    assert G.nearest_word_answer(train, train[5].words) == train[5].number
    with pytest.raises(ValueError, match="at least one"):
        G.nearest_word_answer([], "elf")
