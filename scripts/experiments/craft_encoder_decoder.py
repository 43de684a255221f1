"""Chapter 11's ablation of the 2017 training craft: what each option buys the toy
Transformer on English -> German number words.

The five options of the 2017 recipe (Vaswani et al., section 5): label smoothing 0.1, a
warm-up then an inverse-square-root learning rate, dropout 0.1, embeddings scaled by
sqrt(d_model), and one embedding table shared by source, target and read-out (with a
joint vocabulary). Each row trains the chapter's Transformer (d_model 64, 4 heads, one
pre-LN block per side, unless ``--layers`` says otherwise) as the chapter's race does:
batches of 64, Adam, one thread, rounds of 25 steps until 80% exact match on 200 validation
pairs (at most 400 steps). The rows: the chapter's bare model, the bare model with one
option switched on, the full recipe, and the full recipe with one option switched off. One
line per seed and row, then the table of the chapter (``--markdown``): the median over the
seeds of the steps to the target, and the seeds that reached it::

    .venv/bin/python scripts/experiments/craft_encoder_decoder.py --seeds 0 1 2 --markdown
    .venv/bin/python scripts/experiments/craft_encoder_decoder.py --seeds 1 > seed1.log  # ...
    .venv/bin/python scripts/experiments/craft_encoder_decoder.py --merge seed*.log

(``--merge`` reads the lines that runs of single seeds printed, to run seeds side by side.)

The placement of the layer norm: ``--placement`` trains the race, the race with the warm-up
and the race with label smoothing as post-LN models (``norm_first=False``, as in 2017) and
as pre-LN ones, and the race with and without the warm-up at twice its learning rate (1e-2),
from each seed, into ``transformer_lab/assets/craft_post_ln.json`` (steps, validation exact
match after every round, processor seconds of training); runs already in the record are
kept, so an interrupted run resumes::

    .venv/bin/python scripts/experiments/craft_encoder_decoder.py --placement --seeds 0 1 2

``tests/experiments/test_craft_encoder_decoder.py`` re-derives one row of the chapter's table
and the first 100 steps of one run of the record.
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import re
import statistics
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

import transformer_lab
from transformer_lab.data import numbers
from transformer_lab.device import num_threads
from transformer_lab.generation.search import greedy_decode
from transformer_lab.models import EncoderDecoder, TransformerConfig
from transformer_lab.training.loop import train
from transformer_lab.training.losses import seq2seq_loss
from transformer_lab.training.run import Run
from transformer_lab.training.schedules import warmup_inverse_sqrt

TARGET, ROUND, MAX_STEPS, LR = 0.80, 25, 400, 5e-3


@dataclass(frozen=True)
class Craft:
    """The options of one row; the defaults are the chapter's race (only the embedding
    scale, which the package's model applies by default, is on)."""

    label_smoothing: float = 0.0  # 0.1 in 2017
    warmup: int = 0  # steps of warm-up before the 1/sqrt(step) decay; 0: constant lr
    dropout: float = 0.0  # 0.1 in 2017
    scale_embeddings: bool = True  # multiply embeddings by sqrt(d_model)
    share_embeddings: bool = False  # one table for source, target and read-out
    norm_first: bool = True  # pre-LN, as the chapter's race; False: post-LN, as in 2017
    lr: float = LR  # Adam's (peak) learning rate


BARE = Craft()
FULL = Craft(label_smoothing=0.1, warmup=50, dropout=0.1, share_embeddings=True)
OPTIONS = {  # option -> (the field, its value in the full recipe, off)
    "label smoothing": ("label_smoothing", 0.1, 0.0),
    "warm-up + 1/sqrt": ("warmup", 50, 0),
    "dropout": ("dropout", 0.1, 0.0),
    "embedding scale": ("scale_embeddings", True, False),
    "shared embeddings": ("share_embeddings", True, False),
}


def rows() -> dict[str, Craft]:
    """The table's rows: the race, the race with each option switched (on, or off for the
    embedding scale, which the race has), the race with the two options that helped it
    most, all five, and all five but one."""
    out = {"the race (embedding scale only)": BARE}
    for name, (field, on, off) in OPTIONS.items():
        sign, value = ("-", off) if getattr(BARE, field) == on else ("+", on)
        out[f"race {sign} {name}"] = replace(BARE, **{field: value})
    out["race + label smoothing + warm-up"] = replace(BARE, label_smoothing=0.1, warmup=50)
    out["all five"] = FULL
    for name, (field, _, off) in OPTIONS.items():
        out[f"all but {name}"] = replace(FULL, **{field: off})
    return out


HIGH_LR = 1e-2  # twice the race's rate: where the post-LN race slows down without warm-up
RECORD = Path(transformer_lab.__file__).parent / "assets" / "craft_post_ln.json"


def placement_rows() -> dict[str, Craft]:
    """The rows of the record on layer-norm placement: the race, the race with label
    smoothing and the race with warm-up as post-LN models (the 2017 placement), at the race's
    learning rate; the race and the race with warm-up at twice that rate, post-LN and pre-LN;
    and the three pre-LN rows of the race's rate again, so that the record holds every arm's
    processor time."""
    warm, smooth = dict(warmup=50), dict(label_smoothing=0.1)
    out = {}
    for norm, first in (("post-LN", False), ("pre-LN", True)):
        out[f"{norm} race"] = replace(BARE, norm_first=first)
        out[f"{norm} race + warm-up + 1/sqrt"] = replace(BARE, norm_first=first, **warm)
        out[f"{norm} race + label smoothing"] = replace(BARE, norm_first=first, **smooth)
        out[f"{norm} race, lr 1e-2"] = replace(BARE, norm_first=first, lr=HIGH_LR)
        out[f"{norm} race + warm-up + 1/sqrt, lr 1e-2"] = replace(
            BARE, norm_first=first, lr=HIGH_LR, **warm
        )
    order = ["post-LN race", "post-LN race, lr 1e-2", "pre-LN race, lr 1e-2",
             "post-LN race + warm-up + 1/sqrt, lr 1e-2", "post-LN race + warm-up + 1/sqrt",
             "post-LN race + label smoothing", "pre-LN race + warm-up + 1/sqrt, lr 1e-2",
             "pre-LN race", "pre-LN race + warm-up + 1/sqrt",
             "pre-LN race + label smoothing"]  # fmt: skip
    return {name: out[name] for name in order}  # in the order they were run


def write_record(path: Path, seeds: list[int], names: list[str] | None = None) -> dict:
    """Train the :func:`placement_rows` (or those named) from ``seeds`` and write the JSON
    record to ``path`` after every run; runs already in the file are kept, not repeated."""
    record = json.loads(path.read_text()) if path.exists() else {}
    record.update({
        "script": "scripts/experiments/craft_encoder_decoder.py",
        "model": "d_model 64, 4 heads, d_mlp 128, one block per side",
        "budget": {"target": TARGET, "round": ROUND, "max_steps": MAX_STEPS, "batch_size": 64,
                   "validation_pairs": 200, "threads": 1},
        "torch": torch.__version__, "machine": platform.machine(), "processor": _processor(),
        "seeds": sorted(set(record.get("seeds", [])) | set(seeds)),
    })  # fmt: skip
    rows_out = record.setdefault("rows", {})
    for name, craft in placement_rows().items():
        if names is not None and name not in names:
            continue
        row = rows_out.setdefault(name, {"craft": asdict(craft), "runs": {}})
        for seed in seeds:
            if str(seed) in row["runs"]:
                continue
            r = run_row(craft, seed)
            row["runs"][str(seed)] = {k: r[k] for k in ("steps", "val", "cpu_seconds", "curve")}
            print(f"{name:>40} seed {seed}: {r['steps']:3d} steps, val {r['val']:.2f}, "
                  f"{r['cpu_seconds']:.1f} s CPU", flush=True)  # fmt: skip
            path.write_text(json.dumps(record, indent=1) + "\n")
    return record


def _processor() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def build(data, craft: Craft, layers: int = 1) -> EncoderDecoder:
    """The chapter's Transformer (``layers`` blocks per side) with ``craft``'s options."""
    cfg = TransformerConfig(
        len(data.src_vocab), len(data.tgt_vocab), d_model=64, n_heads=4, d_mlp=128,
        n_layers_enc=layers, n_layers_dec=layers, norm_first=craft.norm_first,
        pad_id=numbers.PAD_ID,
        dropout=craft.dropout, scale_embeddings=craft.scale_embeddings,
        share_embeddings=craft.share_embeddings, tie_embeddings=craft.share_embeddings,
    )  # fmt: skip
    return EncoderDecoder(cfg)


def translate(net, src) -> torch.Tensor:
    return greedy_decode(net, src, bos_id=numbers.BOS_ID, eos_id=numbers.EOS_ID, max_len=60)


def val_exact_match(data, net, n: int = 200) -> float:
    val = data.batch("val", torch.arange(n))
    with num_threads(1):
        ids = translate(net, val.src)
    words = [data.tgt_vocab.decode(row) for row in ids]
    return numbers.exact_match(words, [p.tgt for p in data.val[:n]]).float().mean().item()


def train_to_target(
    data, net, seed: int, craft: Craft = BARE, lr: float | None = None, max_steps: int = MAX_STEPS
) -> dict:
    """Train ``net`` as the chapter's race does (rounds of 25 steps until 80% on 200
    validation pairs, at most ``max_steps``), with ``craft``'s loss, schedule and learning
    rate (``lr`` overrides it). Returns the ``steps``, the training ``cpu_seconds`` (this
    thread's CPU time, which other processes do not inflate), the wall ``seconds``, the last
    validation exact match ``val`` and the exact match after every round, ``curve``."""
    lr = craft.lr if lr is None else lr
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    loss_fn = functools.partial(seq2seq_loss, label_smoothing=craft.label_smoothing)
    schedule = warmup_inverse_sqrt(craft.warmup) if craft.warmup else None
    batches = data.batches("train", 64, seed=seed)
    steps, cpu, wall, acc, curve = 0, 0.0, 0.0, 0.0, []
    while steps < max_steps and acc < TARGET:
        done = steps  # a fresh LambdaLR each round: shift the schedule by the steps done

        def offset(step, done=done):
            return schedule(step + done)

        run = train(
            net,
            batches,
            run=Run(steps=ROUND, threads=1),
            loss_fn=loss_fn,
            optimizer=optimizer,
            lr_schedule=offset if schedule else None,
        )
        steps, wall = steps + ROUND, wall + run.seconds
        cpu += sum(run.step_cpu_seconds)
        acc = val_exact_match(data, net)
        curve.append(round(acc, 4))
    return {"steps": steps, "cpu_seconds": cpu, "seconds": wall, "val": acc, "curve": curve}


def run_row(craft: Craft, seed: int, layers: int = 1, max_steps: int = MAX_STEPS) -> dict:
    """One row of the table for one seed: the model from ``seed``, trained to the target
    (a test stops it early with ``max_steps``)."""
    data = numbers.load(joint_vocab=craft.share_embeddings)
    transformer_lab.seed_everything(seed)
    net = build(data, craft, layers)
    return train_to_target(data, net, seed, craft, max_steps=max_steps)


def summary(results: list[dict]) -> tuple[float, int]:
    """(median steps to the target, how many seeds reached it) of one row's runs."""
    reached = sum(r["val"] >= TARGET for r in results)
    return statistics.median(r["steps"] for r in results), reached


def markdown_row(name: str, results: list[dict]) -> str:
    steps, reached = summary(results)
    each = ", ".join(f"{r['steps']}" if r["val"] >= TARGET else f">{r['steps']}" for r in results)
    return f"| {name} | {steps:g} | {each} | {reached} of {len(results)} |"


LINE = re.compile(r"^\s*(.+?) seed (\d+): +(\d+) steps, val ([\d.]+), ([\d.]+) s CPU", re.M)


def read_lines(text: str) -> dict[str, dict[int, dict]]:
    """Row name -> seed -> result, from the lines :func:`main` prints."""
    out: dict[str, dict[int, dict]] = {}
    for m in LINE.finditer(text):
        name, seed, steps, val, cpu = m.groups()
        out.setdefault(name, {})[int(seed)] = {
            "steps": int(steps), "val": float(val), "cpu_seconds": float(cpu)
        }  # fmt: skip
    return out


def print_table(results: dict[str, list[dict]]) -> None:
    print("| options | median steps to 80% | steps per seed | reached 80% |")
    print("|---|---:|---:|---:|")
    for name, rs in results.items():
        print(markdown_row(name, rs))


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--rows", nargs="+", default=None, help="names of rows to run")
    parser.add_argument("--markdown", action="store_true", help="print the chapter's table")
    parser.add_argument("--merge", nargs="+", help="print the table of these logs' lines")
    parser.add_argument(
        "--placement",
        action="store_true",
        help=f"train the post-LN/pre-LN rows into the record ({RECORD.name})",
    )
    parser.add_argument("--out", type=Path, default=RECORD, help="where --placement writes")
    args = parser.parse_args(argv)
    if args.placement:
        return write_record(args.out, args.seeds, args.rows)
    if args.merge:
        merged: dict[str, dict[int, dict]] = {}
        for path in args.merge:
            for name, by_seed in read_lines(Path(path).read_text()).items():
                merged.setdefault(name, {}).update(by_seed)
        order = [name for name in rows() if name in merged]
        print_table({name: [merged[name][s] for s in sorted(merged[name])] for name in order})
        return merged
    table = {name: c for name, c in rows().items() if args.rows is None or name in args.rows}
    results = {}
    for name, craft in table.items():
        results[name] = []
        for seed in args.seeds:
            start = time.perf_counter()
            r = run_row(craft, seed, args.layers)
            results[name].append(r)
            print(f"{name:>28} seed {seed}: {r['steps']:3d} steps, val {r['val']:.2f}, "
                  f"{r['cpu_seconds']:.1f} s CPU ({time.perf_counter() - start:.0f} s)",
                  flush=True)  # fmt: skip
    if args.markdown:
        print_table(results)
    return results


if __name__ == "__main__":
    main()
