"""The shipped fine-tuning sweep (transformer_lab/assets/finetune_sweep.json, written by
scripts/experiments/finetune_sweep.py) is complete, and some of its points are re-derived
here.

- ``finetune`` on the tiny BERT, 24 labels, seed 0: the same code, the same batches and the
  same test batches as the script, on one thread: the accuracy is expected to be equal;
  we allow one test passage (1/600) for a different processor's rounding.
- ``probe`` on MiniLM, 24 labels, seed 0: the script encodes the 24 passages inside a
  batch of the 1,536 passages of that seed, padded to other widths, so the features differ
  in the last bits; tolerance two test passages (2/600).

Both run in about 10 s on one CPU thread (most of it MiniLM reading the 600 test passages).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import torch
from script_loader import load_script

from transformer_lab.data.genres import genre_task, sample_labelled
from transformer_lab.device import num_threads
from transformer_lab.training.finetune import encode_features, tokenize_labelled

ROOT = Path(__file__).resolve().parents[2]
JSON = ROOT / "transformer_lab" / "assets" / "finetune_sweep.json"


def _script():
    return load_script("experiments/finetune_sweep")


@pytest.fixture(scope="module")
def sweep():
    return _script()


@pytest.fixture(scope="module")
def shipped():
    return json.loads(JSON.read_text())


def shipped_point(shipped, encoder, method, n, seed):
    (row,) = [
        r
        for r in shipped["results"]
        if (r["encoder"], r["method"], r["n_labels"], r["seed"]) == (encoder, method, n, seed)
    ]
    return row["accuracy"]


def test_the_sweep_is_complete(shipped, sweep):
    assert shipped["settings"] == sweep.SETTINGS  # the script that would re-run it
    assert shipped["majority_baseline"] == pytest.approx(1 / 3)
    for encoder, run in shipped["runs"].items():
        rows = [r for r in shipped["results"] if r["encoder"] == encoder]
        assert len(run["seeds"]) >= 3 and len(run["label_counts"]) >= 4
        assert min(run["label_counts"]) <= 30 and max(run["label_counts"]) >= 1500
        grid = Counter((r["method"], r["n_labels"]) for r in rows)
        assert set(grid.values()) == {len(run["seeds"])}
        assert len(grid) == len(sweep.METHODS) * len(run["label_counts"])
        assert all(
            c.startswith("nice -n 10 .venv/bin/python scripts/experiments/finetune_sweep.py")
            for c in run["commands"]
        )
        assert run["cpu_seconds"] <= run["seconds"] + 60
        assert all(0.0 <= r["accuracy"] <= 1.0 for r in rows)
    assert set(shipped["runs"]) == {"minilm", "tiny"}


def _labelled(n, seed):
    task = genre_task(200)
    return task, *sample_labelled(task.train, n, seed)


def test_tiny_bert_finetune_point_is_reproduced(shipped, sweep):
    if "tiny" not in shipped["runs"]:
        pytest.skip("the sweep has no tiny BERT yet")
    task, texts, labels = _labelled(24, 0)
    with num_threads(1):
        encoder, tokenizer = sweep.load_encoder("tiny")
        test = tokenize_labelled(
            tokenizer,
            [p.text for p in task.test],
            [p.label for p in task.test],
            sweep.max_length(encoder),
        )
        acc = sweep.run_trained(encoder, tokenizer, "finetune", texts, labels, test, 0)
    assert abs(acc - shipped_point(shipped, "tiny", "finetune", 24, 0)) <= 1 / 600 + 1e-9


def test_minilm_probe_point_is_reproduced(shipped, sweep):
    task, texts, labels = _labelled(24, 0)
    with num_threads(1):
        encoder, tokenizer = sweep.load_encoder("minilm")
        frozen = sweep.classifier(encoder, "probe", 0)
        length = sweep.max_length(encoder)
        test = tokenize_labelled(
            tokenizer, [p.text for p in task.test], [p.label for p in task.test], length
        )
        features = encode_features(frozen, tokenize_labelled(tokenizer, texts, labels, length))
        acc = sweep.run_probe(features, labels, encode_features(frozen, test), test.labels, 0)
    assert abs(acc - shipped_point(shipped, "minilm", "probe", 24, 0)) <= 2 / 600 + 1e-9
    assert isinstance(features, torch.Tensor) and features.shape == (24, 384)
