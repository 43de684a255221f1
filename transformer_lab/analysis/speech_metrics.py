"""Scoring a transcript against what was said: its words and its word error rate.

Transcripts are compared word by word after the same normalization on both sides, the way
speech recognition is scored: words_in lowercases the text and keeps its words, dropping
punctuation ("Didn't it?" gives ["didn't", "it"]). word_error_rate counts the fewest word
substitutions, deletions and insertions that turn the reference into the hypothesis (the
Levenshtein distance over words) and divides by the number of reference words, so one
wrong word in a ten-word sentence is 0.1, and a hypothesis with many extra words can score
above 1.
"""

from __future__ import annotations

import re

from transformer_lab.checks import string

__all__ = ["words_in", "word_error_rate"]

# A number with its decimal points or thousands separators ("3.5", "1,000"), or a run of
# letters and digits with apostrophes inside it ("didn't"); anything else separates words.
_WORD = re.compile(r"\d+(?:[.,]\d+)+|[^\W_]+(?:'[^\W_]+)*")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def words_in(text: str) -> list[str]:
    """The words of text as a transcript is scored: lowercase, punctuation dropped.

    Curly apostrophes count as straight ones and stay inside a word ("didn’t" gives
    "didn't"); a hyphen or a dash separates words ("well-known" gives "well", "known"); a
    point or comma between digits stays ("3.5")."""
    string(text, "text")
    return _WORD.findall(text.translate(_APOSTROPHES).lower())


def word_error_rate(reference: str, hypothesis: str) -> float:
    """The word error rate of hypothesis against reference: the fewest word substitutions,
    deletions and insertions between their words_in, divided by the reference's word count.

    0.0 is a perfect transcript; an empty hypothesis scores 1.0. The reference must hold at
    least one word (there is no rate over no words)."""
    ref = words_in(string(reference, "reference"))
    hyp = words_in(string(hypothesis, "hypothesis"))
    if not ref:
        raise ValueError(f"reference must hold at least one word, got {reference!r}")
    # row[j]: edits between the reference's first i words and the hypothesis's first j
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, start=1):
        diagonal, row[0] = row[0], i
        for j, h in enumerate(hyp, start=1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (r != h))
    return row[-1] / len(ref)
