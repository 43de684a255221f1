"""Figures for the book: attention heatmaps, and Plotly figures that move without a kernel.

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
    ``scripts/site_extension.py`` does (the installed plotly.js 4 sets ``window.Plotly``
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
belongs to both controls' choice).

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

from __future__ import annotations

import html
import json
import math
import re
import uuid
from collections.abc import Mapping, Sequence

import numpy as np

from .display import figure, source, table  # noqa: F401 (numbered figures, listings, tables)

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
    "wrap_title",
    "title_layout",
]
# Also public, documented in the module docstring, but not yet in __all__ (which
# tests/test_bad_inputs.py requires to have bad-input cases): wrap_title, title_layout,
# dropdown_bars, decoding_explorer, slider_bars.

PLOTLY_MIME = "application/vnd.plotly.v1+json"
# No Plotly logo, and no "Share chart..." button (it would upload the figure to Plotly's
# cloud service): the figures never talk to the network.
PLOTLY_CONFIG = {
    "displaylogo": False,
    "responsive": True,
    "showSendToCloud": False,
    "modeBarButtonsToRemove": ["sendChartToCloud", "sendDataToCloud"],
}

_DRAW_SCRIPT = """(function () {{
  var fig = {fig};
  var id = {div_id};
  function draw(P) {{
    var gd = document.getElementById(id);
    if (gd && !gd.classList.contains("js-plotly-plot")) {{ P.newPlot(gd, fig); }}
  }}
  function fallback() {{
    if (window.Plotly) {{ draw(window.Plotly); return; }}
    if (typeof window.require === "function" && window.require.amd !== undefined) {{
      window.require(["plotly"], draw); return;
    }}
    var gd = document.getElementById(id);
    if (gd) {{ gd.textContent = "This figure needs plotly.js, which this page did not load."; }}
  }}
  if (window.Plotly) {{ draw(window.Plotly); }}
  else if (document.readyState === "complete") {{ fallback(); }}
  else {{ window.addEventListener("load", fallback); }}
}})();"""


def _figure_dict(fig) -> dict:
    """The figure as plain JSON-compatible data (numpy arrays become lists or typed arrays)."""
    import plotly.io as pio

    return json.loads(pio.to_json(fig, validate=False))


def _title_of(fig) -> str:
    """The title as plain text: line breaks become spaces, Plotly's other tags go."""
    title = fig.layout.title.text if fig.layout.title is not None else None
    if title:
        title = " ".join(re.sub(r"<[^>]*>", "", re.sub(r"<br\s*/?>", " ", title)).split())
    return title or "Interactive figure"


def figure_html(fig, *, alt: str | None = None, div_id: str | None = None) -> str:
    """The ``text/html`` of :func:`show`: a div and a script drawing with the global Plotly."""
    div_id = div_id or f"tl-plotly-{uuid.uuid4().hex[:12]}"
    fig_dict = _figure_dict(fig)
    fig_dict["config"] = {**PLOTLY_CONFIG, **fig_dict.get("config", {})}
    # "</" inside a script element would end it early; "<\/" is the same string in JS.
    fig_json = json.dumps(fig_dict, separators=(",", ":")).replace("</", "<\\/")
    title = _title_of(fig)
    label = alt or title
    height = fig_dict.get("layout", {}).get("height") or 450
    script = _DRAW_SCRIPT.format(fig=fig_json, div_id=json.dumps(div_id))
    return (
        f'<div class="tl-plotly" role="figure" aria-label="{html.escape(label)}" '
        f'data-tl-title="{html.escape(title)}">'
        f'<div id="{div_id}" class="plotly-graph-div" style="height:{int(height)}px;width:100%;">'
        f"</div><script>{script}</script></div>"
    )


def mimebundle(fig, *, alt: str | None = None) -> dict:
    """The MIME bundle :func:`show` publishes (plotly JSON for JupyterLab, HTML for the site)."""
    fig_dict = _figure_dict(fig)
    fig_dict["config"] = {**PLOTLY_CONFIG, **fig_dict.get("config", {})}
    n_traces = len(fig_dict.get("data", []))
    return {
        PLOTLY_MIME: fig_dict,
        "text/html": figure_html(fig, alt=alt),
        "text/plain": f"<Plotly figure {_title_of(fig)!r} with {n_traces} traces>",
    }


def show(fig, *, alt: str | None = None) -> None:
    """Display a Plotly figure so it renders in JupyterLab and on the offline static site.

    ``alt`` is the figure's text alternative (``aria-label`` on the site); the layout's
    title is used when it is None. See the module docstring for how each front end
    renders the output.
    """
    from IPython.display import display

    display(mimebundle(fig, alt=alt), raw=True)


# --- matplotlib ---------------------------------------------------------------------------


def _as_2d(matrix, name: str = "matrix") -> np.ndarray:
    if hasattr(matrix, "detach"):
        matrix = matrix.detach().to("cpu").float().numpy()
    array = np.asarray(matrix, dtype=float)
    while array.ndim > 2 and array.shape[0] == 1:
        array = array[0]
    if array.ndim != 2:
        raise ValueError(f"{name} must be 2-d (rows, columns), got shape {array.shape}")
    return array


def _check_labels(labels, size: int, what: str):
    if labels is not None and len(labels) != size:
        raise ValueError(f"{len(labels)} {what} labels for {size} {what}s")


def _cell_text(value: float, fmt: str) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "-∞" if value < 0 else "∞"
    return format(value, fmt)


def heatmap(
    matrix,
    x_labels: Sequence[str] | None = None,
    y_labels: Sequence[str] | None = None,
    title: str | None = None,
    ax=None,
    annotate: bool = True,
    *,
    fmt: str = ".2f",
    cmap: str = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
    colorbar: bool = True,
    xlabel: str | None = None,
    ylabel: str | None = None,
):
    """Draw a 2-d matrix (array or tensor) as a heatmap with its numbers; return the Axes.

    Non-finite cells (``-inf`` from a mask) are drawn grey and labelled ``-∞``; the colour
    scale covers the finite cells only.
    """
    import matplotlib.pyplot as plt

    values = _as_2d(matrix)
    n_rows, n_cols = values.shape
    _check_labels(x_labels, n_cols, "column")
    _check_labels(y_labels, n_rows, "row")
    if ax is None:
        size = (max(3.0, 0.55 * n_cols + 1.8), max(2.5, 0.45 * n_rows + 1.2))
        _, ax = plt.subplots(figsize=size, layout="constrained")
    finite = np.isfinite(values)
    cm = plt.get_cmap(cmap).with_extremes(bad="#d0d0d0")
    shown = np.ma.masked_where(~finite, values)
    if finite.any():
        vmin = float(values[finite].min()) if vmin is None else vmin
        vmax = float(values[finite].max()) if vmax is None else vmax
    image = ax.imshow(shown, cmap=cm, vmin=vmin, vmax=vmax, aspect="auto")
    if colorbar:
        ax.figure.colorbar(image, ax=ax, shrink=0.85)
    ax.set_xticks(range(n_cols), x_labels if x_labels is not None else range(n_cols))
    ax.set_yticks(range(n_rows), y_labels if y_labels is not None else range(n_rows))
    if x_labels is not None and max((len(str(s)) for s in x_labels), default=0) > 3:
        ax.tick_params(axis="x", labelrotation=45)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
    if annotate:
        norm = image.norm
        for i in range(n_rows):
            for j in range(n_cols):
                value = values[i, j]
                dark = finite[i, j] and sum(cm(norm(value))[:3]) < 1.5
                ax.text(
                    j,
                    i,
                    _cell_text(value, fmt),
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if dark else "black",
                )
    if title:
        ax.set_title(title)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    return ax


def attention_heatmap(
    weights,
    tokens: Sequence[str],
    query_tokens: Sequence[str] | None = None,
    *,
    ax=None,
    title: str | None = "Attention weights",
    annotate: bool | None = None,
    fmt: str = ".2f",
):
    """Attention weights ``[query_pos, key_pos]`` with keys (columns) and queries (rows) named.

    ``tokens`` label the keys; ``query_tokens`` label the queries (the same tokens when
    None, as in self-attention). Numbers are written in the cells for up to 12 keys unless
    ``annotate`` says otherwise. Returns the Axes.
    """
    values = _as_2d(weights, "weights")
    query_tokens = tokens if query_tokens is None else query_tokens
    annotate = values.shape[1] <= 12 if annotate is None else annotate
    return heatmap(
        values,
        x_labels=list(tokens),
        y_labels=list(query_tokens),
        title=title,
        ax=ax,
        annotate=annotate,
        fmt=fmt,
        vmin=0.0,
        vmax=1.0,
        xlabel="key",
        ylabel="query",
    )


def plot_heads(
    pattern,
    tokens: Sequence[str],
    query_tokens: Sequence[str] | None = None,
    *,
    titles: Sequence[str] | None = None,
    ncols: int = 4,
    panel_size: float = 2.8,
    annotate: bool = False,
    suptitle: str | None = None,
):
    """Draw one heatmap per head of ``pattern [n_heads, query_pos, key_pos]``; return the Figure.

    A leading batch dimension of size 1 is dropped. All panels share the 0..1 colour scale.
    """
    import matplotlib.pyplot as plt

    if hasattr(pattern, "detach"):
        pattern = pattern.detach().to("cpu").float().numpy()
    pattern = np.asarray(pattern, dtype=float)
    if pattern.ndim == 4 and pattern.shape[0] == 1:
        pattern = pattern[0]
    if pattern.ndim != 3:
        raise ValueError(
            f"pattern must be [n_heads, query_pos, key_pos], got shape {pattern.shape}"
        )
    n_heads = pattern.shape[0]
    if titles is not None and len(titles) != n_heads:
        raise ValueError(f"{len(titles)} titles for {n_heads} heads")
    ncols = max(1, min(ncols, n_heads))
    nrows = math.ceil(n_heads / ncols)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(panel_size * ncols + 0.6, panel_size * nrows + 0.4),
        squeeze=False,
        layout="constrained",
    )
    query_tokens = tokens if query_tokens is None else query_tokens
    for h, ax in enumerate(axes.flat):
        if h >= n_heads:
            ax.axis("off")
            continue
        heatmap(
            pattern[h],
            x_labels=list(tokens),
            y_labels=list(query_tokens),
            ax=ax,
            annotate=annotate,
            vmin=0.0,
            vmax=1.0,
            colorbar=False,
            title=titles[h] if titles is not None else f"head {h}",
        )
        if h % ncols:
            ax.set_yticklabels([])
    if suptitle:
        fig.suptitle(suptitle)
    return fig


# --- SVG: heatmaps cheap enough to redraw on every slider move ----------------------------


def _hex_colors(values: np.ndarray, cmap: str, vmin: float, vmax: float):
    """Fill colours (hex) and text colours for every cell; non-finite cells are grey."""
    import matplotlib

    finite = np.isfinite(values)
    span = (vmax - vmin) or 1.0
    scaled = np.clip((np.where(finite, values, vmin) - vmin) / span, 0.0, 1.0)
    rgba = matplotlib.colormaps[cmap](scaled)  # [rows, cols, 4]
    rgb = np.round(rgba[..., :3] * 255).astype(int)
    fill = np.array([[f"#{r:02x}{g:02x}{b:02x}" for r, g, b in row] for row in rgb])
    fill[~finite] = "#d0d0d0"
    luminance = rgba[..., :3] @ np.array([0.299, 0.587, 0.114])
    ink = np.where(finite & (luminance < 0.5), "#ffffff", "#000000")
    return fill, ink


def svg_heatmap(
    matrix,
    x_labels: Sequence[str] | None = None,
    y_labels: Sequence[str] | None = None,
    title: str | None = None,
    *,
    annotate: bool = True,
    fmt: str = ".2f",
    cmap: str = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
    cell: int | None = None,
    css_class: str = "tl-svg-heatmap",
) -> str:
    """A heatmap as an SVG string (``-inf`` cells grey with ``-∞``), for HTML widgets.

    Building the string takes about a millisecond for a 16 x 16 matrix, so a widget can
    redraw on every control change; the SVG has ``role="img"`` and an ``aria-label``.
    """
    values = _as_2d(matrix)
    n_rows, n_cols = values.shape
    _check_labels(x_labels, n_cols, "column")
    _check_labels(y_labels, n_rows, "row")
    finite = values[np.isfinite(values)]
    vmin = (float(finite.min()) if finite.size else 0.0) if vmin is None else vmin
    vmax = (float(finite.max()) if finite.size else 1.0) if vmax is None else vmax
    cell = cell or (28 if max(n_rows, n_cols) <= 12 else 20)
    font = 10 if cell >= 24 else 8
    left = 8 + 6 * max((len(str(s)) for s in y_labels), default=0) if y_labels else 8
    if x_labels:  # the first rotated column label reaches down and to the left
        left = max(left, 4.5 * len(str(x_labels[0])) - cell / 2)
    top = 22 if title else 6
    bottom = 10 + 4.5 * max((len(str(s)) for s in x_labels), default=0) if x_labels else 6
    width, height = left + n_cols * cell + 6, top + n_rows * cell + bottom
    fill, ink = _hex_colors(values, cmap, vmin, vmax)
    label = html.escape(title or "heatmap")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{css_class}" role="img" '
        f'aria-label="{label}" width="{width:.0f}" height="{height:.0f}" '
        f'font-family="sans-serif" font-size="{font}">'
    ]
    if title:
        parts.append(f'<text x="{left:.0f}" y="15" font-size="12">{html.escape(title)}</text>')
    for i in range(n_rows):
        y = top + i * cell
        for j in range(n_cols):
            x = left + j * cell
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{cell}" height="{cell}" fill="{fill[i, j]}"/>'
            )
            if annotate:
                parts.append(
                    f'<text x="{x + cell / 2:.1f}" y="{y + cell / 2:.1f}" fill="{ink[i, j]}" '
                    f'text-anchor="middle" dominant-baseline="central">'
                    f"{_cell_text(float(values[i, j]), fmt)}</text>"
                )
    for i, name in enumerate(y_labels or []):
        parts.append(
            f'<text x="{left - 4:.1f}" y="{top + (i + 0.5) * cell:.1f}" text-anchor="end" '
            f'dominant-baseline="central">{html.escape(str(name))}</text>'
        )
    base = top + n_rows * cell + 4
    for j, name in enumerate(x_labels or []):
        parts.append(
            f'<text transform="translate({left + (j + 0.5) * cell:.1f},{base}) rotate(-45)" '
            f'text-anchor="end" dominant-baseline="central">{html.escape(str(name))}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


# --- Plotly: layout helpers shared by the explorations ------------------------------------

# Plotly never wraps a title: a line longer than the figure runs off its edge. Titles are
# therefore broken into lines of at most TITLE_WRAP characters (about 470 px at the title's
# 16 px font), which fit the narrowest a figure gets: on the site a figure is never drawn
# narrower than 620 px (on a phone it scrolls inside its own box, see
# _static/transformer_lab.css), and the desktop column is 690-780 px wide.
TITLE_WRAP = 64
TITLE_SIZE = 16
NARROWEST_PX = 620  # the narrowest width the site draws a figure at
_TITLE_LINE_PX = 21  # height of one title line at TITLE_SIZE
_TOP_PAD_PX = 10  # from the top of the figure to the first title line
_MENU_PX = 34  # height of a closed dropdown
_PANEL_TITLE_PX = 18  # a line of a subplot title (14 px) above a panel
_SLIDER_PX = 82  # a slider below its pad: current value, rail, ticks and tick labels
_COLORBAR_PX = 54  # a colour bar with its tick labels, beside a panel
_COLORBAR_ROW_PX = 44  # a row of colour bars below the panels, with their tick labels
# the plot-area width assumed when turning pixels into paper fractions: that of the
# narrowest figure, so gaps between panels are never too narrow (a little wide on a desktop)
_REF_PLOT_PX = NARROWEST_PX - 100
_TAG = re.compile(r"<[^>]*>")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


def wrap_title(text: str, width: int = TITLE_WRAP) -> str:
    """``text`` with ``<br>`` inserted between words so no line is longer than ``width``.

    Existing ``<br>`` breaks are kept, Plotly's other tags (``<b>``, ``<span ...>``) count
    as zero width and are never split, and a single word longer than ``width`` stays whole.
    """
    lines = []
    for part in _BREAK.split(text):
        words = re.findall(r"(?:<[^>]*>|[^\s<]|<(?![^>]*>))+", part)  # a lone "<" is text
        line, size = [], 0
        for word in words:
            n = len(_TAG.sub("", word))
            if line and size + 1 + n > width:
                lines.append(" ".join(line))
                line, size = [], 0
            size += n + (1 if line else 0)
            line.append(word)
        lines.append(" ".join(line))
    return "<br>".join(lines)


def _n_lines(text: str) -> int:
    return len(_BREAK.split(text))


def title_layout(text: str, height: int, *, wrap: int = TITLE_WRAP) -> tuple[dict, int]:
    """A Plotly title for a figure ``height`` px high: wrapped to ``wrap`` characters, its
    first line 10 px below the top; and the pixels it takes from the top, padding
    included (a top margin at least that large keeps it clear of the plot).

    Plotly places the first line of a multi-line title at the anchor and hangs the others
    below it, so the anchor is the bottom of the first line (in container coordinates,
    which do not move when a slider or legend pushes the margins). Use it as
    ``fig.update_layout(title=layout, margin_t=top + ...)``.
    """
    text = wrap_title(text, wrap)
    first_line_bottom = _TOP_PAD_PX + 17
    layout = {
        "text": text,
        "font": {"size": TITLE_SIZE},
        "yref": "container",
        "y": 1 - first_line_bottom / height,
        "yanchor": "bottom",
    }
    return layout, _TOP_PAD_PX + _TITLE_LINE_PX * _n_lines(text) + 4


def _dropdown(buttons, *, label: str | None, above_plot_px: int):
    """A dropdown at the left edge, its bottom ``above_plot_px`` above the plot area, and
    the annotation naming it (to its left, in the margin). Both are placed in pixels from
    the top of the plot area, so they stay put when the plot area changes height."""
    menu = {
        "buttons": buttons,
        "direction": "down",
        "x": 0.0,
        "xanchor": "left",
        "y": 1.0,
        "yanchor": "bottom",
        "pad": {"b": above_plot_px, "t": 0, "l": 0, "r": 0},
        "showactive": True,
        "active": 0,
    }
    note = None
    if label:
        note = {
            "text": f"{label}:",
            "x": 0.0,
            "xref": "paper",
            "xanchor": "right",
            "xshift": -4,
            "y": 1.0,
            "yref": "paper",
            "yanchor": "bottom",
            "yshift": above_plot_px + 8,
            "showarrow": False,
        }
    return menu, note


def _label_px(labels, *, font: int = 12) -> float:
    """Rough width in pixels of the longest tick label."""
    return 0.6 * font * max((len(str(s)) for s in labels), default=0)


def _tick_step(n: int, max_ticks: int | None) -> int:
    """The smallest of 1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, ... that leaves at most
    ``max_ticks`` of ``n`` labels."""
    if not max_ticks or n <= max_ticks:
        return 1
    for step in (2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 200, 250, 500):
        if math.ceil(n / step) <= max_ticks:
            return step
    return math.ceil(n / max_ticks)


# --- Plotly: heatmaps behind a slider / dropdown --------------------------------------------


def _z_and_text(values: np.ndarray, fmt: str, annotate: bool):
    """JSON-safe z (None where not finite, so Plotly leaves a gap) and the cell texts."""
    z = [[round(float(v), 5) if math.isfinite(v) else None for v in row] for row in values]
    text = [[_cell_text(float(v), fmt) if annotate else "" for v in row] for row in values]
    return z, text


def heatmap_explorer(
    states: Mapping[str, Mapping[str, Sequence]],
    *,
    labels: Mapping[str, Sequence[tuple[Sequence[str], Sequence[str]]]],
    panel_titles: Sequence[str],
    slider_label: str | None,
    dropdown_label: str | None = None,
    title: str | None = None,
    zranges: Sequence[tuple[float, float] | None] | None = None,
    annotate: Sequence[bool] | bool = True,
    fmt: Sequence[str] | str = ".2f",
    colorscale: Sequence[str] | str = "Viridis",
    active: int = 0,
    height: int = 460,
    axis_titles: Sequence[tuple[str, str]] | None = None,
    column_widths: Sequence[float] | None = None,
    shared_rows: bool = False,
    colorbars: Sequence[bool] | bool = True,
    max_ticks: int | None = None,
):
    """Heatmap panels with precomputed states behind a slider and an optional dropdown.

    Args:
        states: ``states[option][slider_value]`` is a list with one 2-d array per panel.
            Every option must have the same slider values (in the same order).
        labels: ``labels[option]`` is a list with ``(x_labels, y_labels)`` per panel.
        panel_titles: one title per panel.
        slider_label: the name shown before the slider's current value; with a single
            slider value and ``slider_label=None`` the slider is left out.
        dropdown_label: the dropdown's caption; with a single option and no label the
            dropdown is left out.
        title: the figure's title; it is wrapped (see :func:`wrap_title`) and the space
            above the panels grows with its number of lines.
        zranges: ``(zmin, zmax)`` per panel (None: the finite range over all states).
        annotate: write the numbers in the cells (per panel, or one bool for all).
        fmt: the number format of the cells (per panel, or one for all).
        colorscale: a Plotly colour scale name (per panel, or one for all).
        active: index of the slider value shown first.
        axis_titles: ``(x_title, y_title)`` per panel.
        column_widths: relative widths of the panels (equal when None).
        shared_rows: the panels have the same rows; label them on the first panel only.
        colorbars: which panels get a colour bar (per panel, or one bool for all); leave
            it out for a panel whose colours name categories rather than numbers. When
            every panel with a bar has the same range and colour scale, one bar right of
            the last of them serves them all; otherwise each gets its own horizontal bar
            in a row below the panels (above the slider), which adds its height to
            ``height``, so the panels keep their size.
        max_ticks: at most this many tick labels per axis (every n-th label, n = 2, 4, 5,
            8, 10, ...), for long rows or columns whose labels would pile up.

    Returns:
        a ``plotly.graph_objects.Figure``; show it with :func:`show`.
    """
    from plotly.subplots import make_subplots

    options = list(states)
    if not options:
        raise ValueError("states is empty")
    slider_values = list(states[options[0]])
    n_panels = len(panel_titles)
    if not slider_values:
        raise ValueError(f"states[{options[0]!r}] has no slider values")
    for option in options:
        if list(states[option]) != slider_values:
            raise ValueError(
                f"states[{option!r}] has slider values {list(states[option])}, "
                f"expected {slider_values}"
            )
        for value in slider_values:
            if len(states[option][value]) != n_panels:
                raise ValueError(
                    f"states[{option!r}][{value!r}] has {len(states[option][value])} "
                    f"arrays for {n_panels} panels"
                )
        if option not in labels or len(labels[option]) != n_panels:
            raise ValueError(f"labels[{option!r}] must give (x_labels, y_labels) per panel")
    if not 0 <= active < len(slider_values):
        raise ValueError(f"active={active} is not a slider index (0..{len(slider_values) - 1})")
    annotate = [annotate] * n_panels if isinstance(annotate, bool) else list(annotate)
    colorscales = [colorscale] * n_panels if isinstance(colorscale, str) else list(colorscale)
    fmts = [fmt] * n_panels if isinstance(fmt, str) else list(fmt)
    with_bar = [colorbars] * n_panels if isinstance(colorbars, bool) else list(colorbars)
    if len(with_bar) != n_panels:
        raise ValueError(f"{len(with_bar)} colorbars flags for {n_panels} panels")
    axis_titles = list(axis_titles) if axis_titles is not None else [("", "")] * n_panels
    arrays = {(o, s): [_as_2d(a) for a in states[o][s]] for o in options for s in slider_values}
    if zranges is None:
        zranges = [None] * n_panels
    ranges = []
    for p in range(n_panels):
        if zranges[p] is not None:
            ranges.append(tuple(zranges[p]))
            continue
        finite = np.concatenate([a[p][np.isfinite(a[p])] for a in arrays.values()])
        ranges.append((float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0))

    # colour bars: one shared bar when every panel with a bar has the same scale. A single
    # bar stands right of its panel (in the right margin for the last panel); several
    # stand in a row below the panels, one under each, so the panels keep their width.
    barred = [p for p in range(n_panels) if with_bar[p]]
    if len({(ranges[p], repr(colorscales[p])) for p in barred}) == 1:
        barred = barred[-1:]
    beside = len(barred) <= 1
    strip = 0 if beside else _COLORBAR_ROW_PX
    height = height + strip

    # the space above the panels, from the top: title, dropdown, panel titles
    has_slider = slider_label is not None or len(slider_values) > 1
    has_menu = len(options) > 1 or bool(dropdown_label)
    # panel titles are wrapped to their panel's share of the narrowest figure
    shares = list(column_widths) if column_widths is not None else [1.0] * n_panels
    shares = [w / sum(shares) for w in shares]
    trace_names = list(panel_titles)
    panel_titles = [
        wrap_title(t, max(14, int(share * _REF_PLOT_PX / 7.5))) if t else t
        for t, share in zip(panel_titles, shares, strict=True)
    ]
    panel_lines = max((_n_lines(t) for t in panel_titles if t), default=0)
    above_plot = (_PANEL_TITLE_PX * panel_lines + 6 if panel_lines else 0) + 4
    top = _TOP_PAD_PX + above_plot
    layout = {
        "height": height,
        "plot_bgcolor": "#d0d0d0",  # shows through the gaps left by -inf (masked) cells
    }
    if title:
        layout["title"], top = title_layout(title, height)
        top += above_plot
    if has_menu:
        top += _MENU_PX + 6
    # the space below: rotated column labels, the axis title, colour bars, the slider
    longest = max(_label_px(x) for o in options for x, _ in labels[o])
    below = 0.71 * longest + 18 + (26 if any(x for x, _ in axis_titles) else 0)
    # left and right: room for the dropdown's caption and a colour bar; the row labels
    # push the left margin as far as they need (automargin), at every width
    left = _label_px([f"{dropdown_label}:"]) + 16 if has_menu and dropdown_label else 20
    right = 24 + (_COLORBAR_PX if beside and barred and barred[-1] == n_panels - 1 else 0)
    layout["margin"] = {
        "t": round(top),
        "b": round(below + 10 + strip + (_SLIDER_PX if has_slider else 0)),
        "l": round(left),
        "r": right,
    }
    plot_px = height - layout["margin"]["t"] - layout["margin"]["b"]

    # room between panels: the next panel's row labels and title, and a colour bar
    gap_px = 0.0
    for p in range(n_panels - 1):
        need = 14.0
        if not shared_rows:
            need += max(_label_px(y) for _, (_, y) in ((o, labels[o][p + 1]) for o in options))
            need += 22 if axis_titles[p + 1][1] else 0
        need += _COLORBAR_PX if beside and p in barred else 0
        gap_px = max(gap_px, need)
    spacing = max(0.025 if shared_rows else 0.06, gap_px / _REF_PLOT_PX)
    fig = make_subplots(
        rows=1,
        cols=n_panels,
        subplot_titles=list(panel_titles),
        column_widths=list(column_widths) if column_widths is not None else None,
        horizontal_spacing=min(spacing, 0.6 / max(1, n_panels - 1)),
    )
    domains = [fig.get_subplot(1, p + 1).xaxis.domain for p in range(n_panels)]

    def colorbar(p):
        style = {"thickness": 10, "outlinewidth": 0, "ticklen": 3, "tickfont": {"size": 10}}
        if beside:
            return {
                **style,
                "x": domains[p][1] + 6 / _REF_PLOT_PX,
                "xanchor": "left",
                "y": 0.5,
                "yanchor": "middle",
                "len": 1.0,
                "xpad": 2,
                "ypad": 0,
            }
        width = domains[p][1] - domains[p][0]
        return {  # below the column labels and axis title, above the slider
            **style,
            "orientation": "h",
            "x": (domains[p][0] + domains[p][1]) / 2,
            "xanchor": "center",
            "len": max(0.6 * width, min(width, 0.3)),
            "y": -(below + 6) / plot_px,
            "yanchor": "top",
            "xpad": 0,
            "ypad": 0,
        }

    for o_index, option in enumerate(options):
        for p in range(n_panels):
            z, text = _z_and_text(arrays[option, slider_values[active]][p], fmts[p], annotate[p])
            fig.add_heatmap(
                z=z,
                text=text,
                texttemplate="%{text}",
                textfont={"size": 9},
                zmin=ranges[p][0],
                zmax=ranges[p][1],
                colorscale=colorscales[p],
                showscale=p in barred,
                colorbar=colorbar(p) if p in barred else None,
                visible=o_index == 0,
                name=f"{option}: {trace_names[p]}",
                hovertemplate="row %{y}, column %{x}: %{z:.3f}<extra></extra>",
                row=1,
                col=p + 1,
            )

    def ticks(names):
        names = [str(s) for s in names]
        keep = range(0, len(names), _tick_step(len(names), max_ticks))
        return list(keep), [names[i] for i in keep]

    def axis_update(option):
        update = {}
        for p, (x_labels, y_labels) in enumerate(labels[option]):
            suffix = "" if p == 0 else str(p + 1)
            x_vals, x_text = ticks(x_labels)
            y_vals, y_text = ticks(y_labels)
            update[f"xaxis{suffix}.tickvals"] = x_vals
            update[f"xaxis{suffix}.ticktext"] = x_text
            update[f"yaxis{suffix}.tickvals"] = y_vals
            update[f"yaxis{suffix}.ticktext"] = y_text
        return update

    fig.update_layout(axis_update(options[0]))
    fig.update_yaxes(autorange="reversed", showgrid=False, zeroline=False, automargin=True)
    fig.update_xaxes(tickangle=-45, showgrid=False, zeroline=False)
    if shared_rows:
        for p in range(1, n_panels):
            fig.update_yaxes(showticklabels=False, row=1, col=p + 1)
    for p, (x_title, y_title) in enumerate(axis_titles):
        fig.update_xaxes(title_text=x_title or None, row=1, col=p + 1)
        fig.update_yaxes(title_text=y_title or None, row=1, col=p + 1)

    steps = []
    for value in slider_values:
        zs, texts = [], []
        for option in options:
            for p in range(n_panels):
                z, text = _z_and_text(arrays[option, value][p], fmts[p], annotate[p])
                zs.append(z)
                texts.append(text)
        steps.append({"method": "restyle", "label": str(value), "args": [{"z": zs, "text": texts}]})

    if has_slider:
        layout["sliders"] = [
            {
                "active": active,
                "currentvalue": {"prefix": f"{slider_label or ''} = "},
                "pad": {"t": round(below + 10 + strip), "b": 0},
                "steps": steps,
            }
        ]
    fig.update_annotations(font_size=14)  # the panel titles (the dropdown's caption below)
    if has_menu:
        n_traces = len(options) * n_panels
        buttons = []
        for o_index, option in enumerate(options):
            visible = [o_index * n_panels <= t < (o_index + 1) * n_panels for t in range(n_traces)]
            buttons.append(
                {
                    "method": "update",
                    "label": str(option),
                    "args": [{"visible": visible}, axis_update(option)],
                }
            )
        menu, note = _dropdown(buttons, label=dropdown_label, above_plot_px=above_plot)
        layout["updatemenus"] = [menu]
        if note is not None:
            layout["annotations"] = list(fig.layout.annotations) + [note]
    fig.update_layout(**layout)
    return fig


def slider_heatmaps(
    frames: Mapping[str, object],
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    title: str,
    slider_label: str,
    *,
    zrange: tuple[float, float] | None = None,
    annotate: bool = True,
    fmt: str = ".2f",
    active: int = 0,
    axis_titles: tuple[str, str] = ("key", "query"),
    height: int = 460,
    max_ticks: int | None = None,
):
    """One Plotly heatmap with precomputed states behind a slider, and a colour bar.

    ``frames`` maps each slider label to a 2-d array (all of the same shape). Returns the
    figure; display it with :func:`show`. ``max_ticks`` as in :func:`heatmap_explorer`.
    """
    return heatmap_explorer(
        {"": {str(k): [v] for k, v in frames.items()}},
        labels={"": [(x_labels, y_labels)]},
        panel_titles=[""],
        slider_label=slider_label,
        title=title,
        zranges=[zrange],
        annotate=annotate,
        fmt=fmt,
        active=active,
        axis_titles=[axis_titles],
        height=height,
        max_ticks=max_ticks,
    )


def dropdown_heatmaps(
    frames: Mapping[str, object],
    x_labels: Sequence[str] | Mapping[str, Sequence[str]],
    y_labels: Sequence[str] | Mapping[str, Sequence[str]],
    title: str,
    dropdown_label: str,
    *,
    zrange: tuple[float, float] | None = None,
    annotate: bool = True,
    fmt: str = ".2f",
    axis_titles: tuple[str, str] = ("key", "query"),
    height: int = 460,
    max_ticks: int | None = None,
):
    """One Plotly heatmap whose precomputed states are chosen from a dropdown, and a
    colour bar.

    ``frames`` maps each option to a 2-d array. Options may differ in shape; then give
    ``x_labels``/``y_labels`` as dicts from option to labels. ``max_ticks`` as in
    :func:`heatmap_explorer`.
    """

    def pick(labels, option):
        return labels[option] if isinstance(labels, Mapping) else labels

    return heatmap_explorer(
        {str(k): {"": [v]} for k, v in frames.items()},
        labels={str(k): [(pick(x_labels, k), pick(y_labels, k))] for k in frames},
        panel_titles=[""],
        slider_label=None,
        dropdown_label=dropdown_label,
        title=title,
        zranges=[zrange],
        annotate=annotate,
        fmt=fmt,
        axis_titles=[axis_titles],
        height=height,
        max_ticks=max_ticks,
    )


# --- Plotly: bar charts behind a dropdown or a slider ---------------------------------------


def dropdown_bars(
    bars: Mapping[str, tuple[Sequence[str], Sequence[float]]],
    *,
    headings: Mapping[str, str],
    dropdown_label: str,
    y_title: str = "",
    color: str = "#21918c",
    height: int = 500,
    heading_size: int = 13,
):
    """One bar chart per option of a dropdown, each with its own heading (kernel-free).

    Args:
        bars: ``bars[option] = (x_labels, heights)``; options may differ in length.
        headings: the title shown with each option, e.g. a verdict on that example. It
            may hold ``<br>`` and Plotly's ``<b>``/``<span style=...>`` tags. Its lines
            are wrapped to fit the narrowest figure at ``heading_size`` px (78 characters
            at 13 px), so it never runs off the figure.
        dropdown_label: the dropdown's caption.
        y_title: the y axis title.
        heading_size: the heading's font size in px.

    The dropdown sits at the top left; the heading hangs below it, and the top margin fits
    the longest heading, so neither covers the other. Each option is one bar trace; a
    dropdown button (method ``update``) shows that trace and sets ``title.text`` to its
    heading, so the heading always follows the dropdown. Returns the figure for
    :func:`show`.
    """
    import plotly.graph_objects as go

    options = list(bars)
    if not options:
        raise ValueError("bars is empty")
    missing = [o for o in options if o not in headings]
    if missing:
        raise ValueError(f"no heading for {missing}")
    for option in options:
        x, y = bars[option]
        if len(x) != len(y):
            raise ValueError(f"bars[{option!r}] has {len(x)} labels for {len(y)} heights")
    wrap = TITLE_WRAP * TITLE_SIZE // heading_size
    wrapped = {o: wrap_title(headings[o], wrap) for o in options}
    lines = max(_n_lines(t) for t in wrapped.values())
    line_px = round(1.3 * heading_size) + 1
    menu_top = _TOP_PAD_PX
    heading_top = menu_top + _MENU_PX + 10
    top = heading_top + line_px * lines + 12
    longest = max(_label_px(bars[o][0]) for o in options)
    fig = go.Figure()
    for k, option in enumerate(options):
        x, y = bars[option]
        fig.add_bar(
            x=[str(v) for v in x],
            y=[float(v) for v in y],
            visible=k == 0,
            marker_color=color,
            name=str(option),
            hovertemplate="%{x}: %{y:.3f}<extra></extra>",
        )
    buttons = [
        {
            "method": "update",
            "label": str(option),
            "args": [
                {"visible": [j == k for j in range(len(options))]},
                {"title.text": wrapped[option]},
            ],
        }
        for k, option in enumerate(options)
    ]
    menu, note = _dropdown(buttons, label=dropdown_label, above_plot_px=top - menu_top - _MENU_PX)
    first_line_bottom = heading_top + line_px - 4
    fig.update_layout(
        title={
            "text": wrapped[options[0]],
            "font": {"size": heading_size},
            "yref": "container",
            "y": 1 - first_line_bottom / height,
            "yanchor": "bottom",
        },
        updatemenus=[menu],
        annotations=[note] if note else [],
        yaxis_title=y_title or None,
        xaxis={"tickangle": -45, "automargin": True},
        height=height,
        margin={
            "t": top,
            "b": round(0.71 * longest + 24),
            "l": round(max(60, _label_px([f"{dropdown_label}:"]) + 16)),
            "r": 20,
        },
        showlegend=False,
    )
    return fig


def decoding_explorer(
    labels: Sequence[str],
    states: Mapping[tuple[str, float], Sequence[float]],
    samples: Mapping[tuple[str, float], str],
    temperatures: Sequence[float],
    filters: Sequence[str],
    prompt_tail: str,
    *,
    active: int | None = None,
    title: str = "Next-character probabilities under each decoding rule",
    token_name: str = "characters",
    height: int = 620,
    sample_wrap: int = 60,
):
    """Next-token probabilities and a sampled continuation for every decoding rule: a
    slider for the temperature and a dropdown for the filter (kernel-free).

    Args:
        labels: the tokens on the x axis (e.g. the 12 most likely characters).
        states: ``states[(filter, temperature)]`` are their probabilities under that rule.
        samples: ``samples[(filter, temperature)]`` is a continuation sampled with it.
        temperatures: the slider's values, in order.
        filters: the dropdown's options (names such as ``"top-k, k = 3"``; a dict's keys do).
        prompt_tail: the end of the prompt, named in the x axis title and written before
            each sample.
        active: index of the temperature shown first (default: 1.0 if it is there).
        token_name: what the labels are, for the x axis title.
        sample_wrap: the sample text is broken into lines of at most this many characters.

    Each filter owns two traces: its bars and its sample, a ``mode="text"`` scatter on a
    hidden axis below the bars. The dropdown shows the bars and the sample of one filter;
    a slider step restyles the ``y`` of every filter's bars and the ``text`` of every
    filter's sample to that temperature. So whatever the two controls say, the bars and
    the text shown are the same rule's. Returns the figure for :func:`show`.
    """
    import plotly.graph_objects as go

    filters = list(filters)
    temperatures = list(temperatures)
    if not filters or not temperatures:
        raise ValueError("need at least one filter and one temperature")
    for key in ((f, t) for f in filters for t in temperatures):
        if key not in states or key not in samples:
            raise ValueError(f"no state or sample for {key}")
        if len(states[key]) != len(labels):
            raise ValueError(
                f"states[{key}] has {len(states[key])} values for {len(labels)} labels"
            )
    if active is None:
        active = temperatures.index(1.0) if 1.0 in temperatures else 0
    if not 0 <= active < len(temperatures):
        raise ValueError(f"active={active} is not a slider index (0..{len(temperatures) - 1})")
    n = len(filters)

    def sample_text(name, t):
        body = wrap_title(html.escape(f"…{prompt_tail}{samples[name, t]}"), sample_wrap)
        return f"<b>{html.escape(name)}, temperature {t:g}</b><br>{body}"

    texts = {key: sample_text(*key) for key in ((f, t) for f in filters for t in temperatures)}
    text_lines = max(_n_lines(v) for v in texts.values())

    # pixels, top down: title, dropdown, bars, their x labels and title, sample, slider
    title_dict, top = title_layout(title, height)
    top += _MENU_PX + 14
    bottom = 20 + _SLIDER_PX
    plot_px = height - top - bottom
    text_px = 17 * text_lines + 8
    bars_bottom = (text_px + 70) / plot_px  # room for the bars' tick labels and axis title
    start = temperatures[active]
    fig = go.Figure()
    for k, name in enumerate(filters):
        fig.add_bar(
            x=[str(c) for c in labels],
            y=[float(v) for v in states[name, start]],
            name=name,
            visible=k == 0,
            marker_color="#21918c",
            hovertemplate="%{x}: %{y:.3f}<extra></extra>",
        )
    for k, name in enumerate(filters):
        fig.add_scatter(
            x=[0.0],
            y=[1.0],
            mode="text",
            text=[texts[name, start]],
            textposition="bottom right",
            textfont={"family": "DejaVu Sans Mono, Menlo, Consolas, monospace", "size": 12},
            name=f"sample: {name}",
            visible=k == 0,
            hoverinfo="skip",
            showlegend=False,
            cliponaxis=False,
            xaxis="x2",
            yaxis="y2",
        )
    steps = [
        {
            "method": "restyle",
            "label": f"{t:g}",
            "args": [
                {
                    "y": [[float(v) for v in states[f, t]] for f in filters] + [[1.0]] * n,
                    "text": [None] * n + [[texts[f, t]] for f in filters],
                },
                list(range(2 * n)),
            ],
        }
        for t in temperatures
    ]
    buttons = [
        {
            "method": "restyle",
            "label": name,
            "args": [{"visible": [j == k for j in range(n)] * 2}, list(range(2 * n))],
        }
        for k, name in enumerate(filters)
    ]
    menu, note = _dropdown(buttons, label="filter", above_plot_px=10)
    hidden = {"visible": False, "range": [0, 1], "fixedrange": True}
    fig.update_layout(
        title=title_dict,
        height=height,
        margin={"t": top, "b": bottom, "l": 54, "r": 20},
        yaxis={"range": [0, 1], "title": "probability", "domain": [bars_bottom, 1.0]},
        xaxis={"title": f"the {len(labels)} most likely {token_name} after {prompt_tail!r}"},
        xaxis2={**hidden, "anchor": "y2"},
        yaxis2={**hidden, "anchor": "x2", "domain": [0.0, text_px / plot_px]},
        updatemenus=[menu],
        annotations=[note],
        sliders=[
            {
                "active": active,
                "currentvalue": {"prefix": "temperature = "},
                "pad": {"t": 20, "b": 0},
                "steps": steps,
            }
        ],
        showlegend=False,
    )
    return fig


def slider_bars(
    states: Mapping[str, Mapping[str, Sequence[float] | tuple[Sequence, Sequence, Sequence]]],
    x_labels: Sequence[str],
    *,
    slider_label: str,
    title: str,
    y_title: str = "",
    y_range: tuple[float, float] | None = None,
    colors: Mapping[str, str] | None = None,
    reference: tuple[float, str] | None = None,
    active: int = 0,
    height: int = 500,
):
    """Grouped bars whose precomputed heights (and whiskers) follow a slider (kernel-free).

    Args:
        states: ``states[slider_value][series]`` is the bars' heights over ``x_labels``,
            or ``(heights, low, high)`` to draw whiskers from ``low`` to ``high``. Every
            slider value has the same series, in the same order.
        x_labels: the groups on the x axis.
        slider_label: the name shown before the slider's current value.
        title: the figure's title (wrapped to fit, see :func:`wrap_title`).
        colors: a colour per series (Plotly colour names or hex).
        reference: ``(y, label)``: a dashed horizontal line, e.g. a baseline, named in
            the legend.
        active: index of the slider value shown first.

    One bar trace per series, with the series named in a legend above the plot; a slider
    step restyles every trace's ``y`` and whiskers. Returns the figure for :func:`show`.
    """
    import plotly.graph_objects as go

    values = list(states)
    if not values:
        raise ValueError("states is empty")
    series = list(states[values[0]])
    for value in values:
        if list(states[value]) != series:
            raise ValueError(
                f"states[{value!r}] has series {list(states[value])}, expected {series}"
            )
    if not 0 <= active < len(values):
        raise ValueError(f"active={active} is not a slider index (0..{len(values) - 1})")

    def parts(entry):
        if isinstance(entry, tuple) and len(entry) == 3:
            mid, low, high = (np.asarray(v, dtype=float) for v in entry)
            whiskers = {
                "type": "data",
                "symmetric": False,
                "array": np.round(high - mid, 5).tolist(),
                "arrayminus": np.round(mid - low, 5).tolist(),
            }
        else:
            mid, whiskers = np.asarray(entry, dtype=float), {"visible": False}
        if len(mid) != len(x_labels):
            raise ValueError(f"{len(mid)} heights for {len(x_labels)} x labels")
        return np.round(mid, 5).tolist(), whiskers

    title_dict, top = title_layout(title, height)
    legend_px = 20 * (len(series) + (reference is not None)) + 10
    top += legend_px + 6
    fig = go.Figure()
    for name in series:
        y, whiskers = parts(states[values[active]][name])
        fig.add_bar(
            x=[str(x) for x in x_labels],
            y=y,
            error_y=whiskers,
            name=name,
            marker_color=(colors or {}).get(name),
        )
    if reference is not None:  # the line, and a legend entry naming it (no label on the bars)
        line = {"color": "#333333", "dash": "dash", "width": 1.5}
        fig.add_hline(y=reference[0], line=line)
        fig.add_scatter(x=[None], y=[None], mode="lines", line=line, name=reference[1])
    steps = []
    for value in values:
        ys, whiskers = zip(*(parts(states[value][name]) for name in series), strict=True)
        steps.append(
            {
                "method": "restyle",
                "label": str(value),
                "args": [{"y": list(ys), "error_y": list(whiskers)}, list(range(len(series)))],
            }
        )
    bottom_pad = round(0.6 * 12 * 1.2 + 40)
    fig.update_layout(
        title=title_dict,
        barmode="group",
        height=height,
        yaxis={"title": y_title or None, "range": list(y_range) if y_range else None},
        legend={"orientation": "v", "x": 0.0, "xanchor": "left", "y": 1.0, "yanchor": "bottom"},
        margin={"t": top, "b": bottom_pad + _SLIDER_PX, "l": 60, "r": 20},
        sliders=[
            {
                "active": active,
                "currentvalue": {"prefix": f"{slider_label}: "},
                "pad": {"t": bottom_pad, "b": 0},
                "steps": steps,
            }
        ],
    )
    return fig
