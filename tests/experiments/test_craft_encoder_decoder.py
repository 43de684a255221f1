"""Chapter 11's ablation table comes from ``scripts/experiments/craft_encoder_decoder.py``:
one row is re-derived here, and the sentences after the table are checked against it.

The row "race + label smoothing" of seed 0 is one of the cheapest (150 steps), and it is
the one the chapter also trains live. Training is deterministic on one processor; another
processor may add floating-point numbers in another order and move a step count by a round
of 25 steps.
"""

from __future__ import annotations

import re
from pathlib import Path

from script_loader import load_script

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "book" / "11_encoder_decoder.md"
ROW = re.compile(
    r"^\| ((?:race|all|the race)[^|]*?) \| ([\d.]+) \| ([^|]+) \| (\d) of (\d) \|$", re.M
)


def _script():
    return load_script("experiments/craft_encoder_decoder")


def _table() -> dict[str, tuple[float, list[str], int]]:
    """row name -> (median steps, steps per seed as printed, seeds that reached 80%)."""
    return {
        m[1]: (float(m[2]), [c.strip() for c in m[3].split(",")], int(m[4]))
        for m in ROW.finditer(CHAPTER.read_text())
    }


def _steps(cell: str) -> int:
    return int(cell.lstrip(">"))


def test_the_table_has_every_row_and_backs_the_sentences_after_it():
    script = _script()
    table = _table()
    assert list(table) == list(script.rows()), list(table)
    race = [_steps(c) for c in table["the race (embedding scale only)"][1]]
    assert len(race) == 3
    for name, (median, cells, reached) in table.items():
        steps = sorted(_steps(c) for c in cells)
        assert median == steps[1], (name, median, steps)
        assert reached == sum(not c.startswith(">") for c in cells), name
    text = " ".join(CHAPTER.read_text().split())

    def per_seed(name):
        return [_steps(c) for c in table[name][1]]

    for option in ("label smoothing", "warm-up + 1/sqrt"):  # "each saved steps in every seed"
        assert all(a < b for a, b in zip(per_seed(f"race + {option}"), race, strict=True)), option
    assert all(a > b for a, b in zip(per_seed("race - embedding scale"), race, strict=True))
    assert all(a > b for a, b in zip(per_seed("all five"), race, strict=True))
    assert all(a > b for a, b in zip(per_seed("race + shared embeddings"), race, strict=True))
    for phrase in ["in every one of the three seeds", "all five together"]:
        assert phrase in text, phrase


def test_markdown_row_marks_runs_that_stopped_short():
    script = _script()
    results = [{"steps": 150, "val": 0.81}, {"steps": 400, "val": 0.7}, {"steps": 175, "val": 0.9}]
    assert script.markdown_row("x", results) == "| x | 175 | 150, >400, 175 | 2 of 3 |"
    text = "        race + dropout seed 3: 175 steps, val 0.81, 5.5 s CPU (25 s)\n"
    assert script.read_lines(text) == {
        "race + dropout": {3: {"steps": 175, "val": 0.81, "cpu_seconds": 5.5}}
    }


def test_the_row_of_label_smoothing_seed_0_is_re_derived():
    script = _script()
    got = script.run_row(script.rows()["race + label smoothing"], 0)
    want = _steps(_table()["race + label smoothing"][1][0])
    assert got["val"] >= script.TARGET, got
    assert abs(got["steps"] - want) <= script.ROUND, (got, want)
