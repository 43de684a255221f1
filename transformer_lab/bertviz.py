"""Looking inside a BERT: what each head attends to, and a head view and a model view in
the spirit of BertViz (Vig 2019), for JupyterLab and for the static site.

Measuring heads (Clark et al. 2019):

- :func:`stack_attentions` turns a model's ``attentions`` (one ``[batch, n_heads, pos, pos]``
  tensor per layer) into one array ``[n_layers, n_heads, pos, pos]`` for one sequence.
- :func:`head_pattern_scores` gives, for every head, the average attention mass that a
  query puts on a kind of key: the previous token, the next token, itself, ``[CLS]``,
  ``[SEP]``, or another occurrence of the same word. Each is an array
  ``[n_layers, n_heads]`` of numbers in [0, 1].
- :func:`bag_of_words_scores` gives, for every head, how evenly its queries spread their
  weight over the sentence's own tokens (1 for an exactly even spread).

Views:

- :func:`head_view` (Plotly, kernel-free): one sequence's attention pattern, the layer
  picked from a dropdown and the head from a slider, every state precomputed.
- :func:`model_view` (Plotly, kernel-free): every head of every layer as a small heatmap,
  one row per layer, one column per head.
- :class:`AttentionBrowser` (ipywidgets, needs a kernel): type a sentence, pick a layer and
  a head; it reruns the model and redraws SVG heatmaps of the head and of the whole model.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import torch

__all__ = [
    "PATTERN_KINDS",
    "stack_attentions",
    "head_pattern_scores",
    "bag_of_words_scores",
    "top_heads",
    "head_view",
    "model_view",
    "AttentionBrowser",
]

PATTERN_KINDS = ("previous token", "next token", "itself", "[CLS]", "[SEP]", "same word")


def stack_attentions(attentions, index: int = 0) -> np.ndarray:
    """``[n_layers, n_heads, pos, pos]`` float array for sequence ``index`` of a batch.

    ``attentions`` is a sequence of ``[batch, n_heads, pos, pos]`` (or ``[n_heads, pos,
    pos]``) tensors/arrays, one per layer, or an array that is already 4-d.
    """
    if isinstance(attentions, (torch.Tensor, np.ndarray)) and attentions.ndim == 4:
        layers = [attentions[i] for i in range(attentions.shape[0])]
        index = None
    elif isinstance(attentions, (list, tuple)):
        layers = list(attentions)
    else:
        raise TypeError(
            "attentions must be a list of [batch, n_heads, pos, pos] tensors or a 4-d array, "
            f"got {type(attentions).__name__}"
        )
    out = []
    for i, a in enumerate(layers):
        a = a.detach().to("cpu").float().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
        if a.ndim == 4 and index is not None:
            a = a[index]
        if a.ndim != 3 or a.shape[1] != a.shape[2]:
            raise ValueError(
                f"layer {i}: expected [batch, n_heads, pos, pos] or [n_heads, pos, pos], "
                f"got shape {a.shape}"
            )
        out.append(a)
    if not out:
        raise ValueError("attentions is empty")
    if len({a.shape for a in out}) != 1:
        raise ValueError(f"layers have different shapes: {sorted({a.shape for a in out})}")
    return np.stack(out).astype(float)


def _word_ids(tokens: Sequence[str]) -> list[int]:
    """Which word each WordPiece token belongs to (``##`` pieces join the word before)."""
    ids, word = [], -1
    for t in tokens:
        if not t.startswith("##") or word < 0:
            word += 1
        ids.append(word)
    return ids


def _words(tokens: Sequence[str]) -> list[str]:
    """The lower-cased word each token belongs to (pieces glued back together)."""
    ids = _word_ids(tokens)
    text: dict[int, str] = {}
    for w, t in zip(ids, tokens, strict=True):
        text[w] = text.get(w, "") + (t[2:] if t.startswith("##") else t).lower()
    return [text[w] for w in ids]


def head_pattern_scores(attentions, tokens: Sequence[str]) -> dict[str, np.ndarray]:
    """Average attention mass per head on six kinds of key; each value is ``[n_layers, n_heads]``.

    With ``A[l, h, i, j]`` the weight query ``i`` gives key ``j``, and averages over the
    query positions ``i`` for which the kind is defined:

    - ``"previous token"``: ``A[i, i-1]`` over ``i >= 1``; ``"next token"``: ``A[i, i+1]``;
    - ``"itself"``: ``A[i, i]``;
    - ``"[CLS]"`` / ``"[SEP]"``: the total weight on every ``[CLS]`` / ``[SEP]`` token;
    - ``"same word"``: the total weight on the *other* positions that hold the same word
      (the other pieces of a split word, or a repeated word such as the two "the"), over
      the queries that have at least one such position.

    A kind with no eligible query (no ``[SEP]``, no repeated word) is ``nan``.
    """
    A = stack_attentions(attentions)  # [n_layers, n_heads, pos, pos]
    n = A.shape[-1]
    tokens = list(tokens)
    if len(tokens) != n:
        raise ValueError(f"{len(tokens)} tokens for attention over {n} positions")
    nan = np.full(A.shape[:2], np.nan)

    def mass(key_mask: np.ndarray, rows: np.ndarray) -> np.ndarray:
        if not rows.any():
            return nan.copy()
        return (A * key_mask).sum(-1)[..., rows].mean(-1)  # [n_layers, n_heads]

    eye = np.eye(n, dtype=bool)
    everyone = np.ones(n, dtype=bool)
    words = _words(tokens)
    specials = {"[CLS]", "[SEP]", "[PAD]"}
    same = np.array(
        [
            [i != j and words[i] == words[j] and tokens[i] not in specials for j in range(n)]
            for i in range(n)
        ]
    )
    return {
        "previous token": mass(np.eye(n, k=-1, dtype=bool), np.arange(n) >= 1),
        "next token": mass(np.eye(n, k=1, dtype=bool), np.arange(n) < n - 1),
        "itself": mass(eye, everyone),
        "[CLS]": mass(np.array([t == "[CLS]" for t in tokens])[None, :], everyone)
        if "[CLS]" in tokens
        else nan.copy(),
        "[SEP]": mass(np.array([t == "[SEP]" for t in tokens])[None, :], everyone)
        if "[SEP]" in tokens
        else nan.copy(),
        "same word": mass(same, same.any(-1)),
    }


def bag_of_words_scores(attentions, tokens: Sequence[str]) -> np.ndarray:
    """How close each head comes to reading the sentence as a bag of words: ``[n_layers, n_heads]``.

    The sentence's tokens are the ``m`` positions that are not ``[CLS]``, ``[SEP]`` or
    ``[PAD]``. A bag-of-words query spreads its weight evenly over them, ``1/m`` each. For
    a query row ``A[i]`` the score is the weight it shares with that even spread,

        ``sum_j min(A[i, j], 1/m)`` over the sentence's tokens ``j``,

    which is ``1 - TV(A[i], uniform)`` (TV: total-variation distance): 1 for an exactly
    even spread, and lower the more weight sits on a few tokens or on ``[CLS]``/``[SEP]``
    (a head attending to one token only scores ``1/m``). The score is averaged over the
    sentence's tokens as queries. Needs at least two sentence tokens.
    """
    A = stack_attentions(attentions)  # [n_layers, n_heads, pos, pos]
    n = A.shape[-1]
    tokens = list(tokens)
    if len(tokens) != n:
        raise ValueError(f"{len(tokens)} tokens for attention over {n} positions")
    sentence = np.array([t not in ("[CLS]", "[SEP]", "[PAD]") for t in tokens])
    m = int(sentence.sum())
    if m < 2:
        raise ValueError(
            f"need at least 2 tokens besides [CLS], [SEP] and [PAD], got {m} in {tokens}"
        )
    rows = A[:, :, sentence][..., sentence]  # [n_layers, n_heads, m, m]
    return np.minimum(rows, 1.0 / m).sum(-1).mean(-1)


def top_heads(scores: np.ndarray, k: int = 3) -> list[tuple[int, int, float]]:
    """The ``k`` largest entries of a ``[n_layers, n_heads]`` array as ``(layer, head, value)``
    (NaN entries never count)."""
    if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
        raise ValueError(f"k must be a positive int, got {k!r}")
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 2:
        raise ValueError(f"scores must be [n_layers, n_heads], got shape {scores.shape}")
    flat = np.where(np.isnan(scores), -np.inf, scores).ravel()
    order = np.argsort(-flat, kind="stable")[:k]
    n_heads = scores.shape[1]
    return [(int(i // n_heads), int(i % n_heads), float(flat[i])) for i in order]


def head_view(
    attentions, tokens: Sequence[str], *, title: str | None = None, layer: int = 0, head: int = 0
):
    """A kernel-free head view: the pattern of one head, the layer chosen from a dropdown
    and the head from a slider (all ``n_layers x n_heads`` states precomputed), with a
    colour bar for the weights (0 to 1). ``layer`` and ``head`` are shown first; a long
    ``title`` is wrapped to fit (see :func:`transformer_lab.viz.wrap_title`).

    Returns a Plotly figure for :func:`transformer_lab.viz.show`.
    """
    from .viz import heatmap_explorer

    A = stack_attentions(attentions)
    n_layers, n_heads, n, _ = A.shape
    if not 0 <= layer < n_layers:
        raise ValueError(f"layer={layer} is not in 0..{n_layers - 1}")
    if not 0 <= head < n_heads:
        raise ValueError(f"head={head} is not in 0..{n_heads - 1}")
    tokens = [str(t) for t in tokens]
    if len(tokens) != n:
        raise ValueError(f"{len(tokens)} tokens for attention over {n} positions")
    order = [layer] + [l for l in range(n_layers) if l != layer]  # the first option is shown
    states = {f"layer {l}": {str(h): [A[l, h]] for h in range(n_heads)} for l in order}
    labels = {f"layer {l}": [(tokens, tokens)] for l in order}
    return heatmap_explorer(
        states,
        labels=labels,
        panel_titles=[""],
        slider_label="head",
        dropdown_label="layer",
        title=title or "Head view: one head's attention (rows: queries, columns: keys)",
        zranges=[(0.0, 1.0)],
        annotate=n <= 16,
        fmt=".1f",
        active=head,
        axis_titles=[("key", "query")],
        height=600,
    )


def model_view(attentions, tokens: Sequence[str], *, title: str | None = None):
    """A kernel-free model view: every head of every layer as a small heatmap (rows:
    layers, columns: heads), with one colour bar for all (every panel runs from 0 to 1);
    hovering a cell names the query and key tokens.

    Returns a Plotly figure for :func:`transformer_lab.viz.show`.
    """
    from plotly.subplots import make_subplots

    from .viz import title_layout

    A = stack_attentions(attentions)
    n_layers, n_heads, n, _ = A.shape
    tokens = [str(t) for t in tokens]
    if len(tokens) != n:
        raise ValueError(f"{len(tokens)} tokens for attention over {n} positions")
    fig = make_subplots(
        rows=n_layers,
        cols=n_heads,
        horizontal_spacing=0.006,
        vertical_spacing=0.012,
        row_titles=[f"layer {l}" for l in range(n_layers)],
        column_titles=[f"head {h}" for h in range(n_heads)],
    )
    hover = [[f"{tokens[i]} → {tokens[j]}" for j in range(n)] for i in range(n)]
    height = max(300, 70 * n_layers + 90)
    title_dict, top = title_layout(title or "Model view: every head of every layer", height + 60)
    colorbar = {  # one bar for all panels (they share 0..1), under the grid
        "orientation": "h",
        "title": {"text": "attention weight", "side": "right", "font": {"size": 11}},
        "x": 0.5,
        "xanchor": "center",
        "len": 0.5,
        "y": -0.02,
        "yanchor": "top",
        "thickness": 10,
        "ticklen": 3,
        "tickfont": {"size": 10},
        "outlinewidth": 0,
    }
    for l in range(n_layers):
        for h in range(n_heads):
            first = l == 0 and h == 0
            fig.add_heatmap(
                z=np.round(A[l, h], 3).tolist(),
                text=hover,
                zmin=0.0,
                zmax=1.0,
                colorscale="Viridis",
                showscale=first,
                colorbar=colorbar if first else None,
                name=f"layer {l}, head {h}",
                hovertemplate=f"layer {l}, head {h}<br>%{{text}}: %{{z:.2f}}<extra></extra>",
                row=l + 1,
                col=h + 1,
            )
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, autorange="reversed")
    fig.update_annotations(font_size=9)
    fig.update_layout(
        title=title_dict,
        height=height + 60,
        margin={"t": top + 22, "b": 60, "l": 10, "r": 50},  # the head names above the grid
    )
    return fig


class AttentionBrowser:
    """An ipywidgets app over a BERT model: a sentence box, a layer and a head slider, and a
    toggle between the head view (one head, with tokens) and the model view (all heads).

    ``app.widget`` is the box to display (displaying ``app`` works too). ``app.result``
    holds the last ``tokens`` and ``attentions`` (``[n_layers, n_heads, pos, pos]``).
    The model reruns only when the sentence changes.
    """

    def __init__(self, model, tokenizer, sentence: str, *, layer: int = 0, head: int = 0):
        import ipywidgets as w

        if not isinstance(sentence, str):
            raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
        if not hasattr(model, "cfg") or not callable(tokenizer):
            raise TypeError(
                "model must be a BertModel and tokenizer a WordPieceTokenizer, got "
                f"{type(model).__name__} and {type(tokenizer).__name__}"
            )

        self.model, self.tokenizer = model, tokenizer
        cfg = model.cfg
        self.sentence = w.Text(
            value=sentence,
            description="sentence",
            continuous_update=False,
            layout=w.Layout(width="100%"),
        )
        self.layer = w.IntSlider(value=layer, min=0, max=cfg.n_layers - 1, description="layer")
        self.head = w.IntSlider(value=head, min=0, max=cfg.n_heads - 1, description="head")
        self.view = w.ToggleButtons(options=["head view", "model view"], value="head view")
        self.picture = w.HTML()
        self.caption = w.HTML()
        self.widget = w.VBox(
            [self.sentence, w.HBox([self.layer, self.head]), self.view, self.caption, self.picture]
        )
        self.widget.add_class("tl-attention-browser")
        self.result: dict | None = None
        self.sentence.observe(lambda _: self.run(), names="value")
        for control in (self.layer, self.head, self.view):
            control.observe(lambda _: self.draw(), names="value")
        self.run()

    def run(self) -> None:
        """Tokenize the sentence, run the model, and redraw."""
        start = time.perf_counter()
        try:
            batch = self.tokenizer(self.sentence.value)
        except (TypeError, ValueError) as err:
            self.caption.value = f"<b>Cannot read this sentence:</b> {err}"
            return
        device = next(self.model.parameters()).device
        with torch.no_grad():
            out = self.model(batch.input_ids.to(device))
        self.result = {"tokens": batch.tokens[0], "attentions": stack_attentions(out.attentions)}
        self.run_ms = 1e3 * (time.perf_counter() - start)
        self.draw()

    def draw(self) -> None:
        """Redraw the picture for the current layer, head and view."""
        from .viz import svg_heatmap

        if self.result is None:
            return
        tokens, A = self.result["tokens"], self.result["attentions"]
        l, h = self.layer.value, self.head.value
        if self.view.value == "head view":
            self.picture.value = svg_heatmap(
                A[l, h], tokens, tokens, f"layer {l}, head {h}", annotate=len(tokens) <= 16,
                fmt=".1f", vmin=0.0, vmax=1.0,
            )  # fmt: skip
        else:
            cells = []
            for layer in range(A.shape[0]):
                row = "".join(
                    svg_heatmap(A[layer, head], vmin=0.0, vmax=1.0, annotate=False, cell=4)
                    for head in range(A.shape[1])
                )
                cells.append(f"<div style='display:flex;gap:3px'>layer {layer}&nbsp;{row}</div>")
            self.picture.value = "<div>" + "".join(cells) + "</div>"
        self.caption.value = (
            f"{len(tokens)} tokens; {self.view.value}; model run {self.run_ms:.0f} ms"
        )

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)
