"""The few markup rules that make a chapter read the same in JupyterLab and on the site.

Numbers in the prose are MyST inline expressions, ``{eval}`expression```, evaluated in the
chapter's kernel right after the code cell before them, the way ``jupyterlab-myst``
evaluates them when the reader runs the chapter. A chapter run (``make chapters``, see
``conftest.py``) asks the kernel for them after each code cell and stores the results on
each Markdown cell, as ``user_expressions`` (the key ``jupyterlab-myst`` reads), in the
executed copy of the chapter, ``_build/executed/NN_name.ipynb``: JupyterLab's reading test
opens that copy, and the site (``scripts/site/site_extension.py``) takes its numbers from it,
after checking that its code is the chapter's code.

Cells the site hides get JupyterLab's collapsed state (:func:`add_reader_metadata`):
hidden checks (``remove-cell``) and worked answers (``hide-cell``) are folded until the
reader opens them.
"""

from __future__ import annotations

import re

EVAL = re.compile(r"\{eval\}`([^`]+)`")
MARKDOWN_KEY = "user_expressions"

# site tags -> JupyterLab's collapsed flags
_COLLAPSE = {
    "remove-cell": {"source_hidden": True, "outputs_hidden": True},
    "hide-cell": {"source_hidden": True, "outputs_hidden": True},
    "remove-input": {"source_hidden": True},
    "hide-input": {"source_hidden": True},
    "remove-output": {"outputs_hidden": True},
    "hide-output": {"outputs_hidden": True},
}


def expressions(markdown: str) -> list[str]:
    """The ``{eval}`` expressions of a Markdown cell, in order, each once."""
    return list(dict.fromkeys(EVAL.findall(markdown)))


def expressions_after_code_cells(nb) -> dict[int, list[tuple[int, list[str]]]]:
    """For the n-th code cell (0-based), the Markdown cells between it and the next code cell
    that hold expressions: ``{n: [(cell index, [expression, ...]), ...]}``. Expressions
    before the first code cell are under -1 (no kernel state yet: they are an error)."""
    found: dict[int, list[tuple[int, list[str]]]] = {}
    code = -1
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            code += 1
        elif cell.cell_type == "markdown":
            exprs = expressions(cell.source)
            if exprs:
                found.setdefault(code, []).append((index, exprs))
    return found


def language_info() -> dict:
    """The notebook metadata the book's Python kernel reports when it starts (ipykernel's
    ``language_info``): JupyterLab writes it into a notebook it opens, so a notebook that
    already holds it opens without unsaved changes."""
    import platform

    return {
        "codemirror_mode": {"name": "ipython", "version": 3},
        "file_extension": ".py",
        "mimetype": "text/x-python",
        "name": "python",
        "nbconvert_exporter": "python",
        "pygments_lexer": "ipython3",
        "version": platform.python_version(),
    }


def add_reader_metadata(nb) -> None:
    """Fold, in JupyterLab, the cells the site hides (``jupyter.source_hidden`` etc.), and
    give the notebook the kernel's ``language_info`` (see :func:`language_info`)."""
    nb.metadata["language_info"] = language_info()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        flags: dict[str, bool] = {}
        for tag in cell.metadata.get("tags", []):
            flags.update(_COLLAPSE.get(tag, {}))
        if flags:
            cell.metadata.setdefault("jupyter", {}).update(flags)


def result_text(result: dict) -> str:
    """The plain text of one evaluated expression, without the quotes of a ``str`` repr."""
    if result.get("status") != "ok":
        return f"{result.get('ename', 'Error')}: {result.get('evalue', '')}"
    text = result.get("data", {}).get("text/plain", "")
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        import ast

        try:
            return str(ast.literal_eval(text))
        except (ValueError, SyntaxError):
            return text
    return text


def executed_copy(root, stem: str):
    """Where the chapter run leaves the executed copy of chapter ``stem``."""
    from pathlib import Path

    return Path(root) / "_build" / "executed" / f"{stem}.ipynb"


def code_sources(nb) -> list[str]:
    return [cell.source for cell in nb.cells if cell.cell_type == "code"]
