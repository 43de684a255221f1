"""SmolLM2-135M-Instruct in the package's code against Hugging Face transformers.

Measures, on this machine:

- loading: ``transformer_lab.pretrained.smollm2.smollm2()`` in a fresh Python process, its wall
  time and the process's peak resident memory (``ru_maxrss``); the same for transformers'
  ``LlamaForCausalLM.from_pretrained(..., gguf_file=...)`` for reference;
- generation: greedy decoding of ``--new-tokens`` tokens after the same chat prompt, with
  the key/value cache, ours (``transformer_lab.generation.sampling.generate``) and transformers'
  ``generate``, with the same weights and thread count, interleaved, median of
  ``--repeats``; both must produce the same tokens;
- the roofline: the bandwidth of a streaming read on this machine
  (:func:`transformer_lab.analysis.roofline.read_bandwidth`, same thread count), the bytes
  one decoding step reads (every weight once, and the key/value cache at the run's mean
  length), the tokens per second that bandwidth allows, and the share of it each decoder
  reaches; the same for the book's GPT (chapter 13's shipped model), ours only;
- the stored weights (``Llama.store_weights``: float32 rows, bfloat16, int8), each decoding
  with the fused step (:mod:`transformer_lab.nn.decode_step`, one C call a token, rows in
  one huge-page buffer) and, interleaved with it, as before that step existed: rows in
  ordinary memory, each matrix on its own, and the modules run one by one (``before``);
  their next-token agreement with float32 on 1,024 held-out tokens.

Usage: ``.venv/bin/python scripts/bench/bench_smollm2.py [--threads 1] [--new-tokens 64]``;
``--storages-only`` skips transformers and the book's GPT (float32 is still timed);
``--int8-groups 64,32`` adds int8 copies with one scale per that many inputs of a row.
transformers is used here only (and in the parity tests), never in the book.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

LOAD_OURS = """
import json, resource, time
t0 = time.perf_counter()
import torch
torch.set_num_threads({threads})
from transformer_lab.pretrained.smollm2 import smollm2
t1 = time.perf_counter()
model, tok = smollm2()
t2 = time.perf_counter()
print(json.dumps(dict(import_s=t1 - t0, load_s=t2 - t1,
                      peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))
"""

LOAD_HF = """
import json, resource, time
import torch
torch.set_num_threads({threads})
import transformers
from transformer_lab.pretrained.smollm2 import smollm2_path
path = smollm2_path()
t1 = time.perf_counter()
model = transformers.LlamaForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                      dtype=torch.float32)
t2 = time.perf_counter()
print(json.dumps(dict(load_s=t2 - t1,
                      peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))
"""


def run_fresh(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def as_before(model):
    """``model`` (weights stored) as it decoded before the fused step: every matrix's rows
    in their own ordinary memory (copied out of the huge-page buffer), the modules run one
    by one. The same numbers, in the same order of sums."""
    from transformer_lab.nn.stored_weights import StoredWeight

    for module in model.modules():
        for value in vars(module).values():
            if isinstance(value, StoredWeight):
                value.rows = value.rows.clone()  # the head too: the model holds it
    model.fused_decoding = False
    return model


def huge_page_bandwidth(n_bytes: int = 1 << 30, repeats: int = 5) -> float:
    """Bytes per second of the same streaming read as ``read_bandwidth``, over a buffer on
    2 MiB pages (``huge_page_buffer``), where the stored weights lie."""
    import torch

    from transformer_lab.nn.stored_weights import huge_page_buffer

    buffer = huge_page_buffer(n_bytes).view(torch.float32)
    buffer.fill_(1.0)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        buffer.sum()
        times.append(time.perf_counter() - start)
    return buffer.numel() * 4 / statistics.median(times)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads, both sides")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-load", action="store_true", help="only time generation")
    parser.add_argument(
        "--storages-only", action="store_true", help="time float32 and the stored weights only"
    )
    parser.add_argument(
        "--int8-groups", default="", help="comma-separated int8 group sizes to time as well"
    )
    args = parser.parse_args(argv)
    if args.storages_only:
        args.skip_load = True
    result: dict = {"threads": args.threads, "new_tokens": args.new_tokens}

    if not args.skip_load:
        result["load_ours"] = run_fresh(LOAD_OURS.format(threads=args.threads))
        result["load_transformers"] = run_fresh(LOAD_HF.format(threads=args.threads))
        print(
            f"load, ours:         {result['load_ours']['load_s']:.1f} s, "
            f"peak RSS {result['load_ours']['peak_rss_mb']:.0f} MB (fresh process)"
        )
        print(
            f"load, transformers: {result['load_transformers']['load_s']:.1f} s, "
            f"peak RSS {result['load_transformers']['peak_rss_mb']:.0f} MB (fresh process)"
        )

    import torch
    import transformers

    from transformer_lab.generation.sampling import generate
    from transformer_lab.pretrained.smollm2 import smollm2, smollm2_path

    torch.set_num_threads(args.threads)
    model, tok = smollm2()
    path = smollm2_path()
    hf = None
    if not args.storages_only:
        hf = transformers.LlamaForCausalLM.from_pretrained(
            str(path.parent), gguf_file=path.name, dtype=torch.float32
        ).eval()
    ids = torch.tensor([tok.encode(tok.chat_prompt("Tell me about the history of Paris."))])
    n = args.new_tokens

    def ours():
        return generate(model, ids, n, temperature=0, use_cache=True)

    def theirs():
        with torch.no_grad():
            return hf.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=n,
                min_new_tokens=n,
                do_sample=False,
                use_cache=True,
            )

    sides = {"ours": ours} | ({} if hf is None else {"transformers": theirs})
    outputs = {name: fn() for name, fn in sides.items()}  # warm-up, and the tokens to compare
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(args.repeats):  # interleaved, so both see the same conditions
        for name, fn in sides.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    same = torch.equal(outputs["ours"], outputs.get("transformers", outputs["ours"]))
    for name in times:
        median = statistics.median(times[name])
        result[f"tokens_per_s_{name}"] = n / median
        result[f"seconds_{name}"] = sorted(times[name])
    result["prompt_tokens"] = ids.shape[1]
    print(
        f"generation, {n} greedy tokens after a {ids.shape[1]}-token prompt, "
        f"{args.threads} thread(s), median of {args.repeats} interleaved repeats:"
    )
    print(f"  ours:         {result['tokens_per_s_ours']:.1f} tokens/s")
    if hf is not None:
        result["same_tokens"] = same
        result["ratio_ours_over_transformers"] = (
            result["tokens_per_s_ours"] / result["tokens_per_s_transformers"]
        )
        print(f"  transformers: {result['tokens_per_s_transformers']:.1f} tokens/s")
        print(
            f"  ratio ours/transformers {result['ratio_ours_over_transformers']:.2f}; "
            f"same tokens: {same}"
        )
    print(tok.decode(outputs["ours"][0, ids.shape[1] :].tolist()))

    from transformer_lab.analysis.roofline import decode_bytes_per_token, read_bandwidth, roofline
    from transformer_lab.pretrained.book_gpt import load_book_gpt

    bandwidth = read_bandwidth()
    mean_context = ids.shape[1] + n // 2
    read = decode_bytes_per_token(model, mean_context)
    limit = roofline(read["total"], bandwidth)
    result["bandwidth_gb_s"] = bandwidth / 1e9
    result["bandwidth_huge_pages_gb_s"] = huge_page_bandwidth() / 1e9
    result["bytes_per_token"] = read
    result["roofline_tokens_per_s"] = limit
    for name in sides:
        result[f"roofline_fraction_{name}"] = result[f"tokens_per_s_{name}"] / limit
    print(
        f"roofline: a streaming read moves {bandwidth / 1e9:.1f} GB/s on {args.threads} "
        f"thread(s) ({result['bandwidth_huge_pages_gb_s']:.1f} GB/s on 2 MiB pages); a step "
        f"reads {read['weights'] / 1e6:.0f} MB of weights and {read['cache'] / 1e6:.1f} MB of "
        f"cache (mean context {mean_context}), so at most {limit:.1f} tokens/s; "
        + ", ".join(f"{k} reaches {result[f'roofline_fraction_{k}']:.0%}" for k in sides)
    )

    # the reduced-precision paths: the same prompt, interleaved with float32 (ours)
    from transformer_lab.data.shakespeare import train_val_text
    from transformer_lab.nn.stored_weights import STORAGES, storage_supported

    held_out = torch.tensor([tok.encode(train_val_text()[1][:6000])[:1024]])
    with torch.no_grad():
        reference = model(held_out)[0].argmax(-1)  # [pos]: float32's next-token choices
    stored = {}
    for storage in STORAGES:
        if not storage_supported(storage):
            print(f"{storage} storage: this CPU lacks the kernels, skipped")
            continue
        stored[storage] = smollm2()[0].store_weights(storage)
        stored[f"{storage} before"] = as_before(smollm2()[0].store_weights(storage))
    for group in filter(None, args.int8_groups.split(",")):
        if "int8" in stored:
            stored[f"int8 g{group}"] = smollm2()[0].store_weights("int8", group_size=int(group))
    if stored:
        runs = {"float32": ours} | {
            s: (lambda m=m: generate(m, ids, n, temperature=0, use_cache=True))
            for s, m in stored.items()
        }
        outs = {s: fn() for s, fn in runs.items()}  # warm-up, and the tokens
        spans: dict[str, list[float]] = {s: [] for s in runs}
        for _ in range(args.repeats):
            for s, fn in runs.items():
                start = time.perf_counter()
                fn()
                spans[s].append(time.perf_counter() - start)
        base = n / statistics.median(spans["float32"])
        result["storage"] = {}
        for s, m in stored.items():
            rate = n / statistics.median(spans[s])
            with torch.no_grad():
                agree = (m(held_out)[0].argmax(-1) == reference).float().mean().item()
            new = outs[s][0, ids.shape[1] :]
            same_prefix = int((new == outs["float32"][0, ids.shape[1] :]).long().cumprod(0).sum())
            s_read = decode_bytes_per_token(m, mean_context)
            result["storage"][s] = {
                "tokens_per_s": rate,
                "speedup_over_float32": rate / base,
                "argmax_agreement": agree,
                "greedy_tokens_equal_to_float32": same_prefix,
                "bytes_per_token": s_read,
                "roofline_fraction": rate / roofline(s_read["total"], bandwidth),
            }
            print(
                f"{s} storage: {rate:.1f} tokens/s against float32's {base:.1f} "
                f"({rate / base:.2f}x, median of {args.repeats} interleaved); "
                f"{s_read['total'] / 1e6:.0f} MB per step, "
                f"{result['storage'][s]['roofline_fraction']:.0%} of its roofline; next-token "
                f"argmax equal to float32's at {agree:.1%} of {held_out.shape[1]} held-out "
                f"positions; greedy tokens equal for the first {same_prefix} of {n}"
            )
        for s in STORAGES:
            if s in stored:
                after, before = result["storage"][s], result["storage"][f"{s} before"]
                gain = after["tokens_per_s"] / before["tokens_per_s"]
                after["speedup_over_before"] = gain
                print(
                    f"{s}: fused step {after['tokens_per_s']:.1f} tokens/s "
                    f"({after['roofline_fraction']:.0%} of the roofline) against "
                    f"{before['tokens_per_s']:.1f} before ({before['roofline_fraction']:.0%}): "
                    f"{gain:.2f}x"
                )
    if args.storages_only:
        return result

    gpt, gpt_tok = load_book_gpt()
    prompt = torch.tensor([gpt_tok.encode("ROMEO:\n")])
    gpt_n = min(n, gpt.config.n_ctx - prompt.shape[1])
    generate(gpt, prompt, gpt_n, temperature=0, use_cache=True)  # warm-up
    gpt_times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        generate(gpt, prompt, gpt_n, temperature=0, use_cache=True)
        gpt_times.append(time.perf_counter() - start)
    gpt_rate = gpt_n / statistics.median(gpt_times)
    gpt_read = decode_bytes_per_token(gpt, prompt.shape[1] + gpt_n // 2)
    gpt_limit = roofline(gpt_read["total"], bandwidth)
    result["book_gpt"] = {
        "tokens_per_s": gpt_rate,
        "bytes_per_token": gpt_read,
        "roofline_tokens_per_s": gpt_limit,
        "roofline_fraction": gpt_rate / gpt_limit,
    }
    print(
        f"book GPT: {gpt_rate:.0f} tokens/s, {gpt_read['total'] / 1e6:.2f} MB per step, "
        f"roofline {gpt_limit:.0f} tokens/s: {gpt_rate / gpt_limit:.0%} (a model this small "
        "fits in the caches, and the time goes on the framework's work per operation)"
    )
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
