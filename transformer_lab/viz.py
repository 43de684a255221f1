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
and :func:`dropdown_heatmaps` are the one-panel special cases.

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
]

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
    title = fig.layout.title.text if fig.layout.title is not None else None
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
        zranges: ``(zmin, zmax)`` per panel (None: the finite range over all states).
        annotate: write the numbers in the cells (per panel, or one bool for all).
        fmt: the number format of the cells (per panel, or one for all).
        colorscale: a Plotly colour scale name (per panel, or one for all).
        active: index of the slider value shown first.
        axis_titles: ``(x_title, y_title)`` per panel.
        column_widths: relative widths of the panels (equal when None).
        shared_rows: the panels have the same rows; label them on the first panel only.

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

    fig = make_subplots(
        rows=1,
        cols=n_panels,
        subplot_titles=list(panel_titles),
        column_widths=list(column_widths) if column_widths is not None else None,
        horizontal_spacing=0.025 if shared_rows else 0.06,
    )
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
                showscale=False,
                visible=o_index == 0,
                name=f"{option}: {panel_titles[p]}",
                hovertemplate="row %{y}, column %{x}: %{z:.3f}<extra></extra>",
                row=1,
                col=p + 1,
            )

    def axis_update(option):
        update = {}
        for p, (x_labels, y_labels) in enumerate(labels[option]):
            suffix = "" if p == 0 else str(p + 1)
            update[f"xaxis{suffix}.tickvals"] = list(range(len(x_labels)))
            update[f"xaxis{suffix}.ticktext"] = [str(s) for s in x_labels]
            update[f"yaxis{suffix}.tickvals"] = list(range(len(y_labels)))
            update[f"yaxis{suffix}.ticktext"] = [str(s) for s in y_labels]
        return update

    fig.update_layout(axis_update(options[0]))
    fig.update_yaxes(autorange="reversed", showgrid=False, zeroline=False)
    fig.update_xaxes(tickangle=-45, showgrid=False, zeroline=False)
    if shared_rows:
        for p in range(1, n_panels):
            fig.update_yaxes(showticklabels=False, row=1, col=p + 1)
    if axis_titles is not None:
        for p, (x_title, y_title) in enumerate(axis_titles):
            fig.update_xaxes(title_text=x_title, row=1, col=p + 1)
            fig.update_yaxes(title_text=y_title, row=1, col=p + 1)

    steps = []
    for value in slider_values:
        zs, texts = [], []
        for option in options:
            for p in range(n_panels):
                z, text = _z_and_text(arrays[option, value][p], fmts[p], annotate[p])
                zs.append(z)
                texts.append(text)
        steps.append({"method": "restyle", "label": str(value), "args": [{"z": zs, "text": texts}]})
    layout = {
        "title": {"text": title} if title else None,
        "height": height,
        "plot_bgcolor": "#d0d0d0",  # shows through the gaps left by -inf (masked) cells
        "margin": {"t": 130 if dropdown_label or len(options) > 1 else 80, "b": 40},
    }
    if slider_label is not None or len(slider_values) > 1:
        layout["sliders"] = [
            {
                "active": active,
                "currentvalue": {"prefix": f"{slider_label or ''} = "},
                "pad": {"t": 60},
                "steps": steps,
            }
        ]
    if len(options) > 1 or dropdown_label:
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
        layout["updatemenus"] = [
            {
                "buttons": buttons,
                "direction": "down",
                "x": 0.0,
                "xanchor": "left",
                "y": 1.1,
                "yanchor": "bottom",
                "showactive": True,
                "active": 0,
            }
        ]
        if dropdown_label:
            layout["annotations"] = list(fig.layout.annotations) + [
                {
                    "text": f"{dropdown_label}:",
                    "x": 0.0,
                    "xref": "paper",
                    "xanchor": "right",
                    "y": 1.1,
                    "yref": "paper",
                    "yanchor": "bottom",
                    "yshift": 6,
                    "showarrow": False,
                }
            ]
    fig.update_layout(**{k: v for k, v in layout.items() if v is not None})
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
):
    """One Plotly heatmap with precomputed states behind a slider.

    ``frames`` maps each slider label to a 2-d array (all of the same shape). Returns the
    figure; display it with :func:`show`.
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
):
    """One Plotly heatmap whose precomputed states are chosen from a dropdown.

    ``frames`` maps each option to a 2-d array. Options may differ in shape; then give
    ``x_labels``/``y_labels`` as dicts from option to labels.
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
    )
