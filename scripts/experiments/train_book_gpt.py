"""Train the chapter-13 GPT that the package ships, and write it beside the package's data.

    nice -n 10 .venv/bin/python scripts/experiments/train_book_gpt.py

does what chapter 13 does for its final model: ``preset("book-cpu", 75)`` (2 blocks of width
128, 4 heads, 64 characters of context; 1300 steps of 12 windows), the model built after
``seed_everything(0)``, trained by ``train_gpt`` after ``seed_everything(0)`` on the
training plays' characters on one CPU thread, and measured by ``evaluate_lm`` on every
held-out character in windows of 64. It writes ``transformer_lab/assets/gpt_book_cpu.safetensors``
and ``gpt_book_cpu.json`` (config, the characters in id order, preset, recipe, seed,
held-out loss, seconds). About a minute on one thread; ``tests/pretrained/test_book_gpt.py``
re-measures the held-out loss of the shipped weights (and, with ``TRANSFORMER_LAB_SLOW=1``,
trains again and compares).

``--out`` writes elsewhere (for trying the script out); the shipped files come from the
defaults.
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import time
from pathlib import Path

import torch

import transformer_lab
from transformer_lab.data import shakespeare
from transformer_lab.models.gpt import GPT
from transformer_lab.pretrained import book_gpt
from transformer_lab.training.gpt import evaluate_lm, preset, train_gpt
from transformer_lab.training.run import Run

PRESET, SEED, N_CTX = "book-cpu", 0, 64  # as chapter 13's ``fit`` trains its GPT


def train(device: str = "cpu") -> tuple[GPT, dict]:
    """The chapter's GPT, trained the chapter's way; returns the model and its record."""
    tok = shakespeare.char_tokenizer()
    train_ids, val_ids = shakespeare.encode_splits(tok)
    config, recipe = preset(PRESET, tok.vocab_size)
    transformer_lab.seed_everything(SEED)
    model = GPT(config).to(device)
    transformer_lab.seed_everything(SEED)
    run = train_gpt(model, train_ids, recipe, Run(device=device), n_ctx=N_CTX)
    val = evaluate_lm(model, val_ids, batch_size=256, n_ctx=N_CTX)
    record = {
        "preset": PRESET,
        "recipe": dataclasses.asdict(recipe),
        "seed": SEED,
        "n_ctx_trained": N_CTX,
        "held_out_loss": val,
        "held_out_plays": [title for title, _ in shakespeare.split_plays()[1]],
        "held_out_chars": len(val_ids),
        "final_train_loss": run.smoothed(25)[-1],
        "seconds": run.seconds,
        "threads": torch.get_num_threads(),
        "device": str(device),
        "torch": torch.__version__,
        "machine": platform.machine(),
        "script": "scripts/experiments/train_book_gpt.py",
    }
    return model.cpu().eval(), record


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=book_gpt.DATA_DIR, help="directory to write")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.perf_counter()
    model, record = train()
    folder = book_gpt.save_book_gpt(model, shakespeare.char_tokenizer(), record, args.out)
    print(
        f"held-out loss {record['held_out_loss']:.4f} nats/char after {record['seconds']:.0f} s "
        f"of training ({time.perf_counter() - start:.0f} s in all); wrote {folder}"
    )
    return record


if __name__ == "__main__":
    main()
