"""The words that go with the book's figures: captions and text alternatives, by figure name.

A chapter's code cell shows a figure with its name only, ``viz.figure(fig, "ch05-variance")``,
and the caption appears once, under the picture, with its number. The words live in one
Markdown file per chapter, ``transformer_lab/viz/captions/chNN.md``::

    ## ch05-variance

    Measured variance of $q \\cdot k$ ... (the caption: one or more lines)

    alt: Log-log plot of ... (the text alternative, for readers who cannot see the picture)

An interactive view (``viz.show``) has an ``alt:`` line and no caption. Words that quote
numbers computed on the page are marked ``## ch04-qkv-shapes (formatted)``; they name the
numbers as fields, ``{d_k}`` or ``{loss:.2f}``, and the call passes them:
``viz.figure(fig, "ch04-qkv-shapes", d_k=d_k)``. Only such words are formatted, so braces
of LaTeX are written doubled (``{{``) there alone.
"""

from __future__ import annotations

import re
import string
from functools import cache
from pathlib import Path

__all__ = ["CAPTIONS", "figure_words", "chapter_words"]

CAPTIONS = Path(__file__).with_name("captions")
_NAME = re.compile(r"^ch(\d{2})-[a-z0-9-]+$")
_HEADING = re.compile(r"^## (\S+)( \(formatted\))?\s*$")


@cache
def chapter_words(chapter: int) -> dict[str, dict[str, str]]:
    """Every figure's words in chapter ``chapter``'s file: {name: {"caption", "alt",
    "formatted"}}, where "formatted" is "yes" for words with fields to fill."""
    if isinstance(chapter, bool) or not isinstance(chapter, int) or not 0 <= chapter <= 99:
        raise ValueError(f"chapter must be an int from 0 to 99, got {chapter!r}")
    path = CAPTIONS / f"ch{chapter:02d}.md"
    if not path.is_file():
        return {}
    words: dict[str, dict[str, str]] = {}
    name, formatted, lines = None, False, []
    for line in [*path.read_text(encoding="utf-8").split("\n"), "## end"]:
        heading = _HEADING.match(line)
        if heading is None:
            lines.append(line)
            continue
        if name is not None:
            if name in words:
                raise ValueError(f"{path} names figure {name!r} twice")
            words[name] = _entry(path, name, lines, formatted)
        name, formatted, lines = heading.group(1), bool(heading.group(2)), []
    return words


def _entry(path: Path, name: str, lines: list[str], formatted: bool) -> dict[str, str]:
    alt_at = [i for i, line in enumerate(lines) if line.startswith("alt:")]
    if len(alt_at) != 1:
        raise ValueError(f"{path}: figure {name!r} needs one line starting with 'alt:'")
    caption = "\n".join(lines[: alt_at[0]]).strip()
    alt = " ".join(s.strip() for s in lines[alt_at[0] :]).removeprefix("alt:").strip()
    return {"caption": caption, "alt": alt, "formatted": "yes" if formatted else ""}


def figure_words(name: str, values: dict | None = None) -> dict[str, str]:
    """The caption and alt of figure ``name``, with ``values`` filled into their fields."""
    match = _NAME.match(name) if isinstance(name, str) else None
    if match is None:
        raise ValueError(f"figure name must look like 'ch02-some-words', got {name!r}")
    words = chapter_words(int(match.group(1))).get(name)
    where = CAPTIONS / f"ch{match.group(1)}.md"
    if words is None:
        raise ValueError(
            f"no words for figure {name!r}: add a block '## {name}' with its caption and an "
            f"'alt:' line to {where}"
        )
    values = values or {}
    if not words["formatted"]:
        if values:
            raise ValueError(
                f"figure {name!r} takes no values (its words in {where} are not marked "
                f"'(formatted)'), got {sorted(values)}"
            )
        return {"caption": words["caption"], "alt": words["alt"]}
    fields = {
        field.split(".")[0].split("[")[0]
        for text in (words["caption"], words["alt"])
        for _, field, _, _ in string.Formatter().parse(text)
        if field
    }
    unknown = sorted(set(values) - fields)
    missing = sorted(fields - set(values))
    if unknown or missing:
        raise ValueError(
            f"figure {name!r} in {where} has the fields {sorted(fields)}; "
            f"got values for {sorted(values)}"
        )
    return {key: words[key].format(**values) for key in ("caption", "alt")}
