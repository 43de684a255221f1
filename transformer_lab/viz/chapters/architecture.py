"""The Transformer's architecture diagram, drawn from a description of its boxes.

Every box is a :class:`Box`: the *part* it belongs to (the name a highlight uses), its label,
the chapter that builds it and its kind (its colour). Three variants share the description:
the 2017 ``"encoder-decoder"``, the ``"encoder"`` alone (BERT) and the ``"decoder"`` alone
(GPT), the last two being the first with parts removed.

``architecture_svg`` draws the boxes as SVG. ``architecture_html`` wraps the drawing in a
``<figure>`` with a link laid over each box (hover: a tooltip and an outline; click: the
chapter), a text alternative for screen readers and a visible list of the boxes with their
links; ``architecture_diagram`` and ``where_we_are`` return it as a Jupyter display object.
It is plain HTML and SVG with no script, so the static site shows it without a kernel.

The links are HTML anchors over the drawing, not SVG ``<a>`` elements: JupyterLab rewrites
the ``href`` of every link in an output and fails on SVG links. ``link`` picks the targets:
``"site"`` the built pages (``07_positional_encoding.html``), ``"lab"`` the chapter sources,
which JupyterLab opens as notebooks (``07_positional_encoding.md``), and ``"auto"`` the
latter in a kernel started by a Jupyter server (it sets ``JPY_SESSION_NAME``), the former
anywhere else, the site build included.
"""

from __future__ import annotations

import html
import itertools
import os
from dataclasses import dataclass, replace

from transformer_lab.checks import instance_of, one_of

__all__ = [
    "VARIANTS",
    "PARTS",
    "CHAPTER_TITLES",
    "CHAPTER_VIEWS",
    "boxes",
    "architecture_svg",
    "architecture_html",
    "architecture_diagram",
    "where_we_are",
]

VARIANTS = ("encoder-decoder", "encoder", "decoder")
LINKS = ("auto", "site", "lab")
# part -> the chapter that builds it (in one-stack variants, the stack and head: BERT, GPT)
PARTS = {
    "embedding": "01_words_to_vectors",
    "positions": "07_positional_encoding",
    "self_attention": "04_self_attention",
    "scaled_dot_product": "05_scaling",
    "masked_self_attention": "06_masking",
    "heads": "08_multi_head_attention",
    "add_norm": "09_add_and_norm",
    "feed_forward": "10_transformer_block",
    "encoder_block": "10_transformer_block",
    "cross_attention": "11_encoder_decoder",
    "decoder_block": "11_encoder_decoder",
    "output": "11_encoder_decoder",
}
_BY_VARIANT = {
    "encoder": {"encoder_block": "12_bert", "output": "12_bert"},
    "decoder": {"decoder_block": "13_gpt", "output": "13_gpt"},
}
CHAPTER_TITLES = {
    "01_words_to_vectors": "From words to vectors",
    "04_self_attention": "Self-attention with queries, keys and values",
    "05_scaling": "Why divide by √d_k",
    "06_masking": "Masking the future",
    "07_positional_encoding": "Positional encoding",
    "08_multi_head_attention": "Multi-head attention",
    "09_add_and_norm": "Add & norm",
    "10_transformer_block": "The block and the residual stream",
    "11_encoder_decoder": "Encoder, decoder and cross-attention",
    "12_bert": "BERT: an encoder that reads both ways",
    "13_gpt": "Let's build a GPT",
    "17_recall": "Where attention wins: recall from context",
    "19_whisper": "A real encoder-decoder: Whisper",
}
# the picture each chapter of parts 3-4 shows near its top: (variant, highlighted parts)
CHAPTER_VIEWS = {
    "04_self_attention": ("encoder-decoder", ("self_attention",)),
    "05_scaling": ("encoder-decoder", ("scaled_dot_product",)),
    "06_masking": ("encoder-decoder", ("masked_self_attention",)),
    "07_positional_encoding": ("encoder-decoder", ("positions",)),
    "08_multi_head_attention": ("encoder-decoder", ("heads",)),
    "09_add_and_norm": ("encoder-decoder", ("add_norm",)),
    "10_transformer_block": ("encoder-decoder", ("encoder_block", "feed_forward")),
    "11_encoder_decoder": ("encoder-decoder", ("cross_attention", "decoder_block")),
    "12_bert": ("encoder", ("encoder_block", "output")),
    "13_gpt": ("decoder", ("decoder_block", "output")),
    "14_todays_decoders": ("decoder", ("positions", "add_norm", "feed_forward", "heads")),
    "17_recall": ("decoder", ("masked_self_attention", "heads")),
    "19_whisper": ("encoder-decoder", ("cross_attention", "encoder_block", "decoder_block")),
}
_TITLES = {
    "encoder-decoder": "The encoder-decoder Transformer",
    "encoder": "An encoder-only Transformer (BERT)",
    "decoder": "A decoder-only Transformer (GPT)",
}
_ATTENTION = ("self_attention", "masked_self_attention", "cross_attention")
_KINDS = {"embedding": "embedding", "positions": "positions", "add_norm": "norm"}
_KINDS |= {"feed_forward": "ffn", "output": "output", "scaled_dot_product": "detail"}
_KINDS |= {"heads": "detail", "encoder_block": "stack", "decoder_block": "stack"}
_KINDS |= dict.fromkeys(_ATTENTION, "attention")
_FILL = {"embedding": "#f6d5dc", "positions": "#ffffff", "attention": "#fbdcb0"}
_FILL |= {"norm": "#fbf1a9", "ffn": "#cfe6f8", "output": "#e3d7f2", "stack": "#f2f2f2"}
_FILL |= {"detail": "#fff7ea"}
W_COL, GAP, PAD = 220, 16, 12  # column width, space between boxes, padding inside a stack
_IDS = itertools.count()


@dataclass(frozen=True)
class Box:
    """One box of the diagram, placed: ``x, y`` is its top-left corner in SVG units."""

    id: str  # unique in the diagram: side, part and a number, e.g. "enc-self_attention-2"
    part: str  # the name a highlight uses, a key of PARTS
    label: str  # the text in the box
    chapter: str  # the chapter that builds it, e.g. "04_self_attention"
    kind: str  # its colour: embedding, positions, attention, norm, ffn, output, stack, detail
    x: float
    y: float
    w: float
    h: float


def _block(side: str, variant: str) -> list[tuple[str, str, int]]:
    """The rows of one encoder or decoder block, bottom to top: (part, label, height)."""
    norm = ("add_norm", "Add & norm", 24)
    if side == "enc":
        rows = [("self_attention", "Multi-head self-attention", 54), norm]
    else:
        rows = [("masked_self_attention", "Masked multi-head self-attention", 54), norm]
    if side == "dec" and variant == "encoder-decoder":
        rows += [("cross_attention", "Multi-head cross-attention", 54), norm]
    return rows + [("feed_forward", "Feed-forward", 34), norm]


def _layout(variant: str) -> tuple[list[Box], str, float, float]:
    """The boxes in reading order, the arrows' SVG (``MARKER`` names the arrowhead), size."""
    sides = {"encoder-decoder": ["enc", "dec"], "encoder": ["enc"], "decoder": ["dec"]}[variant]
    chapters = PARTS | _BY_VARIANT.get(variant, {})
    placed: list[Box] = []
    lines: list[str] = []
    count = itertools.count()

    def add(side, part, label, x, y, w, h, at=None):
        box = Box(f"{side}-{part}-{next(count)}", part, label, chapters[part], _KINDS[part],
                  x, y, w, h)  # fmt: skip
        placed.insert(len(placed) if at is None else at, box)
        return box

    def path(d, kind="arrow"):
        lines.append(f'<path d="{d}" class="tl-arch-{kind}" marker-end="url(#MARKER)"/>')

    tops, cross = {}, None
    for i, side in enumerate(sides):  # the drawing grows upwards, to negative y
        x = 40 + i * (W_COL + 90)
        cx, source = x + W_COL / 2, side == "enc" or variant == "decoder"
        what = "inputs" if source else "outputs, shifted right"
        lines.append(f'<text x="{cx}" y="24" class="tl-arch-note">{what}</text>')
        path(f"M{cx} 10 V0")
        y = 0.0  # the bottom edge of the next box
        for part, label, h in [
            ("embedding", "Input embedding" if source else "Output embedding", 30),
            ("positions", "Positional encoding", 26),
        ]:
            box = add(side, part, label, x, y - h, W_COL, h)
            y = box.y - GAP
            path(f"M{cx} {box.y} V{y}")
        bottom = below = y
        start, y = len(placed), y - PAD
        rows = _block(side, variant)
        for j, (part, label, h) in enumerate(rows):
            box = add(side, part, label, x, y - h, W_COL, h)
            if part == "add_norm":  # the residual path around the sublayer below
                path(f"M{cx} {below - 6} H{x - 10} V{box.y + h / 2} H{x}", "residual")
                below = box.y
            if part in _ATTENTION:
                add(side, "scaled_dot_product", "softmax(QKᵀ/√dₖ)V", x + 8, box.y + 24,
                    W_COL - 72, 22)  # fmt: skip
                add(side, "heads", "h heads", x + W_COL - 58, box.y + 24, 50, 22)
            cross = box if part == "cross_attention" else cross
            if j < len(rows) - 1:
                path(f"M{cx} {box.y} V{box.y - GAP}")
            y = box.y - GAP
        top = y + GAP - PAD - 20  # room for the block's name
        stack = "encoder" if side == "enc" else "decoder"
        add(side, f"{stack}_block", f"{stack.capitalize()} block ×N", x - 18, top,
            W_COL + 30, bottom - top, at=start)  # fmt: skip
        tops[side] = (cx, top)
        if side == sides[-1]:
            y = top - GAP
            path(f"M{cx} {top} V{y}")
            for label in ("Linear", "Softmax"):
                box = add(side, "output", label, x + 30, y - 26, W_COL - 60, 26)
                y = box.y - GAP
                path(f"M{cx} {box.y} V{y}")
            lines.append(f'<text x="{cx}" y="{y - 4}" class="tl-arch-note">probabilities</text>')
    if cross is not None:  # the encoder's output feeds every cross-attention
        (ecx, etop), mid = tops["enc"], 40 + W_COL + 36
        path(f"M{ecx} {etop} V{etop - 14} H{mid} V{cross.y + 14} H{cross.x}")
    shift = 34 - min(b.y for b in placed)  # the top edge at y = 0, with a margin
    width = 60 + len(sides) * W_COL + (len(sides) - 1) * 90
    placed = [replace(b, y=b.y + shift) for b in placed]
    return placed, f'<g transform="translate(0 {shift})">{"".join(lines)}</g>', width, shift + 32


def boxes(variant: str = "encoder-decoder") -> list[Box]:
    """The placed boxes of ``variant`` in reading order (bottom to top, encoder first)."""
    one_of(variant, list(VARIANTS), "variant")
    return _layout(variant)[0]


def _check(variant, highlight, link="site", caption="") -> frozenset[str]:
    present = {b.part for b in boxes(variant)}
    highlight = (highlight,) if isinstance(highlight, str) else highlight
    if not isinstance(highlight, (list, tuple, set, frozenset)) or not all(
        isinstance(p, str) for p in highlight
    ):
        raise TypeError(f"highlight must be a part name or a list of them, got {highlight!r}")
    if unknown := sorted(set(highlight) - set(PARTS)):
        raise ValueError(f"unknown part(s) {unknown}; the known parts are {sorted(PARTS)}")
    if absent := sorted(set(highlight) - present):
        raise ValueError(f"the {variant} variant has no {absent}; it has {sorted(present)}")
    one_of(link, list(LINKS), "link")
    instance_of(caption, str, "caption", "a string")
    return frozenset(highlight)


def _where(b: Box) -> str:
    return f"chapter {int(b.chapter[:2])}, {CHAPTER_TITLES[b.chapter]}"


def _description(variant: str, placed: list[Box], on: frozenset[str]) -> str:
    """The text alternative: every box, side by side, in reading order."""
    text = [f"{_TITLES[variant]}, read from bottom to top."]
    for side, name in (("enc", "Encoder side"), ("dec", "Decoder side")):
        labels = [b.label for b in placed if b.id.startswith(side) and b.kind != "detail"]
        if labels:
            text.append(f"{name}: " + ", then ".join(labels) + ".")
    text.append("Each attention box computes softmax(QKᵀ/√dₖ)V in h heads.")
    if variant == "encoder-decoder":
        text.append("The encoder's output feeds the decoder's cross-attention.")
    if on:
        text.append(f"Highlighted: {'; '.join(sorted({b.label for b in placed if b.part in on}))}.")
    return " ".join(text)


def _svg(variant: str, on: frozenset[str], uid: str) -> str:
    placed, lines, width, height = _layout(variant)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
        f'aria-labelledby="{uid}-t {uid}-d" class="tl-arch-svg">'
        f'<title id="{uid}-t">{html.escape(_TITLES[variant])}</title>'
        f'<desc id="{uid}-d">{html.escape(_description(variant, placed, on))}</desc>'
        f'<defs><marker id="{uid}-head" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0 0 L8 4 L0 8 z" '
        'fill="#555"/></marker></defs>' + lines.replace("MARKER", f"{uid}-head")
    ]
    for b in sorted(placed, key=lambda b: b.kind != "stack"):  # stacks beneath their boxes
        state = " tl-arch-on" if b.part in on else (" tl-arch-dim" if on else "")
        tx, anchor = (b.x + 8, "start") if b.kind == "stack" else (b.x + b.w / 2, "middle")
        ty = b.y + (16 if b.kind in ("attention", "stack") else b.h / 2 + 4)
        out.append(
            f'<g class="tl-arch-box tl-arch-{b.kind}{state}" data-part="{b.part}" '
            f'data-box="{b.id}" data-chapter="{b.chapter}">'
            f"<title>{html.escape(f'{b.label} ({_where(b)})')}</title>"
            f'<rect x="{b.x}" y="{b.y}" width="{b.w}" height="{b.h}" rx="5" '
            f'fill="{_FILL[b.kind]}"/><text x="{tx}" y="{ty}" text-anchor="{anchor}">'
            f"{html.escape(b.label)}</text></g>"
        )
    return "\n".join([*out, "</svg>"])


def architecture_svg(variant: str = "encoder-decoder", highlight=()) -> str:
    """The diagram of ``variant`` as SVG, the boxes of the ``highlight`` parts marked.

    Each box is a ``<g class="tl-arch-box" data-part=... data-box=...>`` with a ``<title>``
    (its tooltip); highlighted boxes have the class ``tl-arch-on``, the others, when anything
    is highlighted, ``tl-arch-dim``. ``highlight`` names parts (keys of ``PARTS``) that the
    variant has.
    """
    return _svg(variant, _check(variant, highlight), f"tl-arch-{next(_IDS)}")


def _href(chapter: str, link: str) -> str:
    if link == "auto":
        link = "lab" if os.environ.get("JPY_SESSION_NAME") else "site"
    return f"{chapter}.md" if link == "lab" else f"{chapter}.html"


def architecture_html(
    variant: str = "encoder-decoder", highlight=(), link: str = "auto", caption: str = ""
) -> str:
    """The diagram as an HTML ``<figure>``: the SVG, a link over each box, a caption.

    Over every box lies an ``<a class="tl-arch-hit">`` to the chapter that builds it, its
    tooltip (``title``) naming the box and the chapter; it is hidden from screen readers,
    who read the SVG's title and description and then the caption's list of every box, each
    a link. ``link``: ``"site"`` (``NN_name.html``), ``"lab"`` (``NN_name.md``) or ``"auto"``.
    """
    on = _check(variant, highlight, link, caption)
    uid = f"tl-arch-{next(_IDS)}"
    placed, _, width, height = _layout(variant)
    hits: list[str] = []
    items: dict[str, dict[str, str]] = {"enc": {}, "dec": {}}
    for b in sorted(placed, key=lambda b: b.kind != "stack"):  # inner boxes on top
        box = (f"left:{100 * b.x / width:.3f}%;top:{100 * b.y / height:.3f}%;"
               f"width:{100 * b.w / width:.3f}%;height:{100 * b.h / height:.3f}%")  # fmt: skip
        hits.append(
            f'<a class="tl-arch-hit{" tl-arch-on" if b.part in on else ""}" '
            f'href="{_href(b.chapter, link)}" title="{html.escape(f"{b.label}: {_where(b)}")}" '
            f'style="{box}" data-part="{b.part}" data-box="{b.id}" aria-hidden="true" '
            'tabindex="-1"></a>'
        )
    for b in placed:
        items[b.id[:3]].setdefault(
            b.label,
            f'<a href="{_href(b.chapter, link)}">{html.escape(b.label)}</a> '
            f"(ch.&#160;{int(b.chapter[:2])})",
        )
    names = {"enc": "Encoder side", "dec": "Decoder side"}
    listing = "".join(
        f"<li>{names[side]}, bottom to top: {' · '.join(rows.values())}</li>"
        for side, rows in items.items()
        if rows
    )
    shown = sorted({b.label for b in placed if b.part in on})
    text = caption or _TITLES[variant] + (f", highlighted: {'; '.join(shown)}" if on else "")
    return (
        f'<figure class="tl-arch" id="{uid}" data-variant="{variant}" '
        f'data-highlight="{" ".join(sorted(on))}" style="max-width:{width * 1.15:.0f}px">'
        f"<style>{_CSS}</style>"
        f'<div class="tl-arch-canvas">{_svg(variant, on, uid)}{"".join(hits)}</div>'
        f'<figcaption><span class="tl-arch-caption">{html.escape(text)}</span>'
        f'<ul class="tl-arch-list">{listing}</ul></figcaption></figure>'
    )


class _Diagram:
    """What ``architecture_diagram`` returns: HTML for Jupyter, the text alternative as repr."""

    def __init__(self, markup: str, text: str):
        self.markup, self.text = markup, text

    def _repr_html_(self) -> str:
        return self.markup

    def __repr__(self) -> str:
        return self.text


def architecture_diagram(
    variant: str = "encoder-decoder", highlight=(), link: str = "auto", caption: str = ""
):
    """The figure of ``architecture_html`` as an object Jupyter shows; its repr is the text."""
    markup = architecture_html(variant, highlight, link, caption)
    on = _check(variant, highlight)
    return _Diagram(markup, _description(variant, boxes(variant), on))


def where_we_are(chapter: str, link: str = "auto"):
    """The diagram that ``chapter`` (e.g. ``"07_positional_encoding"``) shows near its top."""
    if chapter not in CHAPTER_VIEWS:
        raise ValueError(f"no diagram for chapter {chapter!r}; known: {sorted(CHAPTER_VIEWS)}")
    variant, parts = CHAPTER_VIEWS[chapter]
    names = "; ".join(sorted({b.label for b in boxes(variant) if b.part in parts}))
    caption = (f"Where chapter {int(chapter[:2])} sits: {names} (highlighted). "
               "Each box links to the chapter that builds it.")  # fmt: skip
    return architecture_diagram(variant, parts, link, caption)


_CSS = """
.tl-arch{margin:1em auto;font-family:system-ui,-apple-system,"Segoe UI",sans-serif}
.tl-arch-canvas{position:relative;background:#fff;border-radius:6px}
.tl-arch-svg{display:block;width:100%;height:auto}
.tl-arch-svg text{font-size:12px;fill:#1f2328}
.tl-arch-svg .tl-arch-note{font-size:11px;font-style:italic;fill:#555;text-anchor:middle}
.tl-arch-svg rect{stroke:#6e7781;stroke-width:1}
.tl-arch-svg .tl-arch-stack rect{stroke-dasharray:4 3}
.tl-arch-svg .tl-arch-detail text{font-size:10.5px}
.tl-arch-svg .tl-arch-arrow,.tl-arch-svg .tl-arch-residual{fill:none;stroke:#555;stroke-width:1.3}
.tl-arch-svg .tl-arch-residual{stroke:#8c959f;stroke-dasharray:3 2}
.tl-arch-svg .tl-arch-dim{opacity:.45}
.tl-arch-svg .tl-arch-on rect{stroke:#c2410c;stroke-width:3}
.tl-arch-svg .tl-arch-on:not(.tl-arch-stack) rect{fill:#fdba74}
.tl-arch-svg .tl-arch-stack.tl-arch-on rect{fill:#fff1e6}
.tl-arch-hit{position:absolute;display:block;border-radius:5px;outline:none}
.tl-arch-hit:hover{box-shadow:0 0 0 2px #1d4ed8;background:rgba(29,78,216,.08)}
.tl-arch figcaption{font-size:.9em;text-align:left;margin-top:.4em}
.tl-arch-list{margin:.3em 0 0 1.2em;padding:0}
"""
