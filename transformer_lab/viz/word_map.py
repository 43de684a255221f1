"""A map of word vectors: PCA to two dimensions, coloured by group (chapter 1).

- :func:`word_map_figure`: the map with Matplotlib, every word labelled, and arrows.
- :func:`word_map_plotly`: the map with Plotly (kernel-free), the word on hover and a menu
  of analogies whose arrows it draws.
- :func:`word_map_controls`: ipywidgets (needs a kernel): place any words of a vocabulary on
  a given map and draw an analogy typed as ``a - b + c``.
"""

from __future__ import annotations

from collections.abc import Sequence

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
        members = [w for w, gr in zip(words, groups, strict=True) if gr == group]
        points = torch.tensor([xy[w] for w in members])
        ax.scatter(points[:, 0], points[:, 1], color=f"C{g}", label=group, s=30)
        for w in members:
            ax.annotate(w, xy[w], xytext=(3, 3), textcoords="offset points", fontsize=8)
    for pairs in arrows.values():
        for start, end in pairs:
            style = {"arrowstyle": "->", "color": "k"}
            ax.annotate("", xy=xy[end], xytext=xy[start], arrowprops=style)
    ax.set(xlabel=axis[0], ylabel=axis[1], title=title)
    ax.legend(fontsize=8, loc="best")
    return fig


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
    fig = go.Figure()
    palette = px.colors.qualitative.D3
    for g, group in enumerate(dict.fromkeys(groups)):
        idx = [i for i, gr in enumerate(groups) if gr == group]
        fig.add_scatter(
            x=[where[words[i]][0] for i in idx],
            y=[where[words[i]][1] for i in idx],
            mode="markers+text",
            text=[words[i] for i in idx],
            textposition="top center",
            marker={"size": 9, "color": palette[g % len(palette)]},
            name=group,
            hovertemplate=f"<b>%{{text}}</b> ({group})<br>(%{{x:.2f}}, %{{y:.2f}})<extra></extra>",
        )
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
    height = 560
    title_dict, top = title_layout(title, height)  # wrapped to fit a phone
    layout = {
        "title": title_dict,
        "height": height,
        "xaxis": {"title": "first principal direction"},
        "yaxis": {"title": "second principal direction"},
    }
    if arrows:  # the menu below the title
        menu = {"buttons": buttons, "active": 0, "x": 0.0, "xanchor": "left", "y": 1.0}
        layout["updatemenus"] = [menu | {"yanchor": "bottom", "pad": {"b": 8}}]
        layout["margin"] = {"t": top + 46}
    fig.update_layout(**layout)
    return fig


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
