"""Benchmark our attention against PyTorch's on the CPU: time and peak memory.

Run with ``make bench`` (or ``python scripts/bench/bench_attention.py``). It writes a Markdown
table to stdout and to ``_build/bench/attention.md``.

What is measured
----------------
Self-attention of ``batch=1`` sequence, ``n_heads=8``, ``d_head=64`` (``d_model=512``),
float32, under ``torch.inference_mode()``, at sequence lengths 64 to 2048, for:

- ``ours explicit``: ``scaled_dot_product_attention(q, k, v)`` with ``need_weights=True``
  (scores, softmax and weights are materialised, as the book's figures need);
- ``ours fused``: the same call with ``need_weights=False``, which validates its inputs
  and hands over to ``F.scaled_dot_product_attention``;
- ``F.sdpa``: ``torch.nn.functional.scaled_dot_product_attention`` called directly;
- ``ours MHA``: our ``MultiHeadAttention`` (projections included), ``need_weights=False``;
- ``nn.MHA``: ``torch.nn.MultiheadAttention`` with the same weights (copied with
  ``MultiHeadAttention.from_torch``), ``batch_first=True``, ``need_weights=False``.

The first three take ``q, k, v`` of shape ``[1, 8, pos, 64]``; the two modules take
``x [1, pos, 512]``. Each is measured without a mask and with a causal bool mask
``[pos, pos]`` (``attn_mask=`` for torch, ``mask=`` for ours; the same mask tensor).

Time: the median of repeated calls (at least 7, more for short calls, about 1.5 seconds
per case). The cases of one sequence length are run round-robin, one call of each in a
shuffled order per round, so that load from other processes on a shared machine falls on
all of them alike. The ratio ``fused / F.sdpa``, the number the 10 % goal is about, is
the median over rounds of the ratio of the two calls, which run back to back in each
round (in a random order), so that both see the same load.
``--threads N`` sets ``torch.set_num_threads`` (default: PyTorch's choice). On a machine
shared with other work, ``--threads 1`` gives steadier numbers: a multi-threaded kernel
waits for its slowest thread, and a thread that loses its core stalls the whole call.

Peak memory: CPU tensors have no allocator statistics, so each case runs once in a fresh
Python process. After the inputs are built and a small warm-up call has started the
thread pools, the process resets its peak resident set size (writing ``5`` to
``/proc/self/clear_refs``, Linux), runs the case once, and reports ``VmHWM - VmRSS``: the
extra resident memory at the peak of the call, in MiB. This counts what the kernels
touch (scores, weights, temporaries) and not the inputs; a fresh process keeps memory
freed by an earlier case from being reused unseen. Without ``/proc`` (macOS, Windows)
the column reads ``n/a``. Small values (below about 1 MiB) are at the resolution of the
method.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from transformer_lab.nn.attention import scaled_dot_product_attention  # noqa: E402
from transformer_lab.nn.masks import causal_mask  # noqa: E402
from transformer_lab.nn.multi_head import MultiHeadAttention  # noqa: E402

BATCH, N_HEADS, D_HEAD = 1, 8, 64
D_MODEL = N_HEADS * D_HEAD
LENGTHS = (64, 128, 256, 512, 1024, 2048)
CASES = ("ours explicit", "ours fused", "F.sdpa", "ours MHA", "nn.MHA")
MASKS = ("none", "causal")


def make_case(case: str, pos: int, masking: str):
    """Build the inputs of one case and return a zero-argument function that runs it."""
    torch.manual_seed(0)
    mask = causal_mask(pos) if masking == "causal" else None
    if case in ("ours explicit", "ours fused", "F.sdpa"):
        q, k, v = (torch.randn(BATCH, N_HEADS, pos, D_HEAD) for _ in range(3))
        if case == "F.sdpa":
            return lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        need = case == "ours explicit"
        return lambda: scaled_dot_product_attention(q, k, v, mask, need_weights=need)
    theirs = nn.MultiheadAttention(D_MODEL, N_HEADS, batch_first=True).eval()
    ours = MultiHeadAttention.from_torch(theirs).eval()
    x = torch.randn(BATCH, pos, D_MODEL)
    if case == "nn.MHA":
        torch_mask = None if mask is None else ~mask  # PyTorch: True = ignore
        return lambda: theirs(x, x, x, attn_mask=torch_mask, need_weights=False)
    return lambda: ours(x, mask=mask, need_weights=False)


def time_cases(pos: int, masking: str, budget_s: float = 1.5) -> tuple[dict[str, float], float]:
    """Median seconds per call of every case at one length, measured round-robin, and the
    median over rounds of the ratio of two back-to-back calls, ours fused / F.sdpa."""
    fns = {case: make_case(case, pos, masking) for case in CASES}
    # the two calls compared by the goal always run back to back, in a random order
    units = [[c] for c in CASES if c not in ("ours fused", "F.sdpa")] + [["ours fused", "F.sdpa"]]
    with torch.inference_mode():
        for fn in fns.values():  # warm-up
            fn()
        start = time.perf_counter()
        for fn in fns.values():
            fn()
        one_round = time.perf_counter() - start
        repeats = max(7, min(300, int(budget_s * len(CASES) / max(one_round, 1e-9))))
        times: dict[str, list[float]] = {case: [] for case in CASES}
        rng = random.Random(pos)
        for _ in range(repeats):
            rng.shuffle(units)
            for unit in units:
                rng.shuffle(unit)
                for case in unit:
                    t0 = time.perf_counter()
                    fns[case]()
                    times[case].append(time.perf_counter() - t0)
    ratios = [f / s for f, s in zip(times["ours fused"], times["F.sdpa"], strict=True)]
    return {case: statistics.median(ts) for case, ts in times.items()}, statistics.median(ratios)


def _status_kib(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def peak_memory_child(case: str, pos: int, masking: str) -> None:
    """Run in a fresh process: print the extra resident memory at the call's peak (MiB)."""
    fn = make_case(case, pos, masking)
    with torch.inference_mode():
        make_case(case, 8, masking)()  # start thread pools and lazy initialisation
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current resident set size
        before = _status_kib("VmRSS")
        fn()
        peak = _status_kib("VmHWM")
    print(json.dumps({"peak_mib": (peak - before) / 1024}))


def peak_memory(case: str, pos: int, masking: str) -> float | None:
    if not Path("/proc/self/clear_refs").exists():
        return None
    cmd = [sys.executable, __file__, "--memory-child", case, str(pos), masking]
    cmd += ["--threads", str(torch.get_num_threads())]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        print(result.stderr, file=sys.stderr)
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])["peak_mib"]


def fmt_time(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}" if seconds < 0.01 else f"{seconds * 1e3:.1f}"


def table(masking: str, lengths, with_memory: bool) -> str:
    header = "| pos | " + " | ".join(f"{c} ms" for c in CASES) + " | fused / F.sdpa |"
    if with_memory:
        header += " " + " | ".join(f"{c} MiB" for c in CASES) + " |"
    lines = [header, "|" + " --- |" * (header.count("|") - 1)]
    for pos in lengths:
        times, ratio = time_cases(pos, masking)
        row = f"| {pos} | " + " | ".join(fmt_time(times[c]) for c in CASES) + f" | {ratio:.2f} |"
        if with_memory:
            mems = [peak_memory(c, pos, masking) for c in CASES]
            row += " " + " | ".join("n/a" if m is None else f"{m:.1f}" for m in mems) + " |"
        lines.append(row)
        print(row, file=sys.stderr, flush=True)
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory columns")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads(N)")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "bench" / "attention.md")
    parser.add_argument(
        "--memory-child", nargs=3, metavar=("CASE", "POS", "MASK"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args.memory_child:
        case, pos, masking = args.memory_child
        peak_memory_child(case, int(pos), masking)
        return
    setup = (
        f"batch={BATCH}, n_heads={N_HEADS}, d_head={D_HEAD} (d_model={D_MODEL}), float32, "
        f"torch {torch.__version__}, torch threads: {torch.get_num_threads()}, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
        "median time per call in ms; peak extra resident memory of one call in MiB "
        "(fresh process per case); see the script's docstring for the method."
    )
    parts = ["# Attention benchmark (CPU)", "", setup]
    for masking in MASKS:
        title = "no mask" if masking == "none" else "causal bool mask [pos, pos]"
        print(f"{title}:", file=sys.stderr, flush=True)
        parts += ["", f"## {title}", "", table(masking, args.lengths, not args.no_memory)]
    text = "\n".join(parts) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
