"""Heatmaps: one matrix, an attention pattern, every head, and a kernel-free SVG.

Outside ``__all__``, ``as_2d`` and ``cell_text`` are shared with the heatmap explorer
(``viz.layout``, ``viz.heatmap_panels``): a matrix read as a 2-d array, and a cell's text."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import numpy as np

__all__ = ["heatmap", "attention_heatmap", "plot_heads", "svg_heatmap"]


def as_2d(matrix, name: str = "matrix") -> np.ndarray:
    """``matrix`` (a tensor, an array or nested lists) as a 2-d float array; leading axes
    of size 1 are dropped, any other shape is refused, naming ``name``."""
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


def cell_text(value: float, fmt: str) -> str:
    """The text written in a cell: ``value`` in ``fmt``, or ``nan``, ``∞``, ``-∞``."""
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

    values = as_2d(matrix)
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
                    cell_text(value, fmt),
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
    values = as_2d(weights, "weights")
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
    values = as_2d(matrix)
    n_rows, n_cols = values.shape
    _check_labels(x_labels, n_cols, "column")
    _check_labels(y_labels, n_rows, "row")
    finite = values[np.isfinite(values)]
    vmin = (float(finite.min()) if finite.size else 0.0) if vmin is None else vmin
    vmax = (float(finite.max()) if finite.size else 1.0) if vmax is None else vmax
    cell = cell or (28 if max(n_rows, n_cols) <= 12 else 20)
    font = 10 if cell >= 24 else 8
    left: float = 8 + 6 * max((len(str(s)) for s in y_labels), default=0) if y_labels else 8
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
                    f"{cell_text(float(values[i, j]), fmt)}</text>"
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
