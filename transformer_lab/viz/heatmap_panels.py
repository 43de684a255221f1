"""The panels of :func:`~transformer_lab.viz.heatmap_explorer.heatmap_explorer`: what each
one shows (:class:`Panels`), where they go in the figure (:class:`Frame`: margins, the room
between panels, colour bars), and their heatmaps and axes.

These are the parts ``heatmap_explorer`` assembles, and its interface to this module; they
stay outside ``__all__`` (chapters call ``heatmap_explorer``): ``build_panels`` makes the
:class:`Panels`, ``build_frame`` the :class:`Frame`, ``horizontal_spacing`` gives the room
between panels, ``add_heatmaps`` draws them, ``axis_update`` relabels their axes for one
option, ``style_axes`` sets the axes' look and ``stacked_layout`` stacks the panels for a
phone."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer_lab.viz.heatmaps import as_2d
from transformer_lab.viz.layout import (
    COLORBAR_PX,
    COLORBAR_ROW_PX,
    MENU_PX,
    NARROWEST_PX,
    PANEL_TITLE_PX,
    PHONE_PX,
    PHONE_TITLE_WRAP,
    REF_PLOT_PX,
    SLIDER_PX,
    TOP_PAD_PX,
    count_lines,
    label_px,
    tick_step,
    title_layout,
    wrap_title,
    z_and_text,
)

__all__: list[str] = []  # the parts of heatmap_explorer; chapters call that

# --- what each panel shows ------------------------------------------------------------------


@dataclass
class Panels:
    """What the panels show and how, one entry per panel in every list."""

    arrays: dict  # (option, slider value) -> the 2-d arrays of the panels
    names: list  # the panel titles as given (the traces' names)
    titles: list  # the panel titles wrapped to the panels' widths
    ranges: list  # (zmin, zmax)
    colorscales: list
    fmts: list
    annotate: list
    axis_titles: list  # (x_title, y_title)
    barred: list  # the panels that draw a colour bar (the last one only, when shared)

    @property
    def n(self) -> int:
        return len(self.names)

    def cells(self, option, slider_value, p: int) -> tuple[list, list]:
        """Panel ``p``'s z (None where not finite) and cell texts for one state."""
        return z_and_text(self.arrays[option, slider_value][p], self.fmts[p], self.annotate[p])


def _per_panel(value, kind: type, n_panels: int) -> list:
    """``value`` for every panel when it is a single ``kind``, else the list given."""
    return [value] * n_panels if isinstance(value, kind) else list(value)


def build_panels(
    states, options, values, panel_titles, *, zranges, annotate, fmt, colorscale,
    colorbars, axis_titles, column_widths,
) -> Panels:  # fmt: skip
    """The panels' settings one per panel, their arrays for every state (``values[option]``
    are the option's slider values), their colour ranges, which of them draw a colour bar,
    and their titles wrapped to fit."""
    n_panels = len(panel_titles)
    annotate = _per_panel(annotate, bool, n_panels)
    colorscales = _per_panel(colorscale, str, n_panels)
    fmts = _per_panel(fmt, str, n_panels)
    with_bar = _per_panel(colorbars, bool, n_panels)
    if len(with_bar) != n_panels:
        raise ValueError(f"{len(with_bar)} colorbars flags for {n_panels} panels")
    axis_titles = list(axis_titles) if axis_titles is not None else [("", "")] * n_panels
    arrays = {(o, s): [as_2d(a) for a in states[o][s]] for o in options for s in values[o]}
    ranges = _color_ranges(arrays, zranges, n_panels)
    # one shared bar when every panel with a bar has the same range and colour scale
    barred = [p for p in range(n_panels) if with_bar[p]]
    if len({(ranges[p], repr(colorscales[p])) for p in barred}) == 1:
        barred = barred[-1:]
    # panel titles are wrapped to their panel's share of the narrowest figure
    shares = list(column_widths) if column_widths is not None else [1.0] * n_panels
    shares = [w / sum(shares) for w in shares]
    titles = [
        wrap_title(t, max(14, int(share * REF_PLOT_PX / 7.5))) if t else t
        for t, share in zip(panel_titles, shares, strict=True)
    ]
    return Panels(
        arrays, list(panel_titles), titles, ranges, colorscales, fmts, annotate, axis_titles,
        barred,
    )  # fmt: skip


def _color_ranges(arrays, zranges, n_panels: int) -> list[tuple[float, float]]:
    """``(zmin, zmax)`` per panel: as given, else the finite range over all states."""
    if zranges is None:
        zranges = [None] * n_panels
    ranges = []
    for p in range(n_panels):
        if zranges[p] is not None:
            ranges.append(tuple(zranges[p]))
            continue
        finite = np.concatenate([a[p][np.isfinite(a[p])] for a in arrays.values()])
        ranges.append((float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0))
    return ranges


# --- the frame: margins around the panels and the room between them ------------------------


@dataclass
class Frame:
    """Where things go around the panels, in pixels."""

    layout: dict  # height, background, title and margins of the figure
    above_plot: float  # between the panels' top and the dropdown: the panel titles
    below: float  # under the panels: rotated column labels and the axis title
    strip: int  # the row of colour bars under the panels (0 when a bar stands beside)
    has_slider: bool
    has_menu: bool

    @property
    def beside(self) -> bool:
        """A single colour bar stands right of its panel; several stand in a row below."""
        return self.strip == 0

    @property
    def plot_px(self) -> float:
        margin = self.layout["margin"]
        return self.layout["height"] - margin["t"] - margin["b"]


def build_frame(
    panels: Panels, labels, options, *, title, height, dropdown_label, has_slider, has_menu
) -> Frame:
    """The figure's height and margins: from the top the title, the dropdown and the panel
    titles; below the panels the column labels, a row of colour bars and the slider."""
    beside = len(panels.barred) <= 1
    strip = 0 if beside else COLORBAR_ROW_PX
    height = height + strip  # a row of colour bars adds its height: the panels keep theirs
    # the space above the panels, from the top: title, dropdown, panel titles
    panel_lines = max((count_lines(t) for t in panels.titles if t), default=0)
    above_plot = (PANEL_TITLE_PX * panel_lines + 6 if panel_lines else 0) + 4
    top = TOP_PAD_PX + above_plot
    layout = {
        "height": height,
        "plot_bgcolor": "#d0d0d0",  # shows through the gaps left by -inf (masked) cells
    }
    if title:
        layout["title"], top = title_layout(title, height)
        top += above_plot
    if has_menu:
        top += MENU_PX + 6
    # the space below: rotated column labels, the axis title, colour bars, the slider
    longest = max(label_px(x) for o in options for x, _ in labels[o])
    below = 0.71 * longest + 18 + (26 if any(x for x, _ in panels.axis_titles) else 0)
    # left and right: room for the dropdown's caption and a colour bar; the row labels
    # push the left margin as far as they need (automargin), at every width
    left = label_px([f"{dropdown_label}:"]) + 16 if has_menu and dropdown_label else 20
    last_barred = beside and panels.barred and panels.barred[-1] == panels.n - 1
    layout["margin"] = {
        "t": round(top),
        "b": round(below + 10 + strip + (SLIDER_PX if has_slider else 0)),
        "l": round(left),
        "r": 24 + (COLORBAR_PX if last_barred else 0),
    }
    return Frame(layout, above_plot, below, strip, has_slider, has_menu)


def horizontal_spacing(panels: Panels, labels, options, frame: Frame, shared_rows) -> float:
    """Room between panels (a fraction of the width) for the next panel's row labels and
    y title, and a colour bar beside the panel."""
    gap_px = 0.0
    for p in range(panels.n - 1):
        need = 14.0
        if not shared_rows:
            need += max(label_px(labels[o][p + 1][1]) for o in options)
            need += 22 if panels.axis_titles[p + 1][1] else 0
        need += COLORBAR_PX if frame.beside and p in panels.barred else 0
        gap_px = max(gap_px, need)
    spacing = max(0.025 if shared_rows else 0.06, gap_px / REF_PLOT_PX)
    return min(spacing, 0.6 / max(1, panels.n - 1))


# --- the traces and the axes ----------------------------------------------------------------


def _colorbar(domain, frame: Frame) -> dict:
    """A colour bar right of the panel spanning ``domain``, or under it in the row of bars."""
    style = {"thickness": 10, "outlinewidth": 0, "ticklen": 3, "tickfont": {"size": 10}}
    if frame.beside:  # in the right margin for the last panel
        return {
            **style,
            "x": domain[1] + 6 / REF_PLOT_PX,
            "xanchor": "left",
            "y": 0.5,
            "yanchor": "middle",
            "len": 1.0,
            "xpad": 2,
            "ypad": 0,
        }
    width = domain[1] - domain[0]
    return {  # below the column labels and axis title, above the slider
        **style,
        "orientation": "h",
        "x": (domain[0] + domain[1]) / 2,
        "xanchor": "center",
        "len": max(0.6 * width, min(width, 0.3)),
        "y": -(frame.below + 6) / frame.plot_px,
        "yanchor": "top",
        "xpad": 0,
        "ypad": 0,
    }


def add_heatmaps(fig, panels: Panels, frame: Frame, options, start: dict) -> None:
    """One heatmap per option and panel at the option's slider value ``start[option]``;
    the first option's show."""
    domains = [fig.get_subplot(1, p + 1).xaxis.domain for p in range(panels.n)]
    for o_index, option in enumerate(options):
        for p in range(panels.n):
            z, text = panels.cells(option, start[option], p)
            fig.add_heatmap(
                z=z,
                text=text,
                texttemplate="%{text}",
                textfont={"size": 9},
                zmin=panels.ranges[p][0],
                zmax=panels.ranges[p][1],
                colorscale=panels.colorscales[p],
                showscale=p in panels.barred,
                colorbar=_colorbar(domains[p], frame) if p in panels.barred else None,
                visible=o_index == 0,
                name=f"{option}: {panels.names[p]}",
                hovertemplate="row %{y}, column %{x}: %{z:.3f}<extra></extra>",
                row=1,
                col=p + 1,
            )


def _ticks(names, max_ticks: int | None) -> tuple[list[int], list[str]]:
    """Tick positions and labels: every label, or every n-th for at most ``max_ticks``."""
    names = [str(s) for s in names]
    keep = range(0, len(names), tick_step(len(names), max_ticks))
    return list(keep), [names[i] for i in keep]


def axis_update(panel_labels, max_ticks: int | None) -> dict:
    """The tick labels of every panel's axes, as a layout update (one option's labels)."""
    update: dict[str, list[int] | list[str]] = {}
    for p, (x_labels, y_labels) in enumerate(panel_labels):
        suffix = "" if p == 0 else str(p + 1)
        x_vals, x_text = _ticks(x_labels, max_ticks)
        y_vals, y_text = _ticks(y_labels, max_ticks)
        update[f"xaxis{suffix}.tickvals"] = x_vals
        update[f"xaxis{suffix}.ticktext"] = x_text
        update[f"yaxis{suffix}.tickvals"] = y_vals
        update[f"yaxis{suffix}.ticktext"] = y_text
    return update


def style_axes(fig, panels: Panels, shared_rows: bool) -> None:
    """Rows top to bottom, slanted column labels, no grid; axis titles per panel."""
    fig.update_yaxes(autorange="reversed", showgrid=False, zeroline=False, automargin=True)
    fig.update_xaxes(tickangle=-45, showgrid=False, zeroline=False)
    if shared_rows:
        for p in range(1, panels.n):
            fig.update_yaxes(showticklabels=False, row=1, col=p + 1)
    for p, (x_title, y_title) in enumerate(panels.axis_titles):
        fig.update_xaxes(title_text=x_title or None, row=1, col=p + 1)
        fig.update_yaxes(title_text=y_title or None, row=1, col=p + 1)


# --- on a phone: the panels one above the other ---------------------------------------------

_STACK_PX = (140, 280)  # the shortest and the tallest a stacked panel gets
_STACK_GAP_PX = 4  # between a panel's column labels (or colour bar) and the next title


def stacked_layout(fig, panels: Panels, frame: Frame, labels, options, *, title, shared_rows):
    """The figure with its panels one above the other, each as wide as a phone's box
    (``PHONE_PX``), for the site's script (``_static/transformer_lab.js``) to apply when
    the exploration's box is narrower than ``below_px``: side by side, the panels would be
    cut at the screen's edge. Returned as ``{"below_px", "narrow", "wide"}``, where
    ``narrow`` is the update (``{"data": ..., "layout": ...}`` for ``Plotly.update``) and
    ``wide`` the same keys as the figure has them, to go back when the box widens.

    A stacked panel is about as tall as its cells are wide (at most ``_STACK_PX``); each
    gets its own row labels, its title above it, its colour bar below its column labels;
    the titles are wrapped to the phone's width and the dropdown's labels shortened to it.
    """
    n, margin = panels.n, frame.layout["margin"]
    y_room = max(label_px(y) for o in options for _, y in labels[o]) + 32
    plot_w = PHONE_PX - max(margin["l"], y_room) - 24
    names = [wrap_title(t, PHONE_TITLE_WRAP + 6) if t else t for t in panels.names]
    heads = [PANEL_TITLE_PX * count_lines(t) + 6 if t else 0 for t in names]
    bars = [COLORBAR_ROW_PX if p in panels.barred else 0 for p in range(n)]
    heights = []
    for p in range(n):
        rows = max(len(labels[o][p][1]) for o in options)
        cols = max(1, max(len(labels[o][p][0]) for o in options))
        heights.append(round(min(max(rows / cols * plot_w, _STACK_PX[0]), _STACK_PX[1])))
    title_top = title_layout(title, 1000, wrap=PHONE_TITLE_WRAP)[1] if title else TOP_PAD_PX
    above = heads[0] + 4  # the first panel's title, between the dropdown and the panel
    top = round(title_top + above + (MENU_PX + 6 if frame.has_menu else 0))
    under_last = round(frame.below + 10 + bars[-1])
    bottom = under_last + (SLIDER_PX if frame.has_slider else 0)
    gaps = [round(frame.below) + bars[p] + _STACK_GAP_PX + heads[p + 1] for p in range(n - 1)]
    plot_h = sum(heights) + sum(gaps)
    height = top + plot_h + bottom
    layout = {"height": height, "margin.t": top, "margin.b": bottom, "margin.r": 24}
    if title:
        stacked_title = title_layout(title, height, wrap=PHONE_TITLE_WRAP)[0]
        layout.update({"title.text": stacked_title["text"], "title.y": stacked_title["y"]})
    trace_keys = ["orientation", "x", "xanchor", "y", "yanchor", "len", "xpad", "ypad"]
    bar_of = [dict.fromkeys(trace_keys) for _ in range(n)]
    notes = [i for i, a in enumerate(fig.layout.annotations) if a.yshift is not None]
    titles = [i for i in range(len(fig.layout.annotations)) if i not in notes]
    cursor = 0.0  # pixels from the top of the plot area
    for p in range(n):
        s = "" if p == 0 else str(p + 1)
        domain = [1 - (cursor + heights[p]) / plot_h, 1 - cursor / plot_h]
        layout.update({f"xaxis{s}.domain": [0.0, 1.0], f"yaxis{s}.domain": domain})
        if shared_rows and p > 0:
            layout[f"yaxis{s}.showticklabels"] = True
            layout[f"yaxis{s}.title.text"] = panels.axis_titles[p][1] or panels.axis_titles[0][1]
        if p in panels.barred:
            below = -(frame.below + 6) / plot_h
            values = ["h", 0.5, "center", domain[0] + below, "top", 0.8, 0, 0]
            bar_of[p] = dict(zip(trace_keys, values, strict=True))
        cursor += heights[p] + (gaps[p] if p < n - 1 else 0)
    named = [p for p in range(n) if panels.titles[p]]  # make_subplots skips empty titles
    for i, p in zip(titles, named, strict=False):
        top_of = layout[f"yaxis{'' if p == 0 else p + 1}.domain"][1]
        layout.update({f"annotations[{i}].text": names[p], f"annotations[{i}].x": 0.5,
                       f"annotations[{i}].y": top_of})  # fmt: skip
    layout.update({f"annotations[{i}].yshift": above + 8 for i in notes})
    for k, menu in enumerate(fig.layout.updatemenus):
        layout[f"updatemenus[{k}].pad.b"] = above
        most = int((plot_w + 24 - 30) / label_px(["x"]))
        for j, button in enumerate(menu.buttons):
            layout[f"updatemenus[{k}].buttons[{j}].label"] = _shorten(button.label, most)
    for k in range(len(fig.layout.sliders)):
        layout[f"sliders[{k}].pad.t"] = under_last
    data = {
        f"colorbar.{key}": [bar_of[t % n][key] for t in range(len(fig.data))] for key in trace_keys
    }
    wide_layout = {key: _plain(fig.layout[key]) for key in layout}
    wide_data = {key: [_plain(trace[key]) for trace in fig.data] for key in data}
    return {
        "below_px": NARROWEST_PX,
        "narrow": {"data": data, "layout": layout},
        "wide": {"data": wide_data, "layout": wide_layout},
    }


def _shorten(label: str, most: int) -> str:
    """``label`` cut after a word to at most ``most`` characters, with an ellipsis."""
    if len(label) <= most:
        return label
    cut = label[: most - 1].rsplit(" ", 1)[0] if " " in label[: most - 1] else label[: most - 1]
    return cut.rstrip() + "…"


def _plain(value):
    """A value read from a Plotly object as JSON takes it (tuples as lists)."""
    return list(value) if isinstance(value, tuple) else value
