"""A map of word vectors: PCA to two dimensions, coloured by group (chapter 1).

- :func:`word_map_figure`: the map with Matplotlib, every word labelled, and arrows.
- :func:`word_map_plotly`: the map with Plotly (kernel-free), every word labelled and on
  hover, and a menu of analogies whose arrows it draws.

Words that crowd together would print over each other: each label takes the free place
nearest its point (``_place_labels``), away from the other labels and points, with a thin
line to its point when it had to move away from it.
- :func:`word_map_controls`: ipywidgets (needs a kernel): place any words of a vocabulary on
  a given map and draw an analogy typed as ``a - b + c``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import torch

from transformer_lab.analysis.word_vectors import Projection, analogy
from transformer_lab.checks import floating_tensor, instance_of, string
from transformer_lab.data.tokenizers import Vocabulary

__all__ = ["word_map_figure", "word_map_plotly", "word_map_controls"]


def _check_points(coords, words, groups, title, arrows) -> tuple[list[str], list[str]]:
    if not isinstance(coords, torch.Tensor) or coords.dim() != 2 or coords.shape[1] != 2:
        got = tuple(coords.shape) if isinstance(coords, torch.Tensor) else type(coords).__name__
        raise ValueError(f"coords must be an [n, 2] tensor, got {got}")
    if not bool(torch.isfinite(coords).all()):
        raise ValueError("coords must hold finite numbers, got NaN or inf")
    for name, seq in (("words", words), ("groups", groups)):
        if isinstance(seq, str) or not isinstance(seq, Sequence):
            raise TypeError(f"{name} must be a sequence of str, one per point, got {seq!r}")
    if not all(isinstance(w, str) for w in words):
        raise TypeError("words must be strings")
    string(title, "title")
    instance_of(arrows, (dict, type(None)), "arrows", "a dict {label: [(from, to), ...]}")
    words, groups = list(words), list(groups)
    if not len(words) == len(groups) == coords.shape[0]:
        raise ValueError(
            f"{coords.shape[0]} points, {len(words)} words and {len(groups)} groups; "
            "give one word and one group per point"
        )
    return words, groups


def _check_arrows(arrows, words) -> dict[str, list[tuple[str, str]]]:
    arrows = arrows or {}
    for label, pairs in arrows.items():
        ok = isinstance(pairs, (list, tuple)) and all(
            isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs
        )
        if not ok:
            raise ValueError(
                f"arrows[{label!r}] must be a list of (from_word, to_word), got {pairs!r}"
            )
    unknown = [w for pairs in arrows.values() for p in pairs for w in p if w not in words]
    if unknown:
        raise ValueError(f"arrow ends not among the words on the map: {unknown}")
    return arrows


_GAPS = (1.0, 4.0, 8.0, 14.0, 22.0, 32.0, 46.0, 64.0, 90.0, 120.0)  # label to marker, in px
_TURNS = 16  # directions tried around a point
_LEADER_PX = 6.0  # a label farther than this from its point gets a line to it


def _place_labels(points, sizes, *, marker: float, bounds, avoid=()) -> list[tuple]:
    """Where to write each label so that none covers another label or a point.

    Everything is in pixels with y upwards: ``points [n, 2]`` the markers (of radius
    ``marker``), ``sizes [n, 2]`` each label's width and height, ``bounds`` the box
    ``(x0, y0, x1, y1)`` labels stay in, ``avoid`` more boxes to keep clear (a legend). The
    crowded points choose first; each label takes, of the places around its point (16
    directions, at gaps from 1 to 120 px), the one that overlaps least, then the nearest.
    Returns one ``(x, y, leader)`` per label: the centre of its box, and whether it stands
    far enough from its point to need a line to it.
    """
    points, sizes = np.asarray(points, float), np.asarray(sizes, float)
    n = len(points)
    dots = np.hstack([points - marker, points + marker])  # each marker as a box
    boxes = np.zeros((0, 4))
    keep_clear = np.vstack([dots, np.asarray(avoid, float).reshape(-1, 4)])
    angles = np.arange(_TURNS) * 2 * np.pi / _TURNS
    ux, uy = np.cos(angles), np.sin(angles)
    spread = np.linalg.norm(points[:, None] - points[None], axis=-1)
    crowd = (spread < 3 * sizes[:, 1:2] + 2 * marker).sum(axis=1)
    placed: list[tuple | None] = [None] * n
    for i in sorted(range(n), key=lambda k: (-crowd[k], k)):
        w, h = sizes[i]
        gaps = np.repeat(_GAPS, _TURNS)
        cx = points[i, 0] + np.tile(ux, len(_GAPS)) * (marker + gaps + w / 2)
        cy = points[i, 1] + np.tile(uy, len(_GAPS)) * (marker + gaps + h / 2)
        candidates = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
        others = np.vstack([boxes, np.delete(keep_clear, i, axis=0)])
        cost = 50 * _overlap(candidates, others).sum(axis=1)
        cost += 50 * _outside(candidates, bounds) + gaps
        best = int(np.argmin(cost))
        placed[i] = (float(cx[best]), float(cy[best]), bool(gaps[best] > _LEADER_PX))
        boxes = np.vstack([boxes, candidates[best]])
    return cast(list[tuple], placed)  # every label has its place now


def _overlap(a, b):
    """The overlapping area of every box of ``a [m, 4]`` with every box of ``b [k, 4]``."""
    w = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    h = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    return np.clip(w, 0, None) * np.clip(h, 0, None)


def _outside(a, bounds):
    """The area of each box of ``a [m, 4]`` outside ``bounds``."""
    area = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    return area - _overlap(a, np.asarray([bounds], float))[:, 0]


def word_map_figure(
    coords: torch.Tensor,
    words: Sequence[str],
    groups: Sequence[str],
    *,
    arrows: dict[str, list[tuple[str, str]]] | None = None,
    variance_ratio: torch.Tensor | None = None,
    title: str = "Words on a map",
):
    """A Matplotlib scatter of ``coords [n, 2]``, one colour and legend entry per group
    (in order of first appearance), every word labelled, and a black arrow for every pair
    ``(from_word, to_word)`` of every entry of ``arrows``. With ``variance_ratio`` (the
    share of the variance along each direction) the axis labels give it. Returns the
    figure."""
    import matplotlib.pyplot as plt

    words, groups = _check_points(coords, words, groups, title, arrows)
    arrows = _check_arrows(arrows, words)
    axis = ["first principal direction", "second principal direction"]
    if variance_ratio is not None:
        floating_tensor(variance_ratio, "variance_ratio", dim=1, shape="[2]")
        axis[0] += f" ({variance_ratio[0]:.0%} of the variance)"
        axis[1] += f" ({variance_ratio[1]:.0%})"
    xy = {w: coords[i].tolist() for i, w in enumerate(words)}
    fig, ax = plt.subplots(figsize=(9, 7), layout="constrained")
    for g, group in enumerate(dict.fromkeys(groups)):
        points = coords[[i for i, gr in enumerate(groups) if gr == group]]
        ax.scatter(points[:, 0], points[:, 1], color=f"C{g}", label=group, s=_DOT_AREA)
    for pairs in arrows.values():
        for start, end in pairs:
            style = {"arrowstyle": "->", "color": "k"}
            # Matplotlib takes any pair of numbers (these are lists); its stub asks for tuples
            ax.annotate("", xy=xy[end], xytext=xy[start], arrowprops=style)  # type: ignore[arg-type]
    ax.set(xlabel=axis[0], ylabel=axis[1], title=title)
    legend = ax.legend(fontsize=8, loc="best")
    lines = [(xy[a], xy[b]) for pairs in arrows.values() for a, b in pairs]
    _label_axes(fig, ax, legend, coords.tolist(), words, lines)
    return fig


_DOT_AREA = 30  # a marker's area in points squared (Matplotlib's scatter size)


def _label_axes(fig, ax, legend, points, words, lines, fontsize: float = 8) -> None:
    """Write every word beside its point, where ``_place_labels`` finds room clear of the
    legend and of the arrows (``lines``, pairs of points), in the final layout: the axes and
    the legend are fixed first, so the labels do not move them."""
    from matplotlib.font_manager import FontProperties

    fig.draw_without_rendering()
    ax.set(xlim=ax.get_xlim(), ylim=ax.get_ylim())
    renderer = fig.canvas.get_renderer()
    legend.set_loc(
        tuple(legend.get_window_extent(renderer).transformed(ax.transAxes.inverted()).p0)
    )
    font = FontProperties(size=fontsize)
    sizes = [renderer.get_text_width_height_descent(w, font, ismath=False)[:2] for w in words]
    sizes = [(width + 2, height + 2) for width, height in sizes]
    pixels = ax.transData.transform(points)
    dot = _DOT_AREA**0.5 / 2 * fig.dpi / 72  # the marker's radius in pixels
    where = _place_labels(
        pixels, sizes, marker=dot, bounds=ax.bbox.extents,
        avoid=[legend.get_window_extent(renderer).extents, *_along(ax.transData, lines)],
    )  # fmt: skip
    to_points = 72 / fig.dpi
    for word, point, (x, y), (px, py, leader) in zip(words, points, pixels, where, strict=True):
        line = {"arrowstyle": "-", "color": "0.55", "lw": 0.6, "shrinkA": 0, "shrinkB": 3}
        ax.annotate(
            word, point, xytext=((px - x) * to_points, (py - y) * to_points),
            textcoords="offset points", ha="center", va="center", fontsize=fontsize,
            arrowprops=line if leader else None,
        )  # fmt: skip


def word_map_plotly(
    coords: torch.Tensor,
    words: Sequence[str],
    groups: Sequence[str],
    *,
    arrows: dict[str, list[tuple[str, str]]] | None = None,
    title: str = "Words on a map",
):
    """A Plotly scatter of ``coords [n, 2]``, one colour per group, the word shown on hover
    and as a label. ``arrows`` maps a menu label to pairs ``(from_word, to_word)`` of
    words in ``words``; a dropdown below the title (wrapped to fit a phone) shows one set
    of arrows at a time, the first black and the second red ("no arrows" first)."""
    import plotly.express as px
    import plotly.graph_objects as go

    from transformer_lab.viz.layout import title_layout

    words, groups = _check_points(coords, words, groups, title, arrows)
    arrows = _check_arrows(arrows, words)
    where = {w: coords[i].tolist() for i, w in enumerate(words)}
    height = 600
    title_dict, top = title_layout(title, height)  # wrapped to fit a phone
    margin = {"t": top + (46 if arrows else 0), "b": 110, "l": 70, "r": 20}
    ranges, labels = _plotly_labels(coords, words, height, margin)
    fig = go.Figure()
    palette = px.colors.qualitative.D3
    for g, group in enumerate(dict.fromkeys(groups)):
        idx = [i for i, gr in enumerate(groups) if gr == group]
        fig.add_scatter(
            x=[where[words[i]][0] for i in idx],
            y=[where[words[i]][1] for i in idx],
            mode="markers",
            text=[words[i] for i in idx],
            marker={"size": 2 * _PLOTLY_DOT, "color": palette[g % len(palette)]},
            name=group,
            legendgroup=group,
            hovertemplate=f"<b>%{{text}}</b> ({group})<br>(%{{x:.2f}}, %{{y:.2f}})<extra></extra>",
        )
        x, y, shown = [], [], []  # each label, and the line to its point if it stands off
        for i in idx:
            x += labels[i][0] + [None]
            y += labels[i][1] + [None]
            shown += labels[i][2] + [""]
        fig.add_scatter(
            x=x, y=y, customdata=shown, text=[], texttemplate="%{customdata}",
            mode="lines+text", textposition="middle center", textfont={"size": _PLOTLY_FONT},
            line={"color": "rgba(80, 80, 80, 0.55)", "width": 1}, hoverinfo="skip",
            showlegend=False, legendgroup=group, name=f"{group} (labels)",
        )  # fmt: skip
    buttons = [
        {"method": "relayout", "label": "no arrows", "args": [{"annotations": []}]},
    ]
    for label, pairs in arrows.items():
        notes = [
            {
                "x": where[end][0],
                "y": where[end][1],
                "ax": where[start][0],
                "ay": where[start][1],
                "xref": "x",
                "yref": "y",
                "axref": "x",
                "ayref": "y",
                "showarrow": True,
                "arrowhead": 3,
                "arrowwidth": 2,
                "arrowcolor": "black" if k % 2 == 0 else "crimson",
                "text": "",
            }
            for k, (start, end) in enumerate(pairs)
        ]
        buttons.append({"method": "relayout", "label": label, "args": [{"annotations": notes}]})
    layout = {
        "title": title_dict,
        "height": height,
        "margin": margin,
        "xaxis": {"title": "first principal direction", "range": ranges[0]},
        "yaxis": {"title": "second principal direction", "range": ranges[1]},
        # the legend under the plot: the labels were placed in the plot's full width
        "legend": {
            "orientation": "h",
            "x": 0.0,
            "y": 0.0,
            "yref": "container",
            "yanchor": "bottom",
        },
    }
    if arrows:  # the menu below the title
        menu = {"buttons": buttons, "active": 0, "x": 0.0, "xanchor": "left", "y": 1.0}
        layout["updatemenus"] = [menu | {"yanchor": "bottom", "pad": {"b": 8}}]
    fig.update_layout(**layout)
    return fig


def _along(to_pixels, lines, step: float = 4.0) -> list:
    """Small boxes every ``step`` pixels along each line ``(start, end)`` (data units)."""
    boxes = []
    for start, end in lines:
        a, b = to_pixels.transform([start, end])
        for t in np.linspace(0, 1, max(2, int(np.linalg.norm(b - a) / step))):
            x, y = a + t * (b - a)
            boxes.append((x - 1.5, y - 1.5, x + 1.5, y + 1.5))
    return boxes


_PLOTLY_DOT = 4.5  # a marker's radius in pixels
_PLOTLY_FONT = 11  # the labels' size in pixels


def _plotly_labels(coords, words, height: int, margin: dict):
    """The axis ranges, and for each word where ``_place_labels`` writes it: ``(x, y,
    texts)``, the label's place alone, or the line from its point to the label's edge
    and then the label. Placed for the narrowest plot the site draws (``NARROWEST_PX``),
    so a wider one only spreads them."""
    from transformer_lab.viz.layout import NARROWEST_PX

    c = coords.double().numpy()
    lo, hi = c.min(axis=0), c.max(axis=0)
    pad = 0.06 * np.maximum(hi - lo, 1e-9)
    lo, hi = lo - pad, hi + pad
    size = np.array([NARROWEST_PX - margin["l"] - margin["r"], height - margin["t"] - margin["b"]])
    scale = size / (hi - lo)  # pixels per unit on each axis
    pixels = (c - lo) * scale
    sizes = [(0.6 * _PLOTLY_FONT * len(w) + 2, _PLOTLY_FONT + 3) for w in words]
    bounds = (0.0, 0.0, *size)
    placed = _place_labels(pixels, sizes, marker=_PLOTLY_DOT, bounds=bounds)
    labels = []
    for word, p, (w, h), (x, y, leader) in zip(words, pixels, sizes, placed, strict=True):
        centre = np.array([x, y])
        path: list[np.ndarray | None] = [centre]
        if leader:  # from the marker's edge to the label box's edge
            way = centre - p
            start = p + way / np.linalg.norm(way) * (_PLOTLY_DOT + 1)
            end = centre - way * min(w / 2 / max(abs(way[0]), 1e-9), h / 2 / max(abs(way[1]), 1e-9))
            path = [start, end, None, centre]
        data = [None if q is None else lo + q / scale for q in path]
        labels.append(
            (
                [None if q is None else float(q[0]) for q in data],
                [None if q is None else float(q[1]) for q in data],
                [""] * (len(path) - 1) + [word],
            )
        )
    ranges = [[float(lo[0]), float(hi[0])], [float(lo[1]), float(hi[1])]]
    return ranges, labels


def word_map_controls(
    projection: Projection,
    groups: Sequence[str],
    W_E: torch.Tensor,
    vocab: Vocabulary,
    *,
    words: str = "kitten, tiger, violet, twenty, london",
    question: str = "king - man + woman",
):
    """Kernel-only: two text boxes over the map of ``projection`` (its points coloured by
    ``groups``). The first places comma-separated words of ``vocab`` on the map (their rows
    of ``W_E`` projected on the same directions); the second takes an analogy
    ``a - b + c``, prints its five best answers and draws ``b -> a`` (black) and the same
    arrow from ``c`` (red), ending at the projection of ``x_a - x_b + x_c``. Returns the
    ipywidgets app (display it in JupyterLab)."""
    import re

    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    instance_of(projection, Projection, "projection", "the result of pca_2d")
    floating_tensor(W_E, "W_E", dim=2, shape="[d_vocab, d_model]")
    instance_of(vocab, Vocabulary, "vocab")
    if W_E.shape[0] != len(vocab):
        raise ValueError(f"W_E has {W_E.shape[0]} rows but vocab has {len(vocab)} tokens")
    groups = list(groups)
    if len(groups) != len(projection.coords):
        raise ValueError(f"{len(projection.coords)} points on the map but {len(groups)} groups")
    string(words, "words")
    string(question, "question")
    colour = {g: f"C{i}" for i, g in enumerate(dict.fromkeys(groups))}
    coords = projection.coords

    def place(words, question):
        fig, ax = plt.subplots(figsize=(7, 5.5))
        ax.scatter(coords[:, 0], coords[:, 1], c=[colour[g] for g in groups], s=14, alpha=0.35)
        typed = [w.strip().lower() for w in words.split(",") if w.strip()]
        known = [w for w in typed if w in vocab]
        if len(known) < len(typed):
            print("not single tokens of the vocabulary:", [w for w in typed if w not in known])
        if known:
            placed = projection.project(W_E[vocab.encode(known)].double())
            ax.scatter(placed[:, 0], placed[:, 1], color="black", marker="x")
            for w, (px, py) in zip(known, placed.tolist(), strict=True):
                ax.annotate(w, (px, py), xytext=(3, 3), textcoords="offset points")
        parts = re.fullmatch(r"\s*(\S+)\s*-\s*(\S+)\s*\+\s*(\S+)\s*", question.lower())
        if parts:
            _draw_analogy(ax, parts.groups(), projection, W_E, vocab)
        elif question.strip():
            print("write the analogy as: a - b + c")
        ax.set(
            title=f"your words on the map of the {len(coords)} words",
            xlabel="first direction",
            ylabel="second direction",
        )
        plt.show()

    return widgets.interactive(
        place,
        words=widgets.Text(words, description="words", continuous_update=False),
        question=widgets.Text(question, description="a - b + c", continuous_update=False),
    )


def _draw_analogy(ax, abc, projection, W_E, vocab) -> None:
    a_word, b_word, c_word = abc
    try:
        answers = analogy(a_word, b_word, c_word, W_E, vocab, k=5)
    except ValueError as err:
        print(err)
        return
    listed = ", ".join(f"{t} ({v:.2f})" for t, v in answers)
    print(f"{a_word} - {b_word} + {c_word}: {listed}")
    rows = W_E[vocab.encode([a_word, b_word, c_word, answers[0][0]])]
    pa, pb, pc, pans = projection.project(rows.double()).tolist()
    tip = [pc[0] + pa[0] - pb[0], pc[1] + pa[1] - pb[1]]
    for start, end, colour in [(pb, pa, "black"), (pc, tip, "crimson")]:
        ax.annotate("", xy=end, xytext=start, arrowprops={"arrowstyle": "->", "color": colour})
    for w, point in [(a_word, pa), (b_word, pb), (c_word, pc), (answers[0][0], pans)]:
        ax.annotate(w, point, color="crimson")
