"""Chapters 2 and 3's bottleneck, trained to a plateau: the GRU encoder-decoder without
attention (context c = h_n) and the same model with dot-product attention, on English ->
German number words, each over seeds 0, 1 and 2, for far longer than the pages' 200 steps.

    nice -n 10 .venv/bin/python scripts/experiments/bottleneck_plateau.py

Both arms take the pages' code path: ``Seq2SeqConfig(d_embed=64, d_hidden=128)`` built
after ``seed_everything(seed)``, :func:`~transformer_lab.training.loop.train` with Adam at a
constant 1e-2, batches of 64 training pairs drawn with the same seed, the gradient clipped
at 1, one CPU thread. The pages use seed 0 and stop both at 200 steps. Here both arms are
trained to a plateau, and the control is given five times the steps of the model it faces:
10,000 steps (640,000 pairs seen) without attention, 2,000 (128,000) with. The exact match
on the 500 validation pairs is recorded every ``EVAL_EVERY`` steps, and the record states
for each run whether its curve is flat: the mean of its last quarter at most
``PLATEAU_TOLERANCE`` from the mean of the quarter before.

Then each model translates the 2000 test pairs greedily, at the end and at the pages' 200
steps. The record holds per arm and seed: the validation curve, the test exact match
overall and per source-length bin of the pages (1-4, ..., 21-23 words), the numbers of
chapter 2's independence argument (exact match on numbers below 1000, its fourth power,
exact match on twelve-digit numbers) and of its groups (how often each of the four groups
of a twelve-digit number is right), the budget (steps, pairs seen, the training thread's
CPU seconds, evaluation left out) and the first ``PREFIX`` training losses, which
``tests/experiments/test_bottleneck_plateau.py`` re-derives.

It writes ``transformer_lab/assets/bottleneck_plateau.json``; ``--seeds``, ``--arms`` and
``--steps`` run less (into ``--out``). On the 2-core machine that built the book, training
took about six minutes of processor time per seed without attention and a minute and a half
with, on one thread; the whole run, evaluations included and other work beside it, 39
minutes of wall time.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import torch

import transformer_lab
from transformer_lab.data import numbers
from transformer_lab.models.rnn import Seq2Seq, Seq2SeqConfig
from transformer_lab.pretrained.book_gpt import DATA_DIR
from transformer_lab.training.loop import train
from transformer_lab.training.run import Run

SEEDS = (0, 1, 2)
BATCH_SIZE, LR, EVAL_EVERY = 64, 1e-2, 200
D_EMBED, D_HIDDEN = 64, 128
PAGE_STEPS = 200  # where chapters 2 and 3 stop
PLATEAU_TOLERANCE = 0.02  # the most the last quarter of the curve may gain on the one before
PREFIX = 20  # training losses kept for the test to re-derive
BINS = [1, 5, 9, 13, 17, 21, 24]
# arm -> (attention, steps): both to a plateau, the control given five times the steps
ARMS = {"no attention": (None, 10_000), "attention": ("dot", 2_000)}
SCALE_WORDS = {"milliarden", "milliarde", "millionen", "million", "tausend"}
OUT = DATA_DIR / "bottleneck_plateau.json"


def new_model(data, attention: str | None, seed: int) -> Seq2Seq:
    """The pages' model, with or without attention, its weights drawn from ``seed``."""
    transformer_lab.seed_everything(seed)
    config = Seq2SeqConfig(
        len(data.src_vocab), len(data.tgt_vocab), d_embed=D_EMBED, d_hidden=D_HIDDEN,
        attention=attention,
    )  # fmt: skip
    return Seq2Seq(config)


def exact_match(data, net, split: str) -> torch.Tensor:
    """Per-pair exact match (bool) of ``net``'s greedy translations of ``split``."""
    predicted = numbers.predict(net.greedy_ids, data, split)
    return numbers.exact_match(predicted, [p.tgt for p in data.split(split)])


def number_groups(tokens) -> list[list[str]]:
    """German tokens split after each scale word: billions, millions, thousands, units."""
    groups = [[]]
    for token in tokens:
        groups[-1].append(token)
        if token in SCALE_WORDS:
            groups.append([])
    return groups


def group_accuracy(predictions, pairs) -> list[float]:
    """Fraction of the twelve-digit pairs with each of the four groups exactly right."""
    right, count = np.zeros(4), 0
    for predicted, pair in zip(predictions, pairs, strict=True):
        reference = number_groups(pair.tgt)
        if len(str(pair.number)) == 12 and len(reference) == 4:
            mine = number_groups(predicted)
            right += [k < len(mine) and mine[k] == reference[k] for k in range(4)]
            count += 1
    return (right / count).tolist()


def plateau(curve, tolerance: float = PLATEAU_TOLERANCE) -> dict:
    """Whether a validation curve [(step, score), ...] is flat at its end: the mean score of
    its last quarter at most ``tolerance`` above the mean of the quarter before (and not
    below it by more, which would be a collapse). Means over a quarter, not single points,
    since one evaluation on 500 pairs moves by about 0.02 from noise alone."""
    scores = [score for _, score in curve]
    quarter = len(scores) // 4
    if quarter < 2:
        raise ValueError(f"a plateau needs at least 8 evaluations, got {len(scores)}")
    last = statistics.mean(scores[-quarter:])
    before = statistics.mean(scores[-2 * quarter : -quarter])
    return {
        "from_step": curve[-2 * quarter][0],
        "quarter_before": before,
        "last_quarter": last,
        "gain": last - before,
        "flat": abs(last - before) <= tolerance,
    }


def train_arm(data, arm: str, seed: int, steps: int | None = None, on_page_steps=None):
    """``arm`` from ``seed``, trained the pages' way for its steps (or ``steps``), with the
    validation exact match every ``EVAL_EVERY`` steps; ``on_page_steps(model)`` is called
    once, at step ``PAGE_STEPS``. Returns the model and the loop's result."""
    attention, arm_steps = ARMS[arm]
    steps = steps or arm_steps
    net = new_model(data, attention, seed)
    clock = {"evals": 0}

    def validate(model) -> float:  # called every EVAL_EVERY steps, and at the end
        clock["evals"] += 1
        if on_page_steps is not None and steps >= clock["evals"] * EVAL_EVERY == PAGE_STEPS:
            on_page_steps(model)
        return exact_match(data, model, "val").float().mean().item()

    run = train(
        net,
        data.batches("train", BATCH_SIZE, seed=seed),
        run=Run(
            steps=steps,
            seed=seed,
            threads=1,
            eval_every=EVAL_EVERY,
            eval_fn=validate,
        ),
        lr=LR,
    )
    return net, run


def scores_on_test(data, net) -> dict:
    """The test exact match of the pages: overall, by source length, and chapter 2's
    independence argument and groups."""
    predictions = numbers.predict(net.greedy_ids, data, "test")
    correct = numbers.exact_match(predictions, [p.tgt for p in data.test])
    lengths = data.src_lengths("test")
    digits = np.array([len(str(p.number)) for p in data.test])
    one_group = correct[digits <= 3].float().mean().item()
    table = numbers.accuracy_by_length(correct, lengths, BINS)
    return {
        "exact_match": correct.float().mean().item(),
        "by_length": {label: acc for label, acc, _ in table},
        "below_1000": one_group,
        "below_1000_fourth_power": one_group**4,
        "twelve_digits": correct[digits == 12].float().mean().item(),
        "twelve_digit_groups": group_accuracy(predictions, data.test),
    }


def run_arm(data, arm: str, seed: int, steps: int | None = None) -> dict:
    """One arm at one seed: its budget, validation curve, plateau and test scores, at the
    end and at the pages' ``PAGE_STEPS`` steps."""
    at_page = {}
    net, run = train_arm(data, arm, seed, steps, lambda m: at_page.update(scores_on_test(data, m)))
    curve = [[step, score] for step, score in run.evals]
    return {
        "seed": seed,
        "steps": run.steps,
        "pairs_seen": run.steps * BATCH_SIZE,
        "cpu_seconds": sum(run.step_cpu_seconds),
        "curve": curve,
        "plateau": plateau(curve),
        "first_losses": run.losses[:PREFIX],
        "final_train_loss": statistics.mean(run.losses[-100:]),
        "test": scores_on_test(data, net),
        "test_at_page_steps": at_page,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    parser.add_argument("--steps", type=int, help="stop every arm here (a short trial)")
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    data = numbers.load()
    runs, start = [], time.perf_counter()
    for seed in args.seeds:
        for arm in args.arms:
            row = {"arm": arm} | run_arm(data, arm, seed, args.steps)
            runs.append(row)
            curve = " ".join(f"{score:.2f}" for _, score in row["curve"])
            test = row["test"]
            print(f"seed {seed} {arm}: val {curve} | flat {row['plateau']['flat']} "
                  f"({row['plateau']['gain']:+.3f}) | test "
                  f"{test['exact_match']:.3f}, 21-23 words {test['by_length']['21-23']:.3f}, "
                  f"below 1000 {test['below_1000']:.3f} (^4 {test['below_1000_fourth_power']:.3f}),"
                  f" twelve digits {test['twelve_digits']:.3f} | {row['cpu_seconds']:.0f} s",
                  flush=True)  # fmt: skip
    record = {
        "budget": {
            "steps": {arm: args.steps or ARMS[arm][1] for arm in args.arms},
            "batch_size": BATCH_SIZE, "lr": LR, "eval_every": EVAL_EVERY, "d_embed": D_EMBED,
            "d_hidden": D_HIDDEN, "page_steps": PAGE_STEPS,
        },
        "plateau_rule": {"tolerance": PLATEAU_TOLERANCE},
        "bins": BINS,
        "seeds": args.seeds,
        "runs": runs,
        "seconds": time.perf_counter() - start,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "machine": platform.machine(),
        "script": "scripts/experiments/bottleneck_plateau.py",
    }  # fmt: skip
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    return record


if __name__ == "__main__":
    main()
