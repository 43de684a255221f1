"""Chapter 17's full race: accuracy on associative recall against the number of pairs, for a
GPT, a GRU and an LSTM of equal size, each at its own learning rate, over three seeds.

    nice -n 10 .venv/bin/python scripts/experiments/recall_race.py

For every model and number of pairs (4, 8, 16, 32, 64; 64 keys, 16 values, a look-up per
pair): the learning rate is chosen on the validation split among
:data:`~transformer_lab.training.recall.LEARNING_RATES` by a run of ``SWEEP_STEPS`` steps
(seed 0), then seeds 0, 1 and 2 train ``STEPS`` steps of 64 sequences at that rate, their
validation accuracy recorded ``EVALS`` times (a plateau shows as a flat end), and their
accuracy on 512 test sequences is recorded. Every arm sees the same batches (the training
stream of the seed) and takes the same steps; the record gives each run's seconds too.

Then, because the recurrent arms' curves are still rising at the end of that budget, they
get ``LONG_STEPS`` steps on 4 and 16 entries (seed 0, the same rate): ``--longer`` adds
these runs to a record.

It writes ``transformer_lab/assets/recall_race.json``. ``--kinds`` and ``--pairs`` run a
part (into ``--out``); ``--merge A.json B.json`` joins parts. On the 2-core machine that
built the book, the three models took about 40 minutes on one thread each, with other work
beside them. ``tests/experiments/test_recall_race.py`` re-trains one point and compares.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import torch

from transformer_lab.data.recall import RecallTask
from transformer_lab.models.recall import KINDS
from transformer_lab.pretrained.book_gpt import DATA_DIR
from transformer_lab.training.recall import (
    LEARNING_RATES,
    RecallRecipe,
    choose_lr,
    new_model,
    recall_accuracy,
    train_recall,
)
from transformer_lab.training.run import Run

PAIRS, SEEDS = (4, 8, 16, 32, 64), (0, 1, 2)
SWEEP_STEPS, STEPS, EVALS, BATCH = 300, 1000, 5, 64
LONG_PAIRS, LONG_STEPS, LONG_EVALS = (4, 16), 6000, 12  # the recurrent arms, given six times more
OUT = DATA_DIR / "recall_race.json"


def run_point(
    kind: str, task: RecallTask, n_pairs: int, lr: float, seed: int, steps=STEPS, evals=EVALS
) -> dict:
    """One arm at one number of pairs and seed: its curve, test accuracy and seconds."""
    model = new_model(kind, task, seed=seed)
    recipe = RecallRecipe(lr=lr, batch_size=BATCH, evals=evals)
    run = train_recall(model, task, n_pairs, recipe, Run(steps=steps, seed=seed))
    return {
        "seed": seed,
        "curve": [[step, acc] for step, acc in run.evals],
        "test_accuracy": recall_accuracy(model, task.split("test", n_pairs, seed=seed)),
        "final_train_loss": sum(run.losses[-50:]) / len(run.losses[-50:]),
        "seconds": run.seconds,
    }


def race(kinds, pairs) -> dict:
    task = RecallTask()
    rows = []
    for kind in kinds:
        for n_pairs in pairs:
            lr, scores = choose_lr(kind, task, n_pairs, steps=SWEEP_STEPS, batch_size=BATCH)
            runs = [run_point(kind, task, n_pairs, lr, seed) for seed in SEEDS]
            rows.append({
                "kind": kind,
                "n_pairs": n_pairs,
                "parameters": new_model(kind, task).num_params(),
                "lr": lr,
                "lr_sweep": {str(k): v for k, v in scores.items()},
                "runs": runs,
            })  # fmt: skip
            accs = [r["test_accuracy"] for r in runs]
            print(f"{kind} {n_pairs} pairs: lr {lr:g}, test accuracy {accs}", flush=True)
    return {
        "task": {"n_keys": task.n_keys, "n_values": task.n_values, "queries_per_pair": 1},
        "budget": {
            "sweep_steps": SWEEP_STEPS,
            "steps": STEPS,
            "batch_size": BATCH,
            "evals": EVALS,
            "learning_rates": list(LEARNING_RATES),
        },  # fmt: skip
        "seeds": list(SEEDS),
        "rows": rows,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "machine": platform.machine(),
        "script": "scripts/experiments/recall_race.py",
    }


def longer(kinds, record: dict) -> list[dict]:
    """The recurrent arms given ``LONG_STEPS`` steps (seed 0, the race's learning rate), to
    see where their curves flatten."""
    task, rows = RecallTask(), []
    for row in record["rows"]:
        if row["kind"] in kinds and row["kind"] != "gpt" and row["n_pairs"] in LONG_PAIRS:
            point = run_point(row["kind"], task, row["n_pairs"], row["lr"], 0, LONG_STEPS,
                              LONG_EVALS)  # fmt: skip
            rows.append({"kind": row["kind"], "n_pairs": row["n_pairs"], "lr": row["lr"]} | point)
            print(f"{row['kind']} {row['n_pairs']} pairs, {LONG_STEPS} steps: "
                  f"{point['test_accuracy']:.3f}", flush=True)  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--pairs", nargs="+", type=int, default=list(PAIRS))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--merge", nargs="+", type=Path, help="join these parts into --out")
    parser.add_argument("--longer", action="store_true", help="add the longer recurrent runs")
    args = parser.parse_args(argv)
    if args.longer:
        torch.set_num_threads(1)
        record = json.loads(args.out.read_text())
        record["long_steps"] = LONG_STEPS
        record["long"] = longer(args.kinds, record)
    elif args.merge:
        parts = [json.loads(p.read_text()) for p in args.merge]
        record = parts[0] | {"rows": [row for part in parts for row in part["rows"]]}
        record["long"] = [row for part in parts for row in part.get("long", [])]
        record["long_steps"] = LONG_STEPS
    else:
        torch.set_num_threads(1)
        record = race(args.kinds, args.pairs)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    return record


if __name__ == "__main__":
    main()
