"""Chapters 2 and 3 quote the bottleneck trained to a plateau from
``scripts/experiments/bottleneck_plateau.py`` (its JSON in
``transformer_lab/assets/bottleneck_plateau.json``). The record must be the script's whole
run, every curve in it flat by the script's rule, and one point is re-derived here: seed 0
without attention, its first training losses and its validation exact match at the pages'
200 steps (about ten seconds on one thread).

Training is deterministic on one processor; another may add floating-point numbers in
another order, so the losses are held to 1e-3 and the exact match to 0.02.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest
from script_loader import load_script

from transformer_lab.data import numbers

ASSETS = resources.files("transformer_lab") / "assets"


def _script():
    return load_script("experiments/bottleneck_plateau")


def _record() -> dict:
    return json.loads((ASSETS / "bottleneck_plateau.json").read_text())


def test_the_record_is_the_scripts_whole_run():
    script, record = _script(), _record()
    budget = record["budget"]
    assert budget["steps"] == {arm: steps for arm, (_, steps) in script.ARMS.items()}
    assert (budget["batch_size"], budget["lr"], budget["eval_every"]) == (
        script.BATCH_SIZE, script.LR, script.EVAL_EVERY)  # fmt: skip
    assert (budget["d_embed"], budget["d_hidden"]) == (script.D_EMBED, script.D_HIDDEN)
    assert record["plateau_rule"] == {"tolerance": script.PLATEAU_TOLERANCE}
    assert record["seeds"] == list(script.SEEDS) and record["bins"] == script.BINS
    cells = sorted((run["arm"], run["seed"]) for run in record["runs"])
    assert cells == sorted((arm, seed) for arm in script.ARMS for seed in script.SEEDS)
    for run in record["runs"]:
        steps = script.ARMS[run["arm"]][1]
        assert run["steps"] == steps and run["pairs_seen"] == steps * script.BATCH_SIZE
        assert run["cpu_seconds"] > 0 and len(run["first_losses"]) == script.PREFIX
        assert [s for s, _ in run["curve"]] == list(
            range(script.EVAL_EVERY, steps + 1, script.EVAL_EVERY))  # fmt: skip
        assert list(run["test"]["by_length"]) == list(run["test_at_page_steps"]["by_length"])


def test_every_curve_in_the_record_is_flat():
    script = _script()
    for run in _record()["runs"]:
        stored, again = run["plateau"], script.plateau(run["curve"])
        assert again["flat"] == stored["flat"] and again["from_step"] == stored["from_step"]
        assert again["gain"] == pytest.approx(stored["gain"]), (run["arm"], run["seed"])
        assert stored["flat"], (run["arm"], run["seed"], stored)


def test_the_plateau_rule_sees_a_rising_curve():
    script = _script()
    rising = [[200 * (i + 1), 0.5 + 0.01 * i] for i in range(20)]
    assert not script.plateau(rising)["flat"]
    assert script.plateau([[200 * (i + 1), 0.8 + 0.02 * (i % 2)] for i in range(20)])["flat"]
    with pytest.raises(ValueError, match="at least 8"):
        script.plateau(rising[:7])


@pytest.mark.usefixtures("one_thread")
def test_seed_0_without_attention_is_re_derived():
    script, record = _script(), _record()
    want = next(r for r in record["runs"] if r["arm"] == "no attention" and r["seed"] == 0)
    data = numbers.load()
    _, run = script.train_arm(data, "no attention", 0, steps=script.PAGE_STEPS)
    assert run.losses[: script.PREFIX] == pytest.approx(want["first_losses"], abs=1e-3)
    step, score = run.evals[0]
    assert step == want["curve"][0][0] == script.PAGE_STEPS
    assert abs(score - want["curve"][0][1]) <= 0.02, (score, want["curve"][0])
