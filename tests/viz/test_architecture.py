"""The architecture diagram: well-formed, every link live, variants and highlights right."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from script_loader import load_script

from transformer_lab.viz.chapters import architecture as ARCHITECTURE

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
toc_files = load_script("site/chapters").toc_files

SVG = "{http://www.w3.org/2000/svg}"
CALL = re.compile(r"""where_we_are\(\s*["']([0-9a-z_]+)["']""")


def parts(variant: str) -> set[str]:
    return {b.part for b in ARCHITECTURE.boxes(variant)}


@pytest.mark.parametrize("variant", ARCHITECTURE.VARIANTS)
def test_svg_and_html_are_well_formed_xml(variant):
    svg = ET.fromstring(ARCHITECTURE.architecture_svg(variant, ["add_norm"]))
    assert svg.tag == f"{SVG}svg" and svg.get("role") == "img"
    groups = svg.findall(f".//{SVG}g[@data-box]")
    assert {g.get("data-box") for g in groups} == {b.id for b in ARCHITECTURE.boxes(variant)}
    on = {g.get("data-part") for g in groups if "tl-arch-on" in g.get("class")}
    assert on == {"add_norm"}
    figure = ET.fromstring(ARCHITECTURE.architecture_html(variant, link="site"))
    assert figure.tag == "figure" and figure.find("figcaption") is not None


@pytest.mark.parametrize("variant", ARCHITECTURE.VARIANTS)
def test_every_box_links_to_a_chapter_in_the_toc(variant):
    toc = set(toc_files())
    for box in ARCHITECTURE.boxes(variant):
        assert (BOOK / f"{box.chapter}.md").exists(), f"{box.label}: no book/{box.chapter}.md"
        assert f"book/{box.chapter}" in toc, f"{box.label}: {box.chapter} not in _toc.yml"
        assert box.chapter in ARCHITECTURE.CHAPTER_TITLES
    for link, suffix in (("site", ".html"), ("lab", ".md")):
        figure = ET.fromstring(ARCHITECTURE.architecture_html(variant, link=link))
        hits = [a for a in figure.iter("a") if "tl-arch-hit" in (a.get("class") or "")]
        assert len(hits) == len(ARCHITECTURE.boxes(variant))
        for a in figure.iter("a"):
            href = a.get("href")
            assert href.endswith(suffix) and "/" not in href, href
            assert f"book/{href[: -len(suffix)]}" in toc, href


def test_chapter_titles_are_the_chapters_headings():
    for chapter, title in ARCHITECTURE.CHAPTER_TITLES.items():
        heading = re.search(r"^# (.+)$", (BOOK / f"{chapter}.md").read_text(), re.M).group(1)
        plain = heading.replace("$\\sqrt{d_k}$", "√d_k")
        assert plain == title, f"{chapter}: {title!r} but the chapter says {heading!r}"


def test_auto_links_follow_the_jupyter_server(monkeypatch):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert 'href="07_positional_encoding.html"' in ARCHITECTURE.architecture_html()
    monkeypatch.setenv("JPY_SESSION_NAME", "book/04_self_attention.md")
    assert 'href="07_positional_encoding.md"' in ARCHITECTURE.architecture_html()


def test_highlight_names_are_checked():
    with pytest.raises(ValueError, match="known parts are .*'add_norm'"):
        ARCHITECTURE.architecture_svg(highlight=["attention"])
    with pytest.raises(ValueError, match="encoder variant has no \\['cross_attention'\\]"):
        ARCHITECTURE.architecture_svg("encoder", highlight="cross_attention")
    with pytest.raises(ValueError, match="variant must be one of"):
        ARCHITECTURE.boxes("bert")


def test_variants_drop_the_right_parts():
    full = parts("encoder-decoder")
    assert full == set(ARCHITECTURE.PARTS)
    encoder, decoder = parts("encoder"), parts("decoder")
    assert not encoder & {"cross_attention", "masked_self_attention", "decoder_block"}
    assert not decoder & {"cross_attention", "self_attention", "encoder_block"}
    assert {"masked_self_attention", "decoder_block", "output"} <= decoder
    assert {"self_attention", "encoder_block", "output"} <= encoder
    assert all(b.id.startswith("enc-") for b in ARCHITECTURE.boxes("encoder"))
    assert all(b.id.startswith("dec-") for b in ARCHITECTURE.boxes("decoder"))
    n_norms = {
        v: sum(b.part == "add_norm" for b in ARCHITECTURE.boxes(v)) for v in ARCHITECTURE.VARIANTS
    }
    assert n_norms == {"encoder-decoder": 5, "encoder": 2, "decoder": 2}


@pytest.mark.parametrize("variant", ARCHITECTURE.VARIANTS)
def test_boxes_do_not_overlap_unless_nested(variant):
    found = ARCHITECTURE.boxes(variant)
    for i, a in enumerate(found):
        for b in found[i + 1 :]:
            overlap = not (
                a.x + a.w <= b.x or b.x + b.w <= a.x or a.y + a.h <= b.y or b.y + b.h <= a.y
            )
            inside = a.x <= b.x and a.y <= b.y and b.x + b.w <= a.x + a.w and b.y + b.h <= a.y + a.h
            assert not overlap or inside, f"{a.id} and {b.id} overlap"


@pytest.mark.parametrize("variant", ARCHITECTURE.VARIANTS)
def test_text_alternative_names_every_box(variant):
    svg = ET.fromstring(ARCHITECTURE.architecture_svg(variant))
    desc = svg.find(f"{SVG}desc").text
    assert svg.get("aria-labelledby").split() == [svg.find(f"{SVG}title").get("id"),
                                                  svg.find(f"{SVG}desc").get("id")]  # fmt: skip
    figure = ET.fromstring(ARCHITECTURE.architecture_html(variant, link="site"))
    listed = {a.text for a in figure.find("figcaption").iter("a")}
    for box in ARCHITECTURE.boxes(variant):
        assert box.label in listed, f"{box.label} missing from the caption's list"
        if box.kind != "detail":
            assert box.label in desc, f"{box.label} missing from the description"
    assert "softmax(QKᵀ/√dₖ)V" in desc and "h heads" in desc
    assert repr(ARCHITECTURE.architecture_diagram(variant)) == desc


def test_each_chapter_shows_its_own_highlight():
    views = {(v, frozenset(p)) for v, p in ARCHITECTURE.CHAPTER_VIEWS.values()}
    assert len(views) == len(ARCHITECTURE.CHAPTER_VIEWS), "two chapters highlight the same parts"
    for chapter, (variant, highlight) in ARCHITECTURE.CHAPTER_VIEWS.items():
        figure = ARCHITECTURE.architecture_html(variant, highlight, link="site")
        assert "tl-arch-on" in figure, chapter
    # CHAPTER_VIEWS is the one list of the chapters that show the diagram near their top
    shown = []
    for md in sorted(BOOK.glob("[0-9][0-9]_*.md")):
        calls = CALL.findall(md.read_text())
        assert calls in ([], [md.stem]), f"{md.name} shows another chapter's diagram: {calls}"
        if calls:
            assert md.stem in ARCHITECTURE.CHAPTER_VIEWS, f"{md.name}: no view in CHAPTER_VIEWS"
            shown.append(md.stem)
    missing = sorted(set(ARCHITECTURE.CHAPTER_VIEWS) - set(shown))
    assert not missing, f"chapters without their diagram: {missing}"


def test_where_we_are_captions_name_the_highlight():
    caption = ARCHITECTURE.architecture_html(
        *ARCHITECTURE.CHAPTER_VIEWS["07_positional_encoding"], link="site"
    )
    assert "highlighted: Positional encoding" in caption
    text = ARCHITECTURE.where_we_are("13_gpt")._repr_html_()
    assert "Where chapter 13 sits" in text and 'data-variant="decoder"' in text
