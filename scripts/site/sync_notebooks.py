"""Create or update the ``.ipynb`` paired with every chapter listed in ``_toc.yml``
(``chapters.chapter_sources``).

``python scripts/site/sync_notebooks.py`` brings each pair in sync. The ``.md`` is the chapter;
when the two disagree the newer file wins, as with ``jupytext --sync``: a newer ``.md``
(edited as text) rewrites the ``.ipynb``, a newer ``.ipynb`` (edited as a notebook outside
jupytext's pairing) rewrites the ``.md``. Pairs that already agree are left alone, so the
outputs saved in an ``.ipynb`` survive. ``--list-ipynb`` prints the paired notebook paths
in book order; ``--check`` only reports pairs that disagree (exit status 1 if any).

The ``.ipynb`` is what a reader opens in JupyterLab (the ``.md`` chapters are hidden from
its file browser, see ``scripts/site/configure_lab.py``): the cells the site hides are folded
there (``book_markup.add_reader_metadata``). That folding lives only in the ``.ipynb``:
jupytext leaves JupyterLab's ``jupyter`` cell metadata out of the ``.md`` (``jupytext.toml``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import jupytext
from jupytext.config import load_jupytext_config

sys.path.insert(0, str(Path(__file__).resolve().parent))

from book_markup import add_reader_metadata  # noqa: E402

# the chapter list lives in chapters.py (from _toc.yml); the browser tests read
# toc_files and is_notebook from here too
from chapters import chapter_sources, is_notebook, toc_files  # noqa: E402, F401

ROOT = Path(__file__).resolve().parents[2]


def cells(path: Path) -> list[tuple[str, str]]:
    """``(cell_type, source)`` of every cell, as jupytext reads the file."""
    return [(cell.cell_type, cell.source) for cell in jupytext.read(path).cells]


def in_sync(md_path: Path) -> bool:
    """True when the paired ``.ipynb`` is absent or holds the same cells as the ``.md``."""
    ipynb = md_path.with_suffix(".ipynb")
    return not ipynb.exists() or cells(md_path) == cells(ipynb)


def sync(md_path: Path) -> str:
    """Sync one pair; return what was done ("created", "updated ...", "in sync")."""
    ipynb = md_path.with_suffix(".ipynb")
    if not ipynb.exists():
        _write_reader_notebook(md_path, ipynb)
        return f"created {ipynb.name}"
    if in_sync(md_path):
        if ipynb.stat().st_mtime > md_path.stat().st_mtime:
            _match_times(md_path, ipynb)  # see _write_reader_notebook
        return "in sync"
    if ipynb.stat().st_mtime > md_path.stat().st_mtime:
        # the notebook was edited more recently: carry its cells back into the chapter
        config = load_jupytext_config(str(md_path.parent))
        jupytext.write(jupytext.read(ipynb), md_path, fmt="md:myst", config=config)
        return f"updated {md_path.name} from {ipynb.name}"
    _write_reader_notebook(md_path, ipynb)
    return f"updated {ipynb.name} from {md_path.name}"


def _write_reader_notebook(md_path: Path, ipynb: Path) -> None:
    nb = jupytext.read(md_path)
    add_reader_metadata(nb)
    jupytext.write(nb, ipynb)
    # the notebook carries the .md's time: jupytext refuses to open a pair whose .ipynb is
    # newer than its text file and differs from it (here: the folded state, which the .md
    # leaves out), taking it for a notebook edited behind its back
    _match_times(md_path, ipynb)


def _match_times(md_path: Path, ipynb: Path) -> None:
    md_time = md_path.stat().st_mtime
    os.utime(ipynb, (md_time, md_time))


def main(argv: list[str]) -> int:
    chapters = chapter_sources()
    if "--list-ipynb" in argv:
        print(" ".join(str(p.with_suffix(".ipynb").relative_to(ROOT)) for p in chapters))
        return 0
    if "--check" in argv:
        stale = [p for p in chapters if not in_sync(p)]
        rerun = Path(__file__).resolve().relative_to(ROOT)
        for path in stale:
            print(f"{path.relative_to(ROOT)} and its .ipynb differ: run {rerun}")
        return 1 if stale else 0
    for md in chapters:
        print(f"{md.relative_to(ROOT)}: {sync(md)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
