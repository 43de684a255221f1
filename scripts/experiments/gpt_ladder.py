"""Chapter 13's compute ladder: the book's GPT at two sizes, trained for longer than the
page can, its held-out loss recorded against training time and characters seen.

    nice -n 10 .venv/bin/python scripts/experiments/gpt_ladder.py

Each rung is a :class:`~transformer_lab.models.gpt.GPT` built after ``seed_everything(0)``
and trained by :func:`~transformer_lab.training.gpt.train_gpt` (seed 0, one CPU thread) on
the training plays' characters, the split of chapter 13. Every ``steps / 8`` steps and at
the end, :func:`~transformer_lab.training.gpt.evaluate_lm` scores every held-out character
(windows of the rung's context), and the record notes the step, the characters seen, the
training seconds so far (evaluation time left out) and the loss. The rungs:

- ``small``: the chapter's shape (2 blocks, 128 wide, 64 characters of context) and recipe,
  for 8000 steps of 12 windows instead of 1300;
- ``medium``: 4 blocks, 192 wide, 6 heads, 128 characters of context, 3000 steps of 16.

With the chapter's own model (1300 steps, ``scripts/experiments/train_book_gpt.py``) they
make three rungs of training compute.

It writes ``transformer_lab/assets/gpt_ladder/<rung>/`` (weights stored in float16 by
:func:`~transformer_lab.pretrained.book_gpt.save_book_gpt`, and a JSON of the config, the
recipe and the curve) and ``transformer_lab/assets/gpt_ladder/ladder.json`` (every rung's
record). On the 2-core machine that built the book: 11 minutes for ``small`` and 32 for
``medium``, on one thread with other work beside it. ``tests/experiments/test_gpt_ladder.py``
re-scores the shipped checkpoints and re-trains the first steps of a rung.

``--rungs small`` trains only some rungs (the record keeps the others'); ``--seed 1``
trains a rung from another seed (weights and batches) and adds its record under the rung's
``other_seeds``, shipping no weights; ``--out`` writes elsewhere.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time
from pathlib import Path

import torch

import transformer_lab
from transformer_lab.data import shakespeare
from transformer_lab.models.gpt import GPT, GPTConfig
from transformer_lab.pretrained import book_gpt
from transformer_lab.training.gpt import TrainRecipe, evaluate_lm, train_gpt
from transformer_lab.training.run import Run

SEED, EVALS = 0, 8
FIRST_WINDOWS = 32  # windows of held-out text of the gpu rung that a quick test re-scores
OUT = book_gpt.DATA_DIR / "gpt_ladder"
RUNGS: dict[str, tuple[dict, TrainRecipe]] = {
    "small": (
        dict(n_ctx=64, n_layers=2, n_heads=4, d_model=128, activation="gelu"),
        TrainRecipe(batch_size=12, steps=8000, lr=5e-3, warmup=100),
    ),
    "medium": (
        dict(n_ctx=128, n_layers=4, n_heads=6, d_model=192, activation="gelu"),
        TrainRecipe(batch_size=16, steps=3000, lr=2e-3, warmup=100),
    ),
}


def rung_model(name: str, d_vocab: int, seed: int = SEED) -> tuple[GPT, TrainRecipe]:
    """The rung's untrained model, built after ``seed_everything(seed)``, and its recipe."""
    shape, recipe = RUNGS[name]
    transformer_lab.seed_everything(seed)
    return GPT(GPTConfig(d_vocab=d_vocab, **shape)), recipe


def train_rung(
    name: str, train_ids, val_ids, steps: int | None = None, seed: int = SEED
) -> tuple[GPT, dict]:
    """Train one rung (``steps`` cuts the run short, with the full run's schedule) and return
    the model and its record (curve of step, characters seen, seconds, held-out loss)."""
    model, recipe = rung_model(name, int(max(train_ids.max(), val_ids.max())) + 1, seed)
    n_ctx = model.config.n_ctx
    curve, clock = [], {"start": time.perf_counter(), "evaluating": 0.0, "step": 0}
    every = max(1, recipe.steps // EVALS)

    def held_out(m) -> float:
        began = time.perf_counter()
        clock["step"] += every
        val = evaluate_lm(m, val_ids, batch_size=64, n_ctx=n_ctx)
        training = began - clock["start"] - clock["evaluating"]
        clock["evaluating"] += time.perf_counter() - began
        step = min(clock["step"], steps or recipe.steps)
        chars = step * recipe.batch_size * n_ctx
        curve.append({"step": step, "chars": chars, "seconds": training, "held_out_loss": val})
        print(f"{name}: step {step}, {chars:,} characters, {training:.0f} s, held-out {val:.4f}",
              flush=True)  # fmt: skip
        return val

    run = train_gpt(
        model, train_ids, recipe, Run(seed=seed, eval_fn=held_out, eval_every=every, steps=steps)
    )
    record = {
        "rung": name,
        "recipe": dataclasses.asdict(recipe),
        "seed": seed,
        "parameters": model.num_params(),
        "steps": run.steps,
        "chars_seen": run.steps * recipe.batch_size * n_ctx,
        "training_seconds": curve[-1]["seconds"],
        "held_out_loss": curve[-1]["held_out_loss"],
        "final_train_loss": run.smoothed(50)[-1],
        "curve": curve,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "machine": platform.machine(),
        "script": "scripts/experiments/gpt_ladder.py",
    }
    return model.eval(), record


def import_device_run(folder: Path, val_ids, tok, out: Path) -> dict:
    """The ``gpu`` rung: a run of the ``gpu`` preset made on a GPU by
    ``python -m transformer_lab.training.train_gpt --preset gpu --bf16 --eval-every 500``,
    whose ``summary.json`` and float16 weights (``gpu_a.safetensors`` and
    ``gpu_b.safetensors``, the state dict cut in two) lie in ``folder``. Its weights are
    re-scored here on the CPU in float32, stored in int8 with one scale per row (a quarter
    of float32's bytes) and scored again as stored; the record keeps the GPU's curve
    (steps, characters, training seconds on the GPU, held-out loss there) and all three
    losses."""
    from safetensors.torch import load_file

    summary = json.loads((folder / "gpu_summary.json").read_text())
    state = {}
    for part in ("gpu_a", "gpu_b"):
        state.update(load_file(str(folder / f"{part}.safetensors")))
    model = GPT(GPTConfig(**{k: v for k, v in summary["config"].items() if not k.startswith("_")}))
    model.load_state_dict({k: v.float() for k, v in state.items()})
    model.eval()
    recipe, n_ctx = summary["recipe"], model.config.n_ctx
    began = time.perf_counter()
    from_float16 = evaluate_lm(model, val_ids, batch_size=16, n_ctx=n_ctx)
    scoring = time.perf_counter() - began
    seconds = [sum(summary["step_seconds"][:step]) for step, _ in summary["evals"]]
    record = {
        "rung": "gpu",
        "recipe": recipe,
        "seed": summary["seed"],
        "parameters": model.num_params(),
        "steps": summary["steps"],
        "chars_seen": summary["steps"] * recipe["batch_size"] * n_ctx,
        "training_seconds": seconds[-1],
        "held_out_loss": summary["evals"][-1][1],
        "final_train_loss": summary["final_train_loss"],
        "curve": [
            {
                "step": step,
                "chars": step * recipe["batch_size"] * n_ctx,
                "seconds": sec,
                "held_out_loss": loss,
            }
            for (step, loss), sec in zip(summary["evals"], seconds, strict=True)
        ],  # fmt: skip
        "device": "NVIDIA H200 (one GPU), bfloat16 autocast",
        "trained_on_gpu": True,
        "held_out_loss_cpu_float16_weights": from_float16,
        "cpu_scoring_seconds": scoring,
        "storage": "int8",
        "torch_on_device": "2.11.0+cu130",
        "script": "python -m transformer_lab.training.train_gpt --preset gpu --bf16 "
        "--eval-every 500, then scripts/experiments/gpt_ladder.py --from-device",
    }
    book_gpt.save_book_gpt(model, tok, record, out / "gpu", storage="int8")
    stored, _ = book_gpt.load_book_gpt(directory=out / "gpu")
    record["held_out_loss_cpu_int8_weights"] = evaluate_lm(
        stored, val_ids, batch_size=16, n_ctx=n_ctx
    )
    first = FIRST_WINDOWS * n_ctx + 1  # a prefix that a quick test re-scores
    record["int8_prefix"] = {
        "chars": first,
        "held_out_loss": evaluate_lm(stored, val_ids[:first], batch_size=16, n_ctx=n_ctx),
    }
    book_gpt.save_book_gpt(model, tok, record, out / "gpu", storage="int8")
    print({k: v for k, v in record.items() if k != "curve"}, flush=True)
    return record


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rungs", nargs="+", choices=list(RUNGS), default=list(RUNGS))
    parser.add_argument("--out", type=Path, default=OUT, help="directory to write")
    parser.add_argument(
        "--seed", type=int, default=SEED, help="another seed: its record only (no weights)"
    )
    parser.add_argument(
        "--from-device", type=Path, default=None, help="a GPU run's folder (import_device_run)"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    tok = shakespeare.char_tokenizer()
    train_ids, val_ids = shakespeare.encode_splits(tok)
    summary_path = args.out / "ladder.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    if args.from_device is not None:
        summary["gpu"] = import_device_run(args.from_device, val_ids, tok, args.out)
        summary_path.write_text(json.dumps(summary, indent=1) + "\n")
        return summary
    for name in args.rungs:
        model, record = train_rung(name, train_ids, val_ids, seed=args.seed)
        if args.seed == SEED:  # the shipped rung: its weights and its record
            book_gpt.save_book_gpt(model.half(), tok, record, args.out / name)
            summary[name] = {**record, "other_seeds": summary.get(name, {}).get("other_seeds", {})}
        else:  # another seed of the same rung: its record only, beside the shipped one
            summary[name].setdefault("other_seeds", {})[str(args.seed)] = record
        args.out.mkdir(parents=True, exist_ok=True)
        summary_path.write_text(json.dumps(summary, indent=1) + "\n")
    return summary


if __name__ == "__main__":
    main()
