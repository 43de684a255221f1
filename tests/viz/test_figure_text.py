"""The figures' words (transformer_lab.viz.figure_text): one Markdown file per chapter, read
by name, with the numbers a caption quotes filled in by the call."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from transformer_lab.viz import display as D  # noqa: E402
from transformer_lab.viz import figure_text as FT  # noqa: E402
from transformer_lab.viz import plotly as P  # noqa: E402

WORDS = """# a header the reader never sees

## ch98-plain

A caption with $\\sqrt{d_k}$
on two lines.

alt: Two bars,
one tall.

## ch98-numbers (formatted)

{n} tokens, loss {loss:.2f}, and $\\sqrt{{d_k}}$.

alt: {n} columns.

## ch98-view

alt: A slider over the heads.
"""


@pytest.fixture
def chapter_98(tmp_path, monkeypatch):
    (tmp_path / "ch98.md").write_text(WORDS)
    monkeypatch.setattr(FT, "CAPTIONS", tmp_path)
    FT.chapter_words.cache_clear()
    yield tmp_path
    FT.chapter_words.cache_clear()


def test_words_are_read_by_name_caption_lines_kept_alt_lines_joined(chapter_98):
    words = FT.figure_words("ch98-plain")
    assert words == {
        "caption": "A caption with $\\sqrt{d_k}$\non two lines.",
        "alt": "Two bars, one tall.",
    }
    assert FT.figure_words("ch98-view") == {"caption": "", "alt": "A slider over the heads."}


def test_formatted_words_take_exactly_their_fields(chapter_98):
    words = FT.figure_words("ch98-numbers", {"n": 4, "loss": 1.23456})
    assert words["caption"] == "4 tokens, loss 1.23, and $\\sqrt{d_k}$."
    assert words["alt"] == "4 columns."
    with pytest.raises(ValueError, match=r"has the fields \['loss', 'n'\]; got values for \['n'\]"):
        FT.figure_words("ch98-numbers", {"n": 4})
    with pytest.raises(ValueError, match="got values for"):
        FT.figure_words("ch98-numbers")
    with pytest.raises(ValueError, match="takes no values"):
        FT.figure_words("ch98-plain", {"n": 4})


def test_a_missing_name_or_a_malformed_file_is_named(chapter_98):
    with pytest.raises(ValueError, match=r"no words for figure 'ch98-other': add a block"):
        FT.figure_words("ch98-other")
    with pytest.raises(ValueError, match="no words for figure 'ch97-x'"):
        FT.figure_words("ch97-x")  # no file for chapter 97
    (chapter_98 / "ch96.md").write_text("## ch96-a\n\nno alt here\n")
    with pytest.raises(ValueError, match="needs one line starting with 'alt:'"):
        FT.chapter_words(96)
    (chapter_98 / "ch95.md").write_text("## ch95-a\n\nalt: x\n\n## ch95-a\n\nalt: y\n")
    with pytest.raises(ValueError, match="names figure 'ch95-a' twice"):
        FT.chapter_words(95)


def test_the_figure_and_the_view_of_the_book_take_their_words_by_name(chapter_98):
    D._numbers.clear()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    shown = D.figure(fig, "ch98-numbers", n=3, loss=0.5)
    html = shown._repr_html_()
    assert "Figure 98.1.</span> 3 tokens, loss 0.50" in html and 'alt="3 columns."' in html
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="a figure with its own caption and alt takes none"):
        D.figure(fig, "ch98-plain", caption="c", alt="a", n=3)
    plt.close("all")
    with pytest.raises(ValueError, match="takes its alt from its name"):
        P.show(object(), "ch98-view", alt="both")
    with pytest.raises(ValueError, match="need the name of a view"):
        P.show(object(), n=3)


def test_every_chapter_file_reads_and_every_formatted_text_has_fields():
    for path in sorted(FT.CAPTIONS.glob("ch*.md")):
        words = FT.chapter_words(int(path.stem[2:]))
        assert words, f"{path} holds no figure"
        for name, entry in words.items():
            assert name.startswith(path.stem + "-"), f"{path}: {name} of another chapter"
            assert entry["alt"], f"{path}: {name} has an empty alt"
            if entry["formatted"]:
                assert "{" in entry["caption"] + entry["alt"], f"{name}: formatted, no field"
