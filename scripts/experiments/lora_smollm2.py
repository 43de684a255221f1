"""Chapter 16's results: SmolLM2-135M-Instruct adapted with LoRA to read German number
words as digits, against the base model prompted zero-shot and few-shot.

For each seed, :func:`~transformer_lab.data.german_numbers.german_number_split` draws
``N_TRAIN`` training and ``N_TEST`` held-out numbers from 100-999 (disjoint), and the same
held-out numbers are answered, greedily, by:

- ``zero_shot``: the base model on the bare prompt ``"<words> ="``;
- ``zero_shot_chat``: the base model asked in its chat template ("Write this German number
  in digits...");
- ``few_shot_5``, ``few_shot_20``: the base model after 5 or 20 worked examples drawn from
  that seed's training pairs;
- ``nearest_word``: no model: the number of the most similar training word;
- ``lora``: LoRA of rank 8 (alpha 16) on ``W_Q, W_K, W_V, W_O`` of every layer, trained on
  the ``N_TRAIN`` pairs for ``STEPS`` steps of 8 (AdamW, lr 2e-3, warmup 10% then linear
  decay), loss on the answer tokens only, measured every 25 steps.

The base model's replies are read leniently (the first number anywhere in the reply); the
adapted model's strictly (its whole line must be the digits). Seed 0's adapter is saved in
``transformer_lab/assets/lora_smollm2_de.safetensors``; everything else in
``transformer_lab/assets/lora_smollm2.json``. ``--memory`` measures the peak resident memory
of a process that loads the model and takes ``MEMORY_STEPS`` training steps, with LoRA and
with full fine-tuning (AdamW on all weights), each in a fresh process::

    .venv/bin/python scripts/experiments/lora_smollm2.py            # seeds 0 1 2, ~15 min
    .venv/bin/python scripts/experiments/lora_smollm2.py --memory   # two processes, ~2 min
    .venv/bin/python scripts/experiments/lora_smollm2.py --labels 50 100 200 --seeds 0
    .venv/bin/python scripts/experiments/lora_smollm2.py --plateau --seeds 0  # then 1, 2
    .venv/bin/python scripts/experiments/lora_smollm2.py --lr 5e-4 1e-3 4e-3 --seeds 0

``--labels`` trains LoRA on fewer training pairs (each seed given, the same 100 held-out
numbers) into the JSON's ``labels``. ``--plateau`` trains it on the ``N_TRAIN`` pairs with a
longer schedule, ``PLATEAU_STEPS`` steps (``--steps``), measured every ``PLATEAU_EVAL``
steps, into ``plateau``, with ``flat``: whether the last ``PLATEAU_LAST`` measurements lie
within ``PLATEAU_WITHIN``. ``--lr`` trains it on the ``N_TRAIN`` pairs at other learning
rates, into ``rates``. Each adds its rows to those already in the JSON, a rerun
replacing its own; one seed per process keeps each finished seed if a later one is
stopped. A 300-step run took 9-24 minutes on a 2-core machine busy with other work.

One CPU thread throughout; seeds 0-2 took 862 s on a busy 2-core machine (each seed's
baselines about 40 s, its 150 LoRA steps with six evaluations 190-310 s).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import torch

from transformer_lab.data import german_numbers as G
from transformer_lab.device import seed_everything
from transformer_lab.generation.answers import greedy_answers
from transformer_lab.nn.lora import add_lora, count_parameters, lora_state_dict
from transformer_lab.pretrained.smollm2 import smollm2
from transformer_lab.training.lora import (
    LoraRecipe,
    answer_batch,
    answer_exact_match,
    answer_loss,
    train_lora,
)
from transformer_lab.training.run import Run

N_TRAIN, N_TEST, STEPS, EVAL_EVERY, BATCH = 400, 100, 150, 25, 8
TARGETS, RANK, ALPHA, LR = ["W_Q", "W_K", "W_V", "W_O"], 8, 16.0, 2e-3
SHOTS = (5, 20)
MEMORY_STEPS = 3
PLATEAU_STEPS, PLATEAU_EVAL, PLATEAU_LAST, PLATEAU_WITHIN, PLATEAU_WIDE = 300, 50, 3, 0.005, 5
CHAT = "Write this German number in digits, nothing else: {}"
ASSETS = Path(resources.files("transformer_lab")) / "assets"
RESULTS, ADAPTER = ASSETS / "lora_smollm2.json", ASSETS / "lora_smollm2_de.safetensors"


def lenient(replies: list[str], numbers: list[int]) -> float:
    """Share of replies whose first number is the answer."""
    return sum(G.read_number(r) == n for r, n in zip(replies, numbers, strict=True)) / len(numbers)


def baselines(model, tok, split: G.NumberSplit) -> dict[str, float]:
    """Every baseline's exact match on the split's held-out numbers."""
    words, numbers = [p.words for p in split.test], [p.number for p in split.test]
    prompts = [G.prompt(w) for w in words]
    out = {"zero_shot": lenient(greedy_answers(model, tok, prompts), numbers)}
    chat = [tok.chat_prompt(CHAT.format(w)) for w in words]
    out["zero_shot_chat"] = lenient(
        greedy_answers(model, tok, chat, max_new_tokens=12, stop="<|im_end|>"), numbers
    )
    for k in SHOTS:
        prefix = G.few_shot_prefix(split.train[:k])
        out[f"few_shot_{k}"] = lenient(greedy_answers(model, tok, prompts, prefix=prefix), numbers)
    guesses = [G.nearest_word_answer(split.train, w) for w in words]
    out["nearest_word"] = sum(g == n for g, n in zip(guesses, numbers, strict=True)) / len(numbers)
    return out


def lora_run(
    model, tok, split, seed: int, steps: int = STEPS, progress=True, schedule_steps=None,
    eval_every: int = EVAL_EVERY, lr: float = LR,
):  # fmt: skip
    """Add adapters to ``model`` and train them; returns the run and the exact-match curve."""
    add_lora(model, TARGETS, RANK, ALPHA, seed=seed)
    data = answer_batch(
        tok, [G.prompt(p.words) for p in split.train], [G.answer(p.number) for p in split.train]
    )
    test_prompts, refs = (
        [G.prompt(p.words) for p in split.test],
        [str(p.number) for p in split.test],
    )
    score = lambda m: answer_exact_match(greedy_answers(m, tok, test_prompts), refs)  # noqa: E731
    schedule = steps if schedule_steps is None else schedule_steps
    recipe = LoraRecipe(steps=schedule, batch_size=BATCH, lr=lr)
    run = Run(
        steps=steps, seed=seed, eval_fn=score, eval_every=eval_every, progress=progress, threads=1
    )
    return train_lora(model, data, recipe, run)


def one_seed(seed: int) -> dict:
    torch.set_num_threads(1)
    seed_everything(seed)
    model, tok = smollm2()
    split = G.german_number_split(N_TRAIN, N_TEST, seed)
    start = time.perf_counter()
    result = {"seed": seed, **baselines(model, tok, split)}
    result["baseline_seconds"] = time.perf_counter() - start
    run = lora_run(model, tok, split, seed)
    result.update(
        lora=run.evals[-1][1], curve=run.evals, losses=run.losses, lora_seconds=run.seconds
    )
    result["trainable"], result["total"] = count_parameters(model)
    if seed == 0:
        from safetensors.torch import save_file

        save_file(lora_state_dict(model), ADAPTER)
    print(json.dumps({k: v for k, v in result.items() if k not in ("losses", "curve")}), flush=True)
    return result


def fresh_run(n_train: int, seed: int, **options):
    """:func:`lora_run` on a freshly loaded model, one thread, every generator seeded with
    ``seed``, on the split of ``n_train`` training and ``N_TEST`` held-out numbers."""
    torch.set_num_threads(1)
    seed_everything(seed)
    model, tok = smollm2()
    return lora_run(model, tok, G.german_number_split(n_train, N_TEST, seed), seed, **options)


def fewer_labels(counts: list[int], seeds: list[int], steps: int = STEPS) -> list[dict]:
    """LoRA trained as in :func:`one_seed` (``steps`` steps of ``BATCH``) on the
    training pairs of the split drawn with ``n`` training numbers; the held-out numbers
    depend only on ``N_TEST`` and ``seed``, so they are the same for every ``n``."""
    out = []
    for seed in seeds:
        for n in counts:
            run = fresh_run(n, seed, steps=steps)
            row = {"n_train": n, "seed": seed, "lora": run.evals[-1][1], "curve": run.evals,
                   "final_loss": run.losses[-1], "seconds": run.seconds}  # fmt: skip
            print(json.dumps(row), flush=True)
            out.append(row)
    return out


def rates(lrs: list[float], seeds: list[int], steps: int = STEPS) -> list[dict]:
    """LoRA as in :func:`one_seed` (``N_TRAIN`` pairs, ``steps`` steps of ``BATCH``, the
    same warm-up and decay) at each learning rate of ``lrs``: the sweep the GRU's budget arm
    had and the page's ``LR`` did not."""
    out = []
    for seed in seeds:
        for lr in lrs:
            run = fresh_run(N_TRAIN, seed, steps=steps, lr=lr)
            row = {"lr": lr, "seed": seed, "steps": steps, "examples": steps * BATCH,
                   "lora": run.evals[-1][1], "curve": run.evals,
                   "final_loss": run.losses[-1], "seconds": run.seconds}  # fmt: skip
            print(json.dumps(row), flush=True)
            out.append(row)
    return out


def merge(old: list[dict], new: list[dict], keys=("n_train", "seed")) -> list[dict]:
    """``old`` rows with those of ``new`` added, a new row replacing an old one that has the
    same ``keys``; sorted by ``keys``."""
    rows = {tuple(r[k] for k in keys): r for r in old}
    rows.update({tuple(r[k] for k in keys): r for r in new})
    return [rows[k] for k in sorted(rows)]


def flat(curve: list[list[float]], last: int = PLATEAU_LAST, within: float = PLATEAU_WITHIN):
    """Whether the last ``last`` evaluations of ``curve`` lie within ``within`` of each other."""
    tail = [e for _, e in curve[-last:]]
    return len(tail) == last and max(tail) - min(tail) <= within


def to_plateau(seeds: list[int], steps: int = PLATEAU_STEPS, n_train: int = N_TRAIN) -> list[dict]:
    """LoRA as in :func:`one_seed` on ``n_train`` pairs but with a ``steps``-step schedule
    (warmup 10%, linear decay to zero at ``steps``), measured every ``PLATEAU_EVAL`` steps;
    ``flat`` says whether the last ``PLATEAU_LAST`` measurements agree within
    ``PLATEAU_WITHIN``, ``flat_wide`` the same over the last ``PLATEAU_WIDE`` within 0.02."""
    out = []
    for seed in seeds:
        run = fresh_run(n_train, seed, steps=steps, eval_every=PLATEAU_EVAL)
        row = {"n_train": n_train, "seed": seed, "steps": steps, "eval_every": PLATEAU_EVAL,
               "examples": steps * BATCH, "lora": run.evals[-1][1], "curve": run.evals,
               "losses": run.losses, "seconds": run.seconds, "flat": flat(run.evals),
               "flat_wide": flat(run.evals, PLATEAU_WIDE, 0.02)}  # fmt: skip
        print(json.dumps({k: v for k, v in row.items() if k != "losses"}), flush=True)
        out.append(row)
    return out


def memory_step(method: str) -> None:
    """Load the model, take ``MEMORY_STEPS`` steps with ``method``, print the peak RSS."""
    torch.set_num_threads(1)
    seed_everything(0)
    model, tok = smollm2()
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    split = G.german_number_split(N_TRAIN, N_TEST, 0)
    data = answer_batch(
        tok, [G.prompt(p.words) for p in split.train], [G.answer(p.number) for p in split.train]
    )
    if method == "lora":
        add_lora(model, TARGETS, RANK, ALPHA)
        params = [p for p in model.parameters() if p.requires_grad]
    else:
        for p in model.parameters():
            p.requires_grad_(True)
        params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=1e-5)
    model.train()
    for i in range(MEMORY_STEPS):
        loss = answer_loss(model, data[list(range(i * BATCH, (i + 1) * BATCH))])
        opt.zero_grad()
        loss.backward()
        opt.step()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    trainable, total = count_parameters(model)
    print(json.dumps({"method": method, "peak_bytes": peak, "loaded_bytes": loaded,
                      "trainable": trainable, "total": total}))  # fmt: skip


def memory() -> dict:
    out = {}
    for method in ("lora", "full"):
        cmd = [sys.executable, __file__, "--memory-step", method]
        line = (
            subprocess.run(cmd, capture_output=True, text=True, check=True)
            .stdout.strip()
            .splitlines()[-1]
        )
        out[method] = json.loads(line)
        print(line, flush=True)
    return out


def settings() -> dict:
    return {
        "n_train": N_TRAIN, "n_test": N_TEST, "steps": STEPS, "eval_every": EVAL_EVERY,
        "batch_size": BATCH, "targets": TARGETS, "rank": RANK, "alpha": ALPHA, "lr": LR,
        "shots": list(SHOTS), "chat": CHAT, "memory_steps": MEMORY_STEPS, "threads": 1,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--memory", action="store_true", help="measure peak memory only")
    parser.add_argument(
        "--labels", type=int, nargs="+", help="LoRA at these training-set sizes (each seed)"
    )
    parser.add_argument(
        "--plateau", action="store_true", help="LoRA on N_TRAIN pairs with a --steps schedule"
    )
    parser.add_argument(
        "--lr", type=float, nargs="+", help="LoRA on N_TRAIN pairs at these rates (each seed)"
    )
    parser.add_argument("--steps", type=int, default=None, help="steps of --plateau/--labels/--lr")
    parser.add_argument("--memory-step", choices=["lora", "full"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_step:
        return memory_step(args.memory_step)
    saved = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if args.memory:
        saved["memory"] = memory()
    elif args.plateau:
        new = to_plateau(args.seeds, args.steps or PLATEAU_STEPS)
        saved["plateau"] = merge(saved.get("plateau", []), new, ("steps", "seed"))
    elif args.lr:
        new = rates(args.lr, args.seeds, args.steps or STEPS)
        saved["rates"] = merge(saved.get("rates", []), new, ("lr", "seed"))
    elif args.labels:
        new = fewer_labels(args.labels, args.seeds, args.steps or STEPS)
        saved["labels"] = merge(saved.get("labels", []), new)
    else:
        start = time.perf_counter()
        saved["settings"] = settings()
        saved["seeds"] = [one_seed(s) for s in args.seeds]
        saved["seconds"] = time.perf_counter() - start
    RESULTS.write_text(json.dumps(saved, indent=1) + "\n")
    return saved


if __name__ == "__main__":
    main()
