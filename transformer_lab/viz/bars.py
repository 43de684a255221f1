"""Bar-chart explorations that move without a kernel: next-token probabilities, decoding."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import numpy as np

from transformer_lab.checks import index_in
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

__all__ = ["dropdown_bars", "decoding_explorer", "slider_bars"]


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
    index_in(active, len(values), "active", "a slider index")

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
