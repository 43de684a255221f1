"""What a chapter shows besides plots: numbered figures, listings of the package, tables.

Each function returns an object that displays itself the same way in JupyterLab and on the
static site, because both show a cell's output and neither needs anything else:

- :func:`figure` puts a Matplotlib figure (or any object that renders as SVG, PNG or HTML)
  in an HTML ``<figure>`` with its number and caption, e.g. "Figure 2.3". The number is the
  chapter number taken from the name (``"ch02-..."``) and the order in which the chapter's
  figures are first shown; showing a figure again keeps its number.
- :func:`source` lists a function, class or method of the package from its source file, as
  a highlighted code block (Markdown), with the file it comes from.
- :func:`table` renders rows as an HTML table (and as aligned text where HTML is not shown).

Nothing here writes files or talks to a build: a reader can copy any cell that uses these
into another notebook.
"""

from __future__ import annotations

import base64
import html
import inspect
import io
import re
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import cast

from transformer_lab.viz.figure_text import figure_words
from transformer_lab.viz.listing import check_lines, docstring_lines, fold_checks, plain_docstrings

__all__ = ["figure", "source", "table", "figure_number"]

_NAME = re.compile(r"^ch(\d{2})-[a-z0-9-]+$")
_numbers: dict[str, tuple[int, int]] = {}


def figure_number(name: str) -> str:
    """The number of figure ``name`` ("2.3"), given when the chapter first shows it."""
    match = _NAME.match(name) if isinstance(name, str) else None
    if match is None:
        raise ValueError(f"figure name must look like 'ch02-some-words', got {name!r}")
    chapter = int(match.group(1))
    if name not in _numbers:
        taken = sum(1 for ch, _ in _numbers.values() if ch == chapter)
        _numbers[name] = (chapter, taken + 1)
    ch, index = _numbers[name]
    return f"{ch}.{index}"


def _image_html(obj, alt: str) -> str:
    """An ``<img>`` or inline SVG for a Matplotlib figure or an object with a rich repr."""
    quoted = html.escape(alt, quote=True)
    if hasattr(obj, "savefig"):  # a Matplotlib figure
        import matplotlib.pyplot as plt

        buffer = io.BytesIO()
        obj.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
        plt.close(obj)  # shown once, here, not again by the inline backend
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        return f'<img src="data:image/png;base64,{data}" alt="{quoted}" class="tl-figure-image">'
    for method in ("_repr_svg_", "_repr_html_"):
        render = getattr(obj, method, None)
        if render is not None:
            body = render()
            if body:
                return f'<div class="tl-figure-image" role="img" aria-label="{quoted}">{body}</div>'
    render = getattr(obj, "_repr_png_", None)
    if render is not None:
        data = render()
        if isinstance(data, bytes):
            data = base64.b64encode(data).decode("ascii")
        return f'<img src="data:image/png;base64,{data}" alt="{quoted}" class="tl-figure-image">'
    raise TypeError(
        f"figure needs a Matplotlib figure or an object with _repr_svg_, _repr_html_ or "
        f"_repr_png_, got {type(obj).__name__}"
    )


class Figure:
    """A numbered, captioned figure; displays as HTML (``<figure>``) and as plain text."""

    def __init__(self, obj, name: str, caption: str | None, alt: str | None):
        for label, value in (("caption", caption), ("alt", alt)):
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"figure {label} must be a non-empty string, got {value!r}")
        assert caption is not None and alt is not None  # checked just above
        self.name, self.caption, self.alt = name, caption.strip(), alt.strip()
        self.number = figure_number(name)
        self._image = _image_html(obj, self.alt)

    def _repr_html_(self) -> str:
        return (
            f'<figure class="tl-figure" id="{self.name}">{self._image}'
            f'<figcaption class="tex2jax_process mathjax_process">'
            f'<span class="tl-figure-number">Figure {self.number}.</span> '
            f"{_inline(self.caption)}</figcaption></figure>"
        )

    def __repr__(self) -> str:
        return f"Figure {self.number}. {self.caption}"


def figure(
    obj, name: str, caption: str | None = None, alt: str | None = None, **values
) -> Figure | None:
    """Show ``obj`` (a Matplotlib figure, closed once drawn) as Figure N.M with its caption.

    ``name`` ("ch02-bottleneck") gives the chapter number and an anchor for links. The
    book's figures take their caption and ``alt`` (the picture in words, for readers who
    cannot see it) from ``viz/captions/chNN.md`` by name, with ``values`` filled into the
    numbers they quote (see :mod:`transformer_lab.viz.figure_text`); a figure of your own
    passes ``caption=`` and ``alt=``. In a notebook the figure is displayed at once,
    wherever the call stands in the cell, and ``None`` is returned; elsewhere the
    :class:`Figure` is returned.
    """
    if caption is None and alt is None:
        words = figure_words(name, values)
        caption, alt = words["caption"], words["alt"]
    elif values:
        raise ValueError(
            f"values {sorted(values)} fill the book's captions; a figure with its own "
            "caption and alt takes none"
        )
    shown = Figure(obj, name, caption, alt)
    try:
        from IPython import get_ipython
    except ImportError:
        return shown
    if get_ipython() is None:
        return shown
    from IPython.display import display

    display(shown)
    return None


class Listing:
    """Source code shown as a highlighted block: Markdown for the notebook and the site."""

    def __init__(self, code: str, where: str):
        self.code, self.where = code, where

    def _repr_markdown_(self) -> str:
        fence = "````" if "```" in self.code else "```"
        return f"{fence}python\n{self.code}\n{fence}\n\n<small>{self.where}</small>\n"

    def __repr__(self) -> str:
        return f"{self.where}\n{self.code}"


def _package_path(path: Path) -> str:
    parts = path.resolve().parts
    if "transformer_lab" in parts:
        return "/".join(parts[len(parts) - parts[::-1].index("transformer_lab") - 1 :])
    return path.name


def _resolve(dotted: str):
    """``"transformer_lab.models.rnn.Seq2Seq.forward"`` -> that object (longest module
    prefix imported, the rest looked up as attributes)."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                raise ValueError(f"{dotted!r}: {'.'.join(parts[:cut])} has no {attr!r}")
            obj = getattr(obj, attr)
        return obj
    raise ValueError(f"{dotted!r} names no importable module")


def source(
    obj,
    *,
    start_at: str | None = None,
    end_at: str | None = None,
    end_before: str | None = None,
    checks: bool = False,
) -> Listing:
    """The source of ``obj`` (function, method, class or module, or its dotted name such as
    ``"transformer_lab.models.rnn.Seq2Seq.forward"``), read from its file.

    ``start_at`` / ``end_at``: keep only the lines from the first one containing
    ``start_at`` through the first later one containing ``end_at`` (``end_before``: up to
    the line before it). The argument checks are folded into one comment line per run of
    them, saying how many lines the file holds there (``checks=True`` shows them), and the
    docstrings read ``x`` for reStructuredText's double-backticked ``x``
    (:mod:`transformer_lab.viz.listing`).
    """
    if not isinstance(checks, bool):
        raise TypeError(f"checks must be True or False, got {checks!r}")
    if isinstance(obj, str):
        obj = _resolve(obj)
    obj = inspect.unwrap(obj)  # a decorated function: the function's own file and lines
    try:
        lines, _ = inspect.getsourcelines(obj)
        file = inspect.getsourcefile(obj)
    except (OSError, TypeError) as err:
        raise TypeError(f"source needs a function, class, method or module, got {obj!r}") from err
    whole = textwrap.dedent("".join(lines)).rstrip("\n")
    code = whole.split("\n")
    first, last = 0, len(code)
    if start_at is not None:
        hits = [i for i, line in enumerate(code) if start_at in line]
        if not hits:
            raise ValueError(f"start_at={start_at!r} is not in the source of {obj!r}")
        first = hits[0]
    if end_at is not None:
        hits = [i for i, line in enumerate(code) if end_at in line and i >= first]
        if not hits:
            raise ValueError(f"end_at={end_at!r} is not in the source of {obj!r} after start_at")
        last = hits[0] + 1
    if end_before is not None:
        hits = [i for i, line in enumerate(code) if end_before in line and i > first]
        if not hits:
            raise ValueError(f"end_before={end_before!r} is not in the source of {obj!r}")
        last = hits[0]
    code = plain_docstrings(code, docstring_lines(whole))
    if not checks:
        ranges = [(a, b) for a, b in check_lines(whole) if a >= first and b < last]
        kept = fold_checks(code[first:last], [(a - first, b - first) for a, b in ranges])
    else:
        kept = code[first:last]
    text = textwrap.dedent("\n".join(kept))
    qualname = getattr(obj, "__qualname__", getattr(obj, "__name__", ""))
    where = f"{_package_path(Path(cast(str, file)))}" + (f", {qualname}" if qualname else "")
    return Listing(text, where)


class Table:
    """Rows under a header: an HTML table, and aligned columns as plain text."""

    def __init__(self, rows: Sequence[Sequence], header: Sequence[str], caption: str | None):
        self.header = [str(h) for h in header]
        self.rows = [[str(cell) for cell in row] for row in rows]
        for i, row in enumerate(self.rows):
            if len(row) != len(self.header):
                raise ValueError(
                    f"table row {i} has {len(row)} cells but the header has {len(self.header)}"
                )
        self.caption = caption

    def _repr_html_(self) -> str:
        def cells(row, tag):
            return "".join(f"<{tag}>{_inline(c)}</{tag}>" for c in row)

        head = f"<thead><tr>{cells(self.header, 'th')}</tr></thead>"
        body = "".join(f"<tr>{cells(row, 'td')}</tr>" for row in self.rows)
        caption = f"<caption>{_inline(self.caption)}</caption>" if self.caption else ""
        return f'<table class="tl-table">{caption}{head}<tbody>{body}</tbody></table>'

    def __repr__(self) -> str:
        columns = [self.header, *self.rows]
        widths = [max(len(row[i]) for row in columns) for i in range(len(self.header))]
        lines = [
            "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in columns
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(([self.caption] if self.caption else []) + lines)


def _inline(text: str) -> str:
    """Escape HTML and render the prose's inline markup: `code`, *emphasis* and $math$
    (as ``\\(...\\)``, which MathJax typesets in JupyterLab and on the site)."""
    escaped = html.escape(text, quote=False)
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
    escaped = re.sub(r"\$([^$]+)\$", r"\\(\1\\)", escaped)
    return re.sub(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])", r"<em>\1</em>", escaped)


def table(rows: Iterable[Sequence], header: Sequence[str], caption: str | None = None) -> Table:
    """Show ``rows`` (sequences of cells, turned to text) under ``header`` as a table."""
    return Table(list(rows), header, caption)
