"""Grouped bars behind a slider that move without a kernel (:func:`slider_bars`): their
heights, whiskers and value labels are precomputed for every slider value, on a linear or a
logarithmic axis.

On a logarithmic axis, where zero has no place, a bar of height zero is drawn as a stub at
the axis floor labelled "0"; every other bar reads its value as ``bar_labels`` writes it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from transformer_lab.checks import index_in, instance_of
from transformer_lab.viz.bar_labels import LABEL_FONT, value_labels
from transformer_lab.viz.layout import SLIDER_PX, title_layout

__all__ = ["slider_bars"]


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
    fmt: str = ".2f",
    log_y: bool = False,
):
    """Grouped bars whose precomputed heights (and whiskers) follow a slider (kernel-free).

    Args:
        states: ``states[slider_value][series]`` is the bars' heights over ``x_labels``,
            or ``(heights, low, high)`` to draw whiskers from ``low`` to ``high``. Every
            slider value has the same series, in the same order.
        x_labels: the groups on the x axis.
        slider_label: the name shown before the slider's current value.
        title: the figure's title (wrapped to fit, see
            :func:`~transformer_lab.viz.layout.wrap_title`).
        y_range: the y axis' range, in the data's units (also on a log axis); the top is
            raised a little to leave room for the labels above the bars.
        colors: a colour per series (Plotly colour names or hex).
        reference: ``(y, label)``: a dashed horizontal line, e.g. a baseline, named in
            the legend.
        active: index of the slider value shown first.
        fmt: the format of the value written above each bar (above its whisker).
        log_y: a logarithmic y axis. A bar of height zero, which such an axis cannot
            draw, becomes a stub at the axis floor labelled "0" (and its hover says 0).

    One bar trace per series, with the series named in a legend above the plot, and one
    text trace per series that writes each bar's value above the bar or its whisker, in
    the bar's place within its group (``scattermode="group"``); a slider step restyles
    every trace's ``y``, whiskers and labels. Returns the figure for :func:`show`.
    """
    import plotly.graph_objects as go

    value_labels((), fmt)  # a bad fmt is refused first
    instance_of(log_y, bool, "log_y")
    values = list(states)
    if not values:
        raise ValueError("states is empty")
    series = list(states[values[0]])
    if not series:
        raise ValueError(f"states[{values[0]!r}] has no series")
    for value in values:
        if list(states[value]) != series:
            raise ValueError(
                f"states[{value!r}] has series {list(states[value])}, expected {series}"
            )
    index_in(active, len(values), "active", "a slider index")

    def parts(entry):
        """Heights, low and high ends (the heights when there are no whiskers), whiskers."""
        if isinstance(entry, tuple) and len(entry) == 3:
            mid, low, high = (np.asarray(v, dtype=float) for v in entry)
            whiskers = {
                "type": "data",
                "symmetric": False,
                "array": np.round(high - mid, 5).tolist(),
                "arrayminus": np.round(mid - low, 5).tolist(),
            }
        else:
            mid = np.asarray(entry, dtype=float)
            low, high, whiskers = mid, mid, {"visible": False}
        if mid.ndim != 1 or len(mid) != len(x_labels) or not low.shape == mid.shape == high.shape:
            raise ValueError(f"{mid.size} heights for {len(x_labels)} x labels")
        if not (np.isfinite(mid).all() and np.isfinite(low).all() and np.isfinite(high).all()):
            raise ValueError(f"bar heights and whiskers must be finite, got {entry!r}")
        return mid, low, high, whiskers

    table = {v: {name: parts(states[v][name]) for name in series} for v in values}
    axis, floor = _y_axis(table, y_title, y_range, log_y)

    def labels(mid):
        """The values as written; on a log axis a zero reads "0", whatever ``fmt``."""
        texts = value_labels(mid, fmt)
        return ["0" if log_y and v == 0 else t for v, t in zip(mid, texts, strict=True)]

    def drawn(mid, low, high):
        """The bars' heights as drawn, where their labels go, and the labels' positions."""
        heights = np.where(mid > 0, mid, floor) if log_y else mid
        below = (mid < 0) & (not log_y)
        at = np.where(below, np.minimum(low, mid), np.maximum(high, heights))
        where = ["bottom center" if b else "top center" for b in below]
        return np.round(heights, 5).tolist(), np.round(at, 5).tolist(), where

    title_dict, top = title_layout(title, height)
    legend_px = 20 * (len(series) + (reference is not None)) + 10
    top += legend_px + 6
    fig = go.Figure()
    for name in series:
        mid, low, high, whiskers = table[values[active]][name]
        heights, _, _ = drawn(mid, low, high)
        fig.add_bar(
            x=[str(x) for x in x_labels],
            y=heights,
            error_y=whiskers,
            name=name,
            offsetgroup=name,
            marker_color=(colors or {}).get(name),
            customdata=labels(mid),
            hovertemplate="%{x}: %{customdata}<extra>%{fullData.name}</extra>",
        )
    for name in series:  # the value labels, above each bar or its whisker
        mid, low, high, _ = table[values[active]][name]
        _, at, where = drawn(mid, low, high)
        fig.add_scatter(
            x=[str(x) for x in x_labels],
            y=at,
            text=labels(mid),
            mode="markers+text",  # an unseen marker keeps the label clear of the whisker's cap
            marker={"size": 9, "opacity": 0},
            textposition=where,
            textfont=LABEL_FONT,
            offsetgroup=name,
            name=f"{name} (values)",
            showlegend=False,
            hoverinfo="skip",
            cliponaxis=False,
        )
    if reference is not None:  # the line, and a legend entry naming it (no label on the bars)
        line = {"color": "#333333", "dash": "dash", "width": 1.5}
        fig.add_hline(y=reference[0], line=line)
        fig.add_scatter(x=[None], y=[None], mode="lines", line=line, name=reference[1])
    steps = []
    for value in values:
        ys, label_ys, texts, places, whiskers = [], [], [], [], []
        for name in series:
            mid, low, high, whisker = table[value][name]
            heights, at, where = drawn(mid, low, high)
            ys.append(heights)
            label_ys.append(at)
            texts.append(labels(mid))
            places.append(where)
            whiskers.append(whisker)
        n = len(series)
        update = {
            "y": ys + label_ys,
            "error_y": whiskers + [{"visible": False}] * n,
            "customdata": texts + [None] * n,
            "text": [None] * n + texts,
            "textposition": [None] * n + places,
        }
        steps.append(
            {"method": "restyle", "label": str(value), "args": [update, list(range(2 * n))]}
        )
    bottom_pad = round(0.6 * 12 * 1.2 + 40)
    fig.update_layout(
        title=title_dict,
        barmode="group",
        scattermode="group",  # each label stands over its own bar of the group
        height=height,
        yaxis=axis,
        legend={"orientation": "v", "x": 0.0, "xanchor": "left", "y": 1.0, "yanchor": "bottom"},
        margin={"t": top, "b": bottom_pad + SLIDER_PX, "l": 60, "r": 20},
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


def _y_axis(table, y_title: str, y_range, log_y: bool) -> tuple[dict, float]:
    """The y axis of :func:`slider_bars`, with room above the bars for their labels, and
    its floor on a log axis (where zero bars stand; 0 on a linear one)."""
    axis: dict[str, Any] = {"title": y_title or None}
    ends = [
        x for by_series in table.values() for mid, low, high, _ in by_series.values()
        for x in (*mid, *low, *high)
    ]  # fmt: skip
    if not log_y:
        if y_range is not None:
            low, high = (float(v) for v in y_range)
            axis["range"] = [low, high + 0.08 * (high - low)]
        return axis, 0.0
    if y_range is not None:
        low, high = (float(v) for v in y_range)
        if not 0 < low < high:
            raise ValueError(f"a log axis needs 0 < low < high, got y_range={y_range!r}")
        lo, hi = math.log10(low), math.log10(high) + 0.15
    else:
        positive = [x for x in ends if x > 0] or [1.0]
        lo = math.floor(math.log10(min(positive)) - 0.3)  # a round floor below the lowest bar
        hi = math.log10(max(positive)) + 0.35  # room for the labels above the highest
    axis.update(type="log", range=[lo, hi], dtick=1)  # a tick at each power of ten
    return axis, 10.0**lo
