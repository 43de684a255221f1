"""Every chapter read in JupyterLab as the site shows it, in Chromium.

The executed copies that the chapter run writes (``_build/executed/NN_name.ipynb``, see
``conftest.py``: outputs, the numbers of the prose, the folded cells) are opened one by one
in JupyterLab with the project's own settings and extensions (``jupyterlab-myst``). On each
chapter the test fails on

- raw MyST markup on screen (``{glue``, ``{eval``, ``{cite``, ``{doc``, ``{numref``,
  ``:alt:``, a directive's fence),
- a number of the prose that does not show (every ``{eval}`` result the site prints must
  be in the rendered Markdown, except inside folded answer blocks, which stay closed),
- a figure without its number and caption, an empty listing of the package,
- an answer or a hidden check shown unfolded.

A screenshot of each chapter's first screen goes to ``artifacts/``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from browser_support import ROOT, free_port, lab_args, lab_env, load_script, wait_for_lab

markup = load_script("site/book_markup")
MARKDOWN_KEY, result_text = markup.MARKDOWN_KEY, markup.result_text

EXECUTED = ROOT / "_build" / "executed"
RAW_MARKUP = ["{glue", "{eval}", "{cite", "{doc}", "{numref}", ":alt:", "```{", ":::{"]


def chapters() -> list[Path]:
    chapter_sources = load_script("site/sync_notebooks").chapter_sources
    return [EXECUTED / f"{md.stem}.ipynb" for md in chapter_sources()]


@pytest.fixture(scope="module")
def reading_lab(tmp_path_factory, playwright_api):
    """JupyterLab on 127.0.0.1 over a folder holding the executed chapters."""
    missing_copies = [p.name for p in chapters() if not p.exists()]
    if missing_copies:
        pytest.fail(f"no executed copy of {missing_copies}: run `make chapters` first")
    home = tmp_path_factory.mktemp("reading")
    root = home / "root" / "book"
    root.mkdir(parents=True)
    for path in chapters():
        shutil.copy(path, root / path.name)
    for page in ("references.md", "notation.md", "how_to_use.md", "index.md"):
        shutil.copy(ROOT / "book" / page, root / page)
    settings = home / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    # render every cell, not only those scrolled into view
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    # its own data folder too: the trust database of the executed copies below
    env = {**lab_env(home), "JUPYTER_DATA_DIR": str(home / "data")}
    jupyter = str(Path(sys.executable).parent / "jupyter")
    # the executed copies are the book's own: trusted, so their HTML outputs render fully
    subprocess.run(
        [jupyter, "trust", *map(str, root.glob("*.ipynb"))],
        env=env,
        check=True,
        capture_output=True,
    )
    port = free_port()
    log = open(home / "lab.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [jupyter, "lab", *lab_args(port), f"--ServerApp.root_dir={home / 'root'}", "--allow-root"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_lab(url, process, home / "lab.log", timeout_s=120)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


def wait_count(page, locator, wanted: int, timeout_s: float = 60) -> int:
    """Poll until ``locator`` matches at least ``wanted`` elements (JupyterLab and
    jupyterlab-myst render outputs and Markdown asynchronously); return the count."""
    deadline = time.monotonic() + timeout_s
    while locator.count() < wanted and time.monotonic() < deadline:
        page.wait_for_timeout(500)
    return locator.count()


FOLDED_BLOCK = re.compile(
    r"^(`{3,}|:{3,})\{(?:admonition|dropdown)\}.*?^\1", re.MULTILINE | re.DOTALL
)


def expected_numbers(nb) -> list[str]:
    """The evaluated numbers of the prose, less those inside folded answer blocks (a
    dropdown admonition shows its text only once the reader opens it; opening them by
    clicking was not reliable enough to test on)."""
    numbers = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        folded = " ".join(
            block.group(0)
            for block in FOLDED_BLOCK.finditer(cell.source)
            if "dropdown" in block.group(0)
        )
        for entry in cell.metadata.get(MARKDOWN_KEY, []):
            if f"{{eval}}`{entry['expression']}`" not in folded:
                numbers.append(result_text(entry["result"]))
    return numbers


@pytest.mark.parametrize("path", chapters(), ids=lambda p: p.stem)
def test_chapter_reads_in_jupyterlab(path, reading_lab, browser_context, artifacts):
    nb = nbformat.read(path, as_version=4)
    page = browser_context.new_page()
    page.set_default_timeout(60_000)
    try:
        # ?reset: a fresh workspace, with no notebook of an earlier test still open
        page.goto(f"{reading_lab}/lab/tree/book/{path.name}?reset", wait_until="load")
        notebook = page.locator(".jp-NotebookPanel:visible .jp-Notebook").last
        notebook.wait_for()
        n_cells = len(nb.cells)
        notebook.locator(".jp-Cell").nth(n_cells - 1).wait_for()
        code_cells = [c for c in nb.cells if c.cell_type == "code"]
        folded = sum(
            bool({"hide-cell", "remove-cell"} & set(c.metadata.get("tags", []))) for c in code_cells
        )
        outputs = [
            str(o.get("data", {}))
            for c in code_cells
            if "remove-output" not in c.metadata.get("tags", [])
            for o in c.outputs
        ]
        listings = sum("<small>transformer_lab/" in o for o in outputs)
        figures = sum(
            '<figure class=\\"tl-figure\\"' in o or '<figure class="tl-figure"' in o
            for o in outputs
        )
        assert listings >= sum("viz.source(" in c.source for c in code_cells)
        # JupyterLab shows a folded input as a placeholder bar, not an editor
        placeholders = notebook.locator(".jp-CodeCell .jp-InputPlaceholder")
        assert wait_count(page, placeholders, folded) >= folded, (
            f"{path.stem}: {placeholders.count()} folded inputs for {folded} hidden checks "
            "and worked answers"
        )
        # a listing is a Markdown output: a code block and the file it comes from
        shown_listings = notebook.locator(
            ".jp-OutputArea-output:has(small:text-matches('^transformer_lab/'))"
        )
        assert wait_count(page, shown_listings, listings) >= listings, (
            f"{path.stem}: {shown_listings.count()} of {listings} listings rendered"
        )
        for i in range(listings):
            code = shown_listings.nth(i).locator("pre, code")
            lines = "\n".join(code.all_inner_texts()).strip().splitlines()
            assert len(lines) >= 3, f"{path.stem}: listing {i} is empty"
        captions = notebook.locator("figure.tl-figure figcaption")
        assert wait_count(page, captions, figures) >= figures, (
            f"{path.stem}: {captions.count()} captioned figures for {figures} viz.figure cells"
        )
        for text in captions.all_inner_texts():
            assert re.match(r"Figure \d+\.\d+\. \S", text.strip()), text[:80]
        opened = notebook.locator("details[open]").count()
        assert opened == 0, f"{opened} answer block(s) shown unfolded in {path.stem}"
        page.screenshot(path=str(artifacts / f"lab_read_{path.stem}.png"))

        # jupyterlab-myst renders Markdown cells asynchronously: wait until they settle
        markdown = notebook.locator(".jp-MarkdownCell .jp-RenderedMarkdown, .jp-MarkdownCell .myst")
        expected = expected_numbers(nb)
        deadline = time.monotonic() + 60
        while True:
            text = "\n".join(markdown.all_inner_texts())
            flat = re.sub(r"\s+", " ", text)
            not_shown = [n for n in expected if re.sub(r"\s+", " ", n) not in flat]
            if not not_shown or time.monotonic() > deadline:
                break
            page.wait_for_timeout(1000)

        raw = [m for m in RAW_MARKUP if m in text]
        assert not raw, f"raw MyST markup on screen in {path.stem}: {raw}"
        # an {eval} whose result jupyterlab-myst did not put in shows its source as code
        unrendered = re.findall(r"""f['"]\{[^\n]{0,60}""", text)
        assert not unrendered, f"{{eval}} source on screen in {path.stem}: {unrendered[:5]}"
        if not_shown:
            pytest.fail(f"numbers of the prose not shown: {not_shown[:10]}; text: {flat[:300]}")

    finally:
        page.close()
