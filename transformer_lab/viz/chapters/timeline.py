"""The attention timeline: from recurrent translation models to today's decoders.

:data:`TIMELINE` lists the papers the book's story runs through, oldest first, each a
:class:`TimelineEntry` with its year, a short name, its key in ``book/references.bib``,
its authors as cited, the family it belongs to and one line on what it added.
:func:`timeline_figure` draws the list with matplotlib, :func:`timeline_plotly` as a
Plotly figure whose hover text names each paper (chapter 1 shows both).

Years are those of the cited publication: BERT's preprint appeared in 2018, its
conference paper (the one cited) in 2019.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from transformer_lab.checks import finite_number, instance_of, integer, one_of

__all__ = [
    "TimelineEntry",
    "TIMELINE",
    "FAMILIES",
    "LABEL_HEIGHTS",
    "timeline_figure",
    "timeline_plotly",
]

# family -> (label in the legend, colour)
FAMILIES = {
    "recurrent": ("recurrent encoder-decoder", "tab:gray"),
    "attention": ("recurrent + attention", "tab:orange"),
    "transformer": ("Transformer (encoder-decoder)", "tab:red"),
    "encoder": ("encoder-only", "tab:blue"),
    "decoder": ("decoder-only", "tab:green"),
}


@dataclass(frozen=True)
class TimelineEntry:
    """One paper on the timeline."""

    year: int  # year of the cited publication
    name: str  # short name shown on the figure
    key: str  # citation key in book/references.bib
    who: str  # first author's surname and "et al.", as cited
    family: str  # one of FAMILIES
    added: str  # one line: what it added

    def __post_init__(self):
        integer(self.year, "year")
        for field in ("name", "key", "who", "added"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{field} must be a non-empty str, got {value!r}")
        one_of(self.family, sorted(FAMILIES), "family")


TIMELINE: tuple[TimelineEntry, ...] = (
    TimelineEntry(
        2014,
        "RNN encoder-decoder",
        "cho2014gru",
        "Cho et al.",
        "recurrent",
        "one RNN encodes a phrase into a vector, a second decodes its translation",
    ),
    TimelineEntry(
        2014,
        "seq2seq with LSTMs",
        "sutskever2014sequence",
        "Sutskever et al.",
        "recurrent",
        "deep LSTM encoder and decoder translate whole sentences",
    ),
    TimelineEntry(
        2014,
        "the bottleneck measured",
        "cho2014properties",
        "Cho et al.",
        "recurrent",
        "translation quality falls as sentences get longer",
    ),
    TimelineEntry(
        2015,
        "attention in translation",
        "bahdanau2015neural",
        "Bahdanau et al.",
        "attention",
        "the decoder weighs all encoder states at each step (additive scores)",
    ),
    TimelineEntry(
        2015,
        "dot-product attention",
        "luong2015effective",
        "Luong et al.",
        "attention",
        "simpler multiplicative scores, global and local attention",
    ),
    TimelineEntry(
        2015,
        "show, attend and tell",
        "xu2015show",
        "Xu et al.",
        "attention",
        "a captioner attends to regions of an image for each word",
    ),
    TimelineEntry(
        2017,
        "Transformer",
        "vaswani2017attention",
        "Vaswani et al.",
        "transformer",
        "attention only: self-attention, multi-head, positions; no recurrence",
    ),
    TimelineEntry(
        2018,
        "GPT",
        "radford2018improving",
        "Radford et al.",
        "decoder",
        "a decoder pretrained to predict the next token, then fine-tuned",
    ),
    TimelineEntry(
        2019,
        "BERT",
        "devlin2019bert",
        "Devlin et al.",
        "encoder",
        "an encoder pretrained to fill in masked words, reading both ways",
    ),
    TimelineEntry(
        2019,
        "GPT-2",
        "radford2019language",
        "Radford et al.",
        "decoder",
        "a larger decoder on more text does tasks without fine-tuning",
    ),
    TimelineEntry(
        2020,
        "GPT-3",
        "brown2020language",
        "Brown et al.",
        "decoder",
        "175 billion parameters; tasks from a few examples in the prompt",
    ),
    TimelineEntry(
        2023,
        "LLaMA",
        "touvron2023llama",
        "Touvron et al.",
        "decoder",
        "open decoders trained on public data; RMSNorm, rotary positions, SwiGLU",
    ),
    TimelineEntry(
        2025,
        "SmolLM2",
        "allal2025smollm2",
        "Ben Allal et al.",
        "decoder",
        "a 1.7-billion-parameter decoder trained on about 11 trillion tokens",
    ),
)


def _check_entries(entries) -> list[TimelineEntry]:
    if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
        raise TypeError(
            f"entries must be a sequence of TimelineEntry, got {type(entries).__name__}"
        )
    bad = [type(e).__name__ for e in entries if not isinstance(e, TimelineEntry)]
    if bad:
        raise TypeError(f"entries must be TimelineEntry objects, got {bad[:3]}")
    if not entries:
        raise ValueError("entries is empty; pass at least one TimelineEntry")
    return list(entries)


def _rows(entries: list[TimelineEntry]) -> list[int]:
    """A vertical slot for each entry so that entries of the same year do not overlap:
    the n-th entry of a year gets row n (0, 1, 2, ...), alternating above and below."""
    seen: dict[int, int] = {}
    rows = []
    for e in entries:
        n = seen.get(e.year, 0)
        seen[e.year] = n + 1
        rows.append(n)
    return rows


def _heights(entries: list[TimelineEntry]) -> list[float]:
    # alternate sides from year to year; stack entries of one year further out
    years = sorted({e.year for e in entries})
    side = {y: (1 if i % 2 == 0 else -1) for i, y in enumerate(years)}
    return [side[e.year] * (1.0 + 1.8 * n) for e, n in zip(entries, _rows(entries), strict=True)]


# labels moved out of their neighbours' way at the default size (entry name -> height)
LABEL_HEIGHTS = {"BERT": 2.8, "GPT-2": 4.6, "GPT-3": -2.8}


def timeline_figure(
    entries: Sequence[TimelineEntry] = TIMELINE,
    *,
    title: str | None = None,
    figsize: tuple[float, float] = (8, 9),
    wrap: int = 22,
    fontsize: float = 9,
    heights: Mapping[str, float] | None = None,
    ax=None,
):
    """Draw ``entries`` on a horizontal year axis with matplotlib; returns the figure.

    Each entry is a stem from its year to a label with its name and what it added (wrapped
    at ``wrap`` characters), coloured by family. Entries of the same year stack on the same
    side. The defaults fit a page column: 8 by 9 inches, 9-point type, and the labels named
    in ``heights`` (by default :data:`LABEL_HEIGHTS`) moved to the given height so that no
    two labels overlap.
    """
    import matplotlib.pyplot as plt

    entries = _check_entries(entries)
    finite_number(wrap, "wrap", above=0)
    finite_number(fontsize, "fontsize", above=0)
    heights_by_name = dict(LABEL_HEIGHTS if heights is None else heights)
    instance_of(title, (str, type(None)), "title")
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    else:
        fig = ax.figure
    label_heights = [
        heights_by_name.get(e.name, h) for e, h in zip(entries, _heights(entries), strict=True)
    ]
    years = [e.year for e in entries]
    ax.axhline(0, color="black", lw=1.5, zorder=1)
    for e, h in zip(entries, label_heights, strict=True):
        label, color = FAMILIES[e.family]
        ax.plot([e.year, e.year], [0, h], color=color, lw=1.5, zorder=2)
        ax.scatter([e.year], [0], color=color, s=45, zorder=3)
        ax.text(
            e.year,
            h,
            f"{e.name}\n{textwrap.fill(e.added, int(wrap))}",
            ha="center",
            va="bottom" if h > 0 else "top",
            fontsize=fontsize,
            bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": color, "lw": 1.2},
            zorder=4,
        )
    for family, (label, color) in FAMILIES.items():
        if any(e.family == family for e in entries):
            ax.scatter([], [], color=color, label=label)
    ax.legend(loc="upper right", fontsize=fontsize, frameon=False)
    top = max(_heights(entries)) + 1.6
    bottom = min(_heights(entries)) - 1.6
    ax.set(
        xlim=(min(years) - 1.0, max(years) + 1.0),
        ylim=(min(bottom, -1.0), max(top, 1.0)),
        xticks=sorted(set(years)),
        yticks=[],
    )
    if title is not None:
        ax.set_title(title)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    return fig


def timeline_plotly(entries: Sequence[TimelineEntry] = TIMELINE):
    """The same timeline as a Plotly figure; hovering a point shows the paper, its authors
    and year, and what it added. The title is wrapped to fit a phone, and the year axis
    leaves room for the names of the first year's papers left of their points."""
    import plotly.graph_objects as go

    from transformer_lab.viz.layout import title_layout

    entries = _check_entries(entries)
    heights = _heights(entries)
    fig = go.Figure()
    fig.add_hline(y=0, line={"color": "black", "width": 1.5})
    for family, (label, color) in FAMILIES.items():
        chosen = [(e, h) for e, h in zip(entries, heights, strict=True) if e.family == family]
        if not chosen:
            continue
        stems_x, stems_y = [], []
        for e, h in chosen:  # a vertical stem from the axis to each point
            stems_x += [e.year, e.year, None]
            stems_y += [0, h, None]
        fig.add_scatter(
            x=stems_x,
            y=stems_y,
            mode="lines",
            line={"color": _css(color), "width": 1.5},
            hoverinfo="skip",
            showlegend=False,
        )
        fig.add_scatter(
            x=[e.year for e, _ in chosen],
            y=[h for _, h in chosen],
            mode="markers+text",
            text=[e.name for e, _ in chosen],
            textposition=["top center" if h > 0 else "bottom center" for _, h in chosen],
            marker={"size": 12, "color": _css(color)},
            name=label,
            customdata=[[f"{e.who} {e.year}", e.added] for e, _ in chosen],
            hovertemplate="<b>%{text}</b> (%{x})<br>%{customdata[1]}<br>%{customdata[0]}"
            "<extra></extra>",
        )
    height = 460
    title, top = title_layout("From recurrent translation models to today's decoders", height)
    years = [e.year for e in entries]
    fig.update_layout(
        title=title,
        height=height,
        margin={"t": top + 30, "l": 20, "r": 20},
        yaxis={"visible": False, "range": [min(heights) - 1.2, max(heights) + 1.2]},
        xaxis={
            "dtick": 1,
            "title": "year of the cited publication",
            "range": [min(years) - 2.0, max(years) + 1.0],
        },
        legend={"orientation": "h", "y": -0.25},
    )
    fig.update_traces(cliponaxis=False)
    return fig


def _css(mpl_color: str) -> str:
    from matplotlib.colors import to_hex

    return to_hex(mpl_color)
