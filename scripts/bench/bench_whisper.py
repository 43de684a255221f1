"""Whisper tiny.en in the package's code (chapter 19): loading, transcription speed and caches.

Measures, on this machine and thread count:

- loading: ``whisper_tiny_en()`` in a fresh Python process (import excluded), median of
  ``--repeats`` processes;
- transcription: the chapter's six synthesized clips, each transcribed greedily
  (``transcribe``: log-mel, encoder, decoder), wall time per clip and the real-time factor
  (seconds of computing per second of audio), median of ``--repeats`` passes;
- the caches: milliseconds per decoded token on the lecture sentence with each of the
  decoder's two caches on or off (``greedy_transcribe(self_cache=..., cross_cache=...)``),
  interleaved, median of ``--repeats``; the tokens must be equal in every setting;
- the decoder against the memory-bandwidth roofline: the bytes one decoding step reads (the
  decoder's weights, the output head reading the whole token table, one row of the position
  table, the self-attention cache at the mean context and the cross-attention cache of all
  1500 audio positions), a streaming read's bandwidth on this thread count, and the share
  of the resulting limit that the cached decoder reaches;
- for reference, CTranslate2 (an optimized C++ engine) on the same ``model.bin`` and the same
  log-mel features, float32, same thread count: its greedy tokens must equal ours.

Usage: ``.venv/bin/python scripts/bench/bench_whisper.py [--threads 1] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

SENTENCES = [
    "The animal didn't cross the street because it was too tired.",
    "The animal didn't cross the street. It was too tired.",
    "Yes, the animal stopped, looked around, and then went home.",
    "The decoder reads the encoder's memory through cross-attention.",
    "Seven ships sailed north. Nobody knows why they never came back.",
    "Turn left at the bridge, then walk until you see the station.",
]

LOAD = """
import json, time
import torch
torch.set_num_threads({threads})
from transformer_lab.pretrained.whisper import whisper_tiny_en
t0 = time.perf_counter()
whisper_tiny_en()
print(json.dumps(dict(load_s=time.perf_counter() - t0)))
"""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from transformer_lab.data.speech import speak
    from transformer_lab.pretrained.whisper import (
        greedy_transcribe,
        log_mel,
        transcribe,
        whisper_dir,
        whisper_tiny_en,
    )

    loads = []
    for _ in range(args.repeats):
        out = subprocess.run(
            [sys.executable, "-c", LOAD.format(threads=args.threads)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        loads.append(json.loads(out.stdout.strip().splitlines()[-1])["load_s"])
    print(f"load (fresh process, import excluded): median {statistics.median(loads):.2f} s "
          f"of {[round(x, 2) for x in loads]}")  # fmt: skip

    model, tokenizer = whisper_tiny_en()
    clips = [speak(s) for s in SENTENCES]
    audio_s = sum(c.duration_s for c in clips)
    passes = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        texts = [transcribe(model, tokenizer, c.audio).text for c in clips]
        passes.append(time.perf_counter() - t0)
    best = statistics.median(passes)
    print(f"transcription: {len(clips)} clips, {audio_s:.1f} s of audio in {best:.2f} s "
          f"(median of {args.repeats}): real-time factor {best / audio_s:.3f}")  # fmt: skip
    for s, t in zip(SENTENCES, texts, strict=True):
        print(f"  {s!r} -> {t.strip()!r}")

    mel = log_mel(clips[0].audio)
    settings = [(True, True), (True, False), (False, True), (False, False)]
    per_token: dict = {k: [] for k in settings}
    encode: list[float] = []
    reference = None
    for _ in range(args.repeats):
        for self_cache, cross_cache in settings:
            g = greedy_transcribe(model, mel, self_cache=self_cache, cross_cache=cross_cache)
            reference = reference or g.tokens
            assert g.tokens == reference, (self_cache, cross_cache)
            per_token[self_cache, cross_cache].append(1000 * g.seconds_per_token)
            encode.append(g.encode_seconds)
    print(f"encoder: median {1000 * statistics.median(encode):.0f} ms per clip; "
          f"{len(reference)} tokens decoded on the lecture sentence")  # fmt: skip
    for (self_cache, cross_cache), ms in per_token.items():
        on = {True: "on ", False: "off"}
        print(f"  self-attention cache {on[self_cache]}, cross-attention cache "
              f"{on[cross_cache]}: {statistics.median(ms):6.1f} ms per token")  # fmt: skip

    decoder_roofline(model, per_token[True, True], n_tokens=len(reference))

    try:
        import ctranslate2
    except ImportError:
        print("ctranslate2 not installed: no reference timing")
        return
    ct2 = ctranslate2.models.Whisper(
        str(whisper_dir()), device="cpu", compute_type="float32", intra_threads=args.threads
    )
    mels = [log_mel(c.audio) for c in clips]
    prompt = model.generation.prompt
    ct2_s, ours_s = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        ours = [greedy_transcribe(model, m).tokens[:-1] for m in mels]
        ours_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        theirs = [
            ct2.generate(ctranslate2.StorageView.from_array(m[None].numpy()), [prompt],
                         beam_size=1, max_length=448)[0].sequences_ids[0]
            for m in mels
        ]  # fmt: skip
        ct2_s.append(time.perf_counter() - t0)
        assert ours == theirs, "CTranslate2's greedy tokens differ from ours"
    print(f"from log-mel, the {len(clips)} clips (interleaved, median of {args.repeats}): ours "
          f"{statistics.median(ours_s):.2f} s, CTranslate2 {statistics.median(ct2_s):.2f} s "
          f"(float32, {args.threads} thread(s)); the same tokens")  # fmt: skip


def decoder_roofline(model, ms_per_token: list[float], n_tokens: int) -> dict:
    """Print and return what one cached decoding step reads and how near the bandwidth
    limit the measured milliseconds per token come."""
    from transformer_lab.analysis.roofline import read_bandwidth, roofline

    c = model.config
    seen, weights = set(), 0
    for p in model.decoder.parameters():  # a shared tensor once
        if p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            weights += p.numel() * p.element_size()
    weights -= (c.n_text_ctx - 1) * c.d_model * 4  # a step reads one row of the position table
    prompt = len(model.generation.prompt)
    self_cache = 2 * c.n_text_layers * c.d_model * (prompt + n_tokens / 2) * 4
    cross_cache = 2 * c.n_text_layers * c.d_model * c.n_audio_ctx * 4
    total = weights + self_cache + cross_cache
    bandwidth = read_bandwidth()
    limit = roofline(total, bandwidth)
    rate = 1000 / statistics.median(ms_per_token)
    print(
        f"decoder roofline: a cached step reads {weights / 1e6:.0f} MB of weights, "
        f"{self_cache / 1e6:.2f} MB of self-attention cache and {cross_cache / 1e6:.1f} MB "
        f"of cross-attention cache; a streaming read moves {bandwidth / 1e9:.1f} GB/s, so at "
        f"most {limit:.0f} tokens/s; ours {rate:.0f} tokens/s, {rate / limit:.0%} of it"
    )
    return {"bytes": total, "bandwidth": bandwidth, "limit": limit, "rate": rate}


if __name__ == "__main__":
    main()
