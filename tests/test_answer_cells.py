"""A worked-answer cell prints nothing and displays nothing.

The answers to the exercises are code cells folded on the site and in JupyterLab (tagged
``hide-cell``). JupyterLab unfolds a cell's output whenever it runs the cell, so after Run
All whatever an answer cell printed would stand under its exercise. An answer cell
therefore has no output at all: no ``print``, ``display``, figure or trailing expression,
and its checker calls pass ``verbose=False`` (a failing check still fails the cell, by
``assert`` or ``strict=True``). What a reader needs from the answer's numbers is in a
Markdown dropdown after the cell, with ``{eval}`` (whose names ``tests/test_eval_order.py``
checks).

Where a chapter's executed copy ``_build/executed/NN_name.ipynb`` (written by
``pytest --nbval-lax``) is newer than the chapter, its answer cells are checked to have no
outputs; otherwise that part is skipped.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.md"))
EXECUTED = ROOT / "_build" / "executed"
SHOWING = {"print", "display", "show", "figure", "pprint"}  # calls that put something on screen


def _is_answer(cell) -> bool:
    return cell.get("cell_type") == "code" and "hide-cell" in cell.get("metadata", {}).get(
        "tags", []
    )


def answer_cells(md: Path) -> list[str]:
    """The sources of a chapter's worked-answer cells, in order."""
    return [cell.source for cell in jupytext.read(md).cells if _is_answer(cell)]


def _called_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def problems(source: str) -> list[str]:
    """What in an answer cell's source would print or display something."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    tree = ast.parse("\n".join(lines))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _called_name(node)
        if name in SHOWING:
            found.append(f"line {node.lineno}: calls {name}()")
        if name and name.startswith("check_"):
            quiet = any(
                k.arg == "verbose" and isinstance(k.value, ast.Constant) and k.value.value is False
                for k in node.keywords
            )
            if not quiet:
                found.append(f"line {node.lineno}: {name}() without verbose=False")
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr) and not source.rstrip().endswith(";"):
        name = _called_name(last.value) if isinstance(last.value, ast.Call) else None
        # a call of print & co. is reported above; torch.testing.assert_close returns None
        if name not in SHOWING and not (name or "").startswith("assert_"):
            found.append(f"line {last.lineno}: a trailing expression is displayed")
    return found


def test_the_answer_cells_are_found():
    counts = {md.stem: len(answer_cells(md)) for md in CHAPTERS}
    assert CHAPTERS and sum(counts.values()) >= len(CHAPTERS), counts


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_answer_cells_print_and_display_nothing(md):
    bad = [
        f"answer cell {i}: {problem}"
        for i, source in enumerate(answer_cells(md), 1)
        for problem in problems(source)
    ]
    assert not bad, bad


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_executed_answer_cells_have_no_outputs(md):
    executed = EXECUTED / f"{md.stem}.ipynb"
    if not executed.exists() or executed.stat().st_mtime < md.stat().st_mtime:
        pytest.skip(f"no executed copy of {md.name} newer than the chapter")
    cells = [cell for cell in json.loads(executed.read_text())["cells"] if _is_answer(cell)]
    assert len(cells) == len(answer_cells(md)), "the executed copy has other answer cells"
    shown = [
        f"answer cell {i}: {''.join(cell['source'])[:60]!r}"
        for i, cell in enumerate(cells, 1)
        if cell.get("outputs")
    ]
    assert not shown, shown


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("assert check_x(f, verbose=False)", []),
        ("check_x(f, strict=True, verbose=False);", []),
        ("result = exercises.check_x(f)", ["check_x() without verbose=False"]),
        ("x = 1\nprint(x)", ["calls print()"]),
        ("x = 1\nx", ["a trailing expression is displayed"]),
        ("viz.figure(fig, 'ch01-x')", ["calls figure()"]),
        ("torch.testing.assert_close(a, b)", []),
    ],
)
def test_the_rules_catch_what_they_should(source, expected):
    found = problems(source)
    assert len(found) == len(expected) and all(
        e in f for e, f in zip(expected, found, strict=True)
    ), found
