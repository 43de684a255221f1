"""Numbers written as words: num2words' words as tokens, German compounds split into
morphemes, the trimmed converter equal to num2words."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from num2words import num2words

from transformer_lab.data import number_words


def test_german_order_flip_and_morphemes():
    assert number_words.number_to_words(21, "de") == ["ein", "und", "zwanzig"]
    assert number_words.number_to_words(21, "en") == ["twenty", "one"]
    assert number_words.number_to_words(21, "fr") == ["vingt", "et", "un"]
    assert number_words.number_to_words(17, "de") == ["sieb", "zehn"]
    assert number_words.number_to_words(16, "de") == ["sech", "zehn"]
    assert number_words.number_to_words(99, "fr") == ["quatre", "vingt", "dix", "neuf"]
    assert number_words.number_to_words(1234, "en") == (
        ["one", "thousand", "two", "hundred", "and", "thirty", "four"]
    )
    assert number_words.number_to_words(2_000_001, "de") == ["zwei", "millionen", "eins"]


def test_german_fixes_num2words_eins_before_tausend():
    # num2words writes "einhunderteinstausend"; German says "einhunderteintausend"
    assert "einstausend" in num2words(101000, lang="de")
    assert number_words.number_to_words(101000, "de") == ["ein", "hundert", "ein", "tausend"]
    words = number_words.number_to_words(101_000_000, "de")
    assert words[:4] == ["ein", "hundert", "eine", "millionen"]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**15 - 1), st.sampled_from(number_words.LANGUAGES))
def test_trimmed_converter_matches_num2words(number, lang):
    assert number_words._converter(lang).to_cardinal(number) == num2words(number, lang=lang)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**12 - 1))
def test_german_morphemes_rebuild_the_word(number):
    text = num2words(number, lang="de").lower().replace(" ", "")
    expected = text.replace("einstausend", "eintausend")
    for scale in ("millionen", "milliarden"):
        expected = expected.replace("eins" + scale, "eine" + scale)
    assert "".join(number_words.number_to_words(number, "de")) == expected


def test_bad_inputs():
    with pytest.raises(ValueError, match="language"):
        number_words.number_to_words(3, "xx")
    with pytest.raises(TypeError, match="int"):
        number_words.number_to_words(3.0, "en")
    with pytest.raises(ValueError, match=r"\[0, 10\*\*16\)"):
        number_words.number_to_words(-1, "en")
    with pytest.raises(ValueError, match="cannot split"):
        number_words.split_german("katze")
    with pytest.raises(TypeError, match="text must be a str"):
        number_words.tokenize(None, "en")
