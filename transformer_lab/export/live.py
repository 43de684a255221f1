"""The files of the site's live models: two ONNX graphs and what the browser needs beside them.

:func:`write_live_models` writes into one folder

- ``gpt.onnx`` and ``gpt.json``: the chapter-13 GPT the package ships
  (:func:`transformer_lab.pretrained.book_gpt.load_book_gpt`), exported by
  :func:`transformer_lab.export.onnx.export_gpt`, and :func:`gpt_live_json` (its characters
  in id order, sizes, held-out loss and recipe);
- ``minilm.onnx`` and ``minilm.json``: all-MiniLM-L6-v2
  (:func:`transformer_lab.pretrained.minilm.minilm`) exported by
  :func:`transformer_lab.export.onnx.export_bert`, and :func:`minilm_live_json`: the
  WordPiece vocabulary in id order, the special tokens, and the character classes of the
  tokenizer's normalizer and pre-tokenizer (:func:`wordpiece_char_classes`).

The classes are measured from the ``tokenizers`` library itself, one code point at a time,
because its Unicode tables (categories of an older Unicode version) are not the browser's:
with them ``scripts/site/live/tokenizers.js`` gives exactly the package's token ids.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import BinaryIO

from transformer_lab.checks import instance_of, one_of
from transformer_lab.data.cache import write_atomically
from transformer_lab.data.wordpiece import WordPieceTokenizer
from transformer_lab.models.bert import BertConfig

__all__ = [
    "gpt_live_json",
    "minilm_live_json",
    "wordpiece_char_classes",
    "write_live_models",
    "LIVE_FILES",
]

LIVE_FILES = ("gpt.onnx", "gpt.json", "minilm.onnx", "minilm.json")
_SURROGATES = range(0xD800, 0xE000)  # not characters: no string holds them


def gpt_live_json(info: dict) -> dict:
    """What the page needs of the shipped GPT, from its record
    (:func:`transformer_lab.pretrained.book_gpt.book_gpt_info`)."""
    instance_of(info, dict, "info", "the dict of book_gpt_info()")
    missing = [k for k in ("config", "vocab", "held_out_loss", "recipe") if k not in info]
    if missing:
        raise ValueError(f"info lacks {missing}; pass book_gpt_info()")
    config = info["config"]
    return {
        "vocab": list(info["vocab"]),
        **{k: config[k] for k in ("n_ctx", "n_layers", "n_heads", "d_model")},
        "held_out_loss": info["held_out_loss"],
        "recipe": info["recipe"],
        "preset": info.get("preset"),
        "seed": info.get("seed"),
    }


def _ranges(codes: list[int]) -> list[list[int]]:
    """Sorted code points as inclusive ``[first, last]`` runs."""
    runs: list[list[int]] = []
    for c in codes:
        if runs and runs[-1][1] == c - 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return runs


@functools.lru_cache(maxsize=2)
def _measured_classes(backend_json: str) -> dict[str, list[list[int]]]:
    from tokenizers import Tokenizer, normalizers

    backend = Tokenizer.from_str(backend_json)
    normalize, pre = backend.normalizer.normalize_str, backend.pre_tokenizer.pre_tokenize_str
    nfd = normalizers.NFD().normalize_str
    names = ("removed", "space", "chinese", "decomposed", "split", "punct")
    found: dict[str, list[int]] = {k: [] for k in names}
    for code in range(sys.maxunicode + 1):
        if code in _SURROGATES:
            continue
        ch = chr(code)
        out = normalize(ch)
        if out == "":
            found["removed"].append(code)  # a control or format character, or a mark stripped
        elif out == " " and ch != " ":
            found["space"].append(code)  # whitespace, written as one space
        elif len(out) >= 3 and out[0] == out[-1] == " ":
            found["chinese"].append(code)  # a CJK ideograph (NFD may change it): spaced apart
        if nfd(ch) != ch:
            found["decomposed"].append(code)  # NFD as the library knows it (Unicode grows)
        parts = [p for p, _ in pre(f"a{ch}a")]
        if parts == ["a", "a"]:
            found["split"].append(code)
        elif parts == ["a", ch, "a"]:
            found["punct"].append(code)
    return {k: _ranges(v) for k, v in found.items()}


def wordpiece_char_classes(tokenizer: WordPieceTokenizer) -> dict[str, list[list[int]]]:
    """The code points each step of ``tokenizer``'s BERT normalizer and pre-tokenizer
    treats specially, as inclusive ``[first, last]`` ranges: ``removed`` (dropped: control
    and format characters, and non-spacing marks, which the normalizer strips after NFD),
    ``space`` (written as one space), ``chinese`` (CJK ideographs, spaced apart),
    ``decomposed`` (changed by the library's NFD), ``split`` (whitespace the pre-tokenizer
    splits on) and ``punct`` (a token of its own). Probes
    every code point, a few seconds; cached."""
    instance_of(tokenizer, WordPieceTokenizer, "tokenizer")
    return _measured_classes(tokenizer.backend.to_str())


def minilm_live_json(config: BertConfig, tokenizer: WordPieceTokenizer) -> dict:
    """The page's description of a BERT and its WordPiece tokenizer: the vocabulary in id
    order, sizes, the special tokens, the WordPiece settings and the character classes."""
    instance_of(config, BertConfig, "config")
    instance_of(tokenizer, WordPieceTokenizer, "tokenizer")
    backend = json.loads(tokenizer.backend.to_str())
    model, normalizer = backend["model"], backend.get("normalizer") or {}
    if model.get("type") != "WordPiece" or normalizer.get("type") != "BertNormalizer":
        raise ValueError("the tokenizer must be a WordPiece model with a BertNormalizer")
    vocab = sorted(model["vocab"], key=model["vocab"].get)
    if [model["vocab"][t] for t in vocab] != list(range(len(vocab))):
        raise ValueError("the WordPiece vocabulary's ids are not 0 .. n-1")
    added = backend.get("added_tokens", [])
    if any(t["normalized"] or t["lstrip"] or t["rstrip"] or t["single_word"] for t in added):
        raise ValueError("only added tokens matched as written (not normalized) are supported")
    lowercase, strip = bool(normalizer.get("lowercase", True)), normalizer.get("strip_accents")
    return {
        "vocab": vocab,
        "lowercase": lowercase,
        "strip_accents": lowercase if strip is None else bool(strip),  # None: as lowercase
        "n_layers": config.n_layers,
        "n_heads": config.n_heads,
        "max_positions": min(config.max_pos, tokenizer.max_length),
        "unk": model["unk_token"],
        "cls": "[CLS]",
        "sep": "[SEP]",
        "pad": "[PAD]",
        "mask": "[MASK]",
        "special_tokens": [t["content"] for t in added],
        "continuing_subword_prefix": model["continuing_subword_prefix"],
        "max_input_chars_per_word": model["max_input_chars_per_word"],
        "char_classes": wordpiece_char_classes(tokenizer),
    }


def _write_bytes(data: bytes, file: BinaryIO) -> int:
    return file.write(data)


def write_live_models(
    directory: str | os.PathLike, *, gpt_weights: str = "float32", minilm_weights: str = "float16"
) -> dict[str, Path]:
    """Write :data:`LIVE_FILES` into ``directory``: the shipped GPT (weights stored as
    ``gpt_weights``) and all-MiniLM-L6-v2 (``minilm_weights``; float16 keeps the file near
    45 MB), each with its JSON. Returns ``{file name: path}``."""
    from transformer_lab.export.onnx import WEIGHTS, export_bert, export_gpt
    from transformer_lab.pretrained.book_gpt import book_gpt_info, load_book_gpt
    from transformer_lab.pretrained.minilm import minilm

    instance_of(directory, (str, os.PathLike), "directory", "a folder path")
    one_of(gpt_weights, WEIGHTS, "gpt_weights")
    one_of(minilm_weights, WEIGHTS, "minilm_weights")
    folder = Path(directory)
    gpt, _ = load_book_gpt()
    bert, tokenizer = minilm()
    texts = {
        "gpt.json": gpt_live_json(book_gpt_info()),
        "minilm.json": minilm_live_json(bert.config, tokenizer),
    }
    written = {
        "gpt.onnx": export_gpt(gpt, folder / "gpt.onnx", weights=gpt_weights),
        "minilm.onnx": export_bert(bert, folder / "minilm.onnx", weights=minilm_weights),
    }
    for name, record in texts.items():
        try:  # a NaN would be written as a bare NaN, which the browser's JSON.parse refuses
            text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except ValueError as err:
            raise ValueError(
                f"{name} would hold a NaN or an infinity ({err}); fix its source"
            ) from err
        data = text.encode()
        written[name] = write_atomically(folder / name, functools.partial(_write_bytes, data))
    return {name: written[name] for name in LIVE_FILES}
