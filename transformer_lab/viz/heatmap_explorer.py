"""Heatmap explorations that move without a kernel: a slider or dropdown over frames."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from transformer_lab.viz.heatmaps import _as_2d
from transformer_lab.viz.layout import (
    _COLORBAR_PX,
    _COLORBAR_ROW_PX,
    _MENU_PX,
    _PANEL_TITLE_PX,
    _REF_PLOT_PX,
    _SLIDER_PX,
    _TOP_PAD_PX,
    _dropdown,
    _label_px,
    _n_lines,
    _tick_step,
    _z_and_text,
    title_layout,
    wrap_title,
)

__all__ = ["heatmap_explorer", "slider_heatmaps", "dropdown_heatmaps"]


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
