"""transformer_lab.viz.live: one output, the kernel's widget in JupyterLab and the site's panel."""

from __future__ import annotations

import html
import json
import re

import pytest
import torch

from transformer_lab.data.tokenizers import CharTokenizer
from transformer_lab.generation.sampling import generate
from transformer_lab.models.gpt import GPT, GPTConfig
from transformer_lab.viz.live import LiveModel, live_model

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def small_gpt():
    tok = CharTokenizer("ROMEO:\n abcdefghijklmnopqrstuvwxyz")
    torch.manual_seed(0)
    config = GPTConfig(d_vocab=tok.vocab_size, n_ctx=16, n_layers=2, n_heads=2, d_model=16)
    return GPT(config).eval(), tok


def panel_options(bundle: dict) -> dict:
    found = re.search(r'data-tl-options="([^"]*)"', bundle["text/html"])
    return json.loads(html.unescape(found.group(1)))


def test_gpt_bundle_holds_the_widget_and_the_panel(small_gpt):
    model, tok = small_gpt
    live = live_model("gpt", model=model, tokenizer=tok, prompt="ROMEO:\n", n_chars=30, head=1)
    bundle = live._repr_mimebundle_()
    assert WIDGET_VIEW in bundle
    assert 'class="tl-live" data-tl-live="gpt"' in bundle["text/html"]
    assert panel_options(bundle) == {"prompt": "ROMEO:\n", "n_chars": 30, "layer": 0, "head": 1}


def test_gpt_widget_greedy_text_is_the_packages(small_gpt):
    model, tok = small_gpt
    box = live_model("gpt", model=model, tokenizer=tok, prompt="ROMEO:\n", n_chars=12).widget
    prompt, _, controls, text = box.children[:4]
    greedy, _, button = controls.children
    greedy.value = True
    button.click()
    idx = torch.tensor([tok.encode(prompt.value)])
    assert text.value == tok.decode(generate(model, idx, 12, temperature=0)[0, idx.shape[1] :])
    assert "<svg" in box.children[-1].value  # the attention of layer 0, head 0


def test_gpt_widget_says_why_it_cannot_read_a_prompt(small_gpt):
    model, tok = small_gpt
    box = live_model("gpt", model=model, tokenizer=tok).widget
    box.children[0].value = "ROMEO: ~"
    assert "Cannot read this prompt" in box.children[4].value


def test_gpt_prompt_outside_the_vocabulary_fails_at_once(small_gpt):
    model, tok = small_gpt
    with pytest.raises(ValueError, match="not in the vocabulary"):
        live_model("gpt", model=model, tokenizer=tok, prompt="~")
    with pytest.raises(ValueError, match="head"):
        live_model("gpt", model=model, tokenizer=tok, head=2)


def test_minilm_widget_cosines_follow_the_sentence():
    from transformer_lab.pretrained.minilm import minilm, sentence_embeddings

    model, tokenizer = minilm()
    compare = ["A man is playing a guitar.", "A dog runs through the park."]
    live = live_model("minilm", model=model, tokenizer=tokenizer, compare=compare)
    assert isinstance(live, LiveModel)
    assert panel_options(live._repr_mimebundle_())["compare"] == compare
    browser_box, table = live.widget.children
    browser_box.children[0].value = "A woman plays the guitar."
    vectors = sentence_embeddings(model, tokenizer, ["A woman plays the guitar.", *compare])
    shown = [float(c) for c in re.findall(r"<td>(-?\d\.\d\d)</td>", table.value)]
    expected = (vectors[1:] @ vectors[0]).tolist()
    assert shown == pytest.approx(expected, abs=0.005)  # printed to two decimals
    assert shown[0] > shown[1]  # guitar beats dog
