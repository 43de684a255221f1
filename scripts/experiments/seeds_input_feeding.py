"""Chapter 3's comparison of input feeding over several random starts: the GRU with
dot-product attention on English -> German number words, trained with and without input
feeding (``Seq2SeqConfig(input_feeding=True)``, Luong et al. 2015).

For each seed, both models are built and trained exactly as in the chapter's section on
input feeding (the small models of its score comparison: d_embed 32, d_hidden 64, 150 steps
of 64 pairs, Adam at 1e-2, one thread; the same seed for the weights and the batches of
both), with the exact match on the 500 validation pairs every 25 steps. Then both translate
the 2000 test pairs greedily. One line per seed and model: the validation curve, the steps
to the target, test exact match overall and by source length; at the end the differences
(with minus without) over the seeds, and with ``--markdown`` the chapter's table::

    .venv/bin/python scripts/experiments/seeds_input_feeding.py               # seeds 0-4
    .venv/bin/python scripts/experiments/seeds_input_feeding.py --seeds 0 1 --markdown

``tests/experiments/test_seeds_input_feeding.py`` re-derives one row of the chapter's table.
"""

from __future__ import annotations

import argparse
import math

import torch

import transformer_lab
from transformer_lab.data import numbers
from transformer_lab.device import num_threads
from transformer_lab.models.rnn import Seq2Seq, Seq2SeqConfig
from transformer_lab.training.loop import train
from transformer_lab.training.run import Run

STEPS, BATCH_SIZE, LR, EVAL_EVERY = 150, 64, 1e-2, 25
D_EMBED, D_HIDDEN = 32, 64
TARGET = 0.80  # validation exact match that counts as "learned"
BINS = [1, 5, 9, 13, 17, 21, 24]
NAMES = ("without", "with")  # input feeding off, on


def exact_match(data, net, split: str) -> torch.Tensor:
    """Per-pair exact match (bool) of ``net``'s greedy translations of ``split``."""
    with num_threads(1):
        predicted = numbers.predict(net.greedy_ids, data, split)
    return numbers.exact_match(predicted, [p.tgt for p in data.split(split)])


def steps_to(evals, target: float = TARGET) -> float:
    """The first step whose validation exact match reached ``target`` (inf if none did)."""
    return next((step for step, acc in evals if acc >= target), math.inf)


def train_one(data, seed: int, input_feeding: bool, steps: int = STEPS, progress=False):
    """The model with or without input feeding from ``seed``, trained as in the chapter.

    Returns the trained ``net`` and the loop's result (``evals``: (step, validation exact
    match) every ``EVAL_EVERY`` steps)."""
    transformer_lab.seed_everything(seed)
    cfg = Seq2SeqConfig(
        len(data.src_vocab), len(data.tgt_vocab), d_embed=D_EMBED, d_hidden=D_HIDDEN,
        attention="dot", input_feeding=input_feeding,
    )  # fmt: skip
    net = Seq2Seq(cfg)
    run = train(
        net,
        data.batches("train", BATCH_SIZE, seed=seed),
        run=Run(
            steps=steps,
            seed=seed,
            threads=1,
            progress=progress,
            eval_every=EVAL_EVERY,
            eval_fn=lambda m: exact_match(data, m, "val").float().mean().item(),
        ),
        lr=LR,
    )
    return net, run


def compare(data, seed: int, steps: int = STEPS) -> dict[str, dict]:
    """Both models from ``seed``: validation curve, steps to the target, test accuracies."""
    lengths = data.src_lengths("test")
    report = {}
    for name, feeding in zip(NAMES, (False, True), strict=True):
        net, run = train_one(data, seed, feeding, steps)
        correct = exact_match(data, net, "test")
        table = numbers.accuracy_by_length(correct, lengths, BINS)
        report[name] = {
            "evals": run.evals, "steps_to_target": steps_to(run.evals),
            "val": run.evals[-1][1], "test": correct.float().mean().item(),
            "by_length": {label: acc for label, acc, _ in table}, "seconds": run.seconds,
        }  # fmt: skip
    return report


def difference(report, key: str) -> float:
    """With input feeding minus without, for ``key`` ("test", "val" or a length bin)."""
    if key in report[NAMES[0]]:
        return report[NAMES[1]][key] - report[NAMES[0]][key]
    return report[NAMES[1]]["by_length"][key] - report[NAMES[0]]["by_length"][key]


def markdown_row(seed: int, report) -> str:
    """One row of the chapter's seed table: per model, validation and test exact match and
    the steps to the target; then the test difference."""
    cells = [str(seed)]
    for name in NAMES:
        r = report[name]
        steps = r["steps_to_target"]
        cells += [f"{r['val']:.3f}", f"{r['test']:.3f}", "-" if math.isinf(steps) else str(steps)]
    cells.append(f"{difference(report, 'test'):+.3f}")
    return "| " + " | ".join(cells) + " |"


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(5)))
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--markdown", action="store_true", help="print the chapter's table")
    args = parser.parse_args(argv)
    data = numbers.load()
    reports = {}
    for seed in args.seeds:
        reports[seed] = report = compare(data, seed, args.steps)
        for name, r in report.items():
            curve = " ".join(f"{acc:.2f}" for _, acc in r["evals"])
            bins = " ".join(f"{label}:{a:.2f}" for label, a in r["by_length"].items())
            print(f"seed {seed} {name:>7} input feeding: val {curve} | to {TARGET:.0%}: "
                  f"{r['steps_to_target']} | test {r['test']:.3f} | {bins} | "
                  f"{r['seconds']:.1f} s", flush=True)  # fmt: skip
    for key in ("val", "test", "21-23"):
        diffs = [difference(r, key) for r in reports.values()]
        print(f"with minus without, {key}: " + ", ".join(f"{d:+.3f}" for d in diffs)
              + f" (from {min(diffs):+.3f} to {max(diffs):+.3f})")  # fmt: skip
    if args.markdown:
        print("| seed | val, without | test, without | steps, without | val, with | "
              "test, with | steps, with | test difference |")  # fmt: skip
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for seed, report in reports.items():
            print(markdown_row(seed, report))
    return reports


if __name__ == "__main__":
    main()
