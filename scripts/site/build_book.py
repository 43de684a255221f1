"""Build the static site into ``_build/html`` (``make book``).

Runs ``jupyter-book build`` on the repository root with ``-W --keep-going``: every Sphinx
warning, and every error in a chapter cell (``nb_execution_raise_on_error``), fails the
build after all pages have been tried. Chapters come executed from ``make chapters``
(``conftest.py``), which stores them in the site's jupyter-cache (``_build/.jupyter_cache``)
and writes the executed copies whose numbers the prose shows (``_build/executed``); a
chapter whose copy is missing or older than its code is executed that way first, so no
chapter runs twice. The offline web assets are gathered first
(``scripts/site/fetch_web_assets.py``), and the live models exported
(``scripts/site/build_live_models.py``).

``--all`` rebuilds every page instead of only the changed ones.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import build_live_models  # noqa: E402
import fetch_web_assets  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"

# <script src=...> and <link href=...> (stylesheets, preloads, fonts): what a page loads
_LOADED = re.compile(
    r"<(?:script|link|img|iframe|source)\b[^>]*?\b(?:src|href)\s*=\s*[\"']([^\"']+)[\"'][^>]*>",
    re.IGNORECASE,
)


def external_loads(html_dir: Path = HTML) -> dict[str, list[str]]:
    """Every page under ``html_dir`` that loads a script, stylesheet or image from http(s).

    Plain ``<a href>`` links are not loads and are allowed; ``<link rel="canonical">``-style
    metadata is ignored as well since browsers do not fetch it.
    """
    found: dict[str, list[str]] = {}
    for page in sorted(html_dir.rglob("*.html")):
        text = page.read_text(encoding="utf-8", errors="replace")
        bad = []
        for match in _LOADED.finditer(text):
            tag, url = match.group(0), match.group(1)
            if tag.lower().startswith("<link") and not re.search(
                r"rel\s*=\s*[\"'][^\"']*(stylesheet|preload|icon|modulepreload)", tag, re.I
            ):
                continue
            if re.match(r"(https?:)?//", url.strip(), re.IGNORECASE):
                bad.append(url)
        if bad:
            found[str(page.relative_to(html_dir))] = bad
    return found


def stale_chapters() -> list[Path]:
    """Chapters with no executed copy, or one whose code is not the chapter's code."""
    import jupytext
    import nbformat
    from book_markup import code_sources, executed_copy
    from chapters import chapter_sources

    stale = []
    for md in chapter_sources():
        copy = executed_copy(ROOT, md.stem)
        current = code_sources(jupytext.read(md))
        if not copy.exists() or code_sources(nbformat.read(copy, as_version=4)) != current:
            stale.append(md)
    return stale


def execute(chapters: list[Path]) -> int:
    """Run ``chapters`` under nbval (``conftest.py`` hands each to the site and writes its
    executed copy), as ``make chapters`` does for all of them."""
    import sync_notebooks

    for md in chapters:
        sync_notebooks.sync(md)
    notebooks = [str(md.with_suffix(".ipynb").relative_to(ROOT)) for md in chapters]
    print(f"executing {len(chapters)} chapter(s) first: {' '.join(notebooks)}")
    command = [sys.executable, "-m", "pytest", "--nbval-lax", "-p", "no:randomly", "-q"]
    return subprocess.run([*command, *notebooks], cwd=ROOT).returncode


def build(rebuild_all: bool = False) -> int:
    fetch_web_assets.fetch()
    build_live_models.build()
    stale = stale_chapters()
    if stale and execute(stale) != 0:
        print("a chapter failed; the site is not built", file=sys.stderr)
        return 1
    command = [
        sys.executable,
        "-c",
        "import sys; from jupyter_book.cli.main import main; sys.exit(main())",
        "build",
        str(ROOT),
        "--builder",
        "html",
        "--warningiserror",
        "--keep-going",
    ]
    if rebuild_all:
        command.append("--all")
    start = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        print(f"book build FAILED after {seconds:.0f} s", file=sys.stderr)
        return result.returncode
    if not (HTML / "index.html").exists():
        print(f"book build produced no {HTML / 'index.html'}", file=sys.stderr)
        return 1
    external = external_loads()
    if external:
        for page, urls in external.items():
            print(f"{page} loads from the network: {', '.join(urls)}", file=sys.stderr)
        return 1
    print(f"book built in {seconds:.0f} s: {HTML.relative_to(ROOT)}/index.html")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="rebuild every page")
    sys.exit(build(parser.parse_args().all))
