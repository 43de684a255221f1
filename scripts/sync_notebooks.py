"""Create or update the ``.ipynb`` paired with every chapter listed in ``_toc.yml``.

``python scripts/sync_notebooks.py`` syncs the pairs (the newer side wins, as jupytext's
``--sync`` does); ``--list-ipynb`` prints the paired notebook paths in book order.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jupytext
import yaml

ROOT = Path(__file__).resolve().parent.parent


def toc_files(toc_path: Path = ROOT / "_toc.yml") -> list[str]:
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


def chapter_sources() -> list[Path]:
    """The chapter notebooks: files in the TOC whose ``.md`` carries jupytext metadata."""
    out = []
    for name in toc_files():
        path = ROOT / f"{name}.md"
        if path.exists() and is_notebook(path):
            out.append(path)
    return out


def is_notebook(md_path: Path) -> bool:
    head = md_path.read_text().split("\n---", 1)[0]
    return "jupytext:" in head and "kernelspec:" in md_path.read_text()[:2000]


def sync(md_path: Path) -> Path:
    ipynb = md_path.with_suffix(".ipynb")
    nb = jupytext.read(md_path)
    if ipynb.exists() and ipynb.stat().st_mtime > md_path.stat().st_mtime:
        # the notebook was edited more recently (e.g. saved in Jupyter): carry edits back
        jupytext.write(jupytext.read(ipynb), md_path, fmt="md:myst")
        return ipynb
    jupytext.write(nb, ipynb)
    return ipynb


if __name__ == "__main__":
    if "--list-ipynb" in sys.argv:
        print(" ".join(str(p.with_suffix(".ipynb").relative_to(ROOT)) for p in chapter_sources()))
    else:
        for md in chapter_sources():
            sync(md)
            print(f"synced {md.relative_to(ROOT)} <-> {md.with_suffix('.ipynb').name}")
