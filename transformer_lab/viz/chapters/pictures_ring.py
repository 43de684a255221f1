"""The ring all-reduce of chapter 18, step by step (:func:`ring_all_reduce_figure`): a
panel per step, each showing which ranks' numbers every rank's copy of every chunk holds and
which chunk each rank sends. Its colour for what a step sends is that of ``pictures``.
"""

from __future__ import annotations

import math

from transformer_lab.checks import integer
from transformer_lab.viz.chapters.pictures import NEW

__all__ = ["ring_all_reduce_figure"]


def _ring_states(n: int) -> list[tuple[str, list[list[frozenset]], list[int] | None]]:
    """(title, which ranks' numbers each rank's copy of each chunk holds, the chunk each
    rank sends at that step) for the start and every step, as the chapter's ring does:
    reduce-scatter step s sends chunk (r - s) mod n from rank r to r + 1, which adds it;
    all-gather step s sends chunk (r + 1 - s) mod n, which replaces the copy."""
    held = [[frozenset({r}) for _ in range(n)] for r in range(n)]
    states: list[tuple[str, list[list[frozenset]], list[int] | None]] = [
        ("start: each rank's own\ngradient, in chunks", [list(row) for row in held], None)
    ]
    for step in range(n - 1):
        sent = [(r - step) % n for r in range(n)]
        before = [list(row) for row in held]
        for r, c in enumerate(sent):
            held[(r + 1) % n][c] = before[(r + 1) % n][c] | before[r][c]
        title = f"reduce-scatter {step + 1}:\nthe receiver adds"
        states.append((title, [list(row) for row in held], sent))
    for step in range(n - 1):
        sent = [(r + 1 - step) % n for r in range(n)]
        before = [list(row) for row in held]
        for r, c in enumerate(sent):
            held[(r + 1) % n][c] = before[r][c]
        title = f"all-gather {step + 1}:\nthe receiver keeps it"
        states.append((title, [list(row) for row in held], sent))
    return states


def ring_all_reduce_figure(n_ranks: int):
    """The ring all-reduce, one panel per step: ``n_ranks`` processes in a ring, each
    holding its tensor cut into ``n_ranks`` chunks. In ``n - 1`` reduce-scatter steps each
    rank passes one chunk to its neighbour (clockwise), which adds it to its own copy; then
    each rank holds the full sum of one chunk (``Σ``, dark). In ``n - 1`` all-gather steps
    the full sums travel on around the ring. A cell lists the ranks whose numbers it
    holds; the arrows carry the chunk sent at that step (outlined in red in its sender).
    ``n_ranks`` is 2 to 4 (a larger ring takes the same steps, in cells too small to read).
    Returns the Matplotlib figure."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    n = integer(n_ranks, "n_ranks", minimum=2)
    if n > 4:  # a larger ring takes the same steps, in cells too small to read
        raise ValueError(f"n_ranks must be at most 4 to be drawn, got {n}")
    states = _ring_states(n)
    cols = n  # the start and the reduce-scatter steps, then the all-gather steps and a note
    fig = Figure(figsize=(2.0 * cols, 4.6))
    axes = fig.subplots(2, cols)
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.9, wspace=0.04, hspace=0.25)
    panels = list(axes[0]) + list(axes[1])
    cmap = colormaps["Greens"]
    cell = 0.5  # a chunk's cell; a rank's chunks run across at the top and bottom of the
    # ring, and down at its sides, so that the ranks stay close and the cells large
    radius = {2: 0.7, 3: 1.15, 4: 1.35}[n] * cell / 0.4  # rows and columns of chunks apart
    outer = radius + 0.8  # the arrows, in the corners between the ranks
    for ax, (title, held, sent) in zip(panels, states, strict=False):
        ax.set_axis_off()
        ax.set_aspect("equal")
        ax.set_title(title, fontsize=9)
        angle = [2 * math.pi * r / n for r in range(n)]
        for r, a in enumerate(angle):
            px, py = radius * math.sin(a), radius * math.cos(a)
            down = abs(math.sin(a)) > 0.75  # at a side of the ring: the chunks run down
            for c in range(n):
                if down:
                    x, y = px - cell / 2, py + n * cell / 2 - (c + 1) * cell
                else:
                    x, y = px - n * cell / 2 + c * cell, py - cell / 2
                share = len(held[r][c]) / n
                text = "Σ" if share == 1 else "".join(str(k) for k in sorted(held[r][c]))
                shade = to_hex(cmap(0.12 + 0.75 * share))
                ax.add_patch(Rectangle((x, y), cell, cell, facecolor=shade, edgecolor="0.35",
                                       lw=0.6))  # fmt: skip
                ax.text(x + cell / 2, y + cell / 2, text, ha="center", va="center",
                        fontsize=8.5 if len(text) <= 2 else 7,
                        color="white" if share == 1 else "black")  # fmt: skip
                if sent is not None and sent[r] == c:
                    ax.add_patch(Rectangle((x, y), cell, cell, facecolor="none", edgecolor=NEW,
                                           lw=1.8))  # fmt: skip
            if down:
                side = 1 if px > 0 else -1
                ax.text(
                    px + side * (cell / 2 + 0.08),
                    py,
                    f"rank {r}",
                    rotation=-90 * side,
                    ha="left" if side > 0 else "right",
                    va="center",
                    fontsize=8,
                )
            else:
                above = py >= 0
                ax.text(px, py + (1 if above else -1) * (cell / 2 + 0.06), f"rank {r}",
                        ha="center", va="bottom" if above else "top", fontsize=8)  # fmt: skip
        if sent is not None:
            step = 2 * math.pi / n
            for r in range(n):
                a0, a1 = angle[r] + 0.3 * step, angle[r] + 0.7 * step
                start = (outer * math.sin(a0), outer * math.cos(a0))
                end = (outer * math.sin(a1), outer * math.cos(a1))
                ax.annotate(
                    "",
                    end,
                    start,
                    arrowprops={
                        "arrowstyle": "->",
                        "color": NEW,
                        "lw": 1.1,
                        "shrinkA": 0,
                        "shrinkB": 0,
                        "connectionstyle": "arc3,rad=-0.3",
                    },
                )
                a = angle[r] + 0.5 * step
                ax.text(
                    (outer - 0.42) * math.sin(a),
                    (outer - 0.42) * math.cos(a),
                    f"c{sent[r]}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color=NEW,
                )
        reach = outer + 0.1
        ax.set_xlim(-reach, reach)
        ax.set_ylim(-reach, reach)
    note = panels[len(states)] if len(panels) > len(states) else None
    for ax in panels[len(states) :]:
        ax.set_axis_off()
    if note is not None:
        note.text(0.02, 0.5, f"{n} ranks, {n} chunks each\n(c0 to c{n - 1}). A cell lists "
                  "the\nranks whose numbers it holds;\nΣ: all of them. Each rank\n"
                  f"sends {2 * (n - 1)} chunks, 2(N - 1)/N\n= {2 * (n - 1)}/{n} of its tensor.",
                  ha="left", va="center", fontsize=8.5, transform=note.transAxes)  # fmt: skip
    return fig
