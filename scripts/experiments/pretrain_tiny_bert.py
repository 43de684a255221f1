"""Pretrain the tiny BERT that the package ships, and write it beside the package's data.

    nice -n 10 .venv/bin/python scripts/experiments/pretrain_tiny_bert.py

runs :class:`transformer_lab.training.bert_pretraining.TinyBertRecipe` (its defaults: 4 blocks
of width 128, 5,000 steps of 32 sentence pairs, seed 0) on one CPU thread, on the training
plays of chapter 12 (the held-out play is never seen, not even by the tokenizer), and writes
``transformer_lab/assets/tiny_bert.safetensors``, ``tiny_bert_tokenizer.json`` and
``tiny_bert.json``. The JSON holds the recipe, the held-out numbers of
:func:`transformer_lab.training.bert_reports.masked_lm_report`, the held-out word accuracy every
500 steps, the wall and processor time, and the losses and held-out numbers after the first
``--prefix`` steps, which ``tests/training/test_tiny_bert.py`` repeats in seconds. About 12
minutes of processor time on one thread of a 2-core machine (the JSON records the time it took).

``--steps`` and ``--out`` make a shorter run elsewhere (for trying the script out); the
shipped files come from the defaults.
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import sys
import time
from pathlib import Path

import torch

from transformer_lab.pretrained import tiny_bert as PRETRAINED_TINY_BERT
from transformer_lab.training import bert_pretraining as TB
from transformer_lab.training.bert_reports import masked_lm_report
from transformer_lab.training.run import Run

PREFIX_STEPS = 40  # steps repeated by the quick test


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=PRETRAINED_TINY_BERT.DATA_DIR, help="directory to write to"
    )
    parser.add_argument("--steps", type=int, default=None, help="override the recipe's steps")
    parser.add_argument("--prefix", type=int, default=PREFIX_STEPS, help="steps the test repeats")
    parser.add_argument("--eval-every", type=int, default=500, help="held-out check interval")
    args = parser.parse_args(argv)

    torch.set_num_threads(1)
    recipe = TB.TinyBertRecipe()
    if args.steps is not None:
        recipe = dataclasses.replace(recipe, steps=args.steps)
    corpus = TB.shakespeare_corpus(recipe.vocab_size)
    val = TB.held_out_batch(corpus, max_len=recipe.max_len)
    print(f"held out: {corpus.val_title}; {len(corpus.train_docs)} training plays", flush=True)

    prefix_steps = min(args.prefix, recipe.steps)
    prefix_model, prefix_run = TB.pretrain_tiny_bert(recipe, Run(steps=prefix_steps))
    prefix = {
        "steps": prefix_steps,
        "losses": prefix_run.losses,
        "held_out": masked_lm_report(prefix_model, val, corpus),
    }
    print(f"first {prefix_steps} steps: {prefix['held_out']}", flush=True)

    wall, cpu = time.perf_counter(), time.process_time()
    model, run = TB.pretrain_tiny_bert(recipe, Run(progress=True, eval_every=args.eval_every))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    held_out = masked_lm_report(model, val, corpus)
    print(f"{run.steps} steps in {wall:.0f} s wall, {cpu:.0f} s processor: {held_out}", flush=True)

    every = 50
    info = {
        "recipe": dataclasses.asdict(recipe),
        "held_out_play": corpus.val_title,
        "held_out": held_out,
        "evals": run.evals,
        "mean_losses": [
            sum(run.losses[i : i + every]) / len(run.losses[i : i + every])
            for i in range(0, len(run.losses), every)
        ],
        "mean_losses_every": every,
        "prefix": prefix,
        "seconds": {"wall": round(wall, 1), "processor": round(cpu, 1)},
        "machine": {"torch": torch.__version__, "python": platform.python_version()},
        "command": "nice -n 10 .venv/bin/python scripts/experiments/pretrain_tiny_bert.py"
        + ("" if args.steps is None else f" --steps {args.steps}"),
    }
    out = PRETRAINED_TINY_BERT.save_tiny_bert(model, corpus.tokenizer, info, args.out)
    size = sum(p.stat().st_size for p in out.glob("tiny_bert*"))
    print(f"wrote {out} ({size / 1e6:.1f} MB)")
    return info


if __name__ == "__main__":
    main(sys.argv[1:])
