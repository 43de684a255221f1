"""A reader's session in JupyterLab, driven in Chromium.

JupyterLab is started with the README's command (``make lab``) on 127.0.0.1 at a free port
without a token. In the file browser, which lists each chapter once, as its notebook, the
test double-clicks a chapter's ``.ipynb`` (the self-attention chapter, or
``TRANSFORMER_LAB_LAB_CHAPTER``); its cells are the ``.md``'s.
It runs all cells, checks that no cell produced an error, moves the attention explorer's
``d_k`` slider with the keyboard and checks that the heatmaps are redrawn, saves, and checks
that the paired ``.ipynb`` was written (with outputs, without errors) while the ``.md`` text
stayed exactly as it was. The chapter's files are restored afterwards; a screenshot of the
notebook goes to ``artifacts/``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from browser_support import ROOT, PageProblems, free_port, lab_args, lab_env, wait_for_lab

CHAPTER = os.environ.get("TRANSFORMER_LAB_LAB_CHAPTER", "book/04_self_attention.md")
RUN_ALL_TIMEOUT_S = 600  # a chapter takes at most about a minute on a 2-core CPU; margin


def lab_settings(settings_dir: Path) -> None:
    """User settings for the test's own JupyterLab (the reader's are not touched)."""
    notebook = settings_dir / "@jupyterlab" / "notebook-extension"
    notebook.mkdir(parents=True)
    # render every cell, not only those scrolled into view, so the test can see them all
    (notebook / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    apputils = settings_dir / "@jupyterlab" / "apputils-extension"
    apputils.mkdir(parents=True)
    (apputils / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )


@pytest.fixture(scope="module")
def chapter_files():
    """The chapter's .md and .ipynb as they were, put back after the test."""
    md = ROOT / CHAPTER
    if not md.exists():
        pytest.fail(f"{CHAPTER} does not exist; set TRANSFORMER_LAB_LAB_CHAPTER to a chapter")
    ipynb = md.with_suffix(".ipynb")
    md_bytes = md.read_bytes()
    ipynb_bytes = ipynb.read_bytes() if ipynb.exists() else None
    times = {path: path.stat() for path in (md, ipynb) if path.exists()}
    try:
        yield md, ipynb, md_bytes
    finally:
        if md.read_bytes() != md_bytes:
            md.write_bytes(md_bytes)
        if ipynb_bytes is None:
            ipynb.unlink(missing_ok=True)
        else:
            ipynb.write_bytes(ipynb_bytes)
        # the times too: jupytext refuses a pair whose .ipynb is newer than its .md
        for path, stat in times.items():
            if path.exists():
                os.utime(path, (stat.st_atime, stat.st_mtime))


@pytest.fixture(scope="module")
def lab_url(tmp_path_factory, playwright_api):
    """JupyterLab started by ``make lab`` on 127.0.0.1, no token, stopped afterwards."""
    port = free_port()
    home = tmp_path_factory.mktemp("jupyter")
    lab_settings(home / "settings")
    env = lab_env(home)
    # window.jupyterapp lets a failing check say what changed in the notebook's model
    args = " ".join(
        [
            *lab_args(port),
            "--ServerApp.disable_check_xsrf=False",
            "--LabApp.expose_app_in_browser=True",
        ]
    )
    log = open(home / "lab.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        ["make", "--no-print-directory", "lab", f"LAB_ARGS={args}"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: make, jupyter and the kernels
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_lab(url, process, home / "lab.log", timeout_s=180)
        yield url
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        log.close()


def dir_item(page, name: str):
    """The file browser's row for ``name`` in the folder it shows."""
    label = page.locator(
        ".jp-DirListing-itemText", has_text=re.compile(rf"^\s*{re.escape(name)}\s*$")
    )
    return page.locator(".jp-DirListing-item").filter(has=label).first


def kernel_idle(page) -> None:
    """Wait until the notebook's kernel has started and is idle."""
    indicator = '.jp-NotebookPanel:visible .jp-Notebook-ExecutionIndicator[data-status="idle"]'
    page.locator(indicator).first.wait_for(timeout=120_000)


def run_all_cells(page, notebook) -> None:
    """Run > Run All Cells, retried until the first cell has been picked up by the kernel."""
    for _ in range(3):
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            first = prompts(notebook)[0].strip()
            if first != "[ ]:":
                return
            page.wait_for_timeout(250)
        page.keyboard.press("Escape")
    pytest.fail("Run > Run All Cells did not start the cells")


def prompts(notebook) -> list[str]:
    return notebook.locator(".jp-CodeCell .jp-InputArea-prompt").all_inner_texts()


def wait_until_executed(page, notebook, timeout_s: float) -> list[str]:
    """Wait until every code cell shows an execution count ``[n]:`` (none ``[*]:`` or ``[ ]:``)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        texts = [t.strip() for t in prompts(notebook)]
        if texts and all(re.fullmatch(r"\[\d+\]:", t) for t in texts):
            return texts
        page.wait_for_timeout(1000)
    pytest.fail(f"cells still running or not run after {timeout_s} s: {prompts(notebook)}")


def model_changes(page, lab_url: str, path: str) -> list[str]:
    """How the open notebook's model differs from the file as the server sent it: the
    notebook's metadata and each cell's keys that differ."""
    now = json.loads(
        page.evaluate(
            "() => JSON.stringify(window.jupyterapp.shell.currentWidget.context.model.toJSON())"
        )
    )
    sent = page.evaluate(
        "async url => (await (await fetch(url)).json()).content",
        f"{lab_url}/api/contents/{path}?content=1&type=notebook",
    )
    out = (
        [f"metadata: {sent['metadata']} -> {now['metadata']}"]
        if sent["metadata"] != now["metadata"]
        else []
    )
    if len(sent["cells"]) != len(now["cells"]):
        out.append(f"{len(sent['cells'])} cells -> {len(now['cells'])}")
    for i, (a, b) in enumerate(zip(sent["cells"], now["cells"], strict=False)):
        keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        if keys:
            out.append(
                f"cell {i}: "
                + ", ".join(f"{k}: {a.get(k)!r:.80} -> {b.get(k)!r:.80}" for k in keys)
            )
    return out[:8]


def test_reader_runs_a_chapter_in_jupyterlab(lab_url, browser_context, chapter_files, artifacts):
    page = browser_context.new_page()
    page.set_default_timeout(60_000)
    try:
        reader_session(page, lab_url, chapter_files, artifacts)
    except BaseException:
        page.screenshot(path=str(artifacts / "lab_failure.png"))  # for a person to look at
        raise
    finally:
        page.close()


def reader_session(page, lab_url, chapter_files, artifacts) -> None:
    md, ipynb, md_bytes = chapter_files
    started = time.time()
    problems = PageProblems(page)
    page.goto(f"{lab_url}/lab", wait_until="load")
    page.locator(".jp-DirListing-content").wait_for()

    # the file browser: from the root into the chapter's folder, double-click the chapter
    page.locator(".jp-BreadCrumbs-home").first.click()
    dir_item(page, Path(CHAPTER).parts[0]).wait_for()
    for folder in Path(CHAPTER).parent.parts:
        dir_item(page, folder).dblclick()
        page.locator(".jp-BreadCrumbs").get_by_text(folder).wait_for()
    # each chapter is listed once: the notebook, not its .md source
    dir_item(page, ipynb.name).wait_for()
    assert dir_item(page, md.name).count() == 0, f"{md.name} is listed beside {ipynb.name}"
    dir_item(page, ipynb.name).dblclick()

    # it opens as a notebook whose cells come from the .md (jupytext's pairing)
    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current").first
    tab.get_by_text(ipynb.name).wait_for()
    notebook = page.locator(".jp-NotebookPanel:visible .jp-Notebook").last
    notebook.wait_for()
    assert page.locator(".jp-FileEditor:visible").count() == 0, f"{md.name} opened as text"
    n_code = md_bytes.decode().count("```{code-cell}")
    notebook.locator(".jp-CodeCell").nth(n_code - 1).wait_for()
    shown = notebook.locator(".jp-CodeCell").count()
    assert shown == n_code, f"{md.name} has {n_code} code cells, the notebook shows {shown}"
    kernel_idle(page)
    page.wait_for_timeout(2000)  # jupyterlab-myst renders the Markdown after the cells load
    # opening is not an edit: the tab does not show unsaved changes
    dirty = tab.evaluate("el => el.classList.contains('jp-mod-dirty')")
    page.screenshot(path=str(artifacts / f"lab_{md.stem}_opened.png"))
    assert not dirty, (
        f"{ipynb.name} shows unsaved changes as soon as it opens: "
        f"{model_changes(page, lab_url, CHAPTER.replace('.md', '.ipynb'))}"
    )

    # run all cells and wait for every one of them
    notebook.locator(".jp-Cell").first.click()
    run_all_cells(page, notebook)
    wait_until_executed(page, notebook, RUN_ALL_TIMEOUT_S)
    executed = time.time() - started
    errors = notebook.locator('.jp-OutputArea-output:has-text("Traceback (most recent call last)")')
    assert errors.count() == 0, errors.first.inner_text()[:2000]

    # the numbers of the prose, computed by this kernel: none shows its f-string source
    markdown = notebook.locator(".jp-MarkdownCell .jp-RenderedMarkdown, .jp-MarkdownCell .myst")
    deadline = time.monotonic() + 60
    while True:
        text = "\n".join(markdown.all_inner_texts())
        unrendered = re.findall(r"""f['"]\{[^\n]{0,60}""", text)
        if not unrendered or time.monotonic() > deadline:
            break
        page.wait_for_timeout(1000)
    page.screenshot(path=str(artifacts / f"lab_{md.stem}_numbers.png"), full_page=True)
    assert not unrendered, f"{{eval}} source on screen after Run All: {unrendered[:5]}"

    # the attention explorer: move d_k with the keyboard, the heatmaps are redrawn
    explorer = notebook.locator(".tl-attention-explorer").first
    explorer.scroll_into_view_if_needed()
    heatmaps = explorer.locator(".tl-heatmaps").first
    heatmaps.wait_for()
    state_before = heatmaps.get_attribute("data-state")
    svg_before = heatmaps.inner_html()
    handle = explorer.locator(".tl-dk .noUi-handle, .tl-dk [role=slider]").first
    handle.click()
    handle.press("ArrowRight")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        current = explorer.locator(".tl-heatmaps").first
        if current.get_attribute("data-state") != state_before:
            break
        page.wait_for_timeout(200)
    heatmaps = explorer.locator(".tl-heatmaps").first
    state_after = heatmaps.get_attribute("data-state")
    assert state_after != state_before, f"the heatmaps did not change: {state_before}"
    assert "d_k=" in state_after and heatmaps.inner_html() != svg_before
    page.wait_for_timeout(300)
    explorer.screenshot(path=str(artifacts / f"lab_{md.stem}_explorer.png"))
    page.screenshot(path=str(artifacts / f"lab_{md.stem}.png"))

    # save: the paired .ipynb is written with the outputs; the .md text is unchanged
    saved_before = ipynb.stat().st_mtime if ipynb.exists() else 0.0
    notebook.locator(".jp-Cell").first.click()
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if ipynb.exists() and ipynb.stat().st_mtime > max(saved_before, started):
            break
        page.wait_for_timeout(250)
    assert ipynb.exists() and ipynb.stat().st_mtime > max(saved_before, started), "no .ipynb saved"
    page.wait_for_timeout(1000)  # both files of the pair are written by the same save
    saved = json.loads(ipynb.read_text())
    code_cells = [c for c in saved["cells"] if c["cell_type"] == "code"]
    assert sum(bool(c.get("outputs")) for c in code_cells) >= 1, "the saved .ipynb has no outputs"
    outputs = [o for c in code_cells for o in c.get("outputs", [])]
    error_outputs = [o for o in outputs if o.get("output_type") == "error"]
    assert not error_outputs, f"cells raised: {[o.get('ename') for o in error_outputs]}"
    assert md.read_bytes() == md_bytes, f"saving changed the text of {md.name}"
    print(f"\n{md.name}: opened and executed in JupyterLab in {executed:.0f} s")
    if problems.errors:  # JupyterLab's own console noise is reported, not failed on
        print("browser console errors:", *problems.errors[:10], sep="\n  ")
