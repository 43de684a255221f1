"""Chapter 16's control comes from ``scripts/experiments/scratch_german_numbers.py`` (its
JSON in ``transformer_lab/assets/scratch_german_numbers.json``): every run is checked to have
converged, and one point is re-derived here: seed 0 on 50 training pairs, its first 100
steps (the losses and the exact match at step 100; a few seconds on one thread).

Training is deterministic on one processor; another may add floating-point numbers in
another order, so the losses are held to 1e-3 and the exact match to 0.02.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest
import torch
from script_loader import load_script

ASSETS = resources.files("transformer_lab") / "assets"


def _results():
    return json.loads((ASSETS / "scratch_german_numbers.json").read_text())


def test_every_run_converged():
    results = _results()
    script = load_script("experiments/scratch_german_numbers")
    assert results["settings"] == json.loads(json.dumps(script.settings()))
    runs = results["runs"]
    assert sorted((r["n_train"], r["seed"]) for r in runs) == [
        (n, s) for n in script.LABELS for s in (0, 1, 2)
    ]
    for r in runs:
        assert r["curve"][-1] == [script.STEPS, r["exact_match"]]
        assert len(r["curve"]) == script.STEPS // script.EVAL_EVERY
        assert r["last_100_loss"] < 0.01  # the training pairs are learned
        last = [e for _, e in r["curve"][-4:]]
        assert max(last) - min(last) <= 0.05, r  # flat over the last 400 steps


@pytest.mark.usefixtures("one_thread")
def test_seed_0_at_50_pairs_is_re_derived():
    script = load_script("experiments/scratch_german_numbers")
    run0 = next(r for r in _results()["runs"] if r["n_train"] == 50 and r["seed"] == 0)
    _, run = script.control_run(50, 0, steps=100, eval_every=100)
    torch.testing.assert_close(run.losses[::25], run0["losses"][:4], rtol=0, atol=1e-3)
    assert abs(run.evals[0][1] - run0["curve"][0][1]) <= 0.02


def _budget():
    return json.loads((ASSETS / "scratch_german_numbers_budget.json").read_text())


def test_the_budget_record_is_lora_s_budget():
    """``--budget``: every size, seed and learning rate, each run 150 steps of 8 pairs, the
    1,200 examples that LoRA's 150 steps of 8 see (``lora_smollm2.py``)."""
    results = _budget()
    script = load_script("experiments/scratch_german_numbers")
    lora = load_script("experiments/lora_smollm2")
    assert results["settings"] == json.loads(json.dumps(script.budget_settings()))
    assert script.BUDGET_STEPS * script.BUDGET_BATCH == lora.STEPS * lora.BATCH
    runs = results["runs"]
    assert sorted((r["n_train"], r["seed"], r["lr"]) for r in runs) == sorted(
        (n, s, lr) for n in script.LABELS for s in (0, 1, 2) for lr in script.BUDGET_LRS
    )
    assert script.LR in script.BUDGET_LRS  # the GRU's own learning rate is one of them
    for r in runs:
        assert r["curve"][-1] == [script.BUDGET_STEPS, r["exact_match"]]
        assert len(r["curve"]) == script.BUDGET_STEPS // script.BUDGET_EVAL


@pytest.mark.usefixtures("one_thread")
def test_seed_0_at_lora_s_budget_is_re_derived():
    """The first 26 steps of seed 0 on 400 pairs at the GRU's own learning rate: its losses
    at steps 1 and 26 and the exact match after step 25 (about a second)."""
    script = load_script("experiments/scratch_german_numbers")
    row = next(
        r for r in _budget()["runs"] if (r["n_train"], r["seed"], r["lr"]) == (400, 0, script.LR)
    )
    _, run = script.control_run(400, 0, 26, 25, script.BUDGET_BATCH, script.LR)
    torch.testing.assert_close(run.losses[::25], row["losses"][:2], rtol=0, atol=1e-3)
    assert run.evals[0][0] == 25 and abs(run.evals[0][1] - row["curve"][0][1]) <= 0.02
