"""Chapter 11's second race: the GRU with attention against a Transformer with two layers
per side, on single numbers and on sentences of two numbers joined by "and" (sources twice
as long, up to 46 words).

The Transformer is the chapter's (d_model 64, 4 heads, pre-LN) with two blocks per side and
the two options of the 2017 craft that sped up the one-layer model in the ablation
(``craft_encoder_decoder.py``): label smoothing 0.1 and a 50-step warm-up then an
inverse-square-root decay. The GRU is chapter 3's with its settings. Both train as in the
chapter's race (batches of 64, Adam, one thread, rounds of 25 steps until 80% exact match
on 200 validation pairs, at most 400 steps), and report the steps, this thread's CPU
seconds of training (other processes do not inflate it) and the exact match on the first
1000 test pairs, overall and on the longest sources::

    .venv/bin/python scripts/experiments/longer_encoder_decoder.py --seeds 0 1 2 3 4 --markdown

With ``--curves`` it trains both models on single numbers for a fixed 600 steps instead,
measuring exact match on 500 validation pairs every 50 steps, to find where (if anywhere) the
Transformer draws level with the GRU and stays there::

    .venv/bin/python scripts/experiments/longer_encoder_decoder.py --curves --seeds 0 1 2 3 4

``tests/experiments/test_longer_encoder_decoder.py`` re-derives one row of each of the
chapter's two tables.
"""

from __future__ import annotations

import argparse
import functools
import re
import time
from dataclasses import replace
from pathlib import Path

import craft_encoder_decoder as craft
import torch

import transformer_lab
from transformer_lab.data import numbers
from transformer_lab.device import num_threads
from transformer_lab.models.rnn import Seq2Seq, Seq2SeqConfig
from transformer_lab.training.loop import train
from transformer_lab.training.losses import seq2seq_loss
from transformer_lab.training.run import Run
from transformer_lab.training.schedules import warmup_inverse_sqrt

MAX_STEPS = 400
LAYERS = 2
CRAFT = replace(craft.BARE, label_smoothing=0.1, warmup=50)
NAMES = ("GRU + attention", "Transformer 2+2")


def gru(data) -> Seq2Seq:
    """Chapter 3's GRU with dot-product attention, with its defaults."""
    cfg = Seq2SeqConfig(len(data.src_vocab), len(data.tgt_vocab), d_embed=64, d_hidden=128,
                        attention="dot")  # fmt: skip
    return Seq2Seq(cfg)


TRANSFORMER_TRANSLATE = craft.translate  # greedy decoding of an EncoderDecoder


def translate(net, src) -> torch.Tensor:
    """Greedy decoding for either model: ids ``[batch, n]`` without ``<bos>``."""
    if isinstance(net, Seq2Seq):
        return net.greedy_ids(src)
    return TRANSFORMER_TRANSLATE(net, src)


def test_exact_match(data, net, n: int = 1000) -> tuple[float, float, int]:
    """Exact match on the first ``n`` test pairs: overall, on the longest tenth of the
    sources, and how long those are at least (words)."""
    test = data.batch("test", torch.arange(n))
    with num_threads(1):
        ids = translate(net, test.src)
    words = [data.tgt_vocab.decode(row) for row in ids]
    correct = numbers.exact_match(words, [p.tgt for p in data.test[:n]]).float()
    lengths = data.src_lengths("test")[:n]
    cut = int(lengths.float().quantile(0.9))
    return correct.mean().item(), correct[lengths >= cut].mean().item(), cut


def race(seed: int, join: int) -> dict[str, dict]:
    """Both models from ``seed`` on sentences of ``join`` numbers, trained to the target."""
    data = numbers.load(join=join)
    old_translate, old_max = craft.translate, craft.MAX_STEPS
    craft.translate, craft.MAX_STEPS = translate, MAX_STEPS
    try:
        out = {}
        for name in NAMES:
            transformer_lab.seed_everything(seed)
            if name == NAMES[0]:
                net = gru(data)
                r = craft.train_to_target(data, net, seed, craft.BARE, lr=1e-2)
            else:
                net = craft.build(data, CRAFT, LAYERS)
                r = craft.train_to_target(data, net, seed, CRAFT)
            r["test"], r["longest"], r["cut"] = test_exact_match(data, net)
            out[name] = r
    finally:
        craft.translate, craft.MAX_STEPS = old_translate, old_max
    return out


CURVE_STEPS, EVERY, N_VAL = 600, 50, 500


def curves(seed: int, join: int = 1) -> dict[str, list[tuple[int, float, float]]]:
    """Both models from ``seed`` trained ``CURVE_STEPS`` steps; per name, a list of
    ``(steps, CPU seconds, exact match on N_VAL validation pairs)`` every ``EVERY`` steps."""
    data = numbers.load(join=join)
    out = {}
    for name in NAMES:
        transformer_lab.seed_everything(seed)
        if name == NAMES[0]:
            net, recipe, lr = gru(data), craft.BARE, 1e-2
        else:
            net, recipe, lr = craft.build(data, CRAFT, LAYERS), CRAFT, craft.LR
        optimizer = torch.optim.Adam(net.parameters(), lr=lr)
        schedule = warmup_inverse_sqrt(recipe.warmup) if recipe.warmup else None
        loss_fn = functools.partial(seq2seq_loss, label_smoothing=recipe.label_smoothing)
        batches = data.batches("train", 64, seed=seed)
        points, cpu = [], 0.0
        for done in range(0, CURVE_STEPS, EVERY):

            def offset(step, done=done, schedule=schedule):
                return schedule(step + done)

            run = train(
                net,
                batches,
                run=Run(steps=EVERY, threads=1),
                loss_fn=loss_fn,
                optimizer=optimizer,
                lr_schedule=offset if schedule else None,
            )
            cpu += sum(run.step_cpu_seconds)
            points.append((done + EVERY, cpu, val_exact_match(data, net, N_VAL)))
        out[name] = points
    return out


def val_exact_match(data, net, n: int) -> float:
    val = data.batch("val", torch.arange(n))
    with num_threads(1):
        ids = translate(net, val.src)
    words = [data.tgt_vocab.decode(row) for row in ids]
    return numbers.exact_match(words, [p.tgt for p in data.val[:n]]).float().mean().item()


def level_from(points: dict[str, list[tuple[int, float, float]]]) -> int | None:
    """The first checkpoint from which the Transformer's exact match is at least the GRU's at
    every later checkpoint (None: never)."""
    gru_points, tf_points = points[NAMES[0]], points[NAMES[1]]
    start = None
    for (step, _, g), (_, _, t) in zip(gru_points, tf_points, strict=True):
        if t < g:
            start = None
        elif start is None:
            start = step
    return start


CURVE_AT = (100, 300)  # steps whose exact match the table shows
LATE = (450, 600)  # the table's mean over the checkpoints from LATE[0] to LATE[1]


def late_mean(points: list[tuple[int, float, float]]) -> float:
    """Mean exact match over the checkpoints from ``LATE[0]`` to ``LATE[1]`` steps."""
    late = [acc for step, _, acc in points if LATE[0] <= step <= LATE[1]]
    return sum(late) / len(late)


def curve_line(seed: int, points) -> str:
    cells = []
    for name in NAMES:
        at = {step: acc for step, _, acc in points[name]}
        cells.append(" ".join(f"{step}:{at[step]:.3f}" for step in sorted(at)))
        cells.append(f"{points[name][-1][1]:.1f} s CPU")
    return f"curve seed {seed} | " + " | ".join(cells) + f" | level from {level_from(points)}"


CURVE = re.compile(r"^curve seed (\d+) \| (.+?) \| ([\d.]+) s CPU \| (.+?) \| ([\d.]+) s CPU", re.M)


def read_curves(text: str) -> dict[int, dict[str, list[tuple[int, float, float]]]]:
    """seed -> the points :func:`curves` returned (CPU seconds only at the last point)."""
    out = {}
    for m in CURVE.finditer(text):
        seed, gru_text, gru_cpu, tf_text, tf_cpu = m.groups()
        out[int(seed)] = {
            name: [(int(a), float(cpu) if i == len(text_.split()) - 1 else float("nan"), float(b))
                   for i, (a, b) in enumerate(p.split(":") for p in text_.split())]
            for name, text_, cpu in ((NAMES[0], gru_text, gru_cpu), (NAMES[1], tf_text, tf_cpu))
        }  # fmt: skip
    return out


def curve_row(seed: int, points) -> str:
    at = {name: {step: acc for step, _, acc in points[name]} for name in NAMES}
    cells = [seed]
    for step in CURVE_AT:
        cells += [f"{at[name][step]:.3f}" for name in NAMES]
    cells += [f"{late_mean(points[name]):.3f}" for name in NAMES]
    level = level_from(points)
    cells.append("never" if level is None else level)
    return "| " + " | ".join(str(c) for c in cells) + " |"


def print_curves(all_points: dict[int, dict]) -> None:
    head = ["seed"]
    for step in CURVE_AT:
        head += [f"GRU, {step} steps", f"Transformer, {step} steps"]
    head += [f"GRU, mean {LATE[0]}-{LATE[1]}", f"Transformer, mean {LATE[0]}-{LATE[1]}"]
    head.append("Transformer level from step")
    print("| " + " | ".join(head) + " |")
    print("|" + "---:|" * len(head))
    for seed, points in sorted(all_points.items()):
        print(curve_row(seed, points))


LINE = re.compile(
    r"^join (\d) seed (\d+) (.+?): +(\d+) steps, ([\d.]+) s CPU, val ([\d.]+), "
    r"test ([\d.]+), longest \(>= (\d+) words\) ([\d.]+)",
    re.M,
)


def line(join: int, seed: int, name: str, r: dict) -> str:
    return (
        f"join {join} seed {seed} {name:>15}: {r['steps']:3d} steps, {r['cpu_seconds']:.1f} s "
        f"CPU, val {r['val']:.3f}, test {r['test']:.3f}, longest (>= {r['cut']} words) "
        f"{r['longest']:.3f}"
    )


def read_lines(text: str) -> dict[tuple[int, int], dict[str, dict]]:
    """(join, seed) -> name -> result, from the lines :func:`main` prints."""
    out: dict[tuple[int, int], dict[str, dict]] = {}
    for m in LINE.finditer(text):
        join, seed, name, steps, cpu, val, test, cut, longest = m.groups()
        out.setdefault((int(join), int(seed)), {})[name] = {
            "steps": int(steps), "cpu_seconds": float(cpu), "val": float(val),
            "test": float(test), "cut": int(cut), "longest": float(longest),
        }  # fmt: skip
    return out


def _steps(r: dict) -> str:
    """Steps to the target, or ">steps" for a run that stopped short of it."""
    return f"{r['steps']}" if r["val"] >= craft.TARGET else f">{r['steps']}"


def markdown_row(join: int, seed: int, report: dict[str, dict]) -> str:
    g, t = report[NAMES[0]], report[NAMES[1]]
    cells = [join, seed, _steps(g), _steps(t), f"{g['cpu_seconds']:.1f}"]
    cells += [f"{t['cpu_seconds']:.1f}", f"{g['longest']:.2f}", f"{t['longest']:.2f}"]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def print_table(reports: dict[tuple[int, int], dict[str, dict]]) -> None:
    print("| numbers per sentence | seed | GRU steps | Transformer steps | GRU CPU s | "
          "Transformer CPU s | GRU, longest tenth | Transformer, longest tenth |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (join, seed), report in sorted(reports.items()):
        print(markdown_row(join, seed, report))


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(5)))
    parser.add_argument("--join", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--markdown", action="store_true", help="print the chapter's table")
    parser.add_argument("--merge", nargs="+", help="print the table of these logs' lines")
    parser.add_argument("--curves", action="store_true", help="fixed 600 steps, curves")
    args = parser.parse_args(argv)
    if args.curves and args.merge:
        all_points = {}
        for path in args.merge:
            all_points.update(read_curves(Path(path).read_text()))
        print_curves(all_points)
        return all_points
    if args.curves:
        all_points = {}
        for seed in args.seeds:
            all_points[seed] = curves(seed)
            print(curve_line(seed, all_points[seed]), flush=True)
        if args.markdown:
            print_curves(all_points)
        return all_points
    if args.merge:
        reports: dict = {}
        for path in args.merge:
            for key, by_name in read_lines(Path(path).read_text()).items():
                reports.setdefault(key, {}).update(by_name)
        print_table(reports)
        return reports
    reports = {}
    for join in args.join:
        for seed in args.seeds:
            start = time.perf_counter()
            reports[join, seed] = report = race(seed, join)
            for name, r in report.items():
                print(line(join, seed, name, r), flush=True)
            print(f"({time.perf_counter() - start:.0f} s)", flush=True)
    if args.markdown:
        print_table(reports)
    return reports


if __name__ == "__main__":
    main()
