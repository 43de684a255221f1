"""Training steps per second of chapter 16's LoRA run on SmolLM2-135M-Instruct, at one and
two CPU threads, beside full fine-tuning.

The step is the chapter's: 8 examples of the German numbers task (prompt and answer, about
20 tokens each), the loss on the answer tokens, backward, AdamW. ``lora`` trains rank-8
adapters on ``W_Q, W_K, W_V, W_O`` (as in ``scripts/experiments/lora_smollm2.py``);
``full`` trains every weight. Each setting takes ``--warmup`` steps, then ``--steps`` timed
steps; the median step time is reported (steps per second = 1 / median)::

    .venv/bin/python scripts/bench/bench_lora_smollm2.py                 # 1 and 2 threads
    .venv/bin/python scripts/bench/bench_lora_smollm2.py --save          # into the chapter's JSON
    .venv/bin/python scripts/bench/bench_lora_smollm2.py --methods lora --threads 1

On a busy machine the numbers move with the load; the script prints the load average.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import time
from importlib import resources
from pathlib import Path

import torch

from transformer_lab.data import german_numbers as G
from transformer_lab.device import num_threads, seed_everything
from transformer_lab.nn.lora import add_lora
from transformer_lab.pretrained.smollm2 import smollm2
from transformer_lab.training.lora import answer_batch, answer_loss

TARGETS, RANK, ALPHA, BATCH = ["W_Q", "W_K", "W_V", "W_O"], 8, 16.0, 8


def step_times(model, data, params, threads: int, warmup: int, steps: int) -> list[float]:
    opt = torch.optim.AdamW(params, lr=1e-5)
    model.train()
    times = []
    with num_threads(threads):
        for i in range(warmup + steps):
            batch = data[list(range((i * BATCH) % 392, (i * BATCH) % 392 + BATCH))]
            start = time.perf_counter()
            loss = answer_loss(model, batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i >= warmup:
                times.append(time.perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--methods", nargs="+", default=["lora", "full"])
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--save", action="store_true", help="record in assets/lora_smollm2.json")
    args = parser.parse_args(argv)
    seed_everything(0)
    base, tok = smollm2()
    split = G.german_number_split(400, 100, 0)
    prompts = [G.prompt(p.words) for p in split.train]
    data = answer_batch(tok, prompts, [G.answer(p.number) for p in split.train])
    out = {"load_average": os.getloadavg()}
    for method in args.methods:
        model = copy.deepcopy(base)
        if method == "lora":
            add_lora(model, TARGETS, RANK, ALPHA)
        else:
            for p in model.parameters():
                p.requires_grad_(True)
        params = [p for p in model.parameters() if p.requires_grad]
        for threads in args.threads:
            times = step_times(model, data, params, threads, args.warmup, args.steps)
            median = statistics.median(times)
            out[f"{method}_{threads}"] = {"median_s": median, "steps_per_s": 1 / median}
            print(f"{method:>4}, {threads} thread(s): {median:.2f} s/step, {1 / median:.2f}/s "
                  f"(median of {len(times)})", flush=True)  # fmt: skip
        del model, params
    out["load_average_after"] = os.getloadavg()
    print(json.dumps(out))
    if args.save:
        path = Path(resources.files("transformer_lab")) / "assets" / "lora_smollm2.json"
        saved = json.loads(path.read_text()) if path.exists() else {}
        saved["speed"] = out
        path.write_text(json.dumps(saved, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
