"""Numbered figures, listings and tables (transformer_lab.viz.display), the progress line, and
the markup rules that make a chapter read the same in JupyterLab and on the site."""

from __future__ import annotations

import inspect

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import pytest  # noqa: E402
from script_loader import load_script  # noqa: E402

from transformer_lab.exercises.runner import CheckResult  # noqa: E402
from transformer_lab.training import progress  # noqa: E402
from transformer_lab.viz import display as D  # noqa: E402

book_markup = load_script("site/book_markup")


def test_figures_are_numbered_per_chapter_in_the_order_first_shown():
    D._numbers.clear()
    assert D.figure_number("ch07-a") == "7.1"
    assert D.figure_number("ch07-b") == "7.2"
    assert D.figure_number("ch08-a") == "8.1"
    assert D.figure_number("ch07-a") == "7.1"  # shown again: same number


def test_a_figure_shows_its_image_number_caption_and_alt_text():
    D._numbers.clear()
    plt.close("all")  # figures other tests left open are not this one's
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    shown = D.figure(fig, "ch03-line", caption="A *line* with $x^2$ and `code`.", alt="a line")
    html = shown._repr_html_()
    assert 'id="ch03-line"' in html and 'alt="a line"' in html
    assert "data:image/png;base64," in html
    assert "Figure 3.1.</span> A <em>line</em> with \\(x^2\\) and <code>code</code>." in html
    assert not plt.fignum_exists(fig.number), "the figure is closed once drawn, so it shows once"
    assert not plt.get_fignums()


def test_a_listing_is_the_source_from_the_file():
    listing = D.source("transformer_lab.nn.masks.causal_mask")
    markdown = listing._repr_markdown_()
    assert markdown.startswith("```python\ndef causal_mask(")
    assert "transformer_lab/nn/masks.py, causal_mask" in markdown
    decorated = D.source(
        "transformer_lab.generation.search.greedy_decode"
    )  # under @torch.no_grad()
    assert decorated.where == "transformer_lab/generation/search.py, greedy_decode"
    cut = D.source(D.source, start_at="if isinstance(obj, str)", end_before="try:")
    assert cut.code.splitlines()[0].startswith("if isinstance(obj, str)")
    assert "try:" not in cut.code


def test_a_listing_folds_the_argument_checks_and_says_how_many_lines():
    shown = D.source("transformer_lab.training.distributed.ring_all_reduce")
    whole = D.source("transformer_lab.training.distributed.ring_all_reduce", checks=True)
    markers = [line for line in shown.code.splitlines() if "checking the arguments" in line]
    assert markers == [
        "    # ... 4 lines checking the arguments, in the file ...",
        "    # ... 3 lines checking the arguments, in the file ...",
    ]
    assert "raise" not in shown.code and "raise" in whole.code
    # the folded listing is the full one less the check lines, plus one line per run
    assert len(whole.code.splitlines()) - len(shown.code.splitlines()) == (4 - 1) + (3 - 1)
    kept = [line for line in shown.code.splitlines() if "checking the arguments" not in line]
    assert all(line in whole.code.splitlines() for line in kept)
    # a check whose value is used later stays: steps is read below it
    recall = D.source("transformer_lab.training.recall.train_recall")
    assert 'steps = integer(run.steps, "run.steps", minimum=1)' in recall.code


def test_a_listing_shows_docstrings_with_single_backticks():
    shown = D.source("transformer_lab.nn.masks.causal_mask", checks=True)
    assert "``" not in shown.code and "``" in D.source.__doc__
    assert "``" in inspect.getsource(D._resolve("transformer_lab.nn.masks.causal_mask"))


def test_a_table_is_html_and_aligned_text():
    table = D.table([("GPT", "1,234")], header=["model", "parameters"], caption="Models")
    assert "<th>model</th>" in table._repr_html_() and "<td>1,234</td>" in table._repr_html_()
    assert repr(table).splitlines() == [
        "Models",
        "model  parameters",
        "-----  ----------",
        "GPT    1,234",
    ]


def test_outside_a_notebook_the_progress_line_is_tqdm():
    bar = progress.progress_bar(3, "train")
    assert type(bar).__name__ == "tqdm"
    bar.close()


def test_in_a_notebook_the_progress_line_is_one_display_updated_in_place(monkeypatch):
    shown = []

    class Handle:
        def update(self, data, raw):
            shown[-1] = data["text/plain"]

    def fake_display(data, raw, display_id):
        shown.append(data["text/plain"])
        return Handle()

    import IPython.display

    monkeypatch.setattr(IPython.display, "display", fake_display)
    bar = progress.Progress(5, "train", mininterval=0.0)
    for _ in range(5):
        bar.update(1)
    bar.set_postfix(loss="0.123")
    bar.close()
    assert len(shown) == 1 and "5/5" in shown[0] and "loss=0.123" in shown[0]


def test_a_verdict_printed_by_its_checker_is_not_shown_again_in_the_same_cell(capsys):
    from transformer_lab.exercises import runner

    result = runner.run_check("check_x", lambda: "fine", strict=False, verbose=True)
    assert capsys.readouterr().out.strip() == "✓ check_x: fine"
    # outside IPython there is no cell: asked for, the verdict is printed
    result._ipython_display_()
    assert capsys.readouterr().out.strip() == "✓ check_x: fine"
    assert isinstance(result, CheckResult) and result.passed


def test_eval_expressions_are_found_after_their_code_cell():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("intro"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_markdown_cell("x is {eval}`x`, twice {eval}`x`, and {eval}`f'{x:.2f}'`"),
        nbformat.v4.new_code_cell("y = 2", metadata={"tags": ["hide-cell"]}),
        nbformat.v4.new_markdown_cell("y is {eval}`y`"),
    ]
    found = book_markup.expressions_after_code_cells(nb)
    assert found == {0: [(2, ["x", "f'{x:.2f}'"])], 1: [(4, ["y"])]}
    book_markup.add_reader_metadata(nb)
    assert nb.cells[3].metadata["jupyter"] == {"source_hidden": True, "outputs_hidden": True}
    assert "jupyter" not in nb.cells[1].metadata
    # the kernel's language_info, which JupyterLab would otherwise add on opening (an
    # unsaved change before the reader did anything)
    import platform

    assert nb.metadata["language_info"]["name"] == "python"
    assert nb.metadata["language_info"]["version"] == platform.python_version()


@pytest.mark.parametrize(
    ("result", "text"),
    [
        ({"status": "ok", "data": {"text/plain": "'0.912'"}}, "0.912"),
        ({"status": "ok", "data": {"text/plain": "42"}}, "42"),
        ({"status": "error", "ename": "NameError", "evalue": "no y"}, "NameError: no y"),
    ],
)
def test_an_evaluated_expression_reads_without_quotes(result, text):
    assert book_markup.result_text(result) == text
