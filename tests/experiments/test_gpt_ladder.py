"""Chapter 13's compute ladder comes from ``scripts/experiments/gpt_ladder.py`` (its record
and half-precision weights in ``transformer_lab/assets/gpt_ladder/``): the shipped weights
score what the script measured, and the small rung's first point is re-derived by training
it again for its first 1000 steps (under half a minute on one thread).

Training is deterministic on one processor; another may add floating-point numbers in
another order, so losses are held to 0.01; rounding the weights to half precision moves the
held-out loss by less than 0.005.
"""

from __future__ import annotations

import json

import pytest
from script_loader import load_script

from transformer_lab.data import shakespeare
from transformer_lab.pretrained.book_gpt import DATA_DIR, load_book_gpt
from transformer_lab.training.gpt import evaluate_lm

LADDER = DATA_DIR / "gpt_ladder"


def _record():
    return json.loads((LADDER / "ladder.json").read_text())


def test_the_record_follows_the_script():
    script, record = load_script("experiments/gpt_ladder"), _record()
    assert set(record) == set(script.RUNGS)
    for name, rung in record.items():
        shape, recipe = script.RUNGS[name]
        assert rung["recipe"]["steps"] == recipe.steps == rung["steps"]
        assert rung["curve"][-1]["step"] == recipe.steps
        assert rung["curve"][-1]["held_out_loss"] == rung["held_out_loss"]
        chars = [p["chars"] for p in rung["curve"]]
        assert chars == sorted(chars) and chars[-1] == rung["chars_seen"]
        info = json.loads((LADDER / name / "gpt_book_cpu.json").read_text())
        assert {k: info["config"][k] for k in shape} == shape


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("name", ["small", "medium"])
def test_the_shipped_weights_score_what_the_script_measured(name):
    tok = shakespeare.char_tokenizer()
    _, val_ids = shakespeare.encode_splits(tok)
    model, _ = load_book_gpt(directory=LADDER / name)
    loss = evaluate_lm(model, val_ids, batch_size=64, n_ctx=model.config.n_ctx)
    assert abs(loss - _record()[name]["held_out_loss"]) < 0.005


@pytest.mark.usefixtures("one_thread")
def test_the_small_rungs_first_point_is_re_derived():
    script = load_script("experiments/gpt_ladder")
    tok = shakespeare.char_tokenizer()
    train_ids, val_ids = shakespeare.encode_splits(tok)
    first = _record()["small"]["curve"][0]
    _, record = script.train_rung("small", train_ids, val_ids, steps=first["step"])
    assert abs(record["held_out_loss"] - first["held_out_loss"]) < 0.01
