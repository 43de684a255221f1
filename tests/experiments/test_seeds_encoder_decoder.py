"""Chapter 11's seed table comes from ``scripts/experiments/seeds_encoder_decoder.py``: one
row is re-derived here, and the sentences around the table are checked against it.

The race of seed 4 is the shortest of the table (75 GRU steps, 150 Transformer steps),
about half a minute on one CPU thread. Training is deterministic on one processor; another
processor may add floating-point numbers in another order, so the step counts may move by
one round of 25 and the accuracies on the longest sources (a few dozen sentences) by more.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from script_loader import load_script

from transformer_lab.data import numbers

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "book" / "11_encoder_decoder.md"
ROW = re.compile(r"^\| (\d+) \| (\d+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", re.M)


def _script():
    return load_script("experiments/seeds_encoder_decoder")


def _table() -> dict[int, tuple]:
    """seed -> (GRU steps, Transformer steps, GRU 21-23, Transformer 21-23, gap)."""
    rows = {}
    for m in ROW.finditer(CHAPTER.read_text()):
        seed, gru_steps, tf_steps = (int(g) for g in m.groups()[:3])
        rows[seed] = (gru_steps, tf_steps, *(float(g) for g in m.groups()[3:]))
    return rows


def test_the_table_backs_the_sentences_around_it():
    table = _table()
    assert sorted(table) == [0, 1, 2, 3, 4]
    text = " ".join(CHAPTER.read_text().split())
    gru_steps, tf_steps, gru_acc, tf_acc, gaps = zip(*table.values(), strict=True)
    assert all(t > g for g, t in zip(gru_steps, tf_steps, strict=True)), "GRU needs fewer steps"
    assert all(gap > 0 for gap in gaps), "the Transformer is behind on the longest sources"
    for a, b, gap in zip(gru_acc, tf_acc, gaps, strict=True):  # gap: of the unrounded values
        assert abs((a - b) - gap) <= 0.011, (a, b, gap)
    quoted = [
        f"from {min(tf_steps)} to {max(tf_steps)} steps",
        f"ranged from {min(tf_acc):.2f} to {max(tf_acc):.2f}",
        f"between {min(gru_acc):.2f} and {max(gru_acc):.2f}",
        f"a gap from {min(gaps):.2f} to {max(gaps):.2f}",
        f"by {min(gaps):.2f} to {max(gaps):.2f} in exact match",
        "Over five seeds",
        "in all five runs",
    ]
    for phrase in quoted:
        assert phrase in text, f"the chapter should say {phrase!r}, as its seed table does"


def test_markdown_row_and_gap():
    script = _script()
    report = {
        "GRU + attention": {"steps": 75, "by_length": {"17-20": 0.9, "21-23": 0.818}},
        "Transformer": {"steps": 200, "by_length": {"17-20": 0.8, "21-23": 0.424}},
    }
    assert script.longest_gap(report) == pytest.approx(0.394)
    assert script.markdown_row(1, report) == "| 1 | 75 | 200 | 0.82 | 0.42 | 0.39 |"


def test_the_row_of_seed_4_is_re_derived():
    """Seed 4 again, on this processor. The step counts are re-derived within one round; the
    accuracies on the longest sources depend on the order in which the processor adds numbers
    (the table's seed 4 gives 0.52 for the Transformer on one machine and 0.652 on an AMD EPYC,
    with the same code), so they are held to what the chapter says of all five seeds: inside
    the table's range (widened by 0.05) and the GRU ahead."""
    script = _script()
    report = script.race(numbers.load(), 4)
    gru, tf = report["GRU + attention"], report["Transformer"]
    table = _table()
    want = table[4]
    assert abs(gru["steps"] - want[0]) <= script.ROUND, (gru["steps"], want)
    assert abs(tf["steps"] - want[1]) <= script.ROUND, (tf["steps"], want)
    assert gru["steps"] < tf["steps"]
    longest = list(gru["by_length"])[-1]
    assert longest == "21-23"
    for column, got in ((2, gru["by_length"][longest]), (3, tf["by_length"][longest])):
        seen = [row[column] for row in table.values()]
        assert min(seen) - 0.05 <= got <= max(seen) + 0.05, (column, got, seen)
    assert script.longest_gap(report) > 0, report
