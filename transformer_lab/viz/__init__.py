"""Pictures for the book: heatmaps, Plotly figures that move without a kernel, numbered
figures, listings and tables.

Where each kind lives: ``plotly`` (:func:`show`, the MIME bundle), ``heatmaps`` (matplotlib
and SVG heatmaps), ``heatmap_explorer`` (its panels, frame and axes in ``heatmap_panels``)
and ``bars`` (explorations behind dropdowns) with ``grouped_bars`` (grouped bars behind a
slider) and ``bar_labels`` (the value written on every bar, in Plotly and Matplotlib),
``layout`` (titles, menus, sliders), ``display`` (numbered figures, listings, tables) with
``listing`` (a listing's argument checks folded), ``live`` (a model the reader runs) and
``bertviz`` (attention browsers: head and model views). The names below are the ones
chapters call as ``viz.name``.

The pictures drawn for particular chapters (the Transformer's diagram, the timeline, the
word map, the attention explorer of chapters 4-6, matrices drawn as boxes ...) live in
:mod:`transformer_lab.viz.chapters`, whose docstring says which chapter uses which module.
They use this machinery; no module of it imports them (``tests/test_package_layout.py``).

Displaying a Plotly figure: :func:`show`
----------------------------------------
``show(fig)`` publishes ONE output carrying three representations of the figure (a MIME
bundle); each front end picks the one it can render:

``application/vnd.plotly.v1+json``
    The figure as JSON. JupyterLab renders it with the mime renderer that the ``plotly``
    package installs (``.venv/share/jupyter/labextensions/jupyterlab-plotly``, renderer
    rank 2, ahead of HTML's 50). That renderer bundles its own plotly.js, so nothing is
    fetched from the network, and it is marked safe, so it also draws in untrusted
    notebooks (where inline scripts would not run).
``text/html``
    A ``<div class="tl-plotly">`` and an inline ``<script>`` that draws the figure with
    the page's **global** ``Plotly`` object. myst-nb (Jupyter Book 1.x) has no renderer for
    the plotly mime type; its render priority for the ``html`` builder is widget view,
    javascript, then ``text/html``, and the bundle holds neither of the first two, so the
    static site gets this fragment. The fragment never references a CDN: the site has to
    load plotly.js itself, e.g. the ``plotly/package_data/plotly.min.js`` shipped with the
    installed ``plotly`` package (the same plotly.js version the JupyterLab renderer uses),
    copied to ``_static`` and loaded on every page before RequireJS, as
    ``scripts/site/site_extension.py`` does (the installed plotly.js 4 sets ``window.Plotly``
    either way; older builds register as an AMD module instead when RequireJS came first).
    The script draws at once when
    ``window.Plotly`` exists, otherwise on the window ``load`` event (so ``defer``/``async``
    script tags work), otherwise through an AMD loader (``require(["plotly"], ...)``) if
    the page has one. When plotly.js is missing the div says so in plain text.
``text/plain``
    A one-line description, for consoles and for nbval.

Both drawings get :data:`PLOTLY_CONFIG`: no Plotly logo and no "Share chart..." button
(which would upload the figure to Plotly's cloud).

Finding a figure in the DOM (for browser tests)
-----------------------------------------------
On the static site each figure is ``div.tl-plotly`` (``role="figure"``, ``aria-label`` =
the alt text, ``data-tl-title`` = the figure title) around ``div.plotly-graph-div``, the
element handed to ``Plotly.newPlot``; its ``.data`` and ``.layout`` properties hold the
current state (e.g. ``gd.data[0].z``). Plotly draws sliders as ``g.slider-container``
(steps can be clicked at ``g.slider-group`` / ``rect.slider-rail-touch-rect``) and
dropdowns as ``g.updatemenu-container`` (clicking ``g.updatemenu-header-group`` opens it,
then ``g.updatemenu-dropdown-button`` are the options, in order).

Precomputed states
------------------
:func:`heatmap_explorer` puts several heatmap panels behind a slider and, optionally, a
dropdown. Each dropdown option owns its own group of traces (only one group is visible);
a slider step restyles the ``z`` and the cell text of *every* group to the states for
that slider value, and a dropdown button only switches which group is visible (and the
tick labels). So the two controls are independent and every combination of the two is
reachable with plain Plotly, no kernel and no custom JavaScript. :func:`slider_heatmaps`
and :func:`dropdown_heatmaps` are the one-panel special cases. Every panel whose colour
carries a number gets a colour bar: one bar right of the panels when they share a scale,
otherwise one under each panel.

The same pattern serves bar charts: :func:`dropdown_bars` (one chart and one heading per
option, e.g. a verdict per example), :func:`slider_bars` (grouped bars with whiskers behind
a slider) and :func:`decoding_explorer` (next-token probabilities and a sampled text for
every temperature and filter: each filter owns a bar trace and a text trace, the dropdown
shows one filter's pair and a slider step restyles every pair, so the text shown always
belongs to both controls' choice). Every bar they draw carries its value as a label, so a
bar of height zero still reads "0.00"; :func:`label_bars` does the same for the bars of a
Matplotlib axes, and on a log axis both mark a zero bar at the axis floor with a "0".

Layout
------
Plotly does not wrap titles, and places the first line of a multi-line title at its anchor
with the other lines hanging below. :func:`wrap_title` breaks a title into lines that fit
the narrowest figure the site draws (:data:`NARROWEST_PX`); :func:`title_layout` anchors it
at the top of the figure and says how many pixels it takes, and the explorations stack
title, dropdown, panel titles, panels, colour bars and slider in pixels from there, so that
nothing overlaps or leaves the figure.

Matplotlib
----------
:func:`heatmap` draws a matrix with its numbers (``-inf`` cells grey, labelled ``-∞``);
:func:`attention_heatmap` and :func:`plot_heads` draw attention patterns with query rows
and key columns labelled by tokens. :func:`svg_heatmap` returns a heatmap as an SVG
string, cheap enough for a widget to redraw on every control change.
"""

from transformer_lab.viz.bar_labels import label_bars
from transformer_lab.viz.bars import decoding_explorer, dropdown_bars
from transformer_lab.viz.display import figure, source, table
from transformer_lab.viz.grouped_bars import slider_bars
from transformer_lab.viz.heatmap_explorer import (
    dropdown_heatmaps,
    heatmap_explorer,
    slider_heatmaps,
)
from transformer_lab.viz.heatmaps import attention_heatmap, heatmap, plot_heads, svg_heatmap
from transformer_lab.viz.layout import title_layout, wrap_title
from transformer_lab.viz.live import live_model
from transformer_lab.viz.plotly import figure_html, mimebundle, show

__all__ = [
    "show",
    "mimebundle",
    "figure_html",
    "heatmap",
    "attention_heatmap",
    "plot_heads",
    "svg_heatmap",
    "heatmap_explorer",
    "slider_heatmaps",
    "dropdown_heatmaps",
    "figure",
    "source",
    "table",
    "dropdown_bars",
    "decoding_explorer",
    "slider_bars",
    "label_bars",
    "wrap_title",
    "title_layout",
    "live_model",
]
