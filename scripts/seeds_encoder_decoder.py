"""Chapter 11's race over several random starts: the GRU with attention against the
Transformer on English -> German number words.

For each seed, both models are built and trained exactly as in the chapter (batches of 64,
Adam, one thread, rounds of 25 steps until 80% exact match on 200 validation pairs), then
decoded greedily on the 1000 test pairs. One line per seed: steps to the target, test exact
match overall and by source length; at the end the gap on the longest sources::

    .venv/bin/python scripts/seeds_encoder_decoder.py              # seeds 0-5
    .venv/bin/python scripts/seeds_encoder_decoder.py --seeds 0 7
"""

from __future__ import annotations

import argparse

import torch

import transformer_lab
from transformer_lab.data import numbers
from transformer_lab.decoding import greedy_decode
from transformer_lab.models import EncoderDecoder, TransformerConfig
from transformer_lab.models.rnn import Seq2Seq, Seq2SeqConfig
from transformer_lab.train import num_threads, train

TARGET, ROUND, MAX_STEPS = 0.80, 25, 400
BINS = [1, 5, 9, 13, 17, 21, 24]


def _exact_match(data, translate, batch, refs):
    with num_threads(1):
        ids = translate(batch.src)
    return numbers.exact_match([data.tgt_vocab.decode(row) for row in ids], refs)


def race(data, seed: int) -> dict[str, dict]:
    """Both models from ``seed``, trained to the target; their steps and test accuracies."""
    src_vocab, tgt_vocab = len(data.src_vocab), len(data.tgt_vocab)
    transformer_lab.seed_everything(seed)
    rnn = Seq2Seq(Seq2SeqConfig(src_vocab, tgt_vocab, d_embed=64, d_hidden=128, attention="dot"))
    transformer_lab.seed_everything(seed)
    cfg = TransformerConfig(
        src_vocab, tgt_vocab, d_model=64, n_heads=4, d_mlp=128, n_layers_enc=1, n_layers_dec=1,
        norm_first=True, pad_id=numbers.PAD_ID,
    )  # fmt: skip
    transformer = EncoderDecoder(cfg)
    val = data.batch("val", torch.arange(200))
    val_refs = [p.tgt for p in data.val[:200]]
    test = data.batch("test", torch.arange(1000))
    test_refs = [p.tgt for p in data.test[:1000]]
    lengths = data.src_lengths("test")[:1000]

    def transformer_translate(src):
        return greedy_decode(
            transformer, src, bos_id=numbers.BOS_ID, eos_id=numbers.EOS_ID, max_len=30
        )

    report = {}
    for name, net, translate, lr in [
        ("GRU + attention", rnn, rnn.greedy_ids, 1e-2),
        ("Transformer", transformer, transformer_translate, 5e-3),
    ]:
        optimizer = torch.optim.Adam(net.parameters(), lr=lr)
        batches = data.batches("train", 64, seed=seed)
        steps, acc = 0, 0.0
        while steps < MAX_STEPS and acc < TARGET:
            train(net, batches, steps=ROUND, optimizer=optimizer, threads=1, progress=False)
            steps += ROUND
            acc = _exact_match(data, translate, val, val_refs).float().mean().item()
        correct = _exact_match(data, translate, test, test_refs)
        table = numbers.accuracy_by_length(correct, lengths, BINS)
        report[name] = {"steps": steps, "val": acc, "test": correct.float().mean().item()}
        report[name]["by_length"] = {label: round(a, 3) for label, a, _ in table}
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(6)))
    args = parser.parse_args(argv)
    data = numbers.load()
    gaps = []
    for seed in args.seeds:
        report = race(data, seed)
        for name, r in report.items():
            bins = " ".join(f"{label}:{a:.2f}" for label, a in r["by_length"].items())
            head = f"seed {seed} {name:>15}: {r['steps']:3d} steps, val {r['val']:.2f}"
            print(f"{head}, test {r['test']:.3f} | {bins}", flush=True)
        longest = list(report["GRU + attention"]["by_length"])[-1]
        gaps.append(
            report["GRU + attention"]["by_length"][longest]
            - report["Transformer"]["by_length"][longest]
        )
    print(f"GRU minus Transformer on {longest} words: " + ", ".join(f"{g:+.2f}" for g in gaps))
    return gaps


if __name__ == "__main__":
    main()
