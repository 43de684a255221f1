"""One way of doing things across chapters, checked on the chapters' sources.

- every figure is a numbered, captioned ``glue:figure`` (no top-level ``plt.show()``; a
  widget's redraw function may call it), with a text alternative;
- every ``{glue:text}`` and ``{glue:figure}`` in the prose names a value the same chapter glues,
  so no number in the prose is typed by hand where the page computes it;
- every exercise can be answered: it has a checker call, a worked answer behind a toggle
  (a ``dropdown`` admonition) or an answer cell hidden behind a toggle (``hide-cell`` /
  ``hide-input``);
- no chapter quotes "What to expect" from memory: such a block sits beside a cell that computes
  what it says (a hidden or toggled answer cell in the same exercise).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
CHAPTERS = sorted(p for p in BOOK.glob("[0-9][0-9]_*.md"))
GLUE_CALL = re.compile(r"""glue\(\s*["']([^"']+)["']""")
GLUE_ROLE = re.compile(r"\{glue(?::text|:figure|:any|:math)?\}`([^`<]+?)(?::[^`]*)?`")
GLUE_FIGURE = re.compile(r"^```\{glue:figure\}\s+(\S+)\s*$", re.MULTILINE)
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
def test_figures_are_numbered_glue_figures(md):
    text = md.read_text()
    # a widget's redraw function may call plt.show() (indented); a figure of the page may not
    assert not re.search(r"^plt\.show\(\)", _code_cells(text), re.M), (
        f"{md.name}: a figure shown with plt.show(); glue it and show it with a captioned "
        "{glue:figure} block so it is numbered"
    )
    for block in re.findall(r"^```\{glue:figure\}.*?^```", text, re.S | re.M):
        name = block.splitlines()[0].split()[-1]
        assert ":alt:" in block, f"{md.name}: figure {name} has no :alt: text"
        assert ":name:" in block, f"{md.name}: figure {name} has no :name: (it cannot be cited)"
        caption = [
            line for line in block.splitlines()[1:-1] if line.strip() and not line.startswith(":")
        ]
        assert caption, f"{md.name}: figure {name} has no caption"


@pytest.mark.parametrize("md", CHAPTERS, ids=_ids(CHAPTERS))
def test_every_glued_reference_is_glued_on_the_page(md):
    text = md.read_text()
    glued = set(GLUE_CALL.findall(_code_cells(text)))
    used = set(GLUE_ROLE.findall(text)) | set(GLUE_FIGURE.findall(text))
    missing = sorted(used - glued)
    assert not missing, f"{md.name}: the prose uses glued values nobody glues: {missing}"


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
