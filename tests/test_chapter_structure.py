"""One way of doing things across chapters, checked on the chapters' sources.

- every figure is numbered and captioned by ``viz.figure`` (no top-level ``plt.show()``; a
  widget's redraw function may call it), with a text alternative;
- no markup that only the site renders (glue, cite and doc roles, literalinclude): numbers
  in the prose are ``{eval}`` expressions, citations links (``tests/test_book.py`` checks
  their text), listings ``viz.source``;
- every exercise can be answered: it has a checker call, a worked answer behind a toggle
  (a ``dropdown`` admonition) or an answer cell hidden behind a toggle (``hide-cell`` /
  ``hide-input``);
- no chapter quotes "What to expect" from memory: such a block sits beside a cell that computes
  what it says (a hidden or toggled answer cell in the same exercise).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from transformer_lab.viz.figure_text import chapter_words

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
CHAPTERS = sorted(p for p in BOOK.glob("[0-9][0-9]_*.md"))
SITE_ONLY = ["{glue", "{cite", "{doc}", "{numref}", "{literalinclude}", "{bibliography}"]
EXERCISE = re.compile(r"^\*\*(?:Exercise )?(\d+)[.\s]", re.MULTILINE)
ANSWER = re.compile(r"check_[a-z_]+\(|:class: dropdown|:tags: \[[^\]]*hide-(?:cell|input)[^\]]*\]")


def _ids(paths):
    return [p.stem for p in paths]


def _code_cells(text: str) -> str:
    return "\n".join(re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```", text, re.S | re.M))


def _exercises(text: str) -> list[tuple[str, str]]:
    """(number, text) of each exercise in the chapter's Exercises section."""
    start = text.find("\n## Exercises")
    if start < 0:
        return []
    end = text.find("\n## ", start + 5)
    section = text[start : end if end > 0 else len(text)]
    marks = list(EXERCISE.finditer(section))
    return [
        (m.group(1), section[m.start() : marks[i + 1].start() if i + 1 < len(marks) else None])
        for i, m in enumerate(marks)
    ]


def test_the_chapters_are_found():
    assert len(CHAPTERS) >= 13


@pytest.mark.parametrize("md", CHAPTERS, ids=_ids(CHAPTERS))
def test_figures_are_numbered_and_captioned(md):
    text = md.read_text()
    code = _code_cells(text)
    # a widget's redraw function may call plt.show() (indented); a figure of the page may not
    assert not re.search(r"^plt\.show\(\)", code, re.M), (
        f"{md.name}: a figure shown with plt.show(); show it with viz.figure(fig, name) "
        "(its caption and alt in viz/captions/chNN.md) so it is numbered and captioned in "
        "JupyterLab and on the site"
    )
    import jupytext

    sources = [c.source for c in jupytext.read(md).cells if c.cell_type == "code"]
    trees = [ast.parse(_python(source)) for source in sources]
    calls = [
        node
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("figure", "show")
        and getattr(node.func.value, "id", "") == "viz"
    ]
    names = []
    for call in calls:
        what = f"viz.{call.func.attr}"
        keywords = {k.arg for k in call.keywords}
        assert len(call.args) == 2, f"{md.name}: {what} needs the figure and its name"
        assert not {"caption", "alt"} & keywords, (
            f"{md.name}: {what} with caption= or alt= in the reader's code; the words go "
            "in transformer_lab/viz/captions/"
        )
        name = call.args[1].value
        assert name.startswith(f"ch{md.name[:2]}-"), f"{md.name}: figure {name} of another chapter"
        names.append(name)
    assert len(names) == len(set(names)), f"{md.name}: a figure name is used twice: {names}"
    words = chapter_words(int(md.name[:2]))
    assert sorted(names) == sorted(words), (
        f"{md.name}: the figures shown {sorted(set(names) - set(words))} have no words in "
        f"viz/captions, and the words of {sorted(set(words) - set(names))} are not shown"
    )
    for name, call in zip(names, calls, strict=True):
        has_caption = bool(words[name]["caption"])
        assert has_caption == (call.func.attr == "figure"), (
            f"{md.name}: {name}: a numbered figure has a caption, a view (viz.show) none"
        )


@pytest.mark.parametrize("md", CHAPTERS, ids=_ids(CHAPTERS))
def test_figure_words_are_not_in_the_code(md):
    """A caption is published once, under its figure: no code cell spells out its words."""
    code = " ".join(_code_cells(md.read_text()).split())
    for name, words in chapter_words(int(md.name[:2])).items():
        for kind in ("caption", "alt"):
            text = " ".join(words[kind].split())
            # the longest run of words without a field: the part no computed number changes
            plain = max(re.split(r"\{[^{}]*\}", text), key=len).strip()
            if len(plain) >= 30:
                assert plain not in code, f"{md.name}: the {kind} of {name} is in a code cell"


@pytest.mark.parametrize("md", CHAPTERS, ids=_ids(CHAPTERS))
def test_no_markup_that_only_the_site_renders(md):
    """Numbers are {eval} expressions, figures viz.figure, listings viz.source, citations
    links: what renders in JupyterLab (jupyterlab-myst) and on the site alike."""
    text = md.read_text()
    for markup in SITE_ONLY:
        assert markup not in text, f"{md.name} uses {markup}, which JupyterLab shows raw"
    assert "myst_nb" not in _code_cells(text), f"{md.name}: site plumbing in a code cell"
    assert "plt.close(" not in _code_cells(text), f"{md.name}: plt.close in a code cell"


def _python(code: str) -> str:
    """Code cells as Python: IPython's magics and shell lines blanked."""
    return "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line for line in code.split("\n")
    )


@pytest.mark.parametrize("md", CHAPTERS, ids=_ids(CHAPTERS))
def test_every_exercise_has_a_checker_or_an_answer(md):
    exercises = _exercises(md.read_text())
    assert 2 <= len(exercises) <= 6, f"{md.name}: {len(exercises)} exercises; expected 2-6"
    unanswered = [n for n, body in exercises if not ANSWER.search(body)]
    assert not unanswered, (
        f"{md.name}: exercise(s) {unanswered} have neither a checker nor a worked answer "
        "behind a toggle"
    )


@pytest.mark.parametrize("md", CHAPTERS, ids=_ids(CHAPTERS))
def test_what_to_expect_is_computed(md):
    for number, body in _exercises(md.read_text()):
        if "What to expect" not in body:
            continue
        assert re.search(r":tags: \[[^\]]*(?:hide|remove)-(?:cell|input)", body), (
            f"{md.name}: exercise {number} says what to expect without a cell that computes it"
        )


def test_exercise_parser_reads_both_heading_forms():
    text = (
        "intro\n## Exercises\n\n**1. One (checked).** a\n\ncheck_x(f)\n\n"
        "**Exercise 2 (by hand).** b\n\n```{admonition} Answer\n:class: dropdown\nx\n```\n"
        "\n## Summary\n**3. not an exercise**\n"
    )
    found = _exercises(text)
    assert [n for n, _ in found] == ["1", "2"]
    assert all(ANSWER.search(body) for _, body in found)
    assert not ANSWER.search("**4. Think.** Why?\n")
