"""Chapter 16's control: a character-level GRU encoder-decoder with attention (chapter 3's
:class:`~transformer_lab.models.rnn.Seq2Seq`), trained from random weights on the same
German number words as the LoRA adapters, on the same splits and seeds.

For each seed and each training-set size ``n`` in ``LABELS``,
:func:`~transformer_lab.data.german_numbers.german_number_split` draws ``n`` training and
``N_TEST`` held-out numbers (the held-out numbers depend only on ``N_TEST`` and the seed,
so every ``n`` is scored on the same 100 numbers, those of
``scripts/experiments/lora_smollm2.py``). The source is the word's characters, the target
the number's digits then ``<eos>``; the characters are those of every German number word
from 100 to 999 (21 letters and the four special tokens; no digits). The model: ``d_embed`` 64,
``d_hidden`` 128, dot-product attention, 186,190 weights. Training: Adam at lr 3e-3,
gradient norm clipped at 1, batches of 32 drawn with replacement, ``STEPS`` steps; greedy
decoding, exact match on the held-out numbers every ``EVAL_EVERY`` steps (the curve)::

    .venv/bin/python scripts/experiments/scratch_german_numbers.py   # seeds 0-2, 4 sizes

Results in ``transformer_lab/assets/scratch_german_numbers.json``; one thread.
``tests/experiments/test_scratch_german_numbers.py`` re-derives one point.

``--budget`` gives the same network LoRA's budget instead (``lora_smollm2.py``: 150 steps
of 8 pairs, 1,200 examples seen): ``BUDGET_STEPS`` steps of ``BUDGET_BATCH``, at each
learning rate of ``BUDGET_LRS`` (the GRU's own 3e-3 and one on either side), measured every
``BUDGET_EVAL`` steps, into ``transformer_lab/assets/scratch_german_numbers_budget.json``::

    .venv/bin/python scripts/experiments/scratch_german_numbers.py --budget  # 5 min, busy
"""

from __future__ import annotations

import argparse
import json
import time
from importlib import resources
from pathlib import Path

import torch
from torch.nn.utils.rnn import pad_sequence

from transformer_lab.data import german_numbers as G
from transformer_lab.data.numbers import Batch
from transformer_lab.data.tokenizers import Vocab
from transformer_lab.device import seed_everything
from transformer_lab.models.rnn import Seq2Seq, Seq2SeqConfig
from transformer_lab.training.loop import train
from transformer_lab.training.run import Run

N_TEST, LABELS, STEPS, EVAL_EVERY, BATCH, LR = 100, (50, 100, 200, 400), 1200, 100, 32, 3e-3
D_EMBED, D_HIDDEN = 64, 128
BUDGET_STEPS, BUDGET_BATCH, BUDGET_EVAL, BUDGET_LRS = 150, 8, 25, (1e-3, 3e-3, 1e-2)
ASSETS = Path(resources.files("transformer_lab")) / "assets"
RESULTS = ASSETS / "scratch_german_numbers.json"
BUDGET = ASSETS / "scratch_german_numbers_budget.json"
SRC = Vocab(ch for n in range(100, 1000) for ch in G.german_words(n))
TGT = Vocab("0123456789")


def _pad(rows: list[list[int]]) -> torch.Tensor:
    return pad_sequence([torch.tensor(r) for r in rows], batch_first=True, padding_value=0)


def batch(pairs) -> Batch:
    """Characters of the words in, ``<bos>`` digits ``<eos>`` out, padded."""
    src = _pad([SRC.encode(list(p.words)) for p in pairs])
    tgt = _pad([TGT.encode(list(str(p.number)), bos=True, eos=True) for p in pairs])
    return Batch(src, tgt, torch.arange(len(pairs)))


def batches(data: Batch, size: int, seed: int):
    """Endless batches of ``size`` rows of ``data`` drawn with replacement."""
    gen = torch.Generator().manual_seed(seed)
    while True:
        rows = torch.randint(len(data), (size,), generator=gen)
        yield Batch(data.src[rows], data.tgt[rows], rows)


def exact_match(net: Seq2Seq, test: Batch, numbers: list[int]) -> float:
    """Share of held-out numbers whose greedy digits are exactly right."""
    ids = net.greedy_ids(test.src)
    guesses = ["".join(TGT.decode(row)) for row in ids]
    return sum(g == str(n) for g, n in zip(guesses, numbers, strict=True)) / len(numbers)


def model(seed: int) -> Seq2Seq:
    seed_everything(seed)
    config = Seq2SeqConfig(len(SRC), len(TGT), d_embed=D_EMBED, d_hidden=D_HIDDEN,
                           attention="dot", max_len=5)  # fmt: skip
    return Seq2Seq(config)


def control_run(
    n_train: int, seed: int, steps: int = STEPS, eval_every: int = EVAL_EVERY,
    batch_size: int = BATCH, lr: float = LR,
):  # fmt: skip
    """One model from ``seed`` trained on ``n_train`` pairs; returns the network and run."""
    torch.set_num_threads(1)
    split = G.german_number_split(n_train, N_TEST, seed)
    test, numbers = batch(split.test), [p.number for p in split.test]
    net = model(seed)
    run = train(
        net,
        batches(batch(split.train), min(batch_size, n_train), seed),
        run=Run(
            steps=steps,
            eval_fn=lambda m: exact_match(m, test, numbers),
            eval_every=eval_every,
            threads=1,
        ),
        lr=lr,
    )
    return net, run


def settings() -> dict:
    return {
        "n_test": N_TEST, "labels": list(LABELS), "steps": STEPS, "eval_every": EVAL_EVERY,
        "batch_size": BATCH, "lr": LR, "d_embed": D_EMBED, "d_hidden": D_HIDDEN,
        "attention": "dot", "cell": "gru", "threads": 1,
    }  # fmt: skip


def budget_settings() -> dict:
    return {
        "n_test": N_TEST, "labels": list(LABELS), "steps": BUDGET_STEPS,
        "eval_every": BUDGET_EVAL, "batch_size": BUDGET_BATCH,
        "examples": BUDGET_STEPS * BUDGET_BATCH,
        "lrs": list(BUDGET_LRS), "d_embed": D_EMBED, "d_hidden": D_HIDDEN,
        "attention": "dot", "cell": "gru", "threads": 1,
    }  # fmt: skip


def budget_runs(labels: list[int], seeds: list[int]) -> dict:
    """The GRU at LoRA's budget: every size, seed and learning rate of ``BUDGET_LRS``."""
    start, runs = time.perf_counter(), []
    for n in labels:
        for seed in seeds:
            for lr in BUDGET_LRS:
                _, run = control_run(n, seed, BUDGET_STEPS, BUDGET_EVAL, BUDGET_BATCH, lr)
                row = {"n_train": n, "seed": seed, "lr": lr, "exact_match": run.evals[-1][1],
                       "curve": run.evals, "final_loss": run.losses[-1],
                       "losses": run.losses[::BUDGET_EVAL], "seconds": run.seconds}  # fmt: skip
                print(json.dumps({k: v for k, v in row.items() if k not in ("curve", "losses")}),
                      flush=True)  # fmt: skip
                runs.append(row)
    return {"settings": budget_settings(), "runs": runs, "seconds": time.perf_counter() - start}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--labels", type=int, nargs="+", default=list(LABELS))
    parser.add_argument("--budget", action="store_true", help="LoRA's budget of examples")
    args = parser.parse_args(argv)
    if args.budget:
        saved = budget_runs(args.labels, args.seeds)
        BUDGET.write_text(json.dumps(saved, indent=1) + "\n")
        return saved
    start, runs = time.perf_counter(), []
    for n in args.labels:
        for seed in args.seeds:
            net, run = control_run(n, seed)
            row = {
                "n_train": n, "seed": seed, "exact_match": run.evals[-1][1],
                "best": max(e for _, e in run.evals), "curve": run.evals,
                "losses": run.losses[:: EVAL_EVERY // 4], "final_loss": run.losses[-1],
                "last_100_loss": sum(run.losses[-100:]) / 100, "seconds": run.seconds,
                "params": sum(p.numel() for p in net.parameters()),
            }  # fmt: skip
            print(json.dumps({k: v for k, v in row.items() if k not in ("curve", "losses")}),
                  flush=True)  # fmt: skip
            runs.append(row)
    saved = {"settings": settings(), "runs": runs, "seconds": time.perf_counter() - start}
    RESULTS.write_text(json.dumps(saved, indent=1) + "\n")
    return saved


if __name__ == "__main__":
    main()
