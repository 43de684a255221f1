"""Time one process against N processes (torchrun, gloo on the CPU) training the same run.

    .venv/bin/python scripts/bench/bench_data_parallel.py [--procs 2] [--repeats 3] [--steps 60]

Each repeat runs ``python -m transformer_lab.training.train_gpt`` once on one process and once on
``--procs`` processes (alternating, so that a change in the machine's load hits both), with
the same preset, global batch and seed, one thread per process. Prints the medians over
repeats of: wall milliseconds per step (median over the steps after the fifth), tokens per
second, and milliseconds of the main thread's own computing per step per process; and the
largest weight difference between the runs' final checkpoints.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from transformer_lab.training.checkpoint import load_checkpoint


def launch(n_procs: int, out: Path, args) -> dict:
    if n_procs == 1:
        cmd = [sys.executable, "-m", "transformer_lab.training.train_gpt"]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
        cmd += [f"--nproc_per_node={n_procs}", "-m", "transformer_lab.training.train_gpt"]
    cmd += ["--preset", args.preset, "--steps", str(args.steps), "--batch-size",
            str(args.batch_size), "--device", "cpu", "--threads", "1", "--eval-tokens", "2000",
            "--sample", "0", "--no-progress", "--out", str(out)]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return json.loads((out / "summary.json").read_text())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--preset", default="book-cpu")
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-dp-"))
    rows = {1: [], args.procs: []}
    for r in range(args.repeats):
        for n in rows:
            s = launch(n, root / f"{n}-{r}", args)
            wall = statistics.median(s["step_seconds"][5:])
            cpu = statistics.median(s["step_cpu_seconds"][5:])
            tokens = s["recipe"]["batch_size"] * s["config"]["n_ctx"]
            rows[n].append((wall, tokens / wall, cpu))
    a = load_checkpoint(root / f"1-{args.repeats - 1}" / "checkpoint.pt")["model"]
    b = load_checkpoint(root / f"{args.procs}-{args.repeats - 1}" / "checkpoint.pt")["model"]
    differ = max(float((a[k] - b[k]).abs().max()) for k in a)
    print(
        f"{args.preset}, global batch {args.batch_size}, {args.steps} steps, {args.repeats} "
        f"repeats, torch {torch.__version__}, {os.cpu_count()} cores"
    )
    print(
        "| processes | ms per step (wall) | tokens per second "
        "| ms computing per step, per process |"
    )
    print("|---|---|---|---|")
    for n, values in rows.items():
        wall, tps, cpu = (statistics.median(v[i] for v in values) for i in range(3))
        print(f"| {n} | {wall * 1e3:.1f} | {tps:,.0f} | {cpu * 1e3:.1f} |")
    one, many = (statistics.median(v[0] for v in rows[n]) for n in rows)
    print(
        f"speed-up {one / many:.2f}; "
        f"largest weight difference after {args.steps} steps {differ:.1e}"
    )


if __name__ == "__main__":
    main()
