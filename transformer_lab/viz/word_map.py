"""A map of word vectors: PCA to two dimensions, coloured by group."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from transformer_lab.checks import instance_of, string

__all__ = ["word_map_plotly"]


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
    words in ``words``; a dropdown shows one set of arrows at a time ("none" first)."""
    import plotly.express as px
    import plotly.graph_objects as go

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
    arrows = arrows or {}
    where = {w: coords[i].tolist() for i, w in enumerate(words)}
    for label, pairs in arrows.items():
        ok = isinstance(pairs, (list, tuple)) and all(
            isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs
        )
        if not ok:
            raise ValueError(
                f"arrows[{label!r}] must be a list of (from_word, to_word), got {pairs!r}"
            )
    unknown = [w for pairs in arrows.values() for p in pairs for w in p if w not in where]
    if unknown:
        raise ValueError(f"arrow ends not among the words on the map: {unknown}")
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
    layout = {
        "title": {"text": title},
        "height": 560,
        "xaxis": {"title": "first principal direction"},
        "yaxis": {"title": "second principal direction"},
    }
    if arrows:
        layout["updatemenus"] = [
            {"buttons": buttons, "active": 0, "x": 0.0, "xanchor": "left", "y": 1.12}
        ]
        layout["margin"] = {"t": 110}
    fig.update_layout(**layout)
    return fig
