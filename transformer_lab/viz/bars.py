"""Bar charts: explorations that move without a kernel (next-token probabilities, decoding,
grouped bars behind a slider) and value labels for Matplotlib bars.

Every bar these helpers draw carries its value as a label, so a bar of height zero, which
draws nothing, still reads "0.00". On a logarithmic axis, where zero has no place, a zero
bar is drawn as a stub at the axis floor labelled "0" (:func:`label_bars` for Matplotlib,
``log_y`` in :func:`slider_bars`).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence

import numpy as np

from transformer_lab.checks import finite_number, index_in, instance_of, string
from transformer_lab.viz.layout import (
    _MENU_PX,
    _SLIDER_PX,
    _TOP_PAD_PX,
    TITLE_SIZE,
    TITLE_WRAP,
    _dropdown,
    _label_px,
    _n_lines,
    title_layout,
    wrap_title,
)

__all__ = ["dropdown_bars", "decoding_explorer", "slider_bars", "label_bars"]

_LABEL_FONT = {"size": 11}  # the value labels of the Plotly bars


def _check_fmt(fmt) -> str:
    """``fmt`` if it is a format spec that formats a float ("{:.2f}" without the braces)."""
    string(fmt, "fmt")
    try:
        format(0.5, fmt)
    except ValueError as err:
        raise ValueError(
            f"fmt must be a format spec for a number such as '.2f', got {fmt!r}"
        ) from err
    return fmt


def _value_text(value: float, fmt: str) -> str:
    """A bar's label: the value in ``fmt``; a zero always reads as a zero ("0.00", never
    "-0.00"), a value that is not zero but would read as one as "<0.01" (for fixed-point
    and percent formats), and a value that is not a number as "n/a"."""
    value = float(value)
    if not math.isfinite(value):
        return "n/a"
    if value == 0:
        return format(0.0, fmt)
    text = format(value, fmt)
    places = re.fullmatch(r".*\.(\d+)([f%])", fmt)
    if places and text.lstrip("-") == format(0.0, fmt):  # rounds to zero, but is not
        unit = 10.0 ** -(int(places.group(1)) + (2 if places.group(2) == "%" else 0))
        return ("<" if value > 0 else ">-") + format(unit, fmt)
    return text


def _texts(values, fmt: str) -> list[str]:
    return [_value_text(v, fmt) for v in values]


def dropdown_bars(
    bars: Mapping[str, tuple[Sequence[str], Sequence[float]]],
    *,
    headings: Mapping[str, str],
    dropdown_label: str,
    y_title: str = "",
    color: str = "#21918c",
    height: int = 500,
    heading_size: int = 13,
    fmt: str = ".2f",
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
        fmt: the format of the value written above each bar (e.g. ``".2f"``, ``".2g"``).

    The dropdown sits at the top left; the heading hangs below it, and the top margin fits
    the longest heading, so neither covers the other. Each option is one bar trace; a
    dropdown button (method ``update``) shows that trace and sets ``title.text`` to its
    heading, so the heading always follows the dropdown. Returns the figure for
    :func:`show`.
    """
    import plotly.graph_objects as go

    _check_fmt(fmt)
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
            text=_texts(y, fmt),
            textposition="outside",
            textfont=_LABEL_FONT,
            cliponaxis=False,
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
    fmt: str = ".2f",
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
        fmt: the format of the probability written above each bar.

    Each filter owns two traces: its bars and its sample, a ``mode="text"`` scatter on a
    hidden axis below the bars. The dropdown shows the bars and the sample of one filter;
    a slider step restyles the ``y`` of every filter's bars and the ``text`` of every
    filter's sample to that temperature. So whatever the two controls say, the bars and
    the text shown are the same rule's. Returns the figure for :func:`show`.
    """
    import plotly.graph_objects as go

    _check_fmt(fmt)
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
    index_in(active, len(temperatures), "active", "a slider index")
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
            text=_texts(states[name, start], fmt),
            textposition="outside",
            textfont=_LABEL_FONT,
            cliponaxis=False,
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
                    "text": [_texts(states[f, t], fmt) for f in filters]
                    + [[texts[f, t]] for f in filters],
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
        yaxis={"range": [0, 1.08], "title": "probability", "domain": [bars_bottom, 1.0]},
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
        title: the figure's title (wrapped to fit, see :func:`wrap_title`).
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

    _check_fmt(fmt)
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
        return ["0" if log_y and v == 0 else t for v, t in zip(mid, _texts(mid, fmt), strict=True)]

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
            textfont=_LABEL_FONT,
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


def _y_axis(table, y_title: str, y_range, log_y: bool) -> tuple[dict, float]:
    """The y axis of :func:`slider_bars`, with room above the bars for their labels, and
    its floor on a log axis (where zero bars stand; 0 on a linear one)."""
    axis = {"title": y_title or None}
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


def label_bars(ax, fmt: str = ".2f", *, fontsize: float = 8, zero_text: str = "0") -> list:
    """Write each bar's value above it, on every bar chart (bar container) of a Matplotlib
    ``ax``: ``fmt`` formats the value ("0.00" for a bar of height zero, which draws
    nothing); a label stands above the bar's whisker when it has one, and below a bar that
    goes down. Horizontal bars are labelled at their end.

    On a logarithmic value axis, where zero has no place, a bar of height zero gets a short
    line at the axis floor and the label ``zero_text`` above it (the floor stays the
    floor when the axis limits change). Call it after the bars are drawn and the axis
    scale is set. Returns the labels (Matplotlib ``Text`` objects), bar by bar.
    """
    from matplotlib.axes import Axes
    from matplotlib.container import BarContainer
    from matplotlib.transforms import blended_transform_factory

    instance_of(ax, Axes, "ax", "a Matplotlib Axes")
    _check_fmt(fmt)
    finite_number(fontsize, "fontsize", above=0)
    if fontsize > 72:
        raise ValueError(f"fontsize must be at most 72 points, got {fontsize!r}")
    string(zero_text, "zero_text")
    containers = [c for c in ax.containers if isinstance(c, BarContainer)]
    if not containers:
        raise ValueError("ax has no bars to label (draw them with ax.bar or ax.barh first)")
    texts = []
    for container in containers:
        horizontal = container.orientation == "horizontal"
        log = (ax.get_xscale() if horizontal else ax.get_yscale()) == "log"
        values = list(container.datavalues)
        zero = [log and not v > 0 for v in values]
        shown = ["" if z else _value_text(v, fmt) for v, z in zip(values, zero, strict=True)]
        texts += ax.bar_label(container, shown, padding=2, fontsize=fontsize)
        for patch, is_zero in zip(container.patches, zero, strict=True):
            if not is_zero:
                continue
            if horizontal:  # at the left edge of the axes, the bar's middle
                where = patch.get_y() + patch.get_height() / 2
                spot = blended_transform_factory(ax.transAxes, ax.transData)
                ax.plot([0], [where], marker="|", ms=8, color="0.3", transform=spot, clip_on=False)
                texts.append(
                    ax.annotate(zero_text, (0, where), xycoords=spot, xytext=(4, 0),
                                textcoords="offset points", ha="left", va="center",
                                fontsize=fontsize)
                )  # fmt: skip
            else:  # on the bottom edge of the axes, the bar's middle
                where = patch.get_x() + patch.get_width() / 2
                spot = blended_transform_factory(ax.transData, ax.transAxes)
                ax.plot([where], [0], marker="_", ms=8, color="0.3", transform=spot, clip_on=False)
                texts.append(
                    ax.annotate(zero_text, (where, 0), xycoords=spot, xytext=(0, 3),
                                textcoords="offset points", ha="center", va="bottom",
                                fontsize=fontsize)
                )  # fmt: skip
    _make_room(ax, texts, horizontal=containers[-1].orientation == "horizontal")
    return texts


def _make_room(ax, texts, *, horizontal: bool) -> None:
    """Widen the value axis' limits so that no label sticks out of the axes (a label above
    a bar that reaches the top, or below one that reaches the bottom)."""
    get_renderer = getattr(ax.figure.canvas, "get_renderer", None)
    if get_renderer is None:  # a canvas that cannot measure text: leave the limits
        return
    renderer = get_renderer()
    box = ax.get_window_extent(renderer)
    extents = [t.get_window_extent(renderer) for t in texts if t.get_text()]
    if not extents or box.width <= 0 or box.height <= 0:
        return
    if horizontal:
        low_px = box.x0 - min(e.x0 for e in extents)
        high_px = max(e.x1 for e in extents) - box.x1
        size, (low, high), log = box.width, ax.get_xlim(), ax.get_xscale() == "log"
    else:
        low_px = box.y0 - min(e.y0 for e in extents)
        high_px = max(e.y1 for e in extents) - box.y1
        size, (low, high), log = box.height, ax.get_ylim(), ax.get_yscale() == "log"
    if low_px <= 0 and high_px <= 0:
        return
    if log:  # in decades; a log axis' floor stays where it is
        span = math.log10(high / low)
        high *= 10.0 ** (max(0.0, high_px + 3) * span / size)
    else:
        span = high - low
        high += max(0.0, high_px + 3) * span / size if high_px > 0 else 0.0
        low -= max(0.0, low_px + 3) * span / size if low_px > 0 else 0.0
    (ax.set_xlim if horizontal else ax.set_ylim)(low, high)
