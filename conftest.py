"""Project-wide pytest hooks for running the chapters under nbval (``make chapters``).

1. A table of how long each chapter took (kernel start, imports and every cell), printed at
   the end of the run, with the chapter's time budget.
2. The executed chapters are handed to the site build, so that ``make test`` runs each
   chapter once instead of twice. nbval sees every message the kernel publishes while a
   cell runs; they are recorded here and, when every cell of a chapter passed, replayed
   through nbclient's own message handling (the code ``jupyter-book`` uses to execute) into
   the outputs and widget state of the chapter, read the way myst-nb reads it. The result
   is stored in the jupyter-cache of the site (``_build/.jupyter_cache``, from
   ``_config.yml``) under the hash of the chapter's code cells, exactly as if the build
   had executed it; ``scripts/site/build_book.py`` then finds it there and does not run the
   chapter again. A chapter whose code changes afterwards gets a new hash and is executed
   by the build as usual. Set ``TRANSFORMER_LAB_NO_CHAPTER_CACHE=1`` to skip this.
"""

from __future__ import annotations

import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests"))
from script_loader import load_script  # noqa: E402  (the tests' one way to load a script)

# chapters with a bigger budget (seconds on a 2-core CPU); every other chapter has 60 s
BUDGETS = {
    "12_bert": 120.0,
    "13_gpt": 120.0,
    "14_todays_decoders": 120.0,
    "15_fine_tuning": 120.0,
    "16_lora": 120.0,
    "17_recall": 120.0,
    "18_data_parallel": 120.0,
}
DEFAULT_BUDGET = 60.0

_chapter_seconds: dict[str, float] = defaultdict(float)
_cached: dict[str, str] = {}


def _notebook_of(nodeid: str) -> str | None:
    path = nodeid.split("::")[0]
    return path if path.endswith(".ipynb") else None


def pytest_runtest_logreport(report):
    notebook = _notebook_of(report.nodeid)
    if notebook is not None:
        _chapter_seconds[notebook] += report.duration


def pytest_terminal_summary(terminalreporter):
    if not _chapter_seconds:
        return
    terminalreporter.section("chapter execution time (s)")
    terminalreporter.write_line(f"{'seconds':>8}  {'budget':>6}  chapter")
    for name, seconds in _chapter_seconds.items():
        budget = BUDGETS.get(Path(name).stem, DEFAULT_BUDGET)
        flag = "  OVER BUDGET" if seconds > budget else ""
        terminalreporter.write_line(f"{seconds:8.1f}  {budget:6.0f}  {name}{flag}")
    terminalreporter.write_line(f"{sum(_chapter_seconds.values()):8.1f}  {'':6}  total")
    if _cached:
        terminalreporter.write_line(
            f"{len(_cached)} executed chapter(s) stored for the site build in "
            f"{Path(next(iter(_cached.values()))).relative_to(ROOT)}"
        )


# --- handing executed chapters to the site build ----------------------------------------


def _cache_enabled(config) -> bool:
    return (
        config.pluginmanager.hasplugin("nbval")
        and not os.environ.get("TRANSFORMER_LAB_NO_CHAPTER_CACHE")
        and (ROOT / "_config.yml").exists()
    )


def pytest_configure(config):
    if not _cache_enabled(config):
        return
    if not hasattr(config, "workerinput"):  # not an xdist worker: create the site's cache
        # here, once, so that two workers storing their first chapters never race to
        # create its database
        from jupyter_cache import get_cache

        get_cache(str(_cache_path())).list_cache_records()
    from nbval.plugin import IPyNbFile

    if getattr(IPyNbFile, "_tl_recording", False):
        return
    original = IPyNbFile.get_kernel_message

    def get_kernel_message(self, timeout=None, stream="iopub"):
        msg = original(self, timeout=timeout, stream=stream)
        if stream == "iopub":
            self.__dict__.setdefault("_tl_messages", []).append(msg)
        return msg

    IPyNbFile.get_kernel_message = get_kernel_message
    IPyNbFile._tl_recording = True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    parent = getattr(item, "parent", None)
    if not (hasattr(item, "cell_num") and _cache_enabled(item.config)):
        yield
        return
    start = len(parent.__dict__.setdefault("_tl_messages", []))
    began = time.perf_counter()
    outcome = yield
    messages = parent._tl_messages[start:]
    del parent._tl_messages[start:]  # keep memory flat: each cell keeps only its own
    record = parent.__dict__.setdefault("_tl_cells", {})
    record[item.cell_num] = {
        "messages": messages,
        "passed": outcome.excinfo is None,
        "seconds": time.perf_counter() - began,
        "expressions": _evaluate_expressions(parent, item.cell_num),
    }


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    parent = getattr(item, "parent", None)
    if not (hasattr(item, "cell_num") and _cache_enabled(item.config)):
        return
    if nextitem is not None and getattr(nextitem, "parent", None) is parent:
        return
    cells = parent.__dict__.pop("_tl_cells", {})
    parent.__dict__.pop("_tl_messages", None)
    md_path = Path(str(parent.fspath)).with_suffix(".md")
    if not md_path.exists() or not cells or not all(c["passed"] for c in cells.values()):
        return
    ran = [c.source for c in parent.nb.cells if c.cell_type == "code"]
    now = [c.source for c in _read_like_myst_nb(md_path).cells if c.cell_type == "code"]
    if ran != now:  # the .md was edited while the chapter ran: its outputs are not its own
        item.config.get_terminal_writer().line(
            f"\n{md_path.name} changed while it ran: not stored for the site build"
        )
        return
    try:
        _cached[str(md_path)] = _store_executed(md_path, cells)
    except Exception as reason:  # the site build then executes the chapter itself
        item.config.get_terminal_writer().line(
            f"\n{md_path.name} not stored for the site build ({type(reason).__name__}: {reason})"
        )


def _evaluate_expressions(parent, cell_num: int) -> dict:
    """Evaluate, in the chapter's kernel, the ``{eval}`` expressions of the Markdown cells
    after code cell ``cell_num``, as jupyterlab-myst does when a reader runs them:
    ``{expression: result}`` with results in the kernel's ``user_expressions`` form."""
    expressions_after_code_cells = load_script("site/book_markup").expressions_after_code_cells

    wanted = parent.__dict__.get("_tl_wanted")
    if wanted is None:
        wanted = {
            n: [e for _, exprs in cells for e in exprs]
            for n, cells in expressions_after_code_cells(parent.nb).items()
        }
        parent._tl_wanted = wanted
    exprs = list(dict.fromkeys(wanted.get(cell_num, [])))
    if not exprs or parent.kernel is None:
        return {}
    kc = parent.kernel.kc
    msg_id = kc.execute(
        "",
        silent=True,
        store_history=False,
        user_expressions={str(i): e for i, e in enumerate(exprs)},
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        reply = kc.get_shell_msg(timeout=max(1.0, deadline - time.monotonic()))
        if reply["parent_header"].get("msg_id") == msg_id:
            found = reply["content"].get("user_expressions", {})
            return {e: found.get(str(i), {}) for i, e in enumerate(exprs)}
    raise TimeoutError(f"no reply to the expressions after cell {cell_num}: {exprs}")


def _read_like_myst_nb(md_path: Path):
    """The chapter as a notebook, read exactly as the site build (myst-nb) reads it."""
    import yaml
    from myst_nb.core.read import read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    extensions = (config.get("parse") or {}).get("myst_enable_extensions") or []
    md_config = MdParserConfig(enable_extensions=set(extensions))
    return read_myst_markdown_notebook(
        md_path.read_text(), config=md_config, add_source_map=True, path=md_path
    )


def _cache_path() -> Path:
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    cache = (config.get("execute") or {}).get("cache") or "_build/.jupyter_cache"
    return ROOT / cache


class _Discard:
    @staticmethod
    def msg(*args, **kwargs):
        return {}

    @staticmethod
    def send(msg):
        return None


class _NoKernel:
    """Stands in for a kernel client in replay: nbclient's Output widget mimic sends state
    back to the kernel, which has nothing to receive it by now."""

    session = _Discard()
    shell_channel = _Discard()


def _store_executed(md_path: Path, cells: dict) -> str:
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionComplete

    nb = _read_like_myst_nb(md_path)
    code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    if len(code) != len(cells) or sorted(cells) != list(range(len(code))):
        raise ValueError(f"{len(cells)} cells ran but the chapter has {len(code)} code cells")
    client = NotebookClient(nb, kernel_name="python3", record_timing=False)
    client.reset_execution_trackers()
    client.kc = _NoKernel()
    for cell_num, index in enumerate(code):
        cell = nb.cells[index]
        cell.outputs = []
        cell.execution_count = None
        client.clear_before_next_output = False  # as nbclient sets it before each cell
        messages = cells[cell_num]["messages"]
        request = next(
            (
                m["parent_header"].get("msg_id")
                for m in messages
                if m["msg_type"] == "execute_input"
            ),
            None,
        )
        for msg in messages:
            if request is not None and msg["parent_header"].get("msg_id") != request:
                continue
            try:
                client.process_message(msg, cell, index)
            except CellExecutionComplete:
                break
    client.set_widgets_metadata()
    _attach_expressions(nb, cells, md_path)
    nb.metadata["language_info"] = load_script("site/book_markup").language_info()
    _write_reader_copy(nb, md_path)
    for cell in nb.cells:  # the site's cache keys on the cells as read from the .md
        cell.metadata.pop("user_expressions", None)
    cache_path = _cache_path()
    cache = get_cache(str(cache_path))
    seconds = sum(c["seconds"] for c in cells.values())
    cache.cache_notebook_bundle(
        CacheBundleIn(nb, str(md_path), data={"execution_seconds": seconds}),
        check_validity=False,
        overwrite=True,
    )
    return str(cache_path)


def _attach_expressions(nb, cells: dict, md_path: Path) -> None:
    """Store each ``{eval}`` result on its Markdown cell, as jupyterlab-myst does. An
    expression that failed fails the chapter's hand-over, naming it and the error."""
    markup = load_script("site/book_markup")
    for n, markdown_cells in markup.expressions_after_code_cells(nb).items():
        results = cells.get(n, {}).get("expressions", {}) if n >= 0 else {}
        for index, exprs in markdown_cells:
            entries = []
            for expr in exprs:
                result = results.get(expr)
                if not result or result.get("status") != "ok":
                    why = "no code ran before it" if n < 0 else (result or {}).get("evalue", "")
                    raise ValueError(f"{md_path.name}: {{eval}}`{expr}` failed: {why}")
                entries.append({"expression": expr, "result": result})
            nb.cells[index].metadata[markup.MARKDOWN_KEY] = entries


def _write_reader_copy(nb, md_path: Path) -> None:
    """The executed chapter as JupyterLab opens it (``_build/executed/NN_name.ipynb``):
    outputs, numbers in the prose, and the cells the site hides folded. The site reads
    the numbers of the prose from it too (``scripts/site/site_extension.py``)."""
    import copy

    import nbformat

    reader = copy.deepcopy(nb)
    reader.metadata.pop("source_map", None)
    load_script("site/book_markup").add_reader_metadata(reader)
    # under nbval cells run without history, so every prompt would read [1]: number them
    # in order, as a reader's Run All does
    count = 0
    for cell in reader.cells:
        if cell.cell_type == "code":
            count += 1
            cell.execution_count = count
            for output in cell.outputs:
                if output.get("output_type") == "execute_result":
                    output["execution_count"] = count
    out = ROOT / "_build" / "executed" / f"{md_path.stem}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(reader, out)
