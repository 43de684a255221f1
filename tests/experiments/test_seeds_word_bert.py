"""Chapter 12's seed table comes from ``scripts/experiments/seeds_word_bert.py`` (its
``RECORDED`` rows): one row is re-derived here, and the chapter's sentences and hidden
margins are checked against the table.

Seed 3 takes about a minute on one CPU thread, so it runs with ``TRANSFORMER_LAB_SLOW=1``;
by default the baselines of the rows are re-derived (chapter 12 itself trains seed 0's run
with its hidden assertions, under ``make chapters``). Training is deterministic on one processor;
another may add floating-point numbers in another order, so the model's accuracy is held to
a hundredth and its next-sentence accuracy to a few hundredths. The baselines do not train
and are re-derived exactly.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "book" / "12_bert.md"


def _script():
    return load_script("experiments/seeds_word_bert")


def test_the_table_backs_the_chapter():
    rows = _script().RECORDED
    assert sorted(rows) == [0, 1, 2, 3, 4]
    model, frequent, neighbour, nsp = zip(*rows.values(), strict=True)
    for m, f, n, s in rows.values():  # the chapter's hidden margins hold for every seed
        assert m > 2.8 * f and m < n - 0.015 and abs(s - 0.5) < 0.05
        assert 0.025 < f < 0.04 and m / f > 3, "more than three times"
    text = " ".join(CHAPTER.read_text().split())
    for phrase in (
        f"between {min(model):.3f} and {max(model):.3f}",
        f"the table at {neighbour[0]:.3f}",
        f"{min(nsp):.3f} to {max(nsp):.3f} over the five seeds",
        f"'the' {frequent[0]:.3f}, neighbour counts {neighbour[0]:.3f}",
        "Five seeds (`scripts/experiments/seeds_word_bert.py`)",
    ):
        assert phrase in text, f"the chapter should say {phrase!r}, as the seed table does"
    assert len(set(frequent)) == len(set(neighbour)) == 1, "the baselines do not depend on the seed"


def test_markdown_row():
    assert _script().markdown_row(2, (0.1171, 0.0294, 0.1424, 0.515)) == (
        "| 2 | 0.117 | 0.029 | 0.142 | 0.515 |"
    )


def test_the_baselines_of_the_rows_are_re_derived():
    """The short form of the row below: the two baselines, which do not train (the same in
    every row), re-derived exactly; the model's columns need the full 800 steps."""
    from transformer_lab.training.bert_pretraining import held_out_words, shakespeare_words
    from transformer_lab.training.bert_reports import word_mlm_report

    words = shakespeare_words()
    report = word_mlm_report(None, held_out_words(words), words)
    for seed, row in _script().RECORDED.items():
        got = (report["frequent_accuracy"], report["neighbour_accuracy"])
        assert got == pytest.approx(row[1:3], abs=1e-3), (seed, got, row)


@pytest.mark.slow
def test_the_row_of_seed_3_is_re_derived():
    script = _script()
    got = script.row(3)
    want = script.RECORDED[3]
    assert got[0] == pytest.approx(want[0], abs=0.01), (got, want)
    assert got[1:3] == pytest.approx(want[1:3], abs=1e-3), (got, want)
    assert got[3] == pytest.approx(want[3], abs=0.03), (got, want)
