"""Chapter 12's tiny BERT pretrained for longer, against the table of neighbour counts.

    .venv/bin/python scripts/experiments/bert_ladder.py --steps 30000 --device cuda

trains :class:`~transformer_lab.training.bert_pretraining.TinyBertRecipe` (the shipped model's
shape, batch, peak rate and warm-up) with ``--steps`` steps instead of 5,000, so its cosine
schedule spans the longer run. Every ``--eval-every`` steps it scores the held-out play's
blanks (the ``[MASK]`` positions that hold a word token, the measure of chapter 12's page)
with :func:`~transformer_lab.training.bert_reports.blank_fill_report`, beside the table of
neighbour counts on the same tokens, and saves the weights reached so far. The batches are
drawn on the CPU from the recipe's seed, so a GPU run sees the same pairs and masks as a CPU
run; the steps' arithmetic differs (float32 on both, different kernels).

It writes ``OUT/tiny_bert*`` (:func:`~transformer_lab.pretrained.tiny_bert.save_tiny_bert`:
weights in float16, the tokenizer and a JSON of the recipe and the curve).
The record also holds the training losses of the run's first 40 steps on one CPU thread:
``tests/experiments/test_bert_ladder.py`` repeats them, re-scores the shipped weights and
re-derives the table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time
from pathlib import Path

import torch

from transformer_lab.models.bert import BertForPreTraining
from transformer_lab.pretrained import tiny_bert as PRETRAINED
from transformer_lab.training import bert_pretraining as TB
from transformer_lab.training.bert_reports import NeighbourCounts, blank_fill_report
from transformer_lab.training.run import Run

OUT = PRETRAINED.DATA_DIR / "bert_ladder"


def table_for(corpus: TB.ShakespeareCorpus) -> NeighbourCounts:
    """The neighbour-count table of chapter 12's page, on the corpus's training ids."""
    lines = [line for doc in corpus.train_ids for line in doc]
    return NeighbourCounts(lines, corpus.tokenizer.vocab_size, corpus.tokenizer.special_ids)


PREFIX_STEPS = 40  # steps repeated on the CPU by tests/experiments/test_bert_ladder.py


def cpu_prefix(recipe: TB.TinyBertRecipe, steps: int = PREFIX_STEPS) -> dict:
    """The training losses of the run's first ``steps`` steps on one CPU thread."""
    _, result = TB.pretrain_tiny_bert(recipe, Run(steps=steps, device="cpu"))
    return {"steps": steps, "losses": result.losses}


def run(steps: int, eval_every: int, device: str, out: Path | None, stop_after=None) -> dict:
    """Train, score every ``eval_every`` steps, save what was reached, return the record."""
    recipe = dataclasses.replace(TB.TinyBertRecipe(), steps=steps)
    corpus = TB.shakespeare_corpus(recipe.vocab_size)
    batch = TB.held_out_batch(corpus, max_len=recipe.max_len)
    base = blank_fill_report(None, batch, corpus, table_for(corpus))
    record = {
        "recipe": dataclasses.asdict(recipe),
        "held_out_play": corpus.val_title,
        "blanks": base["n"],
        "the": base["the"],
        "table": base["table"],
        "curve": [],
        "cpu_prefix": cpu_prefix(recipe),
        "device": torch.cuda.get_device_name() if device == "cuda" else platform.machine(),
        "torch": torch.__version__,
        "script": "scripts/experiments/bert_ladder.py",
    }
    began = time.perf_counter()
    clock = {"step": 0, "evaluating": 0.0}

    def score(model) -> float:
        t = time.perf_counter()
        clock["step"] += eval_every
        report = blank_fill_report(model, batch, corpus)
        seconds = t - began - clock["evaluating"]
        record["curve"].append(
            {"step": clock["step"], "seconds": seconds, "blanks": report["model"]}
        )
        print(f"step {clock['step']}: blanks {report['model']:.4f} (table {base['table']:.4f}), "
              f"{seconds:.0f} s", flush=True)  # fmt: skip
        if out is not None:
            save(model, corpus, record, out)
        clock["evaluating"] += time.perf_counter() - t
        return report["model"]

    model, result = TB.pretrain_tiny_bert(
        recipe, Run(steps=stop_after, eval_every=eval_every, eval_fn=score, device=device)
    )
    record["steps"] = result.steps
    record["final_loss"] = sum(result.losses[-100:]) / len(result.losses[-100:])
    if out is not None:
        save(model, corpus, record, out)
    return record


def save(model, corpus, record: dict, out: Path) -> None:
    half = BertForPreTraining(model.config)
    half.load_state_dict({k: v.detach().cpu() for k, v in model.state_dict().items()})
    PRETRAINED.save_tiny_bert(half.half(), corpus.tokenizer, dict(record), out)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30000, help="length of the schedule")
    parser.add_argument("--until", type=int, default=None, help="stop after this step")
    parser.add_argument("--eval-every", type=int, default=2500)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=OUT, help="directory to write")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    record = run(args.steps, args.eval_every, args.device, args.out, args.until)
    print(json.dumps({k: v for k, v in record.items() if k != "curve"}))
    return record


if __name__ == "__main__":
    main()
