"""Value labels on bars: the text that every bar chart of the package writes on its bars
(:func:`value_labels`, used by the Plotly explorations of ``bars`` and ``grouped_bars``), and
:func:`label_bars`, which writes them on the bars of a Matplotlib axes.

Every bar carries its value as a label, so a bar of height zero, which draws nothing, still
reads "0.00". On a logarithmic axis, where zero has no place, a zero bar is drawn as a stub
at the axis floor labelled "0" (:func:`label_bars` for Matplotlib, ``log_y`` in
:func:`~transformer_lab.viz.grouped_bars.slider_bars`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import cast

from transformer_lab.checks import finite_number, instance_of, string

__all__ = ["value_labels", "label_bars"]

LABEL_FONT = {"size": 11}  # the font of the value labels on Plotly bars


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
    """One bar's label (see :func:`value_labels`)."""
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


def value_labels(values: Iterable[float], fmt: str = ".2f") -> list[str]:
    """The labels written on bars of heights ``values``, in order: each value in ``fmt`` (a
    format spec for a number, such as ``".2f"``, ``".2g"`` or ``".0%"``); a zero always
    reads as a zero ("0.00", never "-0.00"), a value that is not zero but would read as one
    as "<0.01" (for fixed-point and percent formats), and a value that is not a finite
    number as "n/a". A bad ``fmt`` is refused even when ``values`` is empty."""
    _check_fmt(fmt)
    if not isinstance(values, Iterable):
        raise TypeError(f"values must be an iterable of numbers, got {type(values).__name__}")
    return [_value_text(v, fmt) for v in values]


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
        values = list(cast(Iterable[float], container.datavalues))  # an array of the values
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
