"""Every cell of the book that runs only on a GPU also runs here, on the CPU, with its
assertions: so a reader with a GPU never meets a page no test has executed.

A chapter's GPU-only cells ask ``transformer_lab.device.gpu_branch()`` for their device;
with ``TRANSFORMER_LAB_FORCE_GPU_BRANCHES=1`` it answers the CPU on a machine without CUDA.
Each such chapter is executed whole that way (its hidden assertions included), and the GPU
cell must have printed something. The ``gpu`` preset of the training command, which the
book only describes, trains a few steps of its full-size model on the CPU."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jupytext
import nbclient
import pytest

from transformer_lab.device import FORCE_GPU_BRANCHES
from transformer_lab.training import train_gpt as TG

BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTERS = sorted(p for p in BOOK.glob("[0-9]*.md") if "gpu_branch()" in p.read_text())


def test_the_book_asks_for_the_gpu_in_one_way():
    """Chapters branch on ``gpu_branch()``, never on ``torch.cuda.is_available()`` or on
    settings chosen by the device, so that every GPU-only cell is one this module can force
    onto the CPU (a clock or a synchronisation chosen by the device type is not a branch)."""
    assert CHAPTERS, "no chapter has a GPU branch any more: remove this module's chapter test"
    for path in sorted(BOOK.glob("[0-9]*.md")):
        text = path.read_text()
        for pattern in ("cuda.is_available()", "if on_gpu else ("):
            assert pattern not in text, f"{path.name} branches on {pattern!r}; use gpu_branch()"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_the_gpu_cells_run_on_the_cpu_with_their_assertions(chapter, monkeypatch):
    monkeypatch.setenv(FORCE_GPU_BRANCHES, "1")
    monkeypatch.setenv("TRANSFORMER_LAB_DEVICE", "cpu")
    notebook = jupytext.read(chapter)
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(BOOK)}}
    )
    client.execute()  # raises CellExecutionError on a failing cell or assertion
    gpu_cells = [c for c in notebook.cells if c.cell_type == "code" and "gpu_branch()" in c.source]
    assert gpu_cells, chapter
    for cell in gpu_cells:
        printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        assert printed.strip(), f"the GPU cell of {chapter.name} printed nothing:\n{cell.source}"


def test_the_gpu_preset_trains_on_the_cpu(tmp_path):
    """The full-size ``gpu`` model (6 blocks of 6 heads, 384 wide, 256 characters of context,
    dropout 0.2) for 12 steps of 4 windows: the held-out loss falls from the uniform guess."""
    out = tmp_path / "gpu"
    args = ["--preset", "gpu", "--steps", "12", "--batch-size", "4", "--eval-every", "12"]
    args += ["--eval-tokens", "4096", "--sample", "40", "--no-progress", "--device", "cpu"]
    args += ["--threads", "1", "--out", str(out)]  # one thread: steady beside other work
    summary = TG.main(args)
    saved = json.loads((out / "summary.json").read_text())
    assert saved["steps"] == summary["steps"] == 12
    assert (out / "checkpoint.pt").is_file()
    losses = [loss for _, loss in saved["evals"]]
    assert all(math.isfinite(x) for x in losses), losses
    assert saved["config"]["n_layers"] == 6 and saved["config"]["d_model"] == 384
    assert losses[-1] < 0.9 * math.log(saved["config"]["d_vocab"]), losses
