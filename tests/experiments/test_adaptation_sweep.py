"""The shipped sweeps of chapter 15 (transformer_lab/assets/topic_sweep.json and
genre_controls.json, written by scripts/experiments/adaptation_sweep.py) hold the settings of
the script, and points of them are re-derived here on one thread: the word counters exactly,
the network from scratch and the probe within two test sentences (other processors round
differently)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from script_loader import load_script

from transformer_lab.device import num_threads

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "transformer_lab" / "assets"


@pytest.fixture(scope="module")
def sweep():
    return load_script("experiments/adaptation_sweep")


def shipped(name):
    return json.loads((ASSETS / name).read_text())


def point(data, method, n, seed):
    (row,) = [
        r for r in data["results"] if (r["method"], r["n_labels"], r["seed"]) == (method, n, seed)
    ]
    return row


@pytest.mark.parametrize("name", ["topic_sweep.json", "genre_controls.json"])
def test_settings_are_the_scripts(sweep, name):
    data = shipped(name)
    assert data["settings"] == sweep.SETTINGS
    assert len({(r["method"], r["n_labels"], r["seed"]) for r in data["results"]}) == len(
        data["results"]
    )


@pytest.mark.parametrize("name", ["topic_sweep.json", "genre_controls.json"])
def test_trained_runs_have_the_scripts_steps(sweep, name):
    data = shipped(name)
    for r in data["results"]:
        if r["method"] in ("scratch", "finetune"):
            assert r["steps"] == sweep.n_steps(r["n_labels"], r["method"]), r
        if "curve" in r:  # the last evaluation is at the last step and is the final accuracy
            (step, acc) = r["curve"]["points"][-1]
            assert step == r["steps"] and acc == pytest.approx(r[r["curve"]["set"]], abs=1e-4)
    if name == "genre_controls.json":  # every genre run of a trained method has its curve
        assert all("curve" in r for r in data["results"] if r["method"] in ("scratch", "finetune"))


def test_topic_points_are_re_derived(sweep):
    from transformer_lab.pretrained.minilm import minilm

    data = shipped("topic_sweep.json")
    encoder, tokenizer = minilm("cpu")
    task = sweep.Task("topic", 0, tokenizer)
    with num_threads(1):
        for method, tolerance in (("tfidf_lr", 0.0), ("naive_bayes", 0.0), ("scratch", 0.002),
                                  ("probe", 0.002)):  # fmt: skip
            got = sweep.run_one(method, task, 10, 0, encoder, tokenizer, {})
            want = point(data, method, 10, 0)
            for k in ("seen", "unseen"):
                assert got[k] == pytest.approx(want[k], abs=tolerance + 1e-9), (method, k)


LONG = {
    "topic_finetune_long.json": {"finetune_min_steps": 120, "finetune_curve_points": 10},
    "genre_finetune_long.json": {"finetune_epochs": 10, "finetune_curve_points": 10},
}


@pytest.mark.parametrize("name", sorted(LONG))
def test_longer_fine_tuning_records_hold_their_schedule(sweep, name):
    """Chapter 15's longer fine-tuning runs: the script's settings with the longer schedule,
    the steps that schedule gives, a curve that ends at the final accuracy."""
    data = shipped(name)
    settings = sweep.SETTINGS | LONG[name]
    assert data["settings"] == settings
    for r in data["results"]:
        assert r["method"] == "finetune"
        assert r["steps"] == sweep.n_steps(r["n_labels"], "finetune", settings), r
        (step, acc) = r["curve"]["points"][-1]
        assert step == r["steps"] and acc == pytest.approx(r[r["curve"]["set"]], abs=1e-4)
        assert len(r["curve"]["points"]) >= 10


def test_static_probe_points_are_re_derived(sweep):
    from transformer_lab.pretrained.minilm import minilm

    encoder, tokenizer = minilm("cpu")
    with num_threads(1):
        for task_name, n, file in (("topic", 40, "topic_sweep.json"),
                                   ("genre", 24, "genre_controls.json")):  # fmt: skip
            task = sweep.Task(task_name, 1, tokenizer)
            got = sweep.run_one("static_probe", task, n, 1, encoder, tokenizer, {})
            want = point(shipped(file), "static_probe", n, 1)
            for k in got:
                assert got[k] == pytest.approx(want[k], abs=0.002 + 1e-9), (task_name, k)


@pytest.mark.slow
def test_a_longer_topic_run_is_re_derived(sweep):
    from transformer_lab.pretrained.minilm import minilm

    encoder, tokenizer = minilm("cpu")
    original = dict(sweep.SETTINGS)
    sweep.SETTINGS.update(LONG["topic_finetune_long.json"])
    try:
        with num_threads(1):
            got = sweep.run_one("finetune", sweep.Task("topic", 0, tokenizer), 10, 0, encoder,
                                tokenizer, {})  # fmt: skip
    finally:
        sweep.SETTINGS.clear()
        sweep.SETTINGS.update(original)
    want = point(shipped("topic_finetune_long.json"), "finetune", 10, 0)
    for k in ("seen", "unseen"):
        assert got[k] == pytest.approx(want[k], abs=0.002 + 1e-9), k
