"""Heatmap explorations that move without a kernel: a slider or dropdown over frames."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from transformer_lab.checks import index_in, instance_of
from transformer_lab.viz.heatmap_panels import (
    Panels,
    add_heatmaps,
    axis_update,
    build_frame,
    build_panels,
    horizontal_spacing,
    stacked_layout,
    style_axes,
)
from transformer_lab.viz.layout import REF_PLOT_PX, dropdown_menu, label_px

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
    own_sliders: bool = False,
):
    """Heatmap panels with precomputed states behind a slider and an optional dropdown.

    Args:
        states: ``states[option][slider_value]`` is a list with one 2-d array per panel.
            Every option must have the same slider values (in the same order), unless
            ``own_sliders``.
        labels: ``labels[option]`` is a list with ``(x_labels, y_labels)`` per panel.
        panel_titles: one title per panel.
        slider_label: the name shown before the slider's current value ("d_k = 16"); an
            empty string shows the slider value alone, for values that name themselves
            ("step 3: 'und'"); with a single slider value and ``slider_label=None`` the
            slider is left out. Step labels too long to stand side by side under the
            rail are left out there, and the current value above the rail names the step.
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
        own_sliders: give each option a slider of its own, shown while that option is
            chosen: the options may then have different slider values (their own number
            of steps and their own labels, e.g. the words of each example), and each
            slider keeps its position when the dropdown moves away and back. ``active``
            must then be a step of every option. Without it one slider serves every
            option (each step sets the states of all of them).

    Returns:
        a ``plotly.graph_objects.Figure``; show it with :func:`show`. With several panels,
        its ``layout.meta["tl_stack"]`` holds them stacked one above the other, which the
        site shows on a phone (see ``heatmap_panels.stacked_layout``).
    """
    from plotly.subplots import make_subplots

    instance_of(own_sliders, bool, "own_sliders")
    options, values = _check_states(states, labels, len(panel_titles), same=not own_sliders)
    index_in(active, min(len(v) for v in values.values()), "active", "a slider index")
    panels = build_panels(
        states, options, values, panel_titles, zranges=zranges, annotate=annotate,
        fmt=fmt, colorscale=colorscale, colorbars=colorbars, axis_titles=axis_titles,
        column_widths=column_widths,
    )  # fmt: skip
    frame = build_frame(
        panels, labels, options, title=title, height=height, dropdown_label=dropdown_label,
        has_slider=slider_label is not None or any(len(v) > 1 for v in values.values()),
        has_menu=len(options) > 1 or bool(dropdown_label),
    )  # fmt: skip
    fig = make_subplots(
        rows=1,
        cols=panels.n,
        subplot_titles=panels.titles,
        column_widths=list(column_widths) if column_widths is not None else None,
        horizontal_spacing=horizontal_spacing(panels, labels, options, frame, shared_rows),
    )
    add_heatmaps(fig, panels, frame, options, {o: values[o][active] for o in options})
    fig.update_layout(axis_update(labels[options[0]], max_ticks))
    style_axes(fig, panels, shared_rows)
    layout = frame.layout
    n_sliders = 0
    if frame.has_slider and own_sliders:
        layout["sliders"] = _own_sliders(panels, options, values, active, slider_label, frame)
        n_sliders = len(options)
    elif frame.has_slider:
        slider_values = values[options[0]]
        layout["sliders"] = [_slider(panels, options, slider_values, active, slider_label, frame)]
    fig.update_annotations(font_size=14)  # the panel titles (the dropdown's caption below)
    if frame.has_menu:
        buttons = _menu_buttons(panels, options, labels, max_ticks, n_sliders)
        menu, note = dropdown_menu(buttons, label=dropdown_label, above_plot_px=frame.above_plot)
        layout["updatemenus"] = [menu]
        if note is not None:
            layout["annotations"] = list(fig.layout.annotations) + [note]
    fig.update_layout(**layout)
    if panels.n > 1:  # on a phone the site stacks the panels (see stacked_layout)
        stack = stacked_layout(
            fig, panels, frame, labels, options, title=title, shared_rows=shared_rows
        )
        fig.update_layout(meta={"tl_stack": stack})
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


# --- argument checking ---------------------------------------------------------------------


def _check_states(states, labels, n_panels: int, *, same: bool) -> tuple[list, dict]:
    """The options and each option's slider values, once every option has slider values
    (the same ones when ``same``), an array per panel at each, and labels per panel."""
    options = list(states)
    if not options:
        raise ValueError("states is empty")
    values = {}
    for option in options:
        values[option] = list(states[option])
        if not values[option]:
            raise ValueError(f"states[{option!r}] has no slider values")
        if same and values[option] != values[options[0]]:
            raise ValueError(
                f"states[{option!r}] has slider values {values[option]}, "
                f"expected {values[options[0]]} (own_sliders=True gives each option its own)"
            )
        for value in values[option]:
            if len(states[option][value]) != n_panels:
                raise ValueError(
                    f"states[{option!r}][{value!r}] has {len(states[option][value])} "
                    f"arrays for {n_panels} panels"
                )
        if option not in labels or len(labels[option]) != n_panels:
            raise ValueError(f"labels[{option!r}] must give (x_labels, y_labels) per panel")
    return options, values


# --- the controls ---------------------------------------------------------------------------


def _slider(panels: Panels, options, slider_values, active, slider_label, frame) -> dict:
    """A slider whose every step sets every trace (of every option), so the dropdown's
    choice survives a move of the slider."""
    steps = []
    for value in slider_values:
        zs, texts = [], []
        for option in options:
            for p in range(panels.n):
                z, text = panels.cells(option, value, p)
                zs.append(z)
                texts.append(text)
        steps.append({"method": "restyle", "label": str(value), "args": [{"z": zs, "text": texts}]})
    return {
        **_slider_look(slider_values, slider_label),
        "active": active,
        "pad": {"t": round(frame.below + 10 + frame.strip), "b": 0},
        "steps": steps,
    }


def _own_sliders(panels: Panels, options, values, active, slider_label, frame) -> list[dict]:
    """One slider per option, whose steps set that option's traces only; the first shows."""
    sliders = []
    for o_index, option in enumerate(options):
        traces = list(range(o_index * panels.n, (o_index + 1) * panels.n))
        steps = []
        for value in values[option]:
            cells = [panels.cells(option, value, p) for p in range(panels.n)]
            update = {"z": [z for z, _ in cells], "text": [text for _, text in cells]}
            steps.append({"method": "restyle", "label": str(value), "args": [update, traces]})
        sliders.append(
            {
                **_slider_look(values[option], slider_label),
                "active": active,
                "visible": o_index == 0,
                "pad": {"t": round(frame.below + 10 + frame.strip), "b": 0},
                "steps": steps,
            }
        )
    return sliders


_SLIDER_TEXT = "#2a3f5f"  # the colour of Plotly's default template's text


def _slider_look(slider_values, slider_label) -> dict:
    """The current value's prefix ("d_k = ", or none for values that name themselves), and,
    when the step labels would run into each other under the rail (on the narrowest
    figure), step labels drawn in no colour: the current value above the rail, in the
    text colour, then names the step."""
    prefix = f"{slider_label} = " if slider_label else ""
    look: dict[str, Any] = {"currentvalue": {"prefix": prefix}}
    n = len(slider_values)
    spacing = (REF_PLOT_PX - 40) / max(1, n - 1)  # between the ticks, less the grip's room
    if n > 1 and label_px(slider_values) + 6 > spacing:
        look["font"] = {"color": "rgba(0,0,0,0)"}
        look["currentvalue"]["font"] = {"color": _SLIDER_TEXT}
    return look


def _menu_buttons(
    panels: Panels, options, labels, max_ticks: int | None, n_sliders: int = 0
) -> list[dict]:
    """One dropdown button per option: it shows that option's traces and tick labels, and
    its own slider when each option has one (``n_sliders``)."""
    n_traces = len(options) * panels.n
    buttons = []
    for o_index, option in enumerate(options):
        first = o_index * panels.n
        visible = [first <= t < first + panels.n for t in range(n_traces)]
        layout = axis_update(labels[option], max_ticks)
        layout.update({f"sliders[{k}].visible": k == o_index for k in range(n_sliders)})
        buttons.append(
            {
                "method": "update",
                "label": str(option),
                "args": [{"visible": visible}, layout],
            }
        )
    return buttons
