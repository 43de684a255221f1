"""Every measured number in a chapter's prose has something behind it.

A number written into the prose as a literal goes stale silently when the code changes.
The book's rule: a decimal number in a chapter's text is either computed where it stands
(an ``{eval}`` role), or held by the chapter's code (a hidden assertion, or a comment beside
one, names it), or it sits in a Markdown table that a test under ``tests/`` reads from the
chapter and re-derives, or a test that reads the chapter derives the sentence from such a
table (:data:`CHECKED_BY`), or it is listed below in :data:`ALLOWED` with the reason it
needs no check (a cited figure, a setting, arithmetic shown in the math beside it).

Math (``$...$``), inline code, links, figure and section numbers are not prose numbers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.md"))

# (chapter stem, number as written): why it needs no computation or assertion
ALLOWED = {
    ("01_words_to_vectors", "1.41"): "sqrt(2), the distance in the worked example's math",
    ("01_words_to_vectors", "4.47"): "sqrt(20), the distance in the worked example's math",
    ("11_encoder_decoder", "4.5"): "cited: the training set of Vaswani et al. (2017) and, "
    "in the race paragraph, the ratio that test_longer_encoder_decoder.py checks against "
    "the table above it",
    ("12_bert", "0.005"): "arithmetic: 0.1 / 1995 in the math beside it",
    ("13_gpt", "1.47"): "cited: nanoGPT's reported loss (Karpathy, 2023)",
    ("17_recall", "0.001"): "a setting: the learning rates the sweep tries",
    ("17_recall", "0.003"): "a setting: the learning rates the sweep tries",
    ("18_data_parallel", "1.47"): "cited: nanoGPT's reported loss (Karpathy, 2023)",
}

# (chapter stem, number as written): the test that derives the sentence from the chapter's
# table (it reads the chapter and asserts the phrase)
CHECKED_BY = {
    ("11_encoder_decoder", "1.25"): "tests/experiments/test_longer_encoder_decoder.py",
    ("11_encoder_decoder", "0.20"): "tests/experiments/test_longer_encoder_decoder.py",
    ("11_encoder_decoder", "0.35"): "tests/experiments/test_longer_encoder_decoder.py",
    ("11_encoder_decoder", "0.007"): "tests/experiments/test_longer_encoder_decoder.py",
    ("11_encoder_decoder", "0.020"): "tests/experiments/test_longer_encoder_decoder.py",
}

NUMBER = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])")
NOT_PROSE = [
    re.compile(r"\{eval\}`[^`]*`"),  # computed where it stands
    re.compile(r"\$\$.*?\$\$", re.S),
    re.compile(r"\$[^$\n]*\$"),  # math
    re.compile(r"`[^`\n]*`"),  # inline code
    re.compile(r"\[[^\]\n]*\]\([^)\n]*\)"),  # links (citations carry years and sections)
    re.compile(r"\b(?:Figure|Figures|Table|section|sections|Section|Sections)\s+[\d.\-, and]+"),
]


def _parts(path: Path) -> tuple[str, list[str], list[str]]:
    """The chapter's code cells (one string), its prose lines and its table lines."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)  # jupytext header
    code = "\n".join(re.findall(r"```\{code-cell\}.*?```", text, flags=re.S))
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    for pattern in NOT_PROSE:
        prose = pattern.sub(" ", prose)
    lines = prose.split("\n")
    tables = [line for line in lines if line.lstrip().startswith("|")]
    return code, [line for line in lines if not line.lstrip().startswith("|")], tables


def _tests_reading(stem: str) -> list[Path]:
    """Test files that open the chapter's Markdown (they parse its tables)."""
    name = f"{stem}.md"
    return [p for p in (ROOT / "tests").rglob("test_*.py") if name in p.read_text(encoding="utf-8")]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_prose_number_is_computed_asserted_or_explained(path):
    code, prose, _ = _parts(path)
    loose = []
    for line in prose:
        for number in NUMBER.findall(line):
            if number in code or (path.stem, number) in ALLOWED | CHECKED_BY.keys():
                continue
            loose.append(f"{number!r} in: {line.strip()[:120]}")
    assert not loose, (
        f"{path.name}: numbers in the prose with nothing behind them; compute them with "
        "{eval}, hold them in a hidden assertion, or list them in ALLOWED with a reason:\n"
        + "\n".join(loose)
    )


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_table_of_measurements_is_read_by_a_test(path):
    _, _, tables = _parts(path)
    measured = [line for line in tables if NUMBER.search(line)]
    if not measured:
        return
    readers = _tests_reading(path.stem)
    assert readers, (
        f"{path.name} has Markdown tables of measured numbers ({len(measured)} rows) but no "
        "test under tests/ reads the chapter to re-derive them"
    )


def test_every_checking_test_reads_its_chapter():
    for (stem, _), test in CHECKED_BY.items():
        assert f"{stem}.md" in (ROOT / test).read_text(encoding="utf-8"), (stem, test)


def test_every_allowed_number_is_still_on_its_page():
    stale = []
    for stem, number in {**ALLOWED, **CHECKED_BY}:
        _, prose, _ = _parts(BOOK / f"{stem}.md")
        if not any(number in NUMBER.findall(line) for line in prose):
            stale.append((stem, number))
    assert not stale, f"ALLOWED lists numbers no longer in the prose: {stale}"


def test_the_check_catches_a_loose_number(tmp_path):
    page = tmp_path / "99_example.md"
    page.write_text(
        "---\njupytext: x\n---\n# A page\n\nThe model reaches 0.734 here, "
        "{eval}`f'{x:.3f}'` there, and $0.25$ in math.\n\n"
        "```{code-cell} ipython3\nassert x > 0.5\n```\n",
        encoding="utf-8",
    )
    code, prose, _ = _parts(page)
    found = [n for line in prose for n in NUMBER.findall(line) if n not in code]
    assert found == ["0.734"]
