"""The attention timeline: every entry cites a work in the book's bibliography, the years
run in order, and both figures draw every entry."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import pytest

from transformer_lab.viz.chapters.timeline import (
    FAMILIES,
    LABEL_HEIGHTS,
    TIMELINE,
    TimelineEntry,
    timeline_figure,
    timeline_plotly,
)

matplotlib.use("Agg")

BIB = Path(__file__).resolve().parents[2] / "book" / "references.bib"


def bib_entries() -> dict[str, str]:
    """key -> the text of its entry in book/references.bib."""
    text = BIB.read_text(encoding="utf-8")
    starts = list(re.finditer(r"^@\w+\{([^,\s]+),", text, re.M))
    return {
        m.group(1): text[m.start() : starts[i + 1].start() if i + 1 < len(starts) else None]
        for i, m in enumerate(starts)
    }


def test_every_key_is_in_the_bibliography_with_the_same_year():
    entries = bib_entries()
    missing = [e.key for e in TIMELINE if e.key not in entries]
    assert not missing, f"not in book/references.bib: {missing}"
    for e in TIMELINE:
        year = re.search(r"year\s*=\s*\{(\d{4})\}", entries[e.key])
        assert year and int(year.group(1)) == e.year, (e.key, e.year)


def test_years_are_in_order_and_keys_distinct():
    years = [e.year for e in TIMELINE]
    assert years == sorted(years)
    assert len({e.key for e in TIMELINE}) == len(TIMELINE)
    assert years[0] == 2014 and "vaswani2017attention" in {e.key for e in TIMELINE}
    assert {e.family for e in TIMELINE} == set(FAMILIES)


def test_matplotlib_figure_labels_every_entry():
    fig = timeline_figure()
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert len(texts) == len(TIMELINE)
    for e, text in zip(TIMELINE, texts, strict=True):
        assert text.startswith(e.name)
    boxes = [t.get_position() for t in fig.axes[0].texts]
    assert len(set(boxes)) == len(boxes)  # no two labels at the same place
    matplotlib.pyplot.close(fig)


def test_plotly_hover_names_each_citation():
    fig = timeline_plotly()
    points = [t for t in fig.data if t.mode == "markers+text"]
    names = [n for t in points for n in t.text]
    cited = [c[0] for t in points for c in t.customdata]
    assert sorted(names) == sorted(e.name for e in TIMELINE)
    assert sorted(cited) == sorted(f"{e.who} {e.year}" for e in TIMELINE)


def test_authors_as_cited_match_the_bibliography():
    entries = bib_entries()
    for e in TIMELINE:
        author = re.search(r"author\s*=\s*\{(.+?)\},?\n", entries[e.key]).group(1)
        first = author.split(" and ")[0].split(",")[0].strip()
        assert e.who == f"{first} et al.", (e.key, e.who, first)


def test_bad_entries_are_refused():
    with pytest.raises(ValueError, match="family must be one of"):
        TimelineEntry(2020, "x", "k", "A et al.", "rnn", "y")
    with pytest.raises(TypeError, match="TimelineEntry objects"):
        timeline_figure([("2017", "Transformer")])


def test_moved_labels_keep_their_stems_and_the_title_is_set():
    fig = timeline_figure(title="thirteen papers")
    ax = fig.axes[0]
    assert ax.get_title() == "thirteen papers"
    by_name = {e.name: text for e, text in zip(TIMELINE, ax.texts, strict=True)}
    stems = {e.name: line for e, line in zip(TIMELINE, ax.lines[1:], strict=True)}
    for name, height in LABEL_HEIGHTS.items():
        assert by_name[name].get_position()[1] == height
        assert list(stems[name].get_ydata()) == [0, height]
    assert all(len(line) <= 22 for t in ax.texts for line in t.get_text().split("\n")[1:])
    matplotlib.pyplot.close(fig)


def test_plotly_title_fits_and_the_first_names_are_not_clipped():
    fig = timeline_plotly()
    assert fig.layout.xaxis.range == (2012.0, 2026.0)
    assert fig.layout.margin.t > 30 and all(t.cliponaxis is False for t in fig.data)
