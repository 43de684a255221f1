"""Chapter 17's race comes from ``scripts/experiments/recall_race.py`` (its JSON in
``transformer_lab/assets/recall_race.json``): the record holds every arm, size and seed with
the script's budget, each arm's rate is the best of its sweep, and one point is re-derived
here: the GRU on 4 entries, seed 0, trained the script's way (a few seconds on one thread).

Training is deterministic on one processor; another may add floating-point numbers in
another order, so the accuracy is held to 0.02.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest
from script_loader import load_script

from transformer_lab.data.recall import RecallTask
from transformer_lab.training.recall import LEARNING_RATES, new_model, recall_accuracy

ASSETS = resources.files("transformer_lab") / "assets"


def _record():
    return json.loads((ASSETS / "recall_race.json").read_text())


def test_the_record_is_the_scripts_whole_race():
    script, record = load_script("experiments/recall_race"), _record()
    budget = record["budget"]
    assert budget == {"sweep_steps": script.SWEEP_STEPS, "steps": script.STEPS,
                      "batch_size": script.BATCH, "evals": script.EVALS,
                      "learning_rates": list(LEARNING_RATES)}  # fmt: skip
    cells = sorted((r["kind"], r["n_pairs"]) for r in record["rows"])
    assert cells == sorted((k, n) for k in ("gpt", "gru", "lstm") for n in script.PAIRS)
    sizes = {r["parameters"] for r in record["rows"]}
    assert max(sizes) / min(sizes) < 1.01  # equal size
    for row in record["rows"]:
        sweep = {float(k): v for k, v in row["lr_sweep"].items()}
        assert row["lr"] == max(sorted(sweep), key=sweep.get)
        assert [r["seed"] for r in row["runs"]] == list(script.SEEDS)
        for run in row["runs"]:
            assert run["curve"][-1][0] == script.STEPS and len(run["curve"]) == script.EVALS


@pytest.mark.usefixtures("one_thread")
def test_the_gru_on_four_entries_is_re_derived():
    script, record = load_script("experiments/recall_race"), _record()
    row = next(r for r in record["rows"] if r["kind"] == "gru" and r["n_pairs"] == 4)
    point = script.run_point("gru", RecallTask(), 4, row["lr"], 0)
    assert abs(point["test_accuracy"] - row["runs"][0]["test_accuracy"]) <= 0.02
    assert abs(point["curve"][0][1] - row["runs"][0]["curve"][0][1]) <= 0.02
    model = new_model("gru", RecallTask())
    assert recall_accuracy(model, RecallTask().split("test", 4)) < 0.2  # untrained: near chance
