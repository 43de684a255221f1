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

from transformer_lab.analysis.head_patterns import stack_attentions
from transformer_lab.checks import index_in, string

__all__ = ["head_view", "model_view", "AttentionBrowser"]


def head_view(
    attentions, tokens: Sequence[str], *, title: str | None = None, layer: int = 0, head: int = 0
):
    """A kernel-free head view: the pattern of one head, the layer chosen from a dropdown
    and the head from a slider (all ``n_layers x n_heads`` states precomputed), with a
    colour bar for the weights (0 to 1). ``layer`` and ``head`` are shown first; a long
    ``title`` is wrapped to fit (see :func:`transformer_lab.viz.layout.wrap_title`).

    Returns a Plotly figure for :func:`transformer_lab.viz.plotly.show`.
    """
    from transformer_lab.viz.heatmap_explorer import heatmap_explorer

    A = stack_attentions(attentions)
    n_layers, n_heads, n, _ = A.shape
    index_in(layer, n_layers, "layer")
    index_in(head, n_heads, "head")
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

    Returns a Plotly figure for :func:`transformer_lab.viz.plotly.show`.
    """
    from plotly.subplots import make_subplots

    from transformer_lab.viz.layout import title_layout

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

        string(sentence, "sentence")
        if not hasattr(model, "config") or not callable(tokenizer):
            raise TypeError(
                "model must be a BertModel and tokenizer a WordPieceTokenizer, got "
                f"{type(model).__name__} and {type(tokenizer).__name__}"
            )

        self.model, self.tokenizer = model, tokenizer
        cfg = model.config
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
        from transformer_lab.viz.heatmaps import svg_heatmap

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
