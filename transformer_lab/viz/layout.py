"""Layout shared by the explorations: titles that wrap, dropdowns, sliders, tick steps.

Chapters call ``wrap_title`` and ``title_layout``. The rest is the interface the explorer
modules of ``viz`` (``bars``, ``grouped_bars``, ``heatmap_panels``, ``heatmap_explorer``)
share, outside ``__all__``: the heights in pixels of what stands around a plot
(``TOP_PAD_PX``, ``MENU_PX``, ``PANEL_TITLE_PX``, ``SLIDER_PX``, ``COLORBAR_PX``,
``COLORBAR_ROW_PX``), the reference plot width ``REF_PLOT_PX``, the width ``PHONE_PX`` of
a phone's box and its title width ``PHONE_TITLE_WRAP``, a dropdown placed in pixels
(``dropdown_menu``), a tick label's width (``label_px``), the lines of a wrapped title
(``count_lines``), the step between tick labels (``tick_step``) and a heatmap's cells as
Plotly takes them (``z_and_text``)."""

from __future__ import annotations

import math
import re

import numpy as np

from transformer_lab.viz.heatmaps import cell_text

__all__ = ["wrap_title", "title_layout"]

# Plotly never wraps a title: a line longer than the figure runs off its edge. Titles are
# therefore broken into lines of at most TITLE_WRAP characters (about 470 px at the title's
# 16 px font), which fit the narrowest a figure gets: on the site a figure is never drawn
# narrower than 620 px (on a phone it scrolls inside its own box, see
# _static/transformer_lab.css, unless its panels stack: PHONE_PX below), and the desktop
# column is 690-780 px wide.
TITLE_WRAP = 64

TITLE_SIZE = 16

NARROWEST_PX = 620  # the narrowest width the site draws a figure at

# On a phone the site's box for an exploration is narrower than NARROWEST_PX (368 px at a
# 400 px screen). A figure of several heatmap panels then stacks them, each as wide as the
# box (heatmap_panels.stacked_layout, applied by _static/transformer_lab.js); its titles
# and labels are laid out for a box PHONE_PX wide.
PHONE_PX = 360

PHONE_TITLE_WRAP = 34  # characters per title line at TITLE_SIZE in PHONE_PX

_TITLE_LINE_PX = 21  # height of one title line at TITLE_SIZE

TOP_PAD_PX = 10  # from the top of the figure to the first title line

MENU_PX = 34  # height of a closed dropdown

PANEL_TITLE_PX = 18  # a line of a subplot title (14 px) above a panel

SLIDER_PX = 82  # a slider below its pad: current value, rail, ticks and tick labels

COLORBAR_PX = 54  # a colour bar with its tick labels, beside a panel

COLORBAR_ROW_PX = 44  # a row of colour bars below the panels, with their tick labels

# the plot-area width assumed when turning pixels into paper fractions: that of the
# narrowest figure, so gaps between panels are never too narrow (a little wide on a desktop)
REF_PLOT_PX = NARROWEST_PX - 100

_TAG = re.compile(r"<[^>]*>")

_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


def wrap_title(text: str, width: int = TITLE_WRAP) -> str:
    """``text`` with ``<br>`` inserted between words so no line is longer than ``width``.

    Existing ``<br>`` breaks are kept, Plotly's other tags (``<b>``, ``<span ...>``) count
    as zero width and are never split, and a single word longer than ``width`` stays whole.
    """
    lines = []
    for part in _BREAK.split(text):
        words = re.findall(r"(?:<[^>]*>|[^\s<]|<(?![^>]*>))+", part)  # a lone "<" is text
        line: list[str] = []
        size = 0
        for word in words:
            n = len(_TAG.sub("", word))
            if line and size + 1 + n > width:
                lines.append(" ".join(line))
                line, size = [], 0
            size += n + (1 if line else 0)
            line.append(word)
        lines.append(" ".join(line))
    return "<br>".join(lines)


def count_lines(text: str) -> int:
    """The number of lines of ``text``: its ``<br>`` breaks plus one."""
    return len(_BREAK.split(text))


def title_layout(text: str, height: int, *, wrap: int = TITLE_WRAP) -> tuple[dict, int]:
    """A Plotly title for a figure ``height`` px high: wrapped to ``wrap`` characters, its
    first line 10 px below the top; and the pixels it takes from the top, padding
    included (a top margin at least that large keeps it clear of the plot).

    Plotly places the first line of a multi-line title at the anchor and hangs the others
    below it, so the anchor is the bottom of the first line (in container coordinates,
    which do not move when a slider or legend pushes the margins). Use it as
    ``fig.update_layout(title=layout, margin_t=top + ...)``.
    """
    text = wrap_title(text, wrap)
    first_line_bottom = TOP_PAD_PX + 17
    layout = {
        "text": text,
        "font": {"size": TITLE_SIZE},
        "yref": "container",
        "y": 1 - first_line_bottom / height,
        "yanchor": "bottom",
    }
    return layout, TOP_PAD_PX + _TITLE_LINE_PX * count_lines(text) + 4


def dropdown_menu(buttons, *, label: str | None, above_plot_px: float):
    """A dropdown at the left edge, its bottom ``above_plot_px`` above the plot area, and
    the annotation naming it (to its left, in the margin). Both are placed in pixels from
    the top of the plot area, so they stay put when the plot area changes height."""
    menu = {
        "buttons": buttons,
        "direction": "down",
        "x": 0.0,
        "xanchor": "left",
        "y": 1.0,
        "yanchor": "bottom",
        "pad": {"b": above_plot_px, "t": 0, "l": 0, "r": 0},
        "showactive": True,
        "active": 0,
    }
    note = None
    if label:
        note = {
            "text": f"{label}:",
            "x": 0.0,
            "xref": "paper",
            "xanchor": "right",
            "xshift": -4,
            "y": 1.0,
            "yref": "paper",
            "yanchor": "bottom",
            "yshift": above_plot_px + 8,
            "showarrow": False,
        }
    return menu, note


def label_px(labels, *, font: int = 12) -> float:
    """Rough width in pixels of the longest tick label."""
    return 0.6 * font * max((len(str(s)) for s in labels), default=0)


def tick_step(n: int, max_ticks: int | None) -> int:
    """The smallest of 1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, ... that leaves at most
    ``max_ticks`` of ``n`` labels."""
    if not max_ticks or n <= max_ticks:
        return 1
    for step in (2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 200, 250, 500):
        if math.ceil(n / step) <= max_ticks:
            return step
    return math.ceil(n / max_ticks)


def z_and_text(values: np.ndarray, fmt: str, annotate: bool):
    """JSON-safe z (None where not finite, so Plotly leaves a gap) and the cell texts."""
    z = [[round(float(v), 5) if math.isfinite(v) else None for v in row] for row in values]
    text = [[cell_text(float(v), fmt) if annotate else "" for v in row] for row in values]
    return z, text
