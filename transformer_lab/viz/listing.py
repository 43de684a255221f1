"""How a listing of the package reads in a chapter: the idea, not the argument checks.

The package checks its arguments at the door (:mod:`transformer_lab.checks`), and those
lines are a fifth of some functions. A listing in a chapter is there to show the idea, so
:func:`fold_checks` replaces each run of statements that only check arguments with one
comment line that says how many lines it stands for; the file keeps them, and the listing
names the file. A statement only checks when it is

- an ``if`` with no ``else`` whose body raises (after, at most, assignments that build
  the message), or
- a bare call of a check: a function named ``check_...`` or ``_check...``, or one of
  :mod:`transformer_lab.checks`'s public functions.

A check whose value the code goes on to use (``steps = integer(steps, "steps", minimum=1)``)
stays, since the lines after it read the name it sets. :func:`plain_docstrings` turns
reStructuredText's double backticks in docstrings into single ones, as prose would.
"""

from __future__ import annotations

import ast
from typing import cast

__all__: list[
    str
] = []  # the interface of viz.source: check_lines, fold_checks, docstring_lines, plain_docstrings


def _check_names() -> set[str]:
    import transformer_lab.checks as checks

    return set(checks.__all__)


def _is_check_statement(node: ast.stmt, names: set[str]) -> bool:
    if isinstance(node, ast.If) and not node.orelse:
        *before, last = node.body
        return isinstance(last, ast.Raise) and all(isinstance(b, ast.Assign) for b in before)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        f = node.value.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        return name.startswith(("check_", "_check")) or name in names
    return False


def check_lines(code: str) -> list[tuple[int, int]]:
    """The 0-based ``(first, last)`` line ranges of the check statements of ``code`` (a
    function, class or module, dedented); ``[]`` when it does not parse on its own."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    names = _check_names()
    return sorted(
        (node.lineno - 1, cast(int, node.end_lineno) - 1)  # set by ast.parse
        for node in ast.walk(tree)
        if isinstance(node, ast.stmt) and _is_check_statement(node, names)
    )


def fold_checks(lines: list[str], ranges: list[tuple[int, int]]) -> list[str]:
    """``lines`` with each run of check statements (``ranges``, with only blank or comment
    lines between them) replaced by one comment at the first one's indentation."""
    checks: set[int] = set()
    for first, last in ranges:
        checks.update(range(first, last + 1))
    out, i = [], 0
    while i < len(lines):
        if i not in checks:
            out.append(lines[i])
            i += 1
            continue
        start, end = i, i
        j = i
        while j < len(lines) and (j in checks or not lines[j].strip() or _comment(lines[j])):
            if j in checks:
                end = j
            j += 1
        folded = [k for k in range(start, end + 1) if lines[k].strip()]
        indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
        noun = "line" if len(folded) == 1 else "lines"
        out.append(f"{indent}# ... {len(folded)} {noun} checking the arguments, in the file ...")
        i = end + 1
    return out


def _comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def docstring_lines(code: str) -> set[int]:
    """The 0-based lines of the docstrings of ``code``'s module, classes and functions."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    out: set[int] = set()
    for node in ast.walk(tree):
        kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        if isinstance(node, kinds) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                out.update(range(first.lineno - 1, cast(int, first.end_lineno)))
    return out


def plain_docstrings(lines: list[str], docstrings: set[int]) -> list[str]:
    """``lines`` with ````x```` read as ```x``` on the docstring lines."""
    return [line.replace("``", "`") if i in docstrings else line for i, line in enumerate(lines)]
