"""Chapter 3's seed table of input feeding comes from
``scripts/experiments/seeds_input_feeding.py``: one row is re-derived here, and the
sentences around the table are checked against it.

Seed 0 is the chapter's own run (its test exact matches are the chapter's), about fifteen
seconds on one CPU thread. Training is deterministic on one processor; another processor
may add floating-point numbers in another order, so the steps to the target may move by one
evaluation round and the exact matches by a little.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from script_loader import load_script

from transformer_lab.data import numbers

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "book" / "03_seq2seq_attention.md"
NUMBER, STEPS, SIGNED = r"([\d.]+)", r"(\d+|-)", r"([+-][\d.]+)"
ROW = re.compile(
    rf"^\| (\d+) \| {NUMBER} \| {NUMBER} \| {STEPS} \| {NUMBER} \| {NUMBER} \| {STEPS} "
    rf"\| {SIGNED} \|$",
    re.M,
)


def _script():
    return load_script("experiments/seeds_input_feeding")


def _steps(cell: str) -> float:
    return math.inf if cell == "-" else int(cell)


def _table() -> dict[int, dict]:
    """seed -> the columns of the chapter's table."""
    rows = {}
    for m in ROW.finditer(CHAPTER.read_text()):
        g = m.groups()
        rows[int(g[0])] = {
            "without": {"val": float(g[1]), "test": float(g[2]), "steps": _steps(g[3])},
            "with": {"val": float(g[4]), "test": float(g[5]), "steps": _steps(g[6])},
            "difference": float(g[7]),
        }
    return rows


def test_the_table_backs_the_sentences_around_it():
    table = _table()
    assert sorted(table) == list(range(8))
    text = " ".join(CHAPTER.read_text().split())
    diffs = [row["difference"] for row in table.values()]
    for row in table.values():  # the difference is that of the rounded columns, within rounding
        assert abs(row["with"]["test"] - row["without"]["test"] - row["difference"]) <= 0.0011
    ahead, behind = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    words = {3: "three", 5: "five"}
    steps = {name: [row[name]["steps"] for row in table.values()] for name in ("with", "without")}
    quoted = [
        "Over eight seeds",
        f"ranges from {min(diffs):+.3f} to {max(diffs):+.3f} and changes sign".replace("+-", "-"),
        f"ahead for {words[ahead]} seeds and behind for {words[behind]}",
        f"after {min(steps['with'])} to {max(steps['with'])} steps, the model without it after "
        f"{min(steps['without'])} to {max(steps['without'])}",
        "no measurable difference",
    ]
    for phrase in quoted:
        assert phrase in text, f"the chapter should say {phrase!r}, as its seed table does"
    assert ahead and behind, "the sign changes over the seeds"
    assert max(abs(d) for d in diffs) < 0.06, "the chapter's hidden margin on the gap"
    tests = [row[name]["test"] for row in table.values() for name in ("with", "without")]
    assert min(tests) > 0.9, "the chapter's hidden floor on both models"


def test_markdown_row_steps_and_difference():
    script = _script()
    report = {
        "without": {"val": 0.95, "test": 0.9561, "steps_to_target": 100},
        "with": {"val": 0.99, "test": 0.9824, "steps_to_target": math.inf},
    }
    assert script.difference(report, "test") == pytest.approx(0.0263)
    assert (
        script.markdown_row(3, report) == "| 3 | 0.950 | 0.956 | 100 | 0.990 | 0.982 | - | +0.026 |"
    )
    assert script.steps_to([(25, 0.1), (50, 0.85), (75, 0.7)]) == 50
    assert script.steps_to([(25, 0.1)]) == math.inf


def test_the_row_of_seed_0_is_re_derived():
    """Seed 0 again, on this processor: the steps to the target within one evaluation round,
    the exact matches within 0.02 of the table, and the difference inside the range the
    chapter states for all eight seeds."""
    script = _script()
    report = script.compare(numbers.load(), 0)
    want = _table()[0]
    for name in script.NAMES:
        got = report[name]
        assert abs(got["steps_to_target"] - want[name]["steps"]) <= script.EVAL_EVERY, (name, got)
        for key in ("val", "test"):
            assert abs(got[key] - want[name][key]) <= 0.02, (name, key, got[key], want[name])
    diffs = [row["difference"] for row in _table().values()]
    assert min(diffs) - 0.02 <= script.difference(report, "test") <= max(diffs) + 0.02
