"""Train the book's GPT on Shakespeare from the command line, on one device or many.

One process (a CPU or one GPU)::

    python -m transformer_lab.training.train_gpt --preset gpu --out runs/gpu

N GPUs on one machine (one process per GPU; the global batch is split between them)::

    torchrun --standalone --nproc_per_node=N -m transformer_lab.training.train_gpt --preset gpu \
        --out runs/gpu

Two CPU processes (the gloo backend)::

    torchrun --standalone --nproc_per_node=2 -m transformer_lab.training.train_gpt --device cpu \\
        --preset book-cpu --out runs/cpu

The run shows a progress bar, evaluates on the held-out play every ``--eval-every`` steps,
saves a checkpoint in ``OUT/checkpoint.pt`` every ``--checkpoint-every`` steps and at the end
(``--resume`` continues from it exactly), prints a sample of generated text and writes
``OUT/summary.json`` (steps, times, tokens per second, held-out loss). ``OUT`` is checked
for writing before anything else happens, so an unwritable folder costs no training.

Resuming: ``--resume`` continues the run saved in ``OUT`` only with the settings it was
saved with: the same ``--preset``, ``--steps``, ``--batch-size``, ``--lr``, ``--seed`` and
``--bf16``, and as many processes. Any other value is refused before a step is taken,
with a message naming each setting that changed, its saved value and the new one. Only
``--until`` (where this run stops; leave it out to run to ``--steps``) and settings that do
not change the steps (``--device``, ``--threads``, ``--eval-every``, ``--eval-tokens``,
``--checkpoint-every``, ``--sample``) may differ.

One run at a time per ``OUT``: the run holds a lock file there (``.run.lock``, with its
process id and host) and a second run on the same folder is refused, naming the first. A
lock left by a run that was killed is taken over at the next start, and the temporary
files of its interrupted saves are removed. ``--steps`` is not a way to extend a run:
it sets the length of the cosine schedule, so more steps would change the learning rate of
the steps already taken; stop early with ``--until`` instead. ``summary.json`` records the
settings of the run, the step it was resumed from and where it stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from dataclasses import asdict, replace

import torch

from transformer_lab.data import shakespeare
from transformer_lab.data.cache import check_writable, folder_lock, write_atomically
from transformer_lab.device import num_threads
from transformer_lab.generation.sampling import generate
from transformer_lab.models.gpt import GPT, GPTConfig
from transformer_lab.training import distributed
from transformer_lab.training.gpt import PRESETS, TrainRecipe, evaluate_lm, preset, train_gpt
from transformer_lab.training.loop import TrainResult
from transformer_lab.training.losses import lm_loss
from transformer_lab.training.run import Run

__all__ = ["main", "parse_args"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line's options (``argv`` defaults to ``sys.argv[1:]``)."""
    if argv is not None and (
        not isinstance(argv, (list, tuple)) or not all(isinstance(a, str) for a in argv)
    ):
        raise TypeError(f"argv must be a list of strings, got {argv!r}")
    p = argparse.ArgumentParser(
        prog="python -m transformer_lab.training.train_gpt",
        description="Train the book's GPT on Shakespeare's characters (torchrun for many "
        "processes).",
    )
    p.add_argument("--preset", default="gpu", choices=sorted(PRESETS), help="model and recipe")
    p.add_argument("--steps", type=int, help="optimizer steps (default: the preset's)")
    p.add_argument("--batch-size", type=int, help="global batch in sequences (default: preset)")
    p.add_argument("--lr", type=float, help="peak learning rate (default: the preset's)")
    p.add_argument("--seed", type=int, default=0, help="seed of the batches and the weights")
    p.add_argument("--device", help="cpu, cuda or mps (default: the best available)")
    p.add_argument("--threads", type=int, default=1, help="CPU threads per process")
    p.add_argument(
        "--bf16", action="store_true", help="run the forward pass under bfloat16 autocast"
    )
    p.add_argument("--eval-every", type=int, default=0, help="held-out loss every N steps (0: end)")
    p.add_argument("--eval-tokens", type=int, default=0, help="held-out tokens to use (0: all)")
    p.add_argument("--checkpoint-every", type=int, default=0, help="save every N steps (0: end)")
    p.add_argument("--out", default="runs/gpt", help="folder for checkpoint.pt and summary.json")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run saved in --out; it must have the saved run's --preset, --steps, "
        "--batch-size, --lr, --seed, --bf16 and number of processes (else it is refused, "
        "naming each change); only --until and settings that do not change the steps may differ",
    )
    p.add_argument(
        "--until",
        type=int,
        help="stop after this step (resume later with --resume); --steps is not changed on "
        "resume, as it sets the schedule's length",
    )
    p.add_argument("--sample", type=int, default=300, help="characters to generate at the end")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = p.parse_args(argv)
    for name in ("steps", "batch_size", "threads", "until"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            p.error(f"--{name.replace('_', '-')} must be positive, got {value}")
    for name in ("eval_every", "eval_tokens", "checkpoint_every", "sample"):
        if getattr(args, name) < 0:
            p.error(f"--{name.replace('_', '-')} must be >= 0")
    return args


def _bf16_loss(device_type: str):
    def loss(model, batch):
        with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
            return lm_loss(model, batch)

    return loss


def main(argv: list[str] | None = None) -> dict:
    """Run the training the command line describes; return the summary (on every rank)."""
    args = parse_args(argv)
    place = distributed.setup(args.device)
    try:
        with num_threads(args.threads):
            return _run(args, place)
    finally:
        distributed.teardown()


def _run(args: argparse.Namespace, place: distributed.DistInfo) -> dict:
    out = check_writable(args.out)  # before anything is computed
    # one run per folder: a second one at the same time is refused, naming the first
    held = folder_lock(out, "train_gpt") if place.is_main else contextlib.nullcontext()
    try:
        held.__enter__()
    except RuntimeError as err:  # the folder is in use: say so, as argparse would
        raise SystemExit(f"train_gpt: {err}") from None
    try:
        return _train(args, place, out)
    finally:
        held.__exit__(None, None, None)


def _train(args: argparse.Namespace, place: distributed.DistInfo, out) -> dict:
    tok = shakespeare.char_tokenizer()
    train_ids, val_ids = shakespeare.encode_splits(tok)
    if args.eval_tokens:
        val_ids = val_ids[: args.eval_tokens]
    config, recipe = _config_and_recipe(args, tok.vocab_size)
    torch.manual_seed(args.seed)
    model = GPT(config).to(place.device)
    say = print if place.is_main else (lambda *a, **k: None)
    say(
        f"GPT {args.preset}: {sum(p.numel() for p in model.parameters()):,} parameters; "
        f"{place.world_size} process(es) on {place.device}; global batch {recipe.batch_size} "
        f"x {config.n_ctx} tokens, {recipe.batch_size // place.world_size} per process",
        flush=True,
    )

    def held_out(m):
        return evaluate_lm(m, val_ids, n_ctx=config.n_ctx)

    clocks = time.perf_counter(), time.thread_time(), time.process_time()
    run = train_gpt(
        model,
        train_ids,
        recipe,
        Run(
            seed=args.seed,
            device=place.device,
            eval_fn=held_out,
            eval_every=args.eval_every or None,
            progress=not args.no_progress,
            checkpoint=out / "checkpoint.pt",
            checkpoint_every=args.checkpoint_every or None,
            resume=args.resume,
            steps=args.until,
            config={"preset": args.preset, "bf16": args.bf16},
        ),
        loss_fn=_bf16_loss(place.device.type) if args.bf16 else None,
    )
    summary = _summary(args, config, recipe, place, run, clocks)
    if place.is_main:
        if run.evals:
            say(f"held-out loss after {run.evals[-1][0]} steps: {run.evals[-1][1]:.4f}")
        if args.sample:
            prompt = torch.tensor([tok.encode("ROMEO:\n")], device=place.device)
            text = tok.decode(generate(model, prompt, args.sample, temperature=0.8)[0].tolist())
            summary["sample"] = text
            say(text)
        data = json.dumps(summary, indent=1).encode()
        write_atomically(out / "summary.json", lambda file: file.write(data))
        say(f"wrote {out / 'checkpoint.pt'} and {out / 'summary.json'}")
    return summary


def _config_and_recipe(args: argparse.Namespace, d_vocab: int) -> tuple[GPTConfig, TrainRecipe]:
    """The preset's model and recipe, with the steps, batch size and learning rate the
    command line gives (fewer steps than the warm-up shorten the warm-up too)."""
    config, recipe = preset(args.preset, d_vocab)
    changes = {
        k: v
        for k, v in (("steps", args.steps), ("batch_size", args.batch_size), ("lr", args.lr))
        if v is not None
    }
    if "steps" in changes:
        changes["warmup"] = min(recipe.warmup, changes["steps"])
    return config, replace(recipe, **changes)


def _summary(args, config, recipe, place, run: TrainResult, clocks: tuple) -> dict:
    """What ``summary.json`` records: the settings, the times since ``clocks`` (wall,
    thread CPU, process CPU), the speed and the losses."""
    start_wall, start_cpu, start_process = clocks
    wall = time.perf_counter() - start_wall
    return {
        "preset": args.preset,
        "config": asdict(config),
        "recipe": asdict(recipe),
        "world_size": place.world_size,
        "backend": place.backend,
        "device": str(place.device),
        "bf16": args.bf16,
        "seed": args.seed,
        "resumed_from": run.first_step,
        "until": args.until,
        "steps": run.steps,
        "seconds_loop": run.seconds,
        "seconds_wall": wall,
        "seconds_thread_cpu": time.thread_time() - start_cpu,
        "seconds_process_cpu": time.process_time() - start_process,
        "tokens_per_second": (run.steps - run.first_step)
        * recipe.batch_size
        * config.n_ctx
        / max(run.seconds, 1e-9),
        "step_seconds": run.step_seconds,
        "step_cpu_seconds": run.step_cpu_seconds,
        "final_train_loss": run.losses[-1] if run.losses else None,
        "evals": run.evals,
    }


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (ValueError, OSError) as err:  # a refused resume, a full disk: said plainly
        sys.exit(f"train_gpt: error: {err}")
