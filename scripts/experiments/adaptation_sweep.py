"""Held-out accuracy against the number of labelled examples for a pretrained encoder
(all-MiniLM-L6-v2) and for the controls that know nothing beforehand (chapter 15).

Methods, all on the same labelled draws and seeds:

- ``tfidf_lr``, ``naive_bayes``: bag-of-words baselines (``transformer_lab.analysis.baselines``);
- ``scratch``: a small BERT (2 layers, d_model 64) with MiniLM's vocabulary, trained from
  random weights for many passes over the labels until it fits them (its test-accuracy
  curve is recorded, ten points per run, to show the plateau);
- ``probe``: a linear classifier on MiniLM's frozen mean-pooled vectors;
- ``static_probe``: the same classifier on the mean of MiniLM's *input* token embeddings
  (rows of its word-embedding table: no position, no attention), which separates what the
  pretrained word vectors know from what the encoder's context adds;
- ``finetune``: MiniLM and a new head trained together, the encoder at a ten times smaller
  learning rate, for several passes over the labels (at least ``finetune_min_steps``);
  its test-accuracy curve is recorded too, five points per run (an evaluation of MiniLM
  on the test set costs as much as several training steps).

Tasks:

- ``topic`` (``transformer_lab.data.topics``): the topic of a content word; the seed draws
  the split of words and templates as well as the labelled sentences; accuracy on the
  sentences with training words (``seen``) and with words no labelled sentence contains
  (``unseen``). Written to ``transformer_lab/assets/topic_sweep.json``.
- ``genre`` (``transformer_lab.data.genres``): the genre of a passage of Shakespeare, six
  whole plays held out. Written to ``transformer_lab/assets/genre_controls.json``.

Results are merged into the file (``--resume`` keeps what is there). Run on one thread::

    nice -n 10 .venv/bin/python scripts/experiments/adaptation_sweep.py --task topic
    nice -n 10 .venv/bin/python scripts/experiments/adaptation_sweep.py --task genre \\
        --methods tfidf_lr naive_bayes scratch probe
    nice -n 10 .venv/bin/python scripts/experiments/adaptation_sweep.py --task genre \\
        --methods finetune --labels 24 96 384 1536 --resume
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

from transformer_lab.analysis.baselines import BASELINES, baseline_accuracy
from transformer_lab.data import genres, topics
from transformer_lab.models.bert import BertConfig
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
ASSETS = ROOT / "transformer_lab" / "assets"
OUT = {"topic": ASSETS / "topic_sweep.json", "genre": ASSETS / "genre_controls.json"}
METHODS = (*BASELINES, "scratch", "probe", "static_probe", "finetune")
LABELS = {"topic": [10, 40, 160, 640, 2000], "genre": [24, 96, 384, 1536, 6144]}
SETTINGS = {
    "max_length": 64,  # tokens, [CLS] and [SEP] included
    "batch_size": 16,
    "scratch": {"d_model": 64, "n_heads": 2, "d_mlp": 256, "n_layers": 2, "max_pos": 64},
    "scratch_lr": 1e-3,
    "scratch_epochs": 10,  # steps = epochs * n / batch_size, at least scratch_min_steps
    "scratch_min_steps": 300,
    "finetune_lr": 1e-3,  # the head
    "finetune_encoder_lr": 1e-4,  # the pretrained encoder
    "finetune_epochs": 3,
    "finetune_min_steps": 30,
    "finetune_curve_points": 5,
    "probe_lr": 1e-2,
    "probe_steps": 300,
    "weight_decay": 0.01,
    "warmup": 0.1,
    "curve_points": 10,  # of the scratch network
    "threads": 1,
}


def n_steps(n: int, method: str, s: dict = SETTINGS) -> int:
    """Optimizer steps of ``scratch`` or ``finetune`` for ``n`` labelled examples."""
    steps = math.ceil(s[f"{method}_epochs"] * n / s["batch_size"])
    return max(steps, s[f"{method}_min_steps"])


def scratch_config(d_vocab: int, s: dict = SETTINGS) -> BertConfig:
    return BertConfig(d_vocab=d_vocab, **s["scratch"])


class Task:
    """The labelled pool and the named test sets of one task and seed."""

    def __init__(self, name: str, seed: int, tokenizer):
        if name == "topic":
            task = topics.topic_task(seed)
            self.pool, self.sample, self.n_classes = task.train, topics.sample_labelled, 5
            tests = {"seen": task.test_seen, "unseen": task.test_unseen}
        else:
            task = genres.genre_task(200)
            self.pool, self.sample, self.n_classes = task.train, genres.sample_labelled, 3
            tests = {"test": task.test}
        self.texts = {k: [x.text for x in v] for k, v in tests.items()}
        self.labels = {k: [x.label for x in v] for k, v in tests.items()}
        self.batches = {
            k: tokenize_labelled(tokenizer, self.texts[k], self.labels[k], SETTINGS["max_length"])
            for k in tests
        }


def run_one(method, task: Task, n, seed, encoder, tokenizer, features) -> dict:
    """Accuracy on every test set of ``task`` for one method, ``n`` labels and ``seed``."""
    texts, labels = task.sample(task.pool, n, seed)
    out: dict = {}
    if method in BASELINES:
        return {k: baseline_accuracy(method, texts, labels, task.texts[k], task.labels[k])
                for k in task.texts}  # fmt: skip
    if method in ("probe", "static_probe"):
        frozen = build_classifier(encoder, task.n_classes, "probe", pooling="mean", seed=seed)
        static = method == "static_probe"
        if method not in features:
            features[method] = {
                k: encode_features(frozen, b, static=static) for k, b in task.batches.items()
            }
        data = tokenize_labelled(tokenizer, texts, labels, SETTINGS["max_length"])
        head = fit_probe(
            encode_features(frozen, data, static=static), data.labels, task.n_classes,
            steps=SETTINGS["probe_steps"], lr=SETTINGS["probe_lr"],
            weight_decay=SETTINGS["weight_decay"], seed=seed,
        )  # fmt: skip
        with torch.no_grad():
            for k, f in features[method].items():
                out[k] = (head(f).argmax(-1) == task.batches[k].labels).float().mean().item()
        return out
    data = tokenize_labelled(tokenizer, texts, labels, SETTINGS["max_length"])
    steps = n_steps(n, method)
    if method == "scratch":
        config = scratch_config(encoder.config.d_vocab)
        clf = build_classifier(encoder, task.n_classes, "scratch", pooling="mean", seed=seed,
                               config=config)  # fmt: skip
        lr = encoder_lr = SETTINGS["scratch_lr"]
    else:
        clf = build_classifier(encoder, task.n_classes, "finetune", pooling="mean", seed=seed)
        lr, encoder_lr = SETTINGS["finetune_lr"], SETTINGS["finetune_encoder_lr"]
    curve_set = next(iter(task.batches))  # "seen" for the topic task, "test" for the genres
    points = SETTINGS["curve_points" if method == "scratch" else "finetune_curve_points"]
    every = max(1, steps // points)
    recipe = ClassifierRecipe(
        steps=steps,
        batch_size=SETTINGS["batch_size"],
        lr=lr,
        encoder_lr=encoder_lr,
        weight_decay=SETTINGS["weight_decay"],
        warmup=SETTINGS["warmup"],
    )
    result = train_classifier(
        clf,
        data,
        recipe,
        Run(seed=seed, threads=SETTINGS["threads"], eval_every=every),
        eval_data=task.batches[curve_set],
    )
    for k, b in task.batches.items():  # the curve's last point is the final accuracy
        out[k] = result.evals[-1][1] if k == curve_set else classification_accuracy(clf, b)
    out["steps"] = steps
    out["final_loss"] = sum(result.losses[-20:]) / len(result.losses[-20:])
    out["curve"] = {"set": curve_set, "points": [[s, round(a, 4)] for s, a in result.evals]}
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=sorted(OUT), required=True)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--labels", nargs="+", type=int)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--resume", action="store_true", help="keep the results already there")
    parser.add_argument("--finetune-epochs", type=int, help="a longer schedule (needs --out)")
    parser.add_argument("--finetune-min-steps", type=int, help="a longer schedule (needs --out)")
    parser.add_argument("--finetune-curve-points", type=int, help="evaluations per run")
    args = parser.parse_args(argv)
    overrides = {
        k: getattr(args, k)
        for k in ("finetune_epochs", "finetune_min_steps", "finetune_curve_points")
        if getattr(args, k) is not None
    }
    if overrides and args.out is None:
        parser.error("a changed schedule is written to its own record: give --out")
    SETTINGS.update(overrides)
    out = args.out or OUT[args.task]
    torch.set_num_threads(SETTINGS["threads"])
    torch.use_deterministic_algorithms(True)
    old = json.loads(out.read_text()) if out.exists() and args.resume else {}
    if old and old.get("settings") != SETTINGS:
        raise SystemExit(f"{out} was made with other settings; run without --resume")
    results = old.get("results", [])
    commands = old.get("commands", [])
    commands.append("nice -n 10 .venv/bin/python scripts/experiments/adaptation_sweep.py "
                    + shlex.join(sys.argv[1:] if argv is None else argv))  # fmt: skip
    seconds, cpu_seconds = old.get("seconds", 0.0), old.get("cpu_seconds", 0.0)
    start, cpu = time.perf_counter(), time.process_time()
    from transformer_lab.pretrained.minilm import minilm

    encoder, tokenizer = minilm("cpu")
    done = {(r["method"], r["n_labels"], r["seed"]) for r in results}
    for seed in args.seeds:
        task, features = Task(args.task, seed, tokenizer), {}
        for n in args.labels or LABELS[args.task]:
            for method in args.methods:
                if (method, n, seed) in done:
                    continue
                t0, c0 = time.perf_counter(), time.process_time()
                row = dict(method=method, n_labels=n, seed=seed)
                row.update(run_one(method, task, n, seed, encoder, tokenizer, features))
                row.update(seconds=round(time.perf_counter() - t0, 2),
                           cpu_seconds=round(time.process_time() - c0, 2))  # fmt: skip
                results.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "curve"}), flush=True)
                payload = dict(
                    description=f"held-out accuracy on the {args.task} task against the number "
                    "of labelled examples; written by scripts/experiments/adaptation_sweep.py",
                    task=args.task,
                    settings=SETTINGS,
                    machine=dict(
                        python=platform.python_version(),
                        torch=torch.__version__,
                        processor=platform.machine(),
                    ),  # fmt: skip
                    commands=commands,
                    seconds=round(seconds + time.perf_counter() - start, 1),
                    cpu_seconds=round(cpu_seconds + time.process_time() - cpu, 1),
                    results=results,
                )
                out.write_text(json.dumps(payload, indent=1) + "\n")


if __name__ == "__main__":
    main()
