"""Every name an ``{eval}`` in a chapter's prose reads is defined by a code cell above it.

The reader's JupyterLab and the site evaluate an ``{eval}`` after the code cells before it
have run; a name defined only further down prints nothing in JupyterLab and stops the site
build. This reads each chapter's cells in order and checks each expression's free names
against the names the code cells above it bind (assignments, imports, functions, classes,
loop and ``with`` targets)."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest
from script_loader import load_script

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.md"))
EVAL = load_script("site/book_markup").EVAL
read_notebook = load_script("site/sync_notebooks").cells


def bound_names(source: str) -> set[str]:
    """Names a code cell binds at its top level or anywhere inside (over-approximate)."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def free_names(expression: str) -> set[str]:
    tree = ast.parse(expression, mode="eval")
    loads = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    local = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    local |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.Lambda) for a in n.args.args}
    return loads - local - set(dir(builtins))


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_every_eval_reads_names_defined_above_it(md):
    defined: set[str] = set()
    late = []
    for cell_type, source in read_notebook(md):
        if cell_type == "code":
            defined |= bound_names(source)
            continue
        for expression in EVAL.findall(source):
            missing = free_names(expression) - defined
            if missing:
                late.append(f"{expression!r} reads {sorted(missing)} before any cell defines it")
    assert not late, late
