"""The book's one list of chapters: ``_toc.yml``, the table of contents the site is built from.

Every other list of chapters derives from it (the notebooks ``sync_notebooks.py`` pairs, the
chapters ``make chapters`` runs and ``build_book.py`` executes, the pages the browser tests
open) or is checked against it by ``tests/test_chapter_list.py``: the chapter files in
``book/``, the contents of ``book/index.md`` (what a reader opens in JupyterLab, where the
site's table of contents is not shown), and the tables keyed by chapter (``BUDGETS`` in
``conftest.py``, ``ALLOWED`` of ``tests/test_prose_numbers.py``, the diagram's chapters in
``transformer_lab/viz/chapters/architecture.py``), each of whose keys must name a chapter.

A chapter is ``book/NN_name.md``, a MyST notebook listed in ``_toc.yml``; its *stem*
(``"04_self_attention"``) is its name everywhere, and its number is its place in the book.
``python scripts/site/chapters.py`` prints the stems in book order.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
TOC = ROOT / "_toc.yml"
CHAPTER_STEM = re.compile(r"(\d\d)_[a-z0-9_]+")


def toc_files(toc_path: Path = TOC) -> list[str]:
    """Every file named in the table of contents (root first), without extension."""
    toc = yaml.safe_load(toc_path.read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))
            for part in entry.get("parts", []):
                walk(part.get("chapters"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return files


def is_notebook(md_path: Path) -> bool:
    """A chapter notebook: a ``.md`` whose front matter has jupytext and kernelspec entries."""
    text = md_path.read_text()
    if not text.startswith("---\n"):
        return False
    header = text.split("\n---", 1)[0]
    return "jupytext:" in header and "kernelspec:" in header


def chapter_sources(toc_path: Path = TOC) -> list[Path]:
    """The chapter notebooks: files in the TOC whose ``.md`` carries jupytext metadata."""
    out = []
    for name in toc_files(toc_path):
        path = toc_path.parent / f"{name}.md"
        if path.exists() and is_notebook(path):
            out.append(path)
    return out


def chapters(toc_path: Path = TOC) -> list[str]:
    """The stems of the numbered chapters in book order: ``["01_words_to_vectors", ...]``."""
    names = [Path(name) for name in toc_files(toc_path)]
    return [p.name for p in names if p.parent.name == "book" and CHAPTER_STEM.fullmatch(p.name)]


def number(stem: str) -> int:
    """The chapter's number, read from its stem: ``number("04_self_attention") == 4``."""
    match = CHAPTER_STEM.fullmatch(stem)
    if match is None:
        raise ValueError(f"{stem!r} is not a chapter's stem (NN_name, e.g. '04_self_attention')")
    return int(match.group(1))


def by_number(toc_path: Path = TOC) -> dict[int, str]:
    """``{number: stem}`` of every chapter."""
    return {number(stem): stem for stem in chapters(toc_path)}


if __name__ == "__main__":
    print("\n".join(chapters()))
