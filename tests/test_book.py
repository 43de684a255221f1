"""The book's sources: table of contents, notebook pairs, chapter headers and citations.

- every chapter notebook in ``book/`` is listed in ``_toc.yml``, every entry of the table of
  contents exists, and the chapters are listed in lecture (file-number) order;
- each paired ``.ipynb``, where present, holds the same cells as its ``.md``;
- each chapter starts with the exact jupytext header of the chapter template;
- every key cited in ``book/*.md`` (a link to ``references.md#key`` whose text is the
  entry's author-year label) is in ``book/references.bib``, each entry once, with the
  fields a reference needs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from script_loader import load_script

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
sync_notebooks = load_script("site/sync_notebooks")
references = load_script("site/references")
cells, in_sync = sync_notebooks.cells, sync_notebooks.in_sync
chapter_list = load_script("site/chapters")
is_notebook, toc_files = chapter_list.is_notebook, chapter_list.toc_files


@pytest.fixture(scope="module", autouse=True)
def _pybtex_finds_each_plugin_once():
    """pybtex looks its output backend up among every installed package's entry points each
    time a piece of text is rendered (about 0.01 s, 1,245 times for the references page):
    the lookup is cached for this module, with the same answers."""
    import functools

    plugin = pytest.importorskip("pybtex.plugin")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plugin, "find_plugin", functools.lru_cache(maxsize=None)(plugin.find_plugin))
        yield


HEADER = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""
CHAPTER_NAME = re.compile(r"^\d\d_[a-z0-9_]+\.md$")
# [Vaswani et al., 2017](references.md#vaswani2017attention): (link text, key)
CITATION = re.compile(r"\[([^\]]+)\]\(references\.md#([A-Za-z0-9_:-]+)\)")
BIB_ENTRY = re.compile(r"^@(\w+)\s*\{\s*([^,\s]+)\s*,", re.MULTILINE)
FRONT_AND_BACK = ["book/index", "book/how_to_use", "book/notation", "book/references"]


def chapter_files() -> list[Path]:
    return sorted(p for p in BOOK.glob("*.md") if CHAPTER_NAME.match(p.name))


def notebook_files() -> list[Path]:
    return sorted(p for p in BOOK.glob("*.md") if is_notebook(p))


def test_front_and_back_matter_are_in_the_toc():
    toc = toc_files()
    assert toc[0] == "book/index", "the landing page is the root of the book"
    for name in FRONT_AND_BACK:
        assert name in toc, f"{name} missing from _toc.yml"
    assert toc[-1] == "book/references", "the references page closes the book"


def test_every_chapter_notebook_is_in_the_toc():
    toc = set(toc_files())
    missing = [p.name for p in notebook_files() if f"book/{p.stem}" not in toc]
    assert not missing, f"chapters not listed in _toc.yml: {missing}"


def test_every_toc_entry_exists():
    absent = [name for name in toc_files() if not (ROOT / f"{name}.md").exists()]
    assert not absent, f"_toc.yml lists files that do not exist: {absent}"


def test_toc_lists_each_file_once_and_chapters_in_lecture_order():
    toc = toc_files()
    assert len(toc) == len(set(toc)), "a file is listed twice in _toc.yml"
    numbered = [Path(name).name for name in toc if CHAPTER_NAME.match(Path(name).name + ".md")]
    assert numbered == sorted(numbered), f"chapters out of lecture order: {numbered}"


def test_toc_parts_are_the_planned_ones():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    captions = [part["caption"] for part in toc["parts"]]
    planned = [
        "Getting started",
        "Words and recurrence",
        "Self-attention",
        "The Transformer",
        "Pretrained Transformers",
        "Where attention wins",
        "Beyond one device",
        "A real encoder-decoder: speech",
        "Back matter",
    ]
    assert captions == [c for c in planned if c in captions], captions
    assert captions[0] == "Getting started" and captions[-1] == "Back matter"


@pytest.mark.parametrize("md", chapter_files(), ids=lambda p: p.name)
def test_chapter_has_the_jupytext_header(md):
    text = md.read_text()
    assert text.startswith(HEADER), (
        f"{md.name} must start with the chapter template's jupytext header:\n{HEADER}"
    )
    assert is_notebook(md)


@pytest.mark.parametrize("md", notebook_files(), ids=lambda p: p.name)
def test_paired_notebook_is_in_sync(md):
    ipynb = md.with_suffix(".ipynb")
    if not ipynb.exists():
        pytest.skip(f"{ipynb.name} not created yet (scripts/site/sync_notebooks.py creates it)")
    assert in_sync(md), (
        f"{ipynb.name} differs from {md.name}: run scripts/site/sync_notebooks.py "
        f"({len(cells(md))} cells in the .md, {len(cells(ipynb))} in the .ipynb)"
    )


def test_in_sync_detects_a_stale_pair(tmp_path):
    import jupytext

    md = tmp_path / "01_example.md"
    md.write_text(HEADER + "\n# Example\n\n```{code-cell} ipython3\nx = 1\n```\n")
    jupytext.write(jupytext.read(md), md.with_suffix(".ipynb"))
    assert in_sync(md)
    md.write_text(md.read_text().replace("x = 1", "x = 2"))
    assert not in_sync(md)


def test_a_synced_notebook_is_no_newer_than_its_md(tmp_path):
    """jupytext refuses to open a pair whose .ipynb is newer than its .md and differs from it
    (the folded state lives in the .ipynb only): the sync gives the notebook the .md's time."""
    import os

    md = tmp_path / "01_example.md"
    md.write_text(
        HEADER + "\n# Example\n\n```{code-cell} ipython3\n:tags: [hide-cell]\n\nx = 1\n```\n"
    )
    ipynb = md.with_suffix(".ipynb")
    assert sync_notebooks.sync(md).startswith("created")
    assert ipynb.stat().st_mtime == md.stat().st_mtime
    later = md.stat().st_mtime + 60
    os.utime(ipynb, (later, later))  # e.g. a copy put back by a tool
    assert sync_notebooks.sync(md) == "in sync"
    assert ipynb.stat().st_mtime == md.stat().st_mtime


def bib_entries() -> list[tuple[str, str, str]]:
    """``(type, key, body)`` of every entry in references.bib."""
    text = (BOOK / "references.bib").read_text()
    starts = list(BIB_ENTRY.finditer(text))
    entries = []
    for match, following in zip(starts, [*starts[1:], None], strict=True):
        body = text[match.end() : following.start() if following else len(text)]
        entries.append((match.group(1).lower(), match.group(2), body))
    return entries


def cited_keys() -> dict[str, set[str]]:
    cited: dict[str, set[str]] = {}
    for md in sorted(BOOK.glob("*.md")):
        for _, key in CITATION.findall(md.read_text()):
            cited.setdefault(key, set()).add(md.name)
    return cited


def test_every_citation_reads_as_its_entry():
    """The text of each citation link is the author-year label of the key it links to."""
    wrong = []
    for md in sorted(BOOK.glob("*.md")):
        for text, key in CITATION.findall(md.read_text()):
            if key in references.entries() and text not in (
                references.label(key),
                references.label(key, textual=True),
            ):
                wrong.append(f"{md.name}: [{text}] for {key} ({references.label(key)})")
    assert not wrong, wrong


def test_references_page_is_written_from_the_bib():
    assert (BOOK / "references.md").read_text() == references.page(), (
        "book/references.md is out of date: run python scripts/site/references.py"
    )


def test_every_cited_key_is_in_references_bib():
    keys = {key for _, key, _ in bib_entries()}
    missing = {key: sorted(files) for key, files in cited_keys().items() if key not in keys}
    assert not missing, f"cited but not in book/references.bib: {missing}"


def test_references_bib_entries_are_unique_and_complete():
    entries = bib_entries()
    keys = [key for _, key, _ in entries]
    assert len(keys) == len(set(keys)), (
        f"duplicate keys: {sorted(k for k in keys if keys.count(k) > 1)}"
    )
    for kind, key, body in entries:
        fields = set(re.findall(r"^\s*(\w+)\s*=", body, re.MULTILINE))
        assert {"author", "title", "year"} <= fields, f"{key} lacks author, title or year"
        if kind == "inproceedings":
            assert "booktitle" in fields, f"{key} lacks booktitle"
        if kind == "article":
            assert "journal" in fields, f"{key} lacks journal"


def test_the_landing_references_are_present():
    keys = {key for _, key, _ in bib_entries()}
    required = {
        "vaswani2017attention",
        "bahdanau2015neural",
        "ba2016layer",
        "devlin2019bert",
        "radford2018improving",
        "radford2019language",
    }
    assert required <= keys, sorted(required - keys)


def test_citation_pattern_reads_links():
    text = "([A, 1](references.md#a); [B (2)](references.md#b)) and [c](other.md#c)"
    assert CITATION.findall(text) == [("A, 1", "a"), ("B (2)", "b")]


def test_site_configuration_is_offline_executed_and_strict():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "cache"
    assert config["execute"]["cache"].startswith("_build/")
    assert config["execute"]["timeout"] >= 180
    assert config["only_build_toc_files"] is True
    sphinx = config["sphinx"]
    assert "sphinx-mathjax-offline" in sphinx["extra_extensions"]
    assert "site_extension" in sphinx["local_extensions"]
    widgets_js = sphinx["config"]["nb_ipywidgets_js"]
    assert widgets_js and not [url for url in widgets_js if "://" in url], widgets_js
    assert config["bibtex_bibfiles"] == ["book/references.bib"]
    build = Path(load_script("site/build_book").__file__).read_text()
    assert '"--warningiserror"' in build and '"--keep-going"' in build


def test_offline_check_flags_remote_scripts_and_styles(tmp_path):
    external_loads = load_script("site/build_book").external_loads

    page = tmp_path / "book" / "page.html"
    page.parent.mkdir()
    page.write_text(
        '<html><head><script src="../_static/plotly.min.js"></script>'
        '<link rel="stylesheet" href="../_static/theme.css">'
        '<link rel="canonical" href="https://example.org/page.html">'
        "</head><body>"
        '<a href="https://arxiv.org/abs/1706.03762">a link is not a load</a>'
        "</body></html>"
    )
    assert external_loads(tmp_path) == {}
    page.write_text(
        page.read_text().replace(
            "</head>",
            '<script src="https://cdn.example.org/x.js"></script>'
            '<link href="//fonts.example.org/f.css" rel="stylesheet"></head>',
        )
    )
    assert external_loads(tmp_path) == {
        "book/page.html": ["https://cdn.example.org/x.js", "//fonts.example.org/f.css"]
    }


def test_a_page_title_with_math_reads_as_plain_text_in_the_tab():
    """A browser tab shows a page's title as text: the site turns a heading's inline math
    into plain text there (chapter 5's "Why divide by \\(\\sqrt{d_k}\\)")."""
    site = load_script("site/site_extension")
    assert site.plain_title(r"Why divide by \(\sqrt{d_k}\)") == "Why divide by √d_k"
    assert site.plain_title(r"\(N \times d\) and \(\mathrm{softmax}\)") == "N × d and softmax"
    assert site.plain_title("Add & norm") == "Add & norm"
