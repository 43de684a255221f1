"""Cosine similarity against Euclidean distance, in pictures (chapter 1).

- :func:`similarity_figure`: three vectors in the plane (one long along ``a``, one as short
  as ``a`` but turned) beside a histogram of the lengths of an embedding table's rows.
- :func:`similarity_explorer`: a Plotly figure that moves without a kernel. A slider sets
  the angle between ``a`` and ``b``, a menu the length of ``b``; bars show the two
  measures. Each length owns a group of three traces (arrow ``b``, segment ``a - b``,
  bars); a slider step restyles every group, a menu button shows one group.
- :func:`similarity_controls`: the same pair of vectors drawn live with ipywidgets (needs a
  kernel), beside a box that lists a word's nearest neighbours by both measures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch

from transformer_lab.analysis.word_vectors import cosine_similarity, euclidean_distance, nearest
from transformer_lab.checks import floating_tensor, instance_of, string
from transformer_lab.data.tokenizers import Vocabulary

__all__ = ["similarity_figure", "similarity_explorer", "similarity_controls"]

A_ANGLE_DEG, A_LENGTH = 20.0, 2.0  # the fixed vector a of the explorer
ANGLES = tuple(range(0, 181, 15))  # the explorer's slider, in degrees
B_LENGTHS = (0.5, 1.0, 2.0, 4.0)  # the explorer's menu


def _plane_vector(value, name: str) -> torch.Tensor:
    floating_tensor(value, name)
    if value.shape != (2,):
        raise ValueError(f"{name} must be a vector of 2 numbers, got shape {tuple(value.shape)}")
    return value.detach().float().cpu()


def similarity_figure(
    a: torch.Tensor,
    b: torch.Tensor,
    c: torch.Tensor,
    lengths: torch.Tensor,
    marks: Mapping[str, float],
    *,
    highlight: str = "[MASK]",
    table: str = "MiniLM",
):
    """Left: arrows ``a`` (thick), ``b`` and ``c`` from the origin, with dotted segments from
    ``a`` to each, titled with both measures. Right: a histogram of ``lengths`` (the lengths
    of the rows of ``table``'s embedding matrix) with a dashed line at each of ``marks``
    (token -> length), red for ``highlight``. Returns the Matplotlib figure."""
    import matplotlib.pyplot as plt

    a, b, c = (_plane_vector(v, n) for v, n in ((a, "a"), (b, "b"), (c, "c")))
    floating_tensor(lengths, "lengths", dim=1, shape="[d_vocab]")
    instance_of(marks, Mapping, "marks", "a dict {token: length}")
    string(table, "table")
    cos_b, cos_c = (cosine_similarity(a, v).item() for v in (b, c))
    dist_b, dist_c = (euclidean_distance(a, v).item() for v in (b, c))
    fig, (ax_vec, ax_len) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    for vec, name, color, lw in [
        (b, "b", "tab:orange", 2),
        (c, "c", "tab:green", 2),
        (a, "a", "tab:blue", 4),
    ]:
        arrow = {"arrowstyle": "->", "color": color, "lw": lw}
        ax_vec.annotate("", xy=vec.tolist(), xytext=(0, 0), arrowprops=arrow)
        below = name == "a"  # a's label under its tip, clear of b's arrow
        ax_vec.text(
            vec[0] + 0.1, vec[1] - 0.35 if below else vec[1] + 0.1, name, color=color, fontsize=12
        )
    ax_vec.plot([a[0], c[0]], [a[1], c[1]], ":", color="gray")
    ax_vec.plot([a[0], b[0]], [a[1], b[1]], ":", color="gray")
    ax_vec.set(
        xlim=(-0.3, float(max(a[0], b[0], c[0])) + 0.8),
        ylim=(-0.3, float(max(a[1], b[1], c[1])) + 0.8),
        aspect="equal",
        title=f"b points like a (cos {cos_b:.2g}, distance {dist_b:.2f});\n"
        f"c is nearer (distance {dist_c:.2f}) but turned (cos {cos_c:.2g})",
    )
    ax_len.hist(lengths.detach().cpu().numpy(), bins=80, color="tab:gray")
    for word, length in marks.items():
        ax_len.axvline(length, color="tab:red" if word == highlight else "tab:blue", ls="--")
        ax_len.text(length, ax_len.get_ylim()[1] * 0.9, f" {word}", rotation=90, va="top")
    ax_len.set(
        xlabel="length of the row of E",
        ylabel="number of tokens",
        title=f"Lengths of the {len(lengths)} rows of {table}'s E",
    )
    fig.suptitle("Cosine ignores length, Euclidean distance does not")
    return fig


def _a_vector() -> torch.Tensor:
    theta = math.radians(A_ANGLE_DEG)
    return torch.tensor([math.cos(theta), math.sin(theta)]) * A_LENGTH


def _b_vector(angle_deg: float, length: float) -> torch.Tensor:
    theta = math.radians(A_ANGLE_DEG + angle_deg)
    return torch.tensor([math.cos(theta), math.sin(theta)]) * length


def _state(a: torch.Tensor, angle_deg: float, length: float) -> dict[str, list]:
    """x, y and text of one group's three traces: arrow b, segment a-b, the two bars."""
    b = _b_vector(angle_deg, length)
    cos, dist = cosine_similarity(a, b).item(), euclidean_distance(a, b).item()
    return {
        "x": [[0, b[0].item()], [a[0].item(), b[0].item()], ["cosine", "distance"]],
        "y": [[0, b[1].item()], [a[1].item(), b[1].item()], [cos, dist]],
        "text": [None, None, [f"{cos:.2f}", f"{dist:.2f}"]],
    }


def _numbers(values, name: str) -> list[float]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise TypeError(f"{name} must be a non-empty sequence of numbers, got {values!r}")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise TypeError(f"{name} must hold numbers, got {list(values)!r}")
    return [float(v) for v in values]


def similarity_explorer(
    *,
    angles: Sequence[float] = ANGLES,
    lengths: Sequence[float] = B_LENGTHS,
    start_angle: int = 45,
    start_length: float = 1.0,
):
    """The angle-and-length explorer: ``a`` fixed (length 2, at 20 degrees), ``b`` at each
    of ``angles`` from ``a`` (slider) and each of ``lengths`` (menu); bars show
    ``cos(a, b)`` and ``||a - b||``. Works without a kernel; returns the figure for
    :func:`~transformer_lab.viz.show`."""
    from plotly.subplots import make_subplots

    from transformer_lab.viz.layout import title_layout

    angles, lengths = _numbers(angles, "angles"), _numbers(lengths, "lengths")
    if start_angle not in angles or start_length not in lengths:
        raise ValueError(
            f"start_angle={start_angle!r} and start_length={start_length!r} must be among "
            f"angles {angles} and lengths {lengths}"
        )
    if min(lengths) <= 0:
        raise ValueError(f"lengths must be positive, got {lengths}")
    a = _a_vector()
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.55, 0.45],
        subplot_titles=["the vectors", "cosine similarity<br>and distance"],
    )
    line_a = {"color": "royalblue", "width": 4}
    fig.add_scatter(
        x=[0, a[0].item()],
        y=[0, a[1].item()],
        mode="lines+markers",
        name="a",
        line=line_a,
        row=1,
        col=1,
    )
    shown = lengths.index(start_length)
    for g, length in enumerate(lengths):
        s, visible = _state(a, start_angle, length), g == shown
        fig.add_scatter(
            x=s["x"][0],
            y=s["y"][0],
            mode="lines+markers",
            name="b",
            line={"color": "darkorange", "width": 4},
            visible=visible,
            row=1,
            col=1,
        )
        fig.add_scatter(
            x=s["x"][1],
            y=s["y"][1],
            mode="lines",
            name="a - b",
            line={"color": "gray", "dash": "dot"},
            visible=visible,
            row=1,
            col=1,
        )
        fig.add_bar(
            x=s["x"][2],
            y=s["y"][2],
            text=s["text"][2],
            textposition="outside",
            marker_color=["seagreen", "firebrick"],
            visible=visible,
            showlegend=False,
            row=1,
            col=2,
        )
    group_traces = list(range(1, 1 + 3 * len(lengths)))
    steps = []
    for angle in angles:
        update: dict[str, list] = {"x": [], "y": [], "text": []}
        for length in lengths:
            for key, values in _state(a, angle, length).items():
                update[key].extend(values)
        steps.append({"method": "restyle", "label": f"{angle:g}°", "args": [update, group_traces]})
    buttons = [
        {
            "method": "restyle",
            "label": f"|b| = {length:g}",
            "args": [{"visible": [True] + [i // 3 == g for i in range(3 * len(lengths))]}],
        }
        for g, length in enumerate(lengths)
    ]
    height = 500
    title, top = title_layout(
        "Cosine similarity ignores length; Euclidean distance does not", height
    )
    fig.update_layout(
        height=height,
        title=title,
        sliders=[
            {
                "active": angles.index(start_angle),
                "steps": steps,
                "currentvalue": {"prefix": "angle between a and b = "},
                "pad": {"t": 40},
            }
        ],
        updatemenus=[
            {
                "buttons": buttons,
                "active": shown,
                "x": 0.0,
                "xanchor": "left",
                "y": 1.0,
                "yanchor": "bottom",
                "pad": {"b": 50},  # above the panel titles
                "direction": "down",
            }
        ],
        margin={"t": top + 90},
    )
    fig.update_xaxes(range=[-4.5, 4.5], row=1, col=1)
    fig.update_yaxes(range=[-4.5, 4.5], scaleanchor="x", row=1, col=1)
    fig.update_yaxes(range=[-1.8, 7.0], row=1, col=2)
    return fig


def similarity_controls(W_E: torch.Tensor, vocab: Vocabulary, *, word: str = "thanks", k: int = 8):
    """Kernel-only twin of :func:`similarity_explorer`: sliders for the angle and the length
    of ``b`` redraw the pair live, and a text box lists the ``k`` nearest neighbours of a
    word of ``vocab`` by cosine and by distance, each with the length of its row of
    ``W_E``. Returns an ipywidgets ``HBox`` (display it in JupyterLab)."""
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    floating_tensor(W_E, "W_E", dim=2, shape="[d_vocab, d_model]")
    instance_of(vocab, Vocabulary, "vocab")
    if W_E.shape[0] != len(vocab):
        raise ValueError(f"W_E has {W_E.shape[0]} rows but vocab has {len(vocab)} tokens")
    string(word, "word")
    a, lengths = _a_vector(), W_E.norm(dim=1)

    def draw_pair(angle=45, length=1.0):
        b = _b_vector(angle, length)
        fig, ax = plt.subplots(figsize=(4, 4))
        for vec, color in [(a, "royalblue"), (b, "darkorange")]:
            arrow = {"arrowstyle": "->", "color": color, "lw": 2}
            ax.annotate("", xy=vec.tolist(), xytext=(0, 0), arrowprops=arrow)
        cos, dist = cosine_similarity(a, b), euclidean_distance(a, b)
        ax.set(
            xlim=(-4.5, 4.5),
            ylim=(-4.5, 4.5),
            aspect="equal",
            title=f"cos = {cos:.2f}, distance = {dist:.2f}",
        )
        plt.show()

    def show_neighbours(word=word):
        word = word.strip().lower()
        if word not in vocab:
            print(f"{word!r} is not a single token of the pretrained vocabulary")
            return
        print(f"{'by cosine':<26}{'by distance':<26}")
        by_cosine, by_distance = (
            nearest(word, W_E, vocab, k),
            nearest(word, W_E, vocab, k, "euclidean"),
        )
        for (tc, sc), (td, sd) in zip(by_cosine, by_distance, strict=True):
            len_c, len_d = (lengths[vocab.index[t]].item() for t in (tc, td))
            print(f"{tc:<12}{sc:5.2f} |{len_c:4.2f}|  {td:<12}{sd:5.2f} |{len_d:4.2f}|")

    pair = widgets.interactive(
        draw_pair,
        angle=widgets.IntSlider(45, 0, 180, 5, description="angle"),
        length=widgets.FloatSlider(1.0, min=0.2, max=4.0, step=0.1, description="|b|"),
    )
    box = widgets.Text(word, description="word", continuous_update=False)
    return widgets.HBox([pair, widgets.interactive(show_neighbours, word=box)])
