"""Chapter 13's compute ladder comes from ``scripts/experiments/gpt_ladder.py`` (its record
and half-precision weights in ``transformer_lab/assets/gpt_ladder/``): the shipped weights
score what the script measured, and the small rung's first point is re-derived by training
it again for its first 1000 steps (under half a minute on one thread).

The ``gpu`` rung was trained on a GPU (nanoGPT's settings, 5000 steps of 64 windows of 256)
and stored in int8: its training cannot be repeated here, so the tests re-score its stored
weights (a prefix of the held-out play by default, all of it with ``TRANSFORMER_LAB_SLOW=1``)
against what the script measured on the CPU, and check that the CPU's float32 score of the
GPU's weights agrees with the GPU's own.

Training is deterministic on one processor; another may add floating-point numbers in
another order, so losses are held to 0.01; rounding the weights to half precision moves the
held-out loss by less than 0.005.
"""

from __future__ import annotations

import json
import os

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
    assert set(record) == set(script.RUNGS) | {"gpu"}
    for name, rung in record.items():
        if name == "gpu":
            continue
        shape, recipe = script.RUNGS[name]
        assert rung["recipe"]["steps"] == recipe.steps == rung["steps"]
        assert rung["curve"][-1]["step"] == recipe.steps
        assert rung["curve"][-1]["held_out_loss"] == rung["held_out_loss"]
        chars = [p["chars"] for p in rung["curve"]]
        assert chars == sorted(chars) and chars[-1] == rung["chars_seen"]
        for seed, other in rung.get("other_seeds", {}).items():  # the same recipe, another seed
            assert other["seed"] == int(seed) != rung["seed"] and other["recipe"] == rung["recipe"]
            assert other["curve"][0]["held_out_loss"] != rung["curve"][0]["held_out_loss"]
            assert [p["step"] for p in other["curve"]] == [p["step"] for p in rung["curve"]]
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


def test_the_gpu_rung_is_a_finished_run_of_the_gpu_preset():
    from transformer_lab.training.gpt import PRESETS

    rung = _record()["gpu"]
    shape, recipe = PRESETS["gpu"]
    info = json.loads((LADDER / "gpu" / "gpt_book_cpu.json").read_text())
    assert {k: info["config"][k] for k in shape} == shape
    assert rung["steps"] == recipe.steps == rung["curve"][-1]["step"]
    assert rung["chars_seen"] == recipe.steps * recipe.batch_size * shape["n_ctx"]
    assert rung["trained_on_gpu"] and info["storage"] == "int8"
    losses = [p["held_out_loss"] for p in rung["curve"]]
    assert losses == sorted(losses, reverse=True)  # it fell at every evaluation
    # the same weights in float16, scored on the CPU in float32, as the GPU scored them
    assert abs(rung["held_out_loss_cpu_float16_weights"] - rung["held_out_loss"]) < 0.002
    assert abs(rung["held_out_loss_cpu_int8_weights"] - rung["held_out_loss"]) < 0.005


def _gpu_rung_loss(chars=None):
    tok = shakespeare.char_tokenizer()
    _, val_ids = shakespeare.encode_splits(tok)
    model, _ = load_book_gpt(directory=LADDER / "gpu")
    data = val_ids if chars is None else val_ids[:chars]
    return evaluate_lm(model, data, batch_size=16, n_ctx=model.config.n_ctx)


@pytest.mark.usefixtures("one_thread")
def test_the_gpu_rungs_stored_weights_score_what_the_script_measured_on_a_prefix():
    prefix = _record()["gpu"]["int8_prefix"]
    assert abs(_gpu_rung_loss(prefix["chars"]) - prefix["held_out_loss"]) < 1e-3


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("TRANSFORMER_LAB_SLOW") != "1", reason="set TRANSFORMER_LAB_SLOW=1"
)
@pytest.mark.usefixtures("one_thread")
def test_the_gpu_rungs_stored_weights_score_what_the_script_measured():
    assert abs(_gpu_rung_loss() - _record()["gpu"]["held_out_loss_cpu_int8_weights"]) < 1e-3


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("TRANSFORMER_LAB_SLOW") != "1", reason="set TRANSFORMER_LAB_SLOW=1"
)
@pytest.mark.usefixtures("one_thread")
def test_another_seeds_first_point_is_re_derived():
    script = load_script("experiments/gpt_ladder")
    tok = shakespeare.char_tokenizer()
    train_ids, val_ids = shakespeare.encode_splits(tok)
    first = _record()["small"]["other_seeds"]["1"]["curve"][0]
    _, record = script.train_rung("small", train_ids, val_ids, steps=first["step"], seed=1)
    assert abs(record["held_out_loss"] - first["held_out_loss"]) < 0.01
