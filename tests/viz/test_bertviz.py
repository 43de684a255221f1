"""Head measurements and the BertViz-like views of chapter 12."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_lab.analysis.head_patterns import (
    PATTERN_KINDS,
    bag_of_words_scores,
    head_pattern_scores,
    stack_attentions,
    top_heads,
)
from transformer_lab.models.bert import BertConfig, BertModel
from transformer_lab.pretrained.minilm import WordPieceTokenizer
from transformer_lab.viz.bertviz import AttentionBrowser, head_view, model_view

TOKENS = ["[CLS]", "the", "cat", "saw", "the", "dog", "##gy", "[SEP]"]


def _shifted(n: int, k: int) -> np.ndarray:
    """A pattern where query i attends fully to key i+k (clipped at the ends)."""
    A = np.zeros((n, n))
    for i in range(n):
        A[i, min(max(i + k, 0), n - 1)] = 1.0
    return A


def _attn(n_layers=2, n_heads=3):
    n = len(TOKENS)
    rng = np.random.default_rng(0)
    A = rng.random((n_layers, n_heads, n, n))
    A /= A.sum(-1, keepdims=True)
    A[0, 0] = _shifted(n, -1)  # a previous-token head
    A[0, 1] = _shifted(n, 1)  # a next-token head
    A[1, 0] = 0.0
    A[1, 0, :, -1] = 1.0  # everything on [SEP]
    return A


def test_stack_attentions_shapes_and_errors():
    per_layer = [torch.rand(2, 3, 5, 5) for _ in range(4)]
    stacked = stack_attentions(per_layer, index=1)
    assert stacked.shape == (4, 3, 5, 5)
    np.testing.assert_allclose(stacked[2], per_layer[2][1].numpy(), rtol=0, atol=1e-7)
    assert stack_attentions(torch.rand(4, 3, 5, 5)).shape == (4, 3, 5, 5)
    with pytest.raises(ValueError, match="pos, pos"):
        stack_attentions([torch.rand(3, 5, 4)])
    with pytest.raises(ValueError, match="empty"):
        stack_attentions([])


def test_pattern_scores_find_the_planted_heads():
    A = _attn()
    scores = head_pattern_scores(A, TOKENS)
    assert set(scores) == set(PATTERN_KINDS)
    assert all(s.shape == (2, 3) for s in scores.values())
    assert scores["previous token"][0, 0] == pytest.approx(1.0)
    assert scores["next token"][0, 1] == pytest.approx(1.0)
    assert scores["[SEP]"][1, 0] == pytest.approx(1.0)
    assert top_heads(scores["previous token"], 1)[0][:2] == (0, 0)
    assert top_heads(scores["[SEP]"], 1)[0][:2] == (1, 0)
    # a next-token head (whose last query attends to itself) gives the previous token nothing
    assert scores["previous token"][0, 1] == 0.0
    assert scores["itself"][0, 1] == pytest.approx(1 / len(TOKENS))


def test_same_word_counts_repeats_and_pieces():
    n = len(TOKENS)
    A = np.zeros((1, 1, n, n))
    A[0, 0, 1, 4] = A[0, 0, 4, 1] = 1.0  # "the" <-> "the"
    A[0, 0, 5, 6] = A[0, 0, 6, 5] = 1.0  # "dog" <-> "##gy": one word
    for i in (0, 2, 3, 7):
        A[0, 0, i, i] = 1.0
    scores = head_pattern_scores(A, TOKENS)
    assert scores["same word"][0, 0] == pytest.approx(1.0)
    assert scores["itself"][0, 0] == pytest.approx(4 / n)
    no_repeat = head_pattern_scores(A[..., :4, :4], TOKENS[:4])
    assert np.isnan(no_repeat["same word"]).all()
    assert np.isnan(no_repeat["[SEP]"]).all()
    with pytest.raises(ValueError, match="tokens"):
        head_pattern_scores(A, TOKENS[:3])


def test_bag_of_words_scores_an_even_spread_one_and_a_single_key_one_over_m():
    n = len(TOKENS)
    sentence = [i for i, t in enumerate(TOKENS) if t not in ("[CLS]", "[SEP]")]
    m = len(sentence)  # 6
    A = np.zeros((1, 4, n, n))
    A[0, 0][:, sentence] = 1 / m  # bag of words: even over the sentence
    A[0, 1, :, 0] = 1.0  # everything on [CLS]
    A[0, 2] = _shifted(n, -1)  # previous token
    A[0, 3] = 1 / n  # even over every position, [CLS] and [SEP] included
    scores = bag_of_words_scores(A, TOKENS)
    assert scores.shape == (1, 4)
    assert scores[0, 0] == pytest.approx(1.0)
    assert scores[0, 1] == pytest.approx(0.0)
    # each sentence query gives its whole weight to one key; the first one's key is [CLS]
    assert scores[0, 2] == pytest.approx((m - 1) / m / m)
    assert scores[0, 3] == pytest.approx(m / n)  # the weight on [CLS] and [SEP] is missing
    # a torch list of layers, as models return them, gives the same numbers
    per_layer = [torch.tensor(A[0])[None]]
    np.testing.assert_allclose(bag_of_words_scores(per_layer, TOKENS), scores)


def test_bag_of_words_scores_more_for_a_more_even_spread():
    n = len(TOKENS)
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(n, n))
    A = np.stack([np.exp(logits * t) for t in (4.0, 1.0, 0.25)])[None]  # sharp to flat
    A[..., 0] = A[..., -1] = 0.0  # no weight on [CLS] and [SEP]
    A /= A.sum(-1, keepdims=True)
    scores = bag_of_words_scores(A, TOKENS)[0]
    assert scores[0] < scores[1] < scores[2] < 1.0
    assert np.all((scores >= 0) & (scores <= 1))


def test_bag_of_words_scores_rejects_bad_input():
    n = len(TOKENS)
    A = np.full((1, 1, n, n), 1 / n)
    with pytest.raises(ValueError, match="tokens for attention"):
        bag_of_words_scores(A, TOKENS[:3])
    with pytest.raises(ValueError, match="at least 2 tokens besides"):
        bag_of_words_scores(np.full((1, 1, 3, 3), 1 / 3), ["[CLS]", "a", "[SEP]"])


def test_head_view_holds_every_head_of_every_layer():
    A = _attn()
    fig = head_view(A, TOKENS, layer=1)
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 3  # heads
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == ["layer 1", "layer 0"]
    # slider step 0 restyles the first trace (layer 1's group) to layer 1, head 0
    np.testing.assert_allclose(np.array(steps[0].args[0]["z"][0], float), A[1, 0], atol=1e-5)
    np.testing.assert_allclose(np.array(steps[2].args[0]["z"][1], float), A[0, 2], atol=1e-5)
    with pytest.raises(ValueError, match="layer"):
        head_view(A, TOKENS, layer=5)
    with pytest.raises(ValueError, match="head"):
        head_view(A, TOKENS, head=3)
    shown = head_view(A, TOKENS, layer=1, head=2)
    assert shown.layout.sliders[0].active == 2
    np.testing.assert_allclose(np.array(shown.data[0].z, float), A[1, 2], atol=1e-5)


def test_model_view_has_one_panel_per_head():
    A = _attn()
    fig = model_view(A, TOKENS)
    assert len(fig.data) == 6
    np.testing.assert_allclose(np.array(fig.data[4].z, float), A[1, 1], atol=1e-3)
    assert fig.data[4].name == "layer 1, head 1"
    assert "the → cat" in fig.data[0].text[1][2]


def test_views_have_a_colour_bar_for_the_weights():
    A = _attn()
    head = head_view(A, TOKENS, layer=1).to_dict()
    scales = [t for t in head["data"] if t.get("showscale")]
    assert len(scales) == 2  # one per layer option; only the visible one is drawn
    assert all(t["colorbar"]["x"] > 1 and (t["zmin"], t["zmax"]) == (0, 1) for t in scales)
    model = model_view(A, TOKENS).to_dict()
    (shared,) = [t for t in model["data"] if t.get("showscale")]  # all panels share 0..1
    assert shared["colorbar"]["orientation"] == "h" and shared["colorbar"]["y"] < 0


def test_head_view_wraps_a_long_title():
    A = _attn()
    title = "Head view: “" + " ".join(["word"] * 30) + "”<br>(rows: queries, columns: keys)"
    fig = head_view(A, TOKENS, title=title)
    lines = fig.layout.title.text.split("<br>")
    assert len(lines) >= 3 and lines[-1] == "(rows: queries, columns: keys)"
    assert fig.layout.margin.t >= 21 * len(lines)


def test_attention_browser_reruns_and_redraws():
    tok = WordPieceTokenizer.train(["the cat saw the dog", "a dog saw a cat"] * 5, 40)
    torch.manual_seed(0)
    model = BertModel(BertConfig(d_vocab=tok.vocab_size, d_model=8, n_heads=2, d_mlp=16)).eval()
    app = AttentionBrowser(model, tok, "the cat saw the dog")
    assert app.result["attentions"].shape == (2, 2, 7, 7)
    first = app.picture.value
    app.head.value = 1
    assert app.picture.value != first and "head 1" in app.picture.value
    app.view.value = "model view"
    assert app.picture.value.count("<svg") == 4
    app.sentence.value = "a dog"
    assert app.result["tokens"] == ["[CLS]", "a", "dog", "[SEP]"]
