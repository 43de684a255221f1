"""The attention explorer: type or pick a sentence, move d_k, temperature and mask, watch.

Three layers, so each can be tested and timed on its own:

* :func:`explore` is a pure function ``(sentence, d_k, temperature, mask_kind) -> dict``.
  Tokens get fixed pseudo-random embeddings (seeded by a hash of the lower-cased token,
  so "The" and "the" share one), ``W_Q, W_K, W_V`` are fixed random ``[d_model, d_k]``
  matrices seeded by ``d_k``, and the package's
  :func:`~transformer_lab.nn.attention.scaled_dot_product_attention` does the attention
  with ``scale = 1 / (sqrt(d_k) * temperature)``. Nothing is trained: the patterns show
  the mechanics (scaling, temperature, masks), not meaning. The sentences, their tokens
  and embeddings come from :mod:`transformer_lab.data.toy_sentences`.
* :func:`attention_explorer` returns an :class:`AttentionExplorer`, an ipywidgets app
  (needs a kernel) that calls :func:`explore` and redraws three heatmaps (scores,
  weights, outputs) as SVG inside an HTML widget every time a control moves (a few
  milliseconds, where a matplotlib PNG would take hundreds).
* :func:`static_attention_explorer` precomputes states (temperatures or d_k values x
  mask kinds or sentences) into a Plotly figure behind a slider and a dropdown, for
  pages without a kernel; display it with :func:`transformer_lab.viz.plotly.show`.

Masks: ``"none"``; ``"causal"`` (query i sees keys <= i); ``"padding"`` (the sentence is
padded with ``<pad>`` tokens, as the shorter sentence in a batch would be, and no query
may attend to a pad key); ``"causal+padding"`` (both, combined with
:func:`~transformer_lab.nn.masks.combine_masks`). True = may attend, as everywhere in the
package.

Finding the app in the DOM (JupyterLab, ipywidgets 8)
-----------------------------------------------------
The app is ``.tl-attention-explorer``. Each control carries a stable class and its
``description`` as its visible label:

=====================  ================  =============================================
class                  description       widget
=====================  ================  =============================================
``tl-example``         ``example``       Dropdown of example sentences (a ``<select>``)
``tl-sentence``        ``sentence``      Text box (updates on Enter / losing focus)
``tl-dk``              ``d_k``           SelectionSlider over powers of two
``tl-temperature``     ``temperature``   FloatLogSlider, 0.1 to 10
``tl-mask``            ``mask``          ToggleButtons: none, causal, padding, ...
``tl-heatmap``         (none)            HTML widget holding ``div.tl-heatmaps``
``tl-caption``         (none)            HTML line naming the state being shown
=====================  ================  =============================================

A slider moves with the keyboard: click its handle (``.tl-dk .noUi-handle`` or the
``[role=slider]`` inside ``.tl-dk``) and press ArrowRight. After every update
``div.tl-heatmaps`` is replaced: its ``data-state`` attribute names the new settings
(e.g. ``d_k=32;temperature=1;mask=none``), its three ``svg.tl-svg-heatmap`` panels
(scores, weights, outputs) hold new cell colours, and the caption names the settings.

On the static site the ipywidgets app cannot run (no kernel): chapters tag the cell
that displays it ``remove-output`` and show :func:`static_attention_explorer` instead.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import torch

from transformer_lab.checks import finite_number, integer, one_of

# chapters 4 to 6 also read the toy sentences' tokens and embeddings from this module
from transformer_lab.data.toy_sentences import (
    D_MODEL,
    EXAMPLE_SENTENCES,
    PAD,
    token_embedding,
    tokenize,
)
from transformer_lab.nn.attention import scaled_dot_product_attention
from transformer_lab.nn.masks import causal_mask, combine_masks, padding_mask

__all__ = [
    "MASK_KINDS",
    "projections",
    "explore",
    "AttentionExplorer",
    "attention_explorer",
    "static_attention_explorer",
]

MASK_KINDS = ("none", "causal", "padding", "causal+padding")
D_K_CHOICES = (2, 4, 8, 16, 32, 64, 128, 256)
MIN_TEMPERATURE = 1e-6  # below it scores / temperature can overflow float32: NaN weights


@lru_cache(maxsize=64)
def projections(d_k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fixed random ``W_Q, W_K, W_V``, each ``[D_MODEL, d_k]``, seeded by ``d_k``.

    Entries have variance ``1 / D_MODEL``, so each entry of ``q = x W_Q`` has variance
    about 1 for an embedding with unit-variance entries.
    """
    integer(d_k, "d_k", minimum=1)
    generator = torch.Generator().manual_seed(1000 + d_k)
    W = torch.randn(3, D_MODEL, d_k, generator=generator) / math.sqrt(D_MODEL)
    return W[0], W[1], W[2]


def _check_settings(d_k, temperature, mask_kind):
    integer(int(d_k) if isinstance(d_k, np.integer) else d_k, "d_k", minimum=1)  # np.int64 too
    if finite_number(temperature, "temperature", above=0) < MIN_TEMPERATURE:
        raise ValueError(
            f"temperature must be at least {MIN_TEMPERATURE:g}, got {temperature!r}: far smaller "
            "ones overflow the softmax's float32 input and the weights come out NaN"
        )
    one_of(mask_kind, MASK_KINDS, "mask_kind")


def _mask(mask_kind: str, n_real: int, n_total: int) -> torch.Tensor | None:
    causal = causal_mask(n_total) if "causal" in mask_kind else None
    padding = padding_mask([n_real], n_total)[0, 0] if "padding" in mask_kind else None
    return combine_masks(causal, padding)  # [query_pos or 1, key_pos] or None


def explore(
    sentence: str,
    d_k: int = 16,
    temperature: float = 1.0,
    mask_kind: str = "none",
    *,
    n_pad: int = 3,
) -> dict:
    """Self-attention over a sentence with fixed random embeddings and projections.

    Args:
        sentence: the text; split by :func:`tokenize`.
        d_k: size of queries, keys and values.
        temperature: the softmax input is divided by it (1 = plain scaled attention); at
            least ``MIN_TEMPERATURE`` (1e-6): far smaller ones overflow float32 into NaN.
        mask_kind: one of :data:`MASK_KINDS`.
        n_pad: how many ``<pad>`` tokens a padding mask kind appends.

    Returns:
        a dict with ``tokens`` (list of str, pads included), ``n_real`` and NumPy arrays
        ``x [pos, D_MODEL]``, ``q, k, v [pos, d_k]``, ``scores [pos, pos]``
        (``q_i . k_j / sqrt(d_k)``, ``-inf`` where masked), ``weights [pos, pos]``
        (``softmax(scores / temperature)``, rows sum to 1), ``outputs [pos, d_k]``
        (``weights @ v``) and ``mask [pos, pos]`` (bool, True = may attend), plus the
        settings ``d_k``, ``temperature``, ``mask_kind``.
    """
    _check_settings(d_k, temperature, mask_kind)
    tokens = tokenize(sentence)
    n_real = len(tokens)
    if "padding" in mask_kind:
        tokens = tokens + [PAD] * n_pad
    n = len(tokens)
    W_Q, W_K, W_V = projections(int(d_k))
    with torch.no_grad():
        x = torch.stack([token_embedding(t) for t in tokens])  # [pos, d_model]
        q, k, v = x @ W_Q, x @ W_K, x @ W_V  # [pos, d_k] each
        mask = _mask(mask_kind, n_real, n)
        scale = 1.0 / (math.sqrt(d_k) * temperature)
        outputs, weights = scaled_dot_product_attention(q, k, v, mask, scale=scale)
        assert weights is not None  # need_weights is True by default
        scores = (q @ k.T) / math.sqrt(d_k)  # [query_pos, key_pos]
        full_mask = torch.ones(n, n, dtype=torch.bool) if mask is None else mask.expand(n, n)
        scores = scores.masked_fill(~full_mask, float("-inf"))
    return {
        "tokens": tokens,
        "n_real": n_real,
        "x": x.numpy(),
        "q": q.numpy(),
        "k": k.numpy(),
        "v": v.numpy(),
        "scores": scores.numpy(),
        "weights": weights.numpy(),
        "outputs": outputs.numpy(),
        "mask": full_mask.numpy(),
        "d_k": int(d_k),
        "temperature": float(temperature),
        "mask_kind": mask_kind,
    }


def _symmetric(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(np.abs(finite).max()) if finite.size else 1.0


def render_html(result: dict) -> str:
    """Draw a result of :func:`explore` as three SVG heatmaps (scores, weights, outputs).

    Returns an HTML string (a ``div.tl-heatmaps`` holding three ``svg`` elements, with a
    ``data-state`` attribute naming the settings).
    """
    from transformer_lab.viz.heatmaps import svg_heatmap

    tokens = result["tokens"]
    n = len(tokens)
    small = n <= 12
    s_max = _symmetric(result["scores"])
    o_max = _symmetric(result["outputs"])
    panels = [
        svg_heatmap(
            result["scores"],
            tokens,
            tokens,
            "scores q·k/√d_k",
            annotate=small,
            fmt=".1f",
            cmap="RdBu_r",
            vmin=-s_max,
            vmax=s_max,
        ),
        svg_heatmap(
            result["weights"],
            tokens,
            tokens,
            "weights (rows sum to 1)",
            annotate=small,
            vmin=0.0,
            vmax=1.0,
        ),
        svg_heatmap(
            result["outputs"],
            None,
            tokens,
            "outputs z_i = Σ_j a_ij v_j",
            annotate=False,
            cmap="RdBu_r",
            vmin=-o_max,
            vmax=o_max,
            cell=max(4, min(20, 320 // result["d_k"])),
        ),
    ]
    state = (
        f"d_k={result['d_k']};temperature={result['temperature']:.3g};mask={result['mask_kind']}"
    )
    return (
        f'<div class="tl-heatmaps" data-state="{state}" '
        'style="display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start">'
        + "".join(panels)
        + "</div>"
    )


class AttentionExplorer:
    """The ipywidgets app: controls on top, the heatmaps below; see the module docstring.

    ``app.widget`` is the ``VBox`` to display (displaying ``app`` itself works too).
    Attributes ``examples, sentence, d_k, temperature, mask`` are the controls,
    ``heatmap`` the HTML widget holding the SVG heatmaps, ``caption`` the HTML line;
    ``result`` is the last :func:`explore` dict and ``timings`` the last update's compute and
    redraw times (ms).
    """

    def __init__(
        self,
        sentence: str | None = None,
        *,
        d_k: int = 16,
        temperature: float = 1.0,
        mask_kind: str = "none",
        examples: Sequence[str] = EXAMPLE_SENTENCES,
        mask_kinds: Sequence[str] = MASK_KINDS,
    ):
        import ipywidgets as w

        _check_settings(d_k, temperature, mask_kind)
        examples = list(examples)
        sentence = examples[0] if sentence is None else sentence
        if sentence not in examples:
            examples.insert(0, sentence)
        d_ks = sorted(set(D_K_CHOICES) | {int(d_k)})
        self.examples = w.Dropdown(
            options=examples, value=sentence, description="example", layout=w.Layout(width="100%")
        )
        self.sentence = w.Text(
            value=sentence,
            description="sentence",
            continuous_update=False,
            layout=w.Layout(width="100%"),
        )
        wide = {"description_width": "initial"}
        self.d_k = w.SelectionSlider(options=d_ks, value=int(d_k), description="d_k", style=wide)
        self.temperature = w.FloatLogSlider(
            value=temperature,
            base=10,
            min=-1,
            max=1,
            step=0.05,
            description="temperature",
            readout_format=".2f",
            style=wide,
        )
        self.mask = w.ToggleButtons(
            options=list(mask_kinds), value=mask_kind, description="mask", style=wide
        )
        self.heatmap = w.HTML()
        self.caption = w.HTML()
        for widget, name in (
            (self.examples, "tl-example"),
            (self.sentence, "tl-sentence"),
            (self.d_k, "tl-dk"),
            (self.temperature, "tl-temperature"),
            (self.mask, "tl-mask"),
            (self.heatmap, "tl-heatmap"),
            (self.caption, "tl-caption"),
        ):
            widget.add_class(name)
        self.widget = w.VBox(
            [
                self.examples,
                self.sentence,
                w.HBox([self.d_k, self.temperature]),
                self.mask,
                self.caption,
                self.heatmap,
            ]
        )
        self.widget.add_class("tl-attention-explorer")
        self.result: dict | None = None
        self.timings: dict[str, float] = {}
        self.n_updates = 0
        self.examples.observe(self._pick_example, names="value")
        for control in (self.sentence, self.d_k, self.temperature, self.mask):
            control.observe(lambda _change: self.update(), names="value")
        self.update()

    def _pick_example(self, change) -> None:
        self.sentence.value = change["new"]

    def update(self) -> None:
        """Recompute with the controls' values and redraw the heatmaps and the caption."""
        settings = (self.d_k.value, float(self.temperature.value), self.mask.value)
        start = time.perf_counter()
        try:
            result = explore(self.sentence.value, *settings)
        except ValueError as err:
            self.caption.value = f"<b>Cannot show this sentence:</b> {err}"
            return
        computed = time.perf_counter()
        self.heatmap.value = render_html(result)
        drawn = time.perf_counter()
        self.result = result
        self.timings = {
            "compute_ms": 1e3 * (computed - start),
            "redraw_ms": 1e3 * (drawn - computed),
        }
        self.n_updates += 1
        self.caption.value = (
            f"{len(result['tokens'])} tokens, d_k = {result['d_k']}, "
            f"temperature = {result['temperature']:.2f}, mask = {result['mask_kind']} "
            f"(compute {self.timings['compute_ms']:.1f} ms, "
            f"redraw {self.timings['redraw_ms']:.0f} ms)"
        )

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def attention_explorer(
    sentence: str | None = None,
    *,
    d_k: int = 16,
    temperature: float = 1.0,
    mask_kind: str = "none",
    examples: Sequence[str] = EXAMPLE_SENTENCES,
    mask_kinds: Sequence[str] = MASK_KINDS,
) -> AttentionExplorer:
    """The attention exploration for JupyterLab (needs a running kernel).

    Display the returned app (last line of a cell). ``sentence`` is shown first (the
    first example when None); ``mask_kinds`` limits the mask choices.
    """
    return AttentionExplorer(
        sentence,
        d_k=d_k,
        temperature=temperature,
        mask_kind=mask_kind,
        examples=examples,
        mask_kinds=mask_kinds,
    )


def static_attention_explorer(
    sentence: str | None = None,
    *,
    slider: str = "temperature",
    dropdown: str = "mask",
    d_k: int = 8,
    temperature: float = 1.0,
    temperatures: Sequence[float] = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 10.0),
    d_ks: Sequence[int] = (2, 4, 8, 16, 32, 64),
    mask_kind: str = "none",
    mask_kinds: Sequence[str] = MASK_KINDS,
    sentences: Sequence[str] = EXAMPLE_SENTENCES[:3],
    title: str | None = None,
):
    """The kernel-free explorer: precomputed states behind a slider and a dropdown.

    ``slider="temperature"`` puts ``temperatures`` on the slider (at fixed ``d_k``);
    ``slider="d_k"`` puts ``d_ks`` on it (at fixed ``temperature``).
    ``dropdown="mask"`` offers ``mask_kinds`` for ``sentence``; ``dropdown="sentence"``
    offers ``sentences`` with ``mask_kind``. Panels: scores, weights, outputs, with
    numbers in the cells when every sentence has at most 12 tokens. Returns a Plotly
    figure for :func:`transformer_lab.viz.plotly.show`.
    """
    from transformer_lab.viz.heatmap_explorer import heatmap_explorer

    sentence = EXAMPLE_SENTENCES[0] if sentence is None else sentence
    if slider == "temperature":
        values = [float(t) for t in temperatures]
        settings = {f"{t:g}": (d_k, t) for t in values}
        active = min(range(len(values)), key=lambda i: abs(math.log(values[i] / temperature)))
    elif slider == "d_k":
        settings = {str(d): (int(d), temperature) for d in d_ks}
        active = min(range(len(d_ks)), key=lambda i: abs(math.log(d_ks[i] / d_k)))
    else:
        raise ValueError(f"slider must be 'temperature' or 'd_k', got {slider!r}")
    if dropdown == "mask":
        options = {kind: (sentence, kind) for kind in mask_kinds}
    elif dropdown == "sentence":
        options = {text: (text, mask_kind) for text in sentences}
    else:
        raise ValueError(f"dropdown must be 'mask' or 'sentence', got {dropdown!r}")
    states: dict[str, dict[str, list[np.ndarray]]] = {}
    labels, longest = {}, 0
    for option, (text, kind) in options.items():
        states[option] = {}
        for label, (dk, temp) in settings.items():
            result = explore(text, dk, temp, kind)
            states[option][label] = [result["scores"], result["weights"], result["outputs"]]
        tokens = result["tokens"]
        longest = max(longest, len(tokens))
        dims = [str(i) for i in range(result["d_k"])] if slider == "temperature" else []
        labels[option] = [(tokens, tokens), (tokens, tokens), (dims, tokens)]
    s_max = max(_symmetric(s[0]) for by_slider in states.values() for s in by_slider.values())
    o_max = max(_symmetric(s[2]) for by_slider in states.values() for s in by_slider.values())
    small = longest <= 12
    out_columns = max(dk for dk, _ in settings.values())  # widest outputs panel (d_k)
    if title is None:
        title = "Self-attention" + (f" over “{sentence}”" if dropdown == "mask" else "")
    return heatmap_explorer(
        states,
        labels=labels,
        panel_titles=["scores q·k/√d_k", "weights", "outputs z = weights · V"],
        slider_label=slider,
        dropdown_label=dropdown,
        title=title,
        zranges=[(-s_max, s_max), (0.0, 1.0), (-o_max, o_max)],
        annotate=[small, small, False],
        colorscale=["RdBu_r", "Viridis", "RdBu_r"],
        fmt=[".1f", ".2f", ".2f"],
        column_widths=[longest, longest, max(4.0, 0.6 * out_columns)],
        shared_rows=True,
        active=active,
        axis_titles=[("key", "query"), ("key", ""), ("dimension", "")],
        height=520,
    )
