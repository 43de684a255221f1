"""A model the reader can run: in the browser on the static site, in the kernel in JupyterLab.

``live_model("gpt", model=gpt, tokenizer=tok)`` and ``live_model("minilm")`` return a
:class:`LiveModel`; displaying it publishes one output with two representations, and each
front end shows the one it can run:

``application/vnd.jupyter.widget-view+json``
    The kernel version, an ipywidgets app over the package's model: for the GPT a prompt, a
    decoding rule (temperature, top-k, top-p or greedy, the package's
    :func:`~transformer_lab.generation.sampling.generate`) and the attention of any layer
    and head over the prompt; for MiniLM chapter 12's
    :class:`~transformer_lab.viz.bertviz.AttentionBrowser` and the cosine of the sentence
    with a few fixed ones. JupyterLab ranks widget views first.
``text/html``
    ``<div class="tl-live" data-tl-live="gpt">``: on the static site
    ``scripts/site/live/live.js`` turns it into a panel that runs the exported model
    (``_static/live/*.onnx``) with ONNX Runtime Web in the reader's browser. The site
    ranks ``text/html`` ahead of widget views (``nb_mime_priority_overrides`` in
    ``_config.yml``), and ``scripts/site/site_extension.py`` loads ``live.js`` on the pages
    that hold such a div.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

import torch

from transformer_lab.checks import index_in, integer, one_of, string

__all__ = ["LiveModel", "live_model", "COMPARE_SENTENCES"]

MODELS = ("gpt", "minilm")
# the reader's sentence is compared with these (cosine of the sentence vectors)
COMPARE_SENTENCES = (
    "A man is playing a guitar.",
    "The stock market fell sharply today.",
    "A dog runs through the park.",
    "Shall I compare thee to a summer's day?",
)
_TITLES = {
    "gpt": "the chapter's character GPT",
    "minilm": "all-MiniLM-L6-v2",
}


class LiveModel:
    """One live model: the kernel widget (``.widget``, built when first displayed) and the
    site's panel (:meth:`panel_html`). ``options`` are the panel's starting values."""

    def __init__(self, name: str, model, tokenizer, options: dict):
        one_of(name, MODELS, "name")
        self.name, self.model, self.tokenizer, self.options = name, model, tokenizer, options
        self._widget = None

    def panel_html(self) -> str:
        """The static site's panel: a div that ``live.js`` fills (the text inside is what a
        page without the script shows)."""
        try:  # live.js parses these with JSON.parse, which refuses NaN and infinities
            options = html.escape(json.dumps(self.options, allow_nan=False), quote=True)
        except ValueError as err:
            raise ValueError(f"the panel's options must be finite numbers: {self.options}") from err
        return (
            f'<div class="tl-live" data-tl-live="{self.name}" data-tl-options="{options}">'
            f'<p class="tl-live-status">A live panel runs {_TITLES[self.name]} here, in your '
            "browser, when this page's scripts load.</p></div>"
        )

    @property
    def widget(self):
        """The kernel version (an ipywidgets box)."""
        if self._widget is None:
            if self.name == "gpt":
                self._widget = _gpt_widget(self.model, self.tokenizer, self.options)
            else:
                self._widget = _minilm_widget(self.model, self.tokenizer, self.options)
        return self._widget

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = dict(self.widget._repr_mimebundle_())
        bundle["text/html"] = self.panel_html()
        bundle["text/plain"] = f"<live {self.name}: {_TITLES[self.name]}>"
        return bundle

    def __repr__(self) -> str:
        return f"LiveModel({self.name!r})"


def live_model(
    name: str,
    *,
    model=None,
    tokenizer=None,
    prompt: str = "ROMEO:\n",
    sentence: str = "The animal didn't cross the street because it was too tired.",
    compare: Sequence[str] = COMPARE_SENTENCES,
    n_chars: int = 200,
    layer: int = 0,
    head: int = 0,
) -> LiveModel:
    """A model to run live: ``"gpt"`` (pass the chapter's ``model`` and character
    ``tokenizer``; the site runs the exported checkpoint of the same recipe) or
    ``"minilm"`` (all-MiniLM-L6-v2; the package loads it when ``model`` is None).

    ``prompt`` and ``n_chars`` start the GPT's panel; ``sentence`` and ``compare`` (the
    sentences its vector is compared with) start MiniLM's; both show ``layer`` and ``head``
    first.
    """
    one_of(name, MODELS, "name")
    string(prompt, "prompt")
    string(sentence, "sentence")
    integer(n_chars, "n_chars", minimum=1)
    integer(layer, "layer", minimum=0)
    integer(head, "head", minimum=0)
    if isinstance(compare, str) or not all(isinstance(s, str) for s in compare):
        raise TypeError(f"compare must be a list of sentences (str), got {compare!r}")
    if name == "gpt":
        from transformer_lab.models.gpt import GPT

        if not isinstance(model, GPT):  # the site's panel runs the book's GPT and no other
            raise TypeError(f"live_model('gpt') needs model=a GPT, got {type(model).__name__}")
        if not (callable(getattr(tokenizer, "encode", None)) and hasattr(tokenizer, "itos")):
            raise TypeError(
                "live_model('gpt') needs tokenizer=the character tokenizer, got "
                f"{type(tokenizer).__name__}"
            )
        tokenizer.encode(prompt)  # a character outside the vocabulary: ValueError now
        index_in(layer, model.config.n_layers, "layer")
        index_in(head, model.config.n_heads, "head")
        options = {"prompt": prompt, "n_chars": n_chars, "layer": layer, "head": head}
        return LiveModel(name, model, tokenizer, options)
    if (model is None) != (tokenizer is None):
        raise TypeError("live_model('minilm') takes both model and tokenizer, or neither")
    if model is None:
        from transformer_lab.pretrained.minilm import minilm

        model, tokenizer = minilm()
    index_in(layer, model.config.n_layers, "layer")
    index_in(head, model.config.n_heads, "head")
    options = {"sentence": sentence, "compare": list(compare), "layer": layer, "head": head}
    return LiveModel(name, model, tokenizer, options)


def _gpt_attention(model, ids: list[int]) -> torch.Tensor:
    """``[n_layers, n_heads, pos, pos]``: the attention weights of every layer and head."""
    from transformer_lab.hooks import run_with_cache

    device = next(model.parameters()).device
    with torch.no_grad():
        _, cache = run_with_cache(
            model, torch.tensor([ids], device=device), names="blocks.*.attn.pattern"
        )
    n_layers = len(model.blocks)
    return torch.stack([cache[f"blocks.{i}.attn.pattern"][0] for i in range(n_layers)]).cpu()


def _gpt_widget(model, tok, options: dict):
    """Prompt, decoding rule, a Generate button, the continuation, and one head's
    attention over the prompt (its last ``n_ctx`` characters)."""
    import ipywidgets as w

    from transformer_lab.generation.sampling import generate
    from transformer_lab.viz.heatmaps import svg_heatmap

    cfg = model.config
    prompt = w.Textarea(value=options["prompt"], description="prompt", layout={"width": "100%"})
    temperature = w.FloatSlider(value=0.8, min=0.05, max=2.0, step=0.05, description="temperature")
    top_k = w.IntSlider(value=0, min=0, max=cfg.d_vocab, description="top-k (0 off)")
    top_p = w.FloatSlider(value=1.0, min=0.05, max=1.0, step=0.05, description="top-p (1 off)")
    greedy = w.Checkbox(value=False, description="greedy")
    n_chars = w.IntSlider(value=options["n_chars"], min=1, max=1000, description="characters")
    button = w.Button(description="Generate", button_style="primary")
    text = w.Textarea(layout={"width": "100%", "height": "8em"}, disabled=True)
    layers = [(f"layer {i}", i) for i in range(cfg.n_layers)]
    layer = w.Dropdown(options=layers, value=options["layer"], description="layer")
    head = w.IntSlider(value=options["head"], min=0, max=cfg.n_heads - 1, description="head")
    picture, status = w.HTML(layout={"max_width": "560px"}), w.HTML()
    for control in (temperature, top_k, top_p, n_chars):
        control.style.description_width = "initial"
    state: dict = {}

    def refuse(message: str):
        """Say why the prompt cannot be read, and show nothing of an earlier prompt."""
        state.clear()
        state["refused"] = True
        status.value, picture.value, text.value = message, "", ""

    def show_attention(_=None):
        try:
            ids = tok.encode(prompt.value)[-cfg.n_ctx :]
        except ValueError as err:
            refuse(f"<b>Cannot read this prompt:</b> {html.escape(str(err))}")
            return
        if not ids:
            refuse("<b>Type a prompt of at least one character.</b>")
            return
        if state.pop("refused", False):
            status.value = ""  # the prompt reads again
        state["ids"], state["A"] = ids, _gpt_attention(model, ids)
        draw()

    def draw(_=None):
        if "A" not in state:
            return
        chars = [tok.itos[i] for i in state["ids"]]
        l, h = layer.value, head.value
        picture.value = svg_heatmap(
            state["A"][l, h], chars, chars, f"layer {l}, head {h}", annotate=False,
            vmin=0.0, vmax=1.0,
        )  # fmt: skip

    def run(_=None):
        text.value = ""
        show_attention()
        if "ids" not in state:
            return
        device = next(model.parameters()).device
        idx = torch.tensor([tok.encode(prompt.value)], device=device)
        rule = {"temperature": 0.0} if greedy.value else {
            "temperature": temperature.value,
            "top_k": top_k.value or None,
            "top_p": top_p.value if top_p.value < 1 else None,
        }  # fmt: skip
        out = generate(model, idx, n_chars.value, **rule)
        text.value = tok.decode(out[0, idx.shape[1] :].tolist())
        status.value = f"{n_chars.value} characters from the kernel's model ({device})"

    button.on_click(run)
    prompt.observe(show_attention, names="value")
    for control in (layer, head):
        control.observe(draw, names="value")
    show_attention()
    rule_box = w.HBox([temperature, top_k, top_p])
    return w.VBox(
        [prompt, rule_box, w.HBox([greedy, n_chars, button]), text, status,
         w.HBox([layer, head]), picture]
    )  # fmt: skip


def _minilm_widget(model, tokenizer, options: dict):
    """Chapter 12's attention browser and a table of cosines with the fixed sentences."""
    import ipywidgets as w

    from transformer_lab.pretrained.minilm import sentence_embeddings
    from transformer_lab.viz.bertviz import AttentionBrowser

    browser = AttentionBrowser(
        model, tokenizer, options["sentence"], layer=options["layer"], head=options["head"]
    )
    compare = options["compare"]
    fixed = sentence_embeddings(model, tokenizer, compare) if compare else None
    table = w.HTML()

    def similarities(_=None):
        if fixed is None:
            return
        try:
            mine = sentence_embeddings(model, tokenizer, [browser.sentence.value])[0]
        except (TypeError, ValueError):
            return  # the browser says why it cannot read the sentence
        rows = "".join(
            f"<tr><td>{float(c):.2f}</td><td>{html.escape(s)}</td></tr>"
            for c, s in zip((fixed @ mine).tolist(), compare, strict=True)
        )
        table.value = f"<table><tr><th>cosine</th><th>sentence</th></tr>{rows}</table>"

    browser.sentence.observe(similarities, names="value")
    similarities()
    return w.VBox([browser.widget, table])
