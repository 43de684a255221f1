"""Time one update of the attention explorer for a 16-token sentence.

Two numbers, medians over repeated updates that cycle the controls (d_k, temperature,
mask) the way a reader moving them would:

* compute: ``transformer_lab.viz.chapters.toy_attention.explore`` alone (the budget is 50 ms);
* full update: what the app does when a control moves: compute, redraw the three SVG
  heatmaps into the HTML widget, and rewrite the caption.

    python scripts/bench/bench_widgets.py [--repeats 200] [--threads N]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import torch

from transformer_lab.viz.chapters import toy_attention

SENTENCE = "The quick brown fox jumps over the lazy dog while the cat sleeps on the mat"
BUDGET_MS = 50.0


def _settings():
    """Every combination of the controls, cycled."""
    d_ks = (8, 16, 32, 64)
    temperatures = (0.5, 1.0, 2.0)
    kinds = ("none", "causal", "padding", "causal+padding")
    return itertools.cycle(itertools.product(d_ks, temperatures, kinds))


def _summary(times_ms: list[float]) -> str:
    ordered = sorted(times_ms)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    median = statistics.median(ordered)
    return f"median {median:7.2f} ms   p90 {p90:7.2f} ms   max {ordered[-1]:7.2f} ms"


def bench_compute(repeats: int) -> list[float]:
    settings = _settings()
    for _ in range(48):  # warm up every setting once (caches, first-call overheads)
        toy_attention.explore(SENTENCE, *next(settings))
    times = []
    for _ in range(repeats):
        d_k, temperature, kind = next(settings)
        start = time.perf_counter()
        toy_attention.explore(SENTENCE, d_k, temperature, kind)
        times.append(1e3 * (time.perf_counter() - start))
    return times


def bench_update(repeats: int) -> tuple[list[float], list[float], list[float]]:
    """Move one control per update (d_k, then temperature, then mask, round robin)."""
    app = toy_attention.attention_explorer(SENTENCE)
    moves = itertools.cycle(
        [
            (app.d_k, itertools.cycle((32, 64, 8, 16))),
            (app.temperature, itertools.cycle((2.0, 0.5, 1.0))),
            (app.mask, itertools.cycle(("causal", "padding", "causal+padding", "none"))),
        ]
    )
    compute, redraw, total = [], [], []
    for i in range(repeats + 12):
        control, values = next(moves)
        before = app.n_updates
        start = time.perf_counter()
        control.value = next(values)
        elapsed = 1e3 * (time.perf_counter() - start)
        assert app.n_updates == before + 1, "every move must trigger exactly one update"
        if i >= 12:  # the first rounds warm the caches
            compute.append(app.timings["compute_ms"])
            redraw.append(app.timings["redraw_ms"])
            total.append(elapsed)
    return compute, redraw, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    n_tokens = len(toy_attention.tokenize(SENTENCE))
    print(f"sentence: {n_tokens} tokens; torch threads: {torch.get_num_threads()}")
    compute = bench_compute(args.repeats)
    print(f"explore() compute      : {_summary(compute)}")
    app_compute, redraw, total = bench_update(max(30, args.repeats // 4))
    print(f"update: compute part   : {_summary(app_compute)}")
    print(f"update: redraw part    : {_summary(redraw)}")
    print(f"update: full (control) : {_summary(total)}")
    verdict = "within" if statistics.median(compute) < BUDGET_MS else "OVER"
    print(f"compute median is {verdict} the {BUDGET_MS:.0f} ms budget")


if __name__ == "__main__":
    main()
