"""Chapter 11's race over several random starts: the GRU with attention against the
Transformer on English -> German number words.

For each seed, both models are built and trained exactly as in the chapter (batches of 64,
Adam, one thread, rounds of 25 steps until 80% exact match on 200 validation pairs), then
decoded greedily on the 1000 test pairs. One line per seed: steps to the target, test exact
match overall and by source length; at the end the gap on the longest sources, and the
table of chapter 11's exercise 5 (``--markdown``). With ``--extra-steps N`` the Transformer
then trains N more steps as in exercise 4 (fresh Adam, batches of the next seed), and its
accuracy by length is reported again::

    .venv/bin/python scripts/experiments/seeds_encoder_decoder.py              # seeds 0-4
    .venv/bin/python scripts/experiments/seeds_encoder_decoder.py --seeds 0 7 --extra-steps 200

``tests/experiments/test_seeds_encoder_decoder.py`` re-derives one row of the chapter's table.
"""

from __future__ import annotations

import argparse
import copy

import torch

import transformer_lab
from transformer_lab.data import numbers
from transformer_lab.device import num_threads
from transformer_lab.generation.search import greedy_decode
from transformer_lab.models import EncoderDecoder, TransformerConfig
from transformer_lab.models.rnn import Seq2Seq, Seq2SeqConfig
from transformer_lab.training.loop import train
from transformer_lab.training.run import Run

TARGET, ROUND, MAX_STEPS = 0.80, 25, 400
BINS = [1, 5, 9, 13, 17, 21, 24]
NAMES = ("GRU + attention", "Transformer")


def exact_match(data, translate, batch, refs) -> torch.Tensor:
    """Per-pair exact match (bool) of ``translate``'s greedy outputs against ``refs``."""
    with num_threads(1):
        ids = translate(batch.src)
    return numbers.exact_match([data.tgt_vocab.decode(row) for row in ids], refs)


def transformer_config(data) -> TransformerConfig:
    """The chapter's toy Transformer: d_model 64, 4 heads, one pre-LN block each side."""
    return TransformerConfig(
        len(data.src_vocab), len(data.tgt_vocab), d_model=64, n_heads=4, d_mlp=128,
        n_layers_enc=1, n_layers_dec=1, norm_first=True, pad_id=numbers.PAD_ID,
    )  # fmt: skip


def translator(net):
    """Greedy decoding for either model: ids ``[batch, n]`` without ``<bos>``."""
    if isinstance(net, Seq2Seq):
        return net.greedy_ids
    return lambda src: greedy_decode(
        net, src, bos_id=numbers.BOS_ID, eos_id=numbers.EOS_ID, max_len=30
    )


def train_models(data, seed: int) -> dict[str, dict]:
    """Both models from ``seed``, each trained in rounds to the target as in the chapter.

    Returns, per name: the trained ``net``, its ``translate`` function, the ``steps`` taken,
    the training ``seconds`` and the last validation exact match ``val``."""
    transformer_lab.seed_everything(seed)
    rnn = Seq2Seq(
        Seq2SeqConfig(len(data.src_vocab), len(data.tgt_vocab), d_embed=64, d_hidden=128,
                      attention="dot")
    )  # fmt: skip
    transformer_lab.seed_everything(seed)
    transformer = EncoderDecoder(transformer_config(data))
    val = data.batch("val", torch.arange(200))
    val_refs = [p.tgt for p in data.val[:200]]
    out = {}
    for name, net, lr in [(NAMES[0], rnn, 1e-2), (NAMES[1], transformer, 5e-3)]:
        translate = translator(net)
        optimizer = torch.optim.Adam(net.parameters(), lr=lr)
        batches = data.batches("train", 64, seed=seed)
        steps, seconds, acc = 0, 0.0, 0.0
        while steps < MAX_STEPS and acc < TARGET:
            run = train(net, batches, run=Run(steps=ROUND, threads=1), optimizer=optimizer)
            steps, seconds = steps + ROUND, seconds + run.seconds
            acc = exact_match(data, translate, val, val_refs).float().mean().item()
        out[name] = {"net": net, "translate": translate, "steps": steps, "seconds": seconds}
        out[name]["val"] = acc
    return out


def by_length(data, translate) -> tuple[float, dict[str, float]]:
    """Test exact match on the first 1000 test pairs: overall, and per source-length bin."""
    test = data.batch("test", torch.arange(1000))
    correct = exact_match(data, translate, test, [p.tgt for p in data.test[:1000]])
    table = numbers.accuracy_by_length(correct, data.src_lengths("test")[:1000], BINS)
    return correct.float().mean().item(), {label: round(a, 3) for label, a, _ in table}


def train_longer(data, net, steps: int, seed: int):
    """A copy of ``net`` trained ``steps`` more steps as in the chapter's exercise 4: a fresh
    Adam at 5e-3 on the batches of ``seed``, one thread."""
    longer = copy.deepcopy(net)
    train(
        longer,
        data.batches("train", 64, seed=seed),
        run=Run(steps=steps, threads=1),
        lr=5e-3,
    )
    return longer


def race(data, seed: int, extra_steps: int = 0) -> dict[str, dict]:
    """Both models from ``seed``, trained to the target; their steps and test accuracies
    (and, with ``extra_steps``, the Transformer's after that many more steps)."""
    report = {}
    for name, m in train_models(data, seed).items():
        test, table = by_length(data, m["translate"])
        report[name] = {"steps": m["steps"], "val": m["val"], "test": test, "by_length": table}
        if name == NAMES[1] and extra_steps:
            longer = train_longer(data, m["net"], extra_steps, seed + 1)
            test, table = by_length(data, translator(longer))
            report[f"{name} +{extra_steps}"] = {
                "steps": m["steps"] + extra_steps, "val": float("nan"), "test": test,
                "by_length": table,
            }  # fmt: skip
    return report


def longest_gap(report, name: str = NAMES[1]) -> float:
    """The GRU's exact match minus ``name``'s on the longest sources."""
    longest = list(report[NAMES[0]]["by_length"])[-1]
    return report[NAMES[0]]["by_length"][longest] - report[name]["by_length"][longest]


def markdown_row(seed: int, report) -> str:
    """One row of the chapter's seed table."""
    gru, tf = report[NAMES[0]], report[NAMES[1]]
    longest = list(gru["by_length"])[-1]
    cells = [seed, gru["steps"], tf["steps"], f"{gru['by_length'][longest]:.2f}"]
    cells += [f"{tf['by_length'][longest]:.2f}", f"{longest_gap(report):.2f}"]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(5)))
    parser.add_argument("--extra-steps", type=int, default=0)
    parser.add_argument("--markdown", action="store_true", help="print the chapter's table")
    args = parser.parse_args(argv)
    data = numbers.load()
    reports = {}
    for seed in args.seeds:
        reports[seed] = report = race(data, seed, args.extra_steps)
        for name, r in report.items():
            bins = " ".join(f"{label}:{a:.2f}" for label, a in r["by_length"].items())
            head = f"seed {seed} {name:>19}: {r['steps']:3d} steps, val {r['val']:.2f}"
            print(f"{head}, test {r['test']:.3f} | {bins}", flush=True)
    longest = list(next(iter(reports.values()))[NAMES[0]]["by_length"])[-1]
    for name in next(iter(reports.values())):
        if name != NAMES[0]:
            gaps = ", ".join(f"{longest_gap(r, name):+.2f}" for r in reports.values())
            print(f"GRU minus {name} on {longest} words: {gaps}")
    if args.markdown:
        print("| seed | GRU steps | Transformer steps | GRU, 21-23 words | "
              "Transformer, 21-23 words | gap |")  # fmt: skip
        print("|---:|---:|---:|---:|---:|---:|")
        for seed, report in reports.items():
            print(markdown_row(seed, report))
    return reports


if __name__ == "__main__":
    main()
