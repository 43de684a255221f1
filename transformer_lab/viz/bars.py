"""Bar charts behind a dropdown that move without a kernel: one chart and one heading per
option (:func:`dropdown_bars`), and next-token probabilities with a sampled continuation
for every decoding rule (:func:`decoding_explorer`).

Grouped bars behind a slider are in ``grouped_bars``; the value written on every bar (a bar
of height zero still reads "0.00") comes from ``bar_labels``.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from transformer_lab.checks import index_in
from transformer_lab.viz.bar_labels import LABEL_FONT, value_labels
from transformer_lab.viz.layout import (
    MENU_PX,
    SLIDER_PX,
    TITLE_SIZE,
    TITLE_WRAP,
    TOP_PAD_PX,
    count_lines,
    dropdown_menu,
    label_px,
    title_layout,
    wrap_title,
)

__all__ = ["dropdown_bars", "decoding_explorer"]


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

    value_labels((), fmt)  # a bad fmt is refused first
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
    lines = max(count_lines(t) for t in wrapped.values())
    line_px = round(1.3 * heading_size) + 1
    menu_top = TOP_PAD_PX
    heading_top = menu_top + MENU_PX + 10
    top = heading_top + line_px * lines + 12
    longest = max(label_px(bars[o][0]) for o in options)
    fig = go.Figure()
    for k, option in enumerate(options):
        x, y = bars[option]
        fig.add_bar(
            x=[str(v) for v in x],
            y=[float(v) for v in y],
            text=value_labels(y, fmt),
            textposition="outside",
            textfont=LABEL_FONT,
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
    menu, note = dropdown_menu(
        buttons, label=dropdown_label, above_plot_px=top - menu_top - MENU_PX
    )
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
            "l": round(max(60, label_px([f"{dropdown_label}:"]) + 16)),
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

    value_labels((), fmt)  # a bad fmt is refused first
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
    text_lines = max(count_lines(v) for v in texts.values())

    # pixels, top down: title, dropdown, bars, their x labels and title, sample, slider
    title_dict, top = title_layout(title, height)
    top += MENU_PX + 14
    bottom = 20 + SLIDER_PX
    plot_px = height - top - bottom
    text_px = 17 * text_lines + 8
    bars_bottom = (text_px + 70) / plot_px  # room for the bars' tick labels and axis title
    start = temperatures[active]
    fig = go.Figure()
    for k, name in enumerate(filters):
        fig.add_bar(
            x=[str(c) for c in labels],
            y=[float(v) for v in states[name, start]],
            text=value_labels(states[name, start], fmt),
            textposition="outside",
            textfont=LABEL_FONT,
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
                    "text": [value_labels(states[f, t], fmt) for f in filters]
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
    menu, note = dropdown_menu(buttons, label="filter", above_plot_px=10)
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
