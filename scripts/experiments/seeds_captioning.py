"""Chapter 3's captioner over several random starts: held-out caption accuracy with and
without attention over the image.

For each seed, the scenes are split with that seed (``scenes.load(seed)``), and both
captioners are built and trained exactly as in the chapter (additive attention or the mean
of the cells, 250 steps of 64 pictures, Adam at 5e-3, one thread), then caption the
held-out scenes greedily. One line per seed: exact match and word accuracy of each model,
and the gaps; at the end the smallest gaps, which the chapter's assertions stay below::

    .venv/bin/python scripts/experiments/seeds_captioning.py              # seeds 0-4
    .venv/bin/python scripts/experiments/seeds_captioning.py --seeds 0 7 --steps 300
"""

from __future__ import annotations

import argparse

import torch

import transformer_lab
from transformer_lab.data import scenes
from transformer_lab.device import num_threads
from transformer_lab.models.captioner import Captioner, CaptionerConfig, caption_accuracy
from transformer_lab.training.loop import train
from transformer_lab.training.losses import seq2seq_loss
from transformer_lab.training.run import Run

STEPS, BATCH_SIZE, LR = 250, 64, 5e-3  # as in chapter 3


def run(seed: int, steps: int = STEPS) -> dict[str, tuple[float, float]]:
    """``{"no attention": (exact, word), "attention": (exact, word)}`` for one seed."""
    data = scenes.load(seed)
    test = data.batch("test", torch.arange(len(data.scenes["test"])))
    out = {}
    for name, attention in (("no attention", False), ("attention", True)):
        transformer_lab.seed_everything(seed)
        net = Captioner(CaptionerConfig(len(data.vocab), attention=attention, score="additive"))
        train(
            net,
            data.batches("train", BATCH_SIZE, seed=seed),
            seq2seq_loss,
            run=Run(steps=steps, seed=seed, threads=1),
            lr=LR,
        )
        with num_threads(1):
            ids, _ = net.greedy_caption(test.src)
        out[name] = caption_accuracy(ids, test.tgt_out, data.vocab.pad_id)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--steps", type=int, default=STEPS)
    args = parser.parse_args()
    print("seed  exact: none  attention   gap | word: none  attention   gap")
    gaps = []
    for seed in args.seeds:
        r = run(seed, args.steps)
        (e0, w0), (e1, w1) = r["no attention"], r["attention"]
        gaps.append((e1 - e0, w1 - w0))
        print(
            f"{seed:4d}  {e0:11.3f}  {e1:9.3f}  {e1 - e0:4.3f} | {w0:10.3f}  {w1:9.3f}  "
            f"{w1 - w0:4.3f}",
            flush=True,
        )
    print(f"smallest gaps: exact {min(g[0] for g in gaps):.3f}, word {min(g[1] for g in gaps):.3f}")


if __name__ == "__main__":
    main()
