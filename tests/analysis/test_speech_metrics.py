"""Transcript scoring: words_in's normalization and the word error rate, on cases worked by
hand (each edit named in the comment)."""

from __future__ import annotations

import pytest

from transformer_lab.analysis.speech_metrics import word_error_rate, words_in


def test_words_are_lowercase_without_punctuation():
    assert words_in("The animal didn’t cross the street, because it was too tired.") == [
        "the", "animal", "didn't", "cross", "the", "street", "because", "it", "was", "too",
        "tired",
    ]  # fmt: skip
    assert words_in("Well-known -- 'quoted' (aside) 3.5 km/h, 1,000!") == [
        "well", "known", "quoted", "aside", "3.5", "km", "h", "1,000",
    ]  # fmt: skip
    assert words_in("  ?! ") == []
    assert words_in("Ünïcode café") == ["ünïcode", "café"]


@pytest.mark.parametrize(
    "reference, hypothesis, edits, n_ref",
    [
        ("the cat sat", "the cat sat", 0, 3),
        ("The cat sat.", "the CAT sat", 0, 3),  # normalization only
        ("the cat sat", "the bat sat", 1, 3),  # cat -> bat
        ("the cat sat", "the cat", 1, 3),  # sat deleted
        ("the cat sat", "the black cat sat", 1, 3),  # black inserted
        ("the cat sat", "", 3, 3),  # all deleted
        ("a b", "x y z w", 4, 2),  # two substitutions, two insertions: above 1
        ("kitten sitting on", "sitting kitten on", 2, 3),  # two substitutions (no swaps)
        ("one two three four five", "two three four five six", 2, 5),  # one deleted, one added
        ("it is it", "is it is", 2, 3),  # delete the first "it", insert a final "is"
    ],
)
def test_word_error_rate_by_hand(reference, hypothesis, edits, n_ref):
    assert word_error_rate(reference, hypothesis) == pytest.approx(edits / n_ref)


def test_word_error_rate_is_the_fewest_edits():
    """Checked against a brute-force count over all alignments on short word strings."""
    import itertools

    def brute(ref, hyp):
        if not ref:
            return len(hyp)
        if not hyp:
            return len(ref)
        return min(
            brute(ref[1:], hyp[1:]) + (ref[0] != hyp[0]),
            brute(ref[1:], hyp) + 1,
            brute(ref, hyp[1:]) + 1,
        )

    for ref in itertools.product("ab", repeat=3):
        for n in range(4):
            for hyp in itertools.product("abc", repeat=n):
                got = word_error_rate(" ".join(ref), " ".join(hyp))
                assert got == pytest.approx(brute(ref, hyp) / 3)
