"""Matrices drawn as boxes with their shapes, pictures that a reader would rather look at
than read: the shapes of self-attention's matrices (chapter 4), the split into heads and
back (chapter 8), the key/value cache growing token by token (chapter 13) and LoRA's
``W + BA`` (chapter 16). The steps of the ring all-reduce (chapter 18) are in
``pictures_ring``.

Every size and count drawn comes from the arguments (a chapter passes its own ``d_model``,
``n_heads``, rank ...). A matrix is a box whose sides grow with the square root of its
sizes, so that a 576-wide matrix and an 8-wide one fit in one picture and still look very
different; the exact sizes are written beside each box. Each function returns a Matplotlib
figure for :func:`~transformer_lab.viz.display.figure`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from transformer_lab.checks import integer, string

__all__ = [
    "qkv_shapes_figure",
    "head_split_figure",
    "kv_cache_figure",
    "lora_figure",
]

# the colours of the pictures: one per role, the same in every picture
INPUT = "#bdbdbd"
WEIGHT = "#f2e6c9"
QUERY = "#5b8fd6"
KEY = "#e8913a"
VALUE = "#4caf7a"
SCORE = "#9b7fd1"
FROZEN = "#c9c9c9"
TRAINED = "#e07a5f"
NEW = "#d62728"  # what a step computes or sends

_HEADS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7")


def _count(value, name: str, most: int, least: int = 1) -> int:
    """An int from ``least`` to ``most``: a count the picture draws one by one."""
    value = integer(value, name, minimum=least)
    if value > most:
        raise ValueError(f"{name} must be at most {most} to be drawn, got {value}")
    return value


def _size(value, name: str) -> int:
    """A matrix dimension, written beside its box (drawn on a square-root scale)."""
    value = integer(value, name, minimum=1)
    if value > 10**7:
        raise ValueError(f"{name} must be at most 10**7 to be drawn, got {value}")
    return value


def _side(n: int, unit: float) -> float:
    """The drawn length of a side of ``n`` entries."""
    return unit * math.sqrt(n)


def _new_axes():
    """A figure outside pyplot's list of open figures (nothing to close), and its axes."""
    from matplotlib.figure import Figure

    fig = Figure()
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_aspect("equal")
    return fig, ax


_INCH = 0.5  # inches per unit of the drawings: text sizes in points assume it


def _box(ax, x, y, w, h, color, *, rows: int = 0, cols: int = 0, hatch=None, lw=1.0, ec="0.2"):
    """A matrix as a box with its lower left corner at ``(x, y)``; ``rows``/``cols`` draw
    faint lines between its rows or columns (when there are few enough to see)."""
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, edgecolor=ec, lw=lw, hatch=hatch))
    if 1 < rows <= 24:
        for k in range(1, rows):
            ax.plot([x, x + w], [y + h * k / rows] * 2, color="white", lw=0.8, alpha=0.9)
    if 1 < cols <= 24:
        for k in range(1, cols):
            ax.plot([x + w * k / cols] * 2, [y, y + h], color="white", lw=0.8, alpha=0.9)


def _labelled(ax, x, y, w, h, color, name, shape, numbers, *, rows=0, cols=0, hatch=None):
    """A box with its name above it and its shape, symbolic and in numbers, below."""
    _box(ax, x, y, w, h, color, rows=rows, cols=cols, hatch=hatch)
    ax.text(x + w / 2, y + h + 0.1, name, ha="center", va="bottom", fontsize=10)
    ax.text(x + w / 2, y - 0.08, shape, ha="center", va="top", fontsize=8.5, family="monospace")
    ax.text(x + w / 2, y - 0.42, numbers, ha="center", va="top", fontsize=8.5, color="0.35")


def _sign(ax, x, y, text, size=15):
    ax.text(x, y, text, ha="center", va="center", fontsize=size)


def _finish(fig, ax, pad: float = 0.3) -> None:
    """Limits around the boxes and lines drawn, and a figure size that gives every unit of
    the drawing :data:`_INCH` inches, so text in points keeps its size beside the boxes
    (labels beyond the limits are kept by the figure's tight bounding box when saved)."""
    ax.relim()
    ax.autoscale_view()
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    x0, x1, y0, y1 = x0 - pad, x1 + pad, y0 - pad, y1 + pad
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    fig.set_size_inches((x1 - x0) * _INCH, (y1 - y0) * _INCH)
    fig.subplots_adjust(left=0, right=1, bottom=0, top=1)


# --- chapter 4: the shapes of Q, K and V -------------------------------------------------------


def qkv_shapes_figure(n_tokens: int, d_model: int, d_k: int, d_v: int | None = None):
    """Self-attention for all tokens at once, as boxes with their shapes: ``X [pos, d]``
    times ``W^Q, W^K [d, d_k]`` and ``W^V [d, d_v]`` gives ``Q, K [pos, d_k]`` and
    ``V [pos, d_v]``; then ``Q K^T [pos, pos]`` (one score per query and key), its row
    softmax ``A``, and ``A V = Z [pos, d_v]``. One row of each ``[pos, ...]`` box is one
    token. ``d_v`` defaults to ``d_k``. Returns the Matplotlib figure."""
    pos = _count(n_tokens, "n_tokens", 64)
    d = _size(d_model, "d_model")
    dk = _size(d_k, "d_k")
    dv = dk if d_v is None else _size(d_v, "d_v")
    fig, ax = _new_axes()
    unit = 3.0 / math.sqrt(max(pos, d, dk, dv))  # the longest side is 3 units
    h_pos, w_d, w_k, w_v = (_side(n, unit) for n in (pos, d, dk, dv))
    # the projections: X times W^Q gives Q; K and V come the same way from W^K and W^V
    mid = -w_d / 2  # the middle of the first line (W^Q is d tall)
    x = 0.0
    _labelled(ax, x, mid - h_pos / 2, w_d, h_pos, INPUT, "X", "[pos, d]", f"{pos} × {d}",
              rows=pos)  # fmt: skip
    x += w_d + 0.4
    _sign(ax, x, mid, "×")
    x += 0.4
    _labelled(ax, x, -w_d, w_k, w_d, WEIGHT, "$W^Q$", "[d, d_k]", f"{d} × {dk}")
    x += w_k + 0.4
    _sign(ax, x, mid, "=")
    x += 0.4
    for name, width, color, shape, gap in (
        ("Q", w_k, QUERY, "[pos, d_k]", 1.3),
        ("$K = X W^K$", w_k, KEY, "[pos, d_k]", 0.9),
        ("$V = X W^V$", w_v, VALUE, "[pos, d_v]", 0.0),
    ):
        size = dv if shape.endswith("d_v]") else dk
        _labelled(ax, x, mid - h_pos / 2, width, h_pos, color, name, shape, f"{pos} × {size}",
                  rows=pos)  # fmt: skip
        x += width + gap
    # the scores, their softmax, and the output
    top = -w_d - 1.5
    mid = top - max(h_pos, w_k) / 2
    y = mid - h_pos / 2
    x = 0.0
    _labelled(ax, x, y, w_k, h_pos, QUERY, "Q", "[pos, d_k]", f"{pos} × {dk}", rows=pos)
    x += w_k + 0.4
    _sign(ax, x, mid, "×")
    x += 0.4
    _labelled(ax, x, mid - w_k / 2, h_pos, w_k, KEY, "$K^T$", "[d_k, pos]", f"{dk} × {pos}",
              cols=pos)  # fmt: skip
    x += h_pos + 0.4
    _sign(ax, x, mid, "=")
    x += 0.4
    _labelled(ax, x, y, h_pos, h_pos, SCORE, "$Q K^T$", "[pos, pos]", f"{pos} × {pos}",
              rows=pos, cols=pos)  # fmt: skip
    x += h_pos + 0.15
    ax.annotate("", (x + 1.5, mid), (x, mid), arrowprops={"arrowstyle": "->", "lw": 1.2})
    ax.text(x + 0.75, mid + 0.1, "÷ √d_k, then\nsoftmax of\neach row", ha="center",
            va="bottom", fontsize=8)  # fmt: skip
    x += 1.65
    _labelled(ax, x, y, h_pos, h_pos, SCORE, "A", "[pos, pos]", f"{pos} × {pos}", rows=pos,
              cols=pos)  # fmt: skip
    x += h_pos + 0.4
    _sign(ax, x, mid, "×")
    x += 0.4
    _labelled(ax, x, y, w_v, h_pos, VALUE, "V", "[pos, d_v]", f"{pos} × {dv}", rows=pos)
    x += w_v + 0.4
    _sign(ax, x, mid, "=")
    x += 0.4
    _labelled(ax, x, y, w_v, h_pos, "#a8dcc0", "Z", "[pos, d_v]", f"{pos} × {dv}", rows=pos)
    _finish(fig, ax)
    return fig


# --- chapter 8: splitting d_model into heads and back -----------------------------------------


def head_split_figure(d_model: int, n_heads: int, n_tokens: int = 2):
    """The heads as a batch dimension: each token's ``d_model`` features of ``X W^Q`` cut
    into ``n_heads`` groups of ``d_k = d_model / n_heads`` (``view``), the head axis moved
    forward (``transpose``: ``[n_heads, pos, d_k]``, one small matrix per head), attention
    inside each head, and the heads' outputs put back side by side (``[pos, d_model]``)
    for ``W^O``. Colours follow the heads. Returns the Matplotlib figure."""
    d = _size(d_model, "d_model")
    h = _count(n_heads, "n_heads", 32)
    pos = _count(n_tokens, "n_tokens", 8)
    if d % h:
        raise ValueError(f"d_model={d} is not divisible by n_heads={h}")
    dk = d // h
    colours = [_HEADS[i % len(_HEADS)] for i in range(h)]
    fig, ax = _new_axes()
    width = 10.0  # the d_model features of one token
    row = 0.42  # one token's row
    gap = 0.15 if h <= 16 else 0.06  # between the heads' small matrices

    def strip(y, title, shape):
        """``pos`` rows of ``d_model`` features, coloured by head."""
        for t in range(pos):
            for i in range(h):
                x = width * i / h
                _box(ax, x, y - (t + 1) * row, width / h, row, colours[i], lw=0.4, ec="white")
        ax.add_patch(_outline(0, y - pos * row, width, pos * row))
        for t in range(pos):
            ax.text(-0.1, y - (t + 0.5) * row, f"token {t}", ha="right", va="center",
                    fontsize=8.5)  # fmt: skip
        ax.text(width / 2, y + 0.1, title, ha="center", va="bottom", fontsize=11)
        ax.text(width + 0.15, y - pos * row / 2, shape, ha="left", va="center", fontsize=9,
                family="monospace")  # fmt: skip

    def heads(y, title, shape, label):
        """One small ``[pos, d_k]`` matrix per head, side by side."""
        w = (width - gap * (h - 1)) / h
        for i in range(h):
            x = i * (w + gap)
            for t in range(pos):
                _box(ax, x, y - (t + 1) * row, w, row, colours[i], lw=0.4, ec="white")
            ax.add_patch(_outline(x, y - pos * row, w, pos * row))
            if i % (1 if h <= 8 else 2 if h <= 16 else 4) == 0:  # labels that fit
                ax.text(x + w / 2, y - pos * row - 0.06, label(i), ha="center", va="top",
                        fontsize=8)  # fmt: skip
        ax.text(width / 2, y + 0.1, title, ha="center", va="bottom", fontsize=11)
        ax.text(width + 0.15, y - pos * row / 2, shape, ha="left", va="center", fontsize=9,
                family="monospace")  # fmt: skip

    def step(y, text):
        ax.annotate("", (width / 2, y - 0.75), (width / 2, y), arrowprops={"arrowstyle": "->"})
        ax.plot([width / 2] * 2, [y, y - 0.75], alpha=0)  # in the limits
        ax.text(width / 2 + 0.2, y - 0.37, text, ha="left", va="center", fontsize=9,
                color="0.25")  # fmt: skip

    block = pos * row
    y = 0.0
    strip(y, f"$X W^Q$: each token's {d} features, {h} groups of d_k = {dk}",
          f"[pos, d_model]\n= [{pos}, {d}]")  # fmt: skip
    y -= block + 0.2
    step(y, f"view(pos, {h}, {dk}), then transpose(0, 1)")
    y -= 1.45
    heads(y, "one matrix per head", f"[n_heads, pos, d_k]\n= [{h}, {pos}, {dk}]",
          lambda i: f"head {i}")  # fmt: skip
    y -= block + 0.45
    step(y, "attention inside each head: softmax(Q K^T / √d_k) V")
    y -= 1.45
    heads(y, "each head's output $Z^{(\\ell)}$", f"[n_heads, pos, d_k]\n= [{h}, {pos}, {dk}]",
          lambda i: f"$Z^{{({i})}}$")  # fmt: skip
    y -= block + 0.45
    step(y, f"transpose(0, 1), reshape(pos, {d})")
    y -= 1.45
    strip(y, f"the heads side by side again; × $W^O$ [{d}, {d}] then mixes them",
          f"[pos, d_model]\n= [{pos}, {d}]")  # fmt: skip
    _finish(fig, ax, pad=0.2)
    return fig


def _outline(x, y, w, h):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, facecolor="none", edgecolor="0.2", lw=1.0)


# --- chapter 13: the key/value cache ------------------------------------------------------------


def kv_cache_figure(tokens: Sequence[str], d_head: int):
    """Generation with a key/value cache, one column per step: at step ``t`` the newest
    token's query ``q_t [1, d_head]`` is computed, with its key and value, which join the
    cache; the query then reads all ``t`` cached keys ``K [t, d_head]`` (one score each)
    and the values ``V [t, d_head]``. Rows from the cache are grey, rows computed at the
    step red. ``tokens`` are the tokens of the steps, in order (at most 8). Returns the
    Matplotlib figure."""
    if isinstance(tokens, str) or not isinstance(tokens, Sequence):
        raise TypeError(f"tokens must be a sequence of strings, got {type(tokens).__name__}")
    tokens = [string(t, "tokens[i]") for t in tokens]
    n = len(tokens)
    if not 1 <= n <= 8:
        raise ValueError(f"tokens must hold 1 to 8 tokens to be drawn, got {n}")
    dh = _size(d_head, "d_head")
    fig, ax = _new_axes()
    w = 1.5  # a row of d_head numbers
    row = 0.3
    col = 2.3
    for t in range(1, n + 1):
        x = (t - 1) * col
        token = tokens[t - 1]
        ax.text(x + w / 2, 0.75, f"step {t}", ha="center", va="bottom", fontsize=10,
                weight="bold")  # fmt: skip
        ax.text(x + w / 2, 0.7, f"new token {token!r}", ha="center", va="top", fontsize=9)
        # the query of the new token
        _box(ax, x, -0.3, w, row, NEW)
        ax.text(x + w / 2, -0.35, f"$q_{{{t}}}$  [1, {dh}]", ha="center", va="top",
                fontsize=8.5)  # fmt: skip
        for block, (name, top) in enumerate((("K", -1.1), ("V", -1.1 - row * n - 1.0))):
            for k in range(t):
                new = k == t - 1
                y = top - (k + 1) * row
                _box(ax, x, y, w, row, NEW if new else "#d9d9d9", lw=0.5, ec="white")
                ax.text(x + 0.08, y + row / 2, repr(tokens[k]), ha="left", va="center",
                        fontsize=7, color="white" if new else "0.3")  # fmt: skip
                if block == 0:
                    ax.annotate("", (x + w, y + row / 2), (x + w, -0.3 + row / 2),
                                arrowprops={"arrowstyle": "-", "color": QUERY, "lw": 0.7,
                                            "connectionstyle": "arc3,rad=-0.35"})  # fmt: skip
            ax.add_patch(_outline(x, top - t * row, w, t * row))
            ax.text(x + w / 2, top - t * row - 0.05, f"{name} [{t}, {dh}]", ha="center",
                    va="top", fontsize=8.5)  # fmt: skip
        if t == 1:
            ax.text(x - 0.15, -0.3 + row / 2, "query", ha="right", va="center", fontsize=9)
            ax.text(x - 0.15, -1.1 - row / 2, "keys", ha="right", va="center", fontsize=9)
            ax.text(x - 0.15, -2.1 - row * n - row / 2, "values", ha="right", va="center",
                    fontsize=9)  # fmt: skip
    y = -2.1 - 2 * row * n - 0.6
    ax.text(0, y, "red: computed at the step (one query, one key, one value); grey: kept in "
            "the cache from earlier steps.\nThe query reads every key of the cache (blue "
            "lines), and the weights it gives them mix the values.", ha="left", va="top",
            fontsize=9, color="0.25")  # fmt: skip
    _finish(fig, ax, pad=0.2)
    return fig


# --- chapter 16: LoRA's W + BA --------------------------------------------------------------


def lora_figure(d_in: int, d_out: int, rank: int, alpha: float | None = None):
    """LoRA beside a frozen matrix: ``W [d_out, d_in]`` (frozen, hatched) plus
    ``(alpha / r) B A``, with ``B [d_out, r]`` (starts at zero) and ``A [r, d_in]``
    (starts random), the only trained numbers, and the two counts: ``d_out d_in`` frozen,
    ``r (d_in + d_out)`` trained. Returns the Matplotlib figure."""
    from transformer_lab.checks import finite_number

    din = _size(d_in, "d_in")
    dout = _size(d_out, "d_out")
    r = integer(rank, "rank", minimum=1)
    if r > min(din, dout):
        raise ValueError(f"rank={r} must be at most min(d_in, d_out) = {min(din, dout)}")
    if alpha is not None:
        finite_number(alpha, "alpha", above=0)
    fig, ax = _new_axes()
    unit = 3.4 / math.sqrt(max(din, dout))
    w_w, h_w, w_r = _side(din, unit), _side(dout, unit), _side(r, unit)
    mid = h_w / 2
    x = 0.0
    _labelled(ax, x, 0, w_w, h_w, FROZEN, "W  (frozen)", "[d_out, d_in]", f"{dout} × {din}",
              hatch="//")  # fmt: skip
    scale = "+" if alpha is None else f"+  ({alpha:g}/{r}) ×"
    room = 0.5 if alpha is None else 0.3 + 0.19 * len(scale)  # the sign's width, in units
    _sign(ax, x + w_w + room / 2 + 0.15, mid, scale, size=14)
    x += w_w + room + 0.3
    _labelled(ax, x, 0, w_r, h_w, TRAINED, "B", "[d_out, r]", f"{dout} × {r}")
    ax.text(x + w_r / 2, -0.78, "starts at 0", ha="center", va="top", fontsize=8.5,
            color="0.35")  # fmt: skip
    x += w_r + 0.4
    _sign(ax, x, mid, "×")
    x += 0.4
    _labelled(ax, x, mid - w_r / 2, w_w, w_r, TRAINED, "A", "[r, d_in]", f"{r} × {din}")
    ax.text(x + w_w / 2, mid - w_r / 2 - 0.78, "starts random", ha="center", va="top",
            fontsize=8.5, color="0.35")  # fmt: skip
    trained = r * (din + dout)
    ax.text(0, -1.45, f"frozen: d_out × d_in = {dout * din:,} numbers", ha="left", va="top",
            fontsize=10)  # fmt: skip
    ax.text(0, -1.95, f"trained: r × (d_in + d_out) = {trained:,} numbers "
            f"({trained / (dout * din):.1%} as many)", ha="left", va="top", fontsize=10,
            color=TRAINED)  # fmt: skip
    _finish(fig, ax, pad=0.2)
    return fig
