"""Tests of transformer_lab.viz.chapters.toy_attention: explore() against the package's
attention, the ipywidgets app responding to its controls, and the kernel-free Plotly
version. Its sentences' tokens and embeddings are tested in tests/data/test_toy_sentences.py."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_lab import viz
from transformer_lab.nn.attention import scaled_dot_product_attention
from transformer_lab.nn.masks import causal_mask
from transformer_lab.viz import plotly as VIZ_PLOTLY
from transformer_lab.viz.chapters import toy_attention

ANIMAL = "The animal didn't cross the street because it was too tired"
# float32 throughout: explore() and the references below run the same float32 kernels
TOL = {"atol": 1e-6, "rtol": 1e-5}


def test_explore_shapes_and_determinism():
    r = toy_attention.explore(ANIMAL, d_k=8)
    n = len(r["tokens"])
    assert n == r["n_real"] == 11
    assert r["x"].shape == (n, toy_attention.D_MODEL)
    assert r["q"].shape == r["k"].shape == r["v"].shape == r["outputs"].shape == (n, 8)
    assert r["scores"].shape == r["weights"].shape == r["mask"].shape == (n, n)
    again = toy_attention.explore(ANIMAL, d_k=8)
    np.testing.assert_array_equal(r["weights"], again["weights"])
    # "The" and "the" share an embedding: self-attention cannot tell them apart
    np.testing.assert_array_equal(r["q"][0], r["q"][4])


def test_temperature_one_equals_the_package_attention():
    r = toy_attention.explore(ANIMAL, d_k=16, temperature=1.0)
    q, k, v = (torch.from_numpy(r[name]) for name in "qkv")
    out, weights = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(torch.from_numpy(r["weights"]), weights, **TOL)
    torch.testing.assert_close(torch.from_numpy(r["outputs"]), out, **TOL)


def test_scores_are_scaled_by_sqrt_dk_and_temperature_divides_them():
    r = toy_attention.explore(ANIMAL, d_k=32, temperature=2.5)
    np.testing.assert_allclose(r["scores"], r["q"] @ r["k"].T / math.sqrt(32), rtol=1e-5, atol=1e-5)
    logits = r["scores"] / 2.5
    expected = np.exp(logits - logits.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(r["weights"], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r["outputs"], r["weights"] @ r["v"], rtol=1e-5, atol=1e-5)


def test_higher_temperature_flattens_the_weights():
    entropy = []
    for t in (0.25, 1.0, 4.0):
        w = toy_attention.explore(ANIMAL, d_k=16, temperature=t)["weights"]
        entropy.append(float(-(w * np.log(w)).sum(1).mean()))
    assert entropy[0] < entropy[1] < entropy[2]


def test_causal_mask_zeros_the_future_and_minus_inf_scores():
    r = toy_attention.explore(ANIMAL, d_k=16, mask_kind="causal")
    n = len(r["tokens"])
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    assert (r["weights"][upper] == 0).all()
    assert np.isneginf(r["scores"][upper]).all() and np.isfinite(r["scores"][~upper]).all()
    np.testing.assert_array_equal(r["mask"], causal_mask(n).numpy())
    np.testing.assert_allclose(r["weights"].sum(1), 1.0, atol=1e-6)
    q, k, v = (torch.from_numpy(r[name]) for name in "qkv")
    out, _ = scaled_dot_product_attention(q, k, v, causal_mask(n))
    torch.testing.assert_close(torch.from_numpy(r["outputs"]), out, **TOL)


def test_causal_outputs_ignore_later_tokens():
    a = toy_attention.explore("I love dogs and cats", mask_kind="causal")
    b = toy_attention.explore("I love dogs or birds", mask_kind="causal")
    np.testing.assert_array_equal(a["outputs"][:3], b["outputs"][:3])
    assert not np.allclose(a["outputs"][3:], b["outputs"][3:])
    c = toy_attention.explore("I love dogs and cats")  # without the mask the change leaks back
    d = toy_attention.explore("I love dogs or birds")
    assert not np.allclose(c["outputs"][0], d["outputs"][0])


@pytest.mark.parametrize("kind", ["padding", "causal+padding"])
def test_padding_appends_pads_nobody_attends_to(kind):
    r = toy_attention.explore("I love dogs", mask_kind=kind, n_pad=2)
    assert r["tokens"] == ["I", "love", "dogs", "<pad>", "<pad>"] and r["n_real"] == 3
    assert (r["weights"][:, 3:] == 0).all()
    np.testing.assert_allclose(r["weights"].sum(1), 1.0, atol=1e-6)
    if kind == "causal+padding":
        assert r["weights"][0, 1] == 0
    else:
        assert r["weights"][0, 1] > 0


@settings(max_examples=25, deadline=None)
@given(
    d_k=st.integers(1, 64),
    temperature=st.floats(0.05, 20.0),
    kind=st.sampled_from(toy_attention.MASK_KINDS),
    words=st.lists(st.sampled_from(["a", "cat", "sat", "on", "mat", "it"]), min_size=1, max_size=9),
)
def test_rows_sum_to_one_and_masked_weights_are_zero(d_k, temperature, kind, words):
    r = toy_attention.explore(" ".join(words), d_k, temperature, kind)
    np.testing.assert_allclose(r["weights"].sum(1), 1.0, atol=1e-5)
    assert (r["weights"][~r["mask"]] == 0).all()
    assert np.isneginf(r["scores"][~r["mask"]]).all()


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="d_k"):
        toy_attention.explore("a b", d_k=0)
    with pytest.raises(ValueError, match="temperature"):
        toy_attention.explore("a b", temperature=0.0)
    with pytest.raises(ValueError, match="mask_kind"):
        toy_attention.explore("a b", mask_kind="future")


@pytest.mark.parametrize("d_k", [2, 256])
def test_the_smallest_temperature_gives_finite_weights_and_a_smaller_one_is_refused(d_k):
    r = toy_attention.explore(ANIMAL, d_k=d_k, temperature=toy_attention.MIN_TEMPERATURE)
    assert np.isfinite(r["weights"]).all() and np.allclose(r["weights"].sum(-1), 1)
    with pytest.raises(ValueError, match="temperature must be at least 1e-06, got 1e-40"):
        toy_attention.explore(ANIMAL, d_k=d_k, temperature=1e-40)  # was NaN weights


# --- the ipywidgets app -------------------------------------------------------------------


def test_explorer_redraws_when_a_control_moves():
    app = toy_attention.attention_explorer("I love dogs", d_k=16)
    assert app.n_updates == 1 and 'data-state="d_k=16;' in app.heatmap.value
    first = app.heatmap.value
    app.d_k.value = 32
    assert app.n_updates == 2 and app.result["d_k"] == 32
    assert app.heatmap.value != first and 'data-state="d_k=32;' in app.heatmap.value
    assert "d_k = 32" in app.caption.value
    app.temperature.value = 4.0
    assert app.result["temperature"] == pytest.approx(4.0)
    app.mask.value = "causal"
    assert (np.triu(app.result["weights"], 1) == 0).all()
    assert set(app.timings) == {"compute_ms", "redraw_ms"}


def test_explorer_example_dropdown_and_typed_sentence():
    app = toy_attention.attention_explorer()
    assert app.sentence.value == toy_attention.EXAMPLE_SENTENCES[0] == ANIMAL
    app.examples.value = "I love dogs"
    assert app.result["tokens"] == ["I", "love", "dogs"]
    app.sentence.value = "a cat"
    assert app.result["tokens"] == ["a", "cat"]
    shown = app.heatmap.value
    app.sentence.value = "   "  # nothing to show: the caption says why, the figure stays
    assert "no tokens" in app.caption.value and app.heatmap.value == shown


def test_explorer_controls_have_stable_classes_and_labels():
    app = toy_attention.attention_explorer()
    expected = {
        "examples": ("tl-example", "example"),
        "sentence": ("tl-sentence", "sentence"),
        "d_k": ("tl-dk", "d_k"),
        "temperature": ("tl-temperature", "temperature"),
        "mask": ("tl-mask", "mask"),
    }
    for name, (css, description) in expected.items():
        control = getattr(app, name)
        assert css in control._dom_classes and control.description == description
    assert "tl-heatmap" in app.heatmap._dom_classes
    assert "tl-attention-explorer" in app.widget._dom_classes
    assert "application/vnd.jupyter.widget-view+json" in app._repr_mimebundle_()


# --- the kernel-free version ----------------------------------------------------------------


def test_static_explorer_has_one_state_per_temperature_and_mask():
    temps = (0.5, 1.0, 2.0)
    fig = toy_attention.static_attention_explorer("I love dogs", d_k=4, temperatures=temps)
    kinds = toy_attention.MASK_KINDS
    assert len(fig.data) == 3 * len(kinds)
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["0.5", "1", "2"]
    assert fig.layout.sliders[0].active == 1  # temperature 1 shown first
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == list(kinds)
    # the weights panel of mask "causal" (trace 1 of group 1) at temperature 2
    expected = toy_attention.explore("I love dogs", 4, 2.0, "causal")["weights"]
    np.testing.assert_allclose(np.array(steps[2].args[0]["z"][3 + 1], float), expected, atol=1e-4)
    assert buttons[1].args[0]["visible"][3:6] == [True, True, True]
    json.dumps(viz.mimebundle(fig)[VIZ_PLOTLY.PLOTLY_MIME])


def test_static_explorer_over_dk():
    fig = toy_attention.static_attention_explorer(
        "I love dogs", slider="d_k", d_ks=(2, 8), mask_kinds=("none",)
    )
    assert [s.label for s in fig.layout.sliders[0].steps] == ["2", "8"]
    outputs_z = fig.layout.sliders[0].steps[1].args[0]["z"][2]
    assert np.array(outputs_z).shape == (3, 8)
    with pytest.raises(ValueError, match="slider"):
        toy_attention.static_attention_explorer(slider="mask")
    with pytest.raises(ValueError, match="dropdown"):
        toy_attention.static_attention_explorer(dropdown="d_k")


def test_static_explorer_over_sentences():
    sentences = ("I love dogs", "a cat")
    fig = toy_attention.static_attention_explorer(
        dropdown="sentence", sentences=sentences, mask_kind="causal", temperatures=(1.0,)
    )
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == list(sentences)
    assert buttons[1].args[1]["xaxis.ticktext"] == ["a", "cat"]
    weights_of_a_cat = fig.layout.sliders[0].steps[0].args[0]["z"][3 + 1]
    assert weights_of_a_cat[0] == [1.0, 0.0]  # causal: "a" cannot see "cat"
    assert sum(weights_of_a_cat[1]) == pytest.approx(1.0, abs=1e-4) and weights_of_a_cat[1][1] > 0
