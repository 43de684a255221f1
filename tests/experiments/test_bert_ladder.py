"""Chapter 12's longer tiny BERT comes from ``scripts/experiments/bert_ladder.py`` (its weights
and record in ``transformer_lab/assets/bert_ladder/``). The tests check that the record
follows the script's recipe, re-score the shipped weights on the page's blanks, re-derive
the table of neighbour counts exactly, and repeat the run's first steps on the CPU against
the losses stored with it.
"""

from __future__ import annotations

import dataclasses

import pytest
from script_loader import load_script

from transformer_lab.pretrained.tiny_bert import DATA_DIR, load_tiny_bert, tiny_bert_info
from transformer_lab.training import bert_pretraining as TB
from transformer_lab.training.bert_reports import blank_fill_report
from transformer_lab.training.run import Run

LADDER = DATA_DIR / "bert_ladder"


@pytest.fixture(scope="module")
def record():
    return tiny_bert_info(LADDER)


def test_the_record_is_the_shipped_recipe_stretched(record):
    recipe = TB.TinyBertRecipe(**record["recipe"])
    assert dataclasses.replace(recipe, steps=TB.TinyBertRecipe().steps) == TB.TinyBertRecipe()
    assert record["steps"] == recipe.steps == record["curve"][-1]["step"]
    steps = [p["step"] for p in record["curve"]]
    assert steps == list(range(steps[0], recipe.steps + 1, steps[0]))
    assert record["curve"][-1]["blanks"] > record["table"]


@pytest.mark.usefixtures("one_thread")
def test_the_shipped_weights_and_the_table_score_what_the_script_measured(record):
    script = load_script("experiments/bert_ladder")
    corpus = TB.shakespeare_corpus(record["recipe"]["vocab_size"])
    batch = TB.held_out_batch(corpus, max_len=record["recipe"]["max_len"])
    model, _ = load_tiny_bert(directory=LADDER)
    report = blank_fill_report(model, batch, corpus, script.table_for(corpus))
    assert report["n"] == record["blanks"]
    assert report["table"] == pytest.approx(record["table"], abs=1e-6)
    assert report["the"] == pytest.approx(record["the"], abs=1e-6)
    # stored in half precision and scored on another device: a few blanks may change
    assert report["model"] == pytest.approx(record["curve"][-1]["blanks"], abs=0.003)


@pytest.mark.usefixtures("one_thread")
def test_the_first_steps_repeat_on_the_cpu(record):
    stored = record["cpu_prefix"]["losses"][:10]  # 40 are stored; 10 repeat in seconds
    recipe = TB.TinyBertRecipe(**record["recipe"])
    _, run = TB.pretrain_tiny_bert(recipe, Run(steps=len(stored)))
    assert run.losses == pytest.approx(stored, abs=1e-4)
