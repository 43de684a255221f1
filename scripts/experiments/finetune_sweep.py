"""Held-out accuracy on the genre task against the number of labelled examples, for three
ways to get a classifier and two pretrained encoders (chapter 15).

For each encoder (all-MiniLM-L6-v2, and the book's tiny BERT pretrained on Shakespeare),
each seed and each number of labels ``n`` (``n / 3`` passages per genre, nested draws):

- ``scratch``: the encoder's architecture with random weights, everything trained;
- ``probe``: the pretrained encoder frozen, a linear classifier on its mean-pooled vector;
- ``finetune``: the pretrained encoder and a new head trained together, the encoder with a
  ten times smaller learning rate.

The test set is the balanced 600 passages of the six held-out plays
(``transformer_lab.data.genres``). Results go to ``transformer_lab/assets/finetune_sweep.json``
(merged with the encoders already there), with the settings, the command and the time.
Run on one thread::

    nice -n 10 .venv/bin/python scripts/experiments/finetune_sweep.py --encoders minilm tiny

Its runs are short (at most ``max_steps``, one pass over 1,536 labels). Chapter 15 reads
only the tiny BERT's rows from it; MiniLM on the genres, fine-tuned to a plateau beside the
controls, comes from ``scripts/experiments/adaptation_sweep.py`` (``genre_controls.json``).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import shlex
import sys
import time
from pathlib import Path

import torch

from transformer_lab.data.genres import GENRES, genre_task, majority_baseline, sample_labelled
from transformer_lab.models.bert import BertModel
from transformer_lab.models.classifier import SequenceClassifier
from transformer_lab.training.finetune import (
    ClassifierRecipe,
    build_classifier,
    classification_accuracy,
    encode_features,
    fit_probe,
    tokenize_labelled,
    train_classifier,
)
from transformer_lab.training.run import Run

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "transformer_lab" / "assets" / "finetune_sweep.json"
METHODS = ("scratch", "probe", "finetune")
SETTINGS = {
    "test_per_genre": 200,
    "max_length": 64,  # tokens, [CLS] and [SEP] included (less if the encoder's max_pos is less)
    "pooling": "mean",
    "batch_size": 16,
    "epochs": 2,  # steps = epochs * n / batch_size, clamped to [min_steps, max_steps]
    "min_steps": 40,
    "max_steps": 96,  # one epoch of 1,536
    "finetune_lr": 1e-3,  # the head
    "finetune_encoder_lr": 1e-4,  # the pretrained encoder
    "scratch_lr": 5e-4,  # everything, from random weights
    "probe_lr": 1e-2,
    "probe_steps": 300,
    "weight_decay": 0.01,
    "warmup": 0.1,
    "threads": 1,
}


def n_steps(n: int, s: dict = SETTINGS) -> int:
    """Optimizer steps for ``n`` labelled examples."""
    steps = math.ceil(s["epochs"] * n / s["batch_size"])
    return min(max(steps, s["min_steps"]), s["max_steps"])


def load_encoder(name: str) -> tuple[BertModel, object]:
    """The pretrained encoder ``name`` ("minilm" or "tiny") and its tokenizer."""
    if name == "minilm":
        from transformer_lab.pretrained.minilm import minilm

        return minilm()
    if name == "tiny":
        from transformer_lab.pretrained.tiny_bert import load_tiny_bert

        model, tokenizer = load_tiny_bert()
        return getattr(model, "bert", model), tokenizer
    raise ValueError(f"encoder must be 'minilm' or 'tiny', got {name!r}")


def classifier(encoder: BertModel, method: str, seed: int) -> SequenceClassifier:
    """The classifier of ``method`` on a copy of ``encoder`` (random weights for scratch)."""
    return build_classifier(encoder, len(GENRES), method, pooling=SETTINGS["pooling"], seed=seed)


def max_length(encoder: BertModel, s: dict = SETTINGS) -> int:
    return min(s["max_length"], encoder.config.max_pos)


def run_trained(encoder, tokenizer, method, texts, labels, test, seed, s=SETTINGS) -> float:
    """Test accuracy of ``scratch`` or ``finetune`` on one labelled set."""
    clf = classifier(encoder, method, seed)
    data = tokenize_labelled(tokenizer, texts, labels, max_length(encoder, s))
    lr = s["scratch_lr"] if method == "scratch" else s["finetune_lr"]
    encoder_lr = s["scratch_lr"] if method == "scratch" else s["finetune_encoder_lr"]
    recipe = ClassifierRecipe(
        steps=n_steps(len(labels), s),
        batch_size=s["batch_size"],
        lr=lr,
        encoder_lr=encoder_lr,
        weight_decay=s["weight_decay"],
        warmup=s["warmup"],
    )
    train_classifier(clf, data, recipe, Run(seed=seed, threads=s["threads"]))
    return classification_accuracy(clf, test)


def run_probe(train_features, labels, test_features, test_labels, seed, s=SETTINGS) -> float:
    """Test accuracy of a linear probe on precomputed features."""
    head = fit_probe(
        train_features, torch.tensor(labels), len(GENRES), steps=s["probe_steps"],
        lr=s["probe_lr"], weight_decay=s["weight_decay"], seed=seed,
    )  # fmt: skip
    with torch.no_grad():
        predicted = head(test_features).argmax(-1)
    return (predicted == test_labels).float().mean().item()


def sweep_encoder(name: str, label_counts, seeds, done: set, record) -> None:
    """Run every (method, n, seed) of encoder ``name`` not in ``done``, smallest ``n``
    first (all seeds of one ``n`` before the next), and ``record`` each result."""
    encoder, tokenizer = load_encoder(name)
    task = genre_task(SETTINGS["test_per_genre"])
    length = max_length(encoder, SETTINGS)
    test = tokenize_labelled(
        tokenizer, [p.text for p in task.test], [p.label for p in task.test], length
    )
    frozen = classifier(encoder, "probe", 0)
    test_features = None
    pools: dict[int, tuple] = {}
    for n in sorted(label_counts):
        for seed in seeds:
            for method in METHODS:
                if (name, method, n, seed) in done:
                    continue
                start, cpu = time.perf_counter(), time.process_time()
                sub_texts, sub_labels = sample_labelled(task.train, n, seed)
                if method == "probe":
                    if test_features is None:
                        test_features = encode_features(frozen, test)
                    if seed not in pools:  # nested draws: one pass serves every n
                        texts, labels = sample_labelled(task.train, max(label_counts), seed)
                        pool = tokenize_labelled(tokenizer, texts, labels, length)
                        pools[seed] = texts, encode_features(frozen, pool)
                    texts, features = pools[seed]
                    index = [texts.index(t) for t in sub_texts]
                    acc = run_probe(features[index], sub_labels, test_features, test.labels, seed)
                else:
                    acc = run_trained(encoder, tokenizer, method, sub_texts, sub_labels, test, seed)
                record(
                    dict(encoder=name, method=method, n_labels=n, seed=seed, accuracy=acc,
                         steps=0 if method == "probe" else n_steps(n),
                         seconds=round(time.perf_counter() - start, 2),
                         cpu_seconds=round(time.process_time() - cpu, 2))
                )  # fmt: skip


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoders", nargs="+", default=["minilm", "tiny"])
    parser.add_argument("--labels", nargs="+", type=int, default=[24, 96, 384, 1536])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--resume", action="store_true", help="keep the results already in --out, run the rest"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(SETTINGS["threads"])
    torch.use_deterministic_algorithms(True)
    old = json.loads(args.out.read_text()) if args.out.exists() else {}
    if args.resume and old and old.get("settings") != SETTINGS:
        raise SystemExit(f"{args.out} was made with other settings; run without --resume")
    keep = (lambda r: True) if args.resume else (lambda r: r["encoder"] not in args.encoders)
    runs = {k: v for k, v in old.get("runs", {}).items() if args.resume or k not in args.encoders}
    results = [r for r in old.get("results", []) if keep(r)]
    command = "nice -n 10 .venv/bin/python scripts/experiments/finetune_sweep.py " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    task = genre_task(SETTINGS["test_per_genre"])
    for name in args.encoders:
        run = runs.setdefault(name, dict(commands=[], seconds=0.0, cpu_seconds=0.0))
        run.update(seeds=args.seeds, label_counts=sorted(args.labels))
        run["commands"].append(command)
        base, base_cpu = run["seconds"], run["cpu_seconds"]
        start, cpu = time.perf_counter(), time.process_time()

        def record(row, run=run, base=base, base_cpu=base_cpu, start=start, cpu=cpu):
            results.append(row)
            print(json.dumps(row), flush=True)
            run["seconds"] = round(base + time.perf_counter() - start, 1)
            run["cpu_seconds"] = round(base_cpu + time.process_time() - cpu, 1)
            payload = dict(
                description="held-out genre accuracy (comedy/history/tragedy, whole plays "
                "held out) against the number of labelled passages; written by "
                "scripts/experiments/finetune_sweep.py",
                genres=list(GENRES),
                test_passages=len(task.test),
                majority_baseline=majority_baseline(task),
                settings=SETTINGS,
                machine=dict(
                    python=platform.python_version(),
                    torch=torch.__version__,
                    processor=platform.machine(),
                ),  # fmt: skip
                runs=runs,
                results=results,
            )
            args.out.write_text(json.dumps(payload, indent=1) + "\n")

        done = {(r["encoder"], r["method"], r["n_labels"], r["seed"]) for r in results}
        sweep_encoder(name, args.labels, args.seeds, done, record)
        print(f"{name}: {run['seconds']:.0f} s in all, in {args.out}", flush=True)


if __name__ == "__main__":
    main()
