"""Whisper's tokenizer, read from the tokenizer.json that ships with Whisper tiny.en
(``pretrained.whisper_files.whisper_dir``): GPT-2's byte-level BPE run by the tokenizers
package, with Whisper's special and timestamp tokens around it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import cast

import torch

from transformer_lab.checks import instance_of, integer, is_int

__all__ = ["WhisperTokenizer"]


class WhisperTokenizer:
    """Whisper's tokenizer from its tokenizer.json: GPT-2's byte-level BPE (ids below
    50256) run by tokenizers, the special tokens of the file (<|endoftext|> 50256,
    <|startoftranscript|> 50257, languages, tasks, <|notimestamps|> 50362 for
    tiny.en), and the timestamp tokens <|0.00|> ... <|30.00|> that follow them up to
    the model's vocabulary size d_vocab."""

    def __init__(self, path: str | Path, d_vocab: int = 51864):
        try:
            from tokenizers import Tokenizer
        except ImportError as err:
            raise ImportError("WhisperTokenizer needs the 'tokenizers' package") from err
        instance_of(path, (str, Path), "path", "a str or Path")
        self.d_vocab = integer(d_vocab, "d_vocab", minimum=1)
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no tokenizer.json at {path}")
        try:
            self.backend = Tokenizer.from_file(str(path))
        except Exception as err:  # tokenizers raises its own Exception type
            raise ValueError(
                f"{path} is not a tokenizer.json that tokenizers can read: {err}"
            ) from err
        specials = {}
        for token in json.loads(path.read_text(encoding="utf-8")).get("added_tokens", []):
            if token.get("special"):
                specials[token["content"]] = token["id"]
        need = ("<|endoftext|>", "<|startoftranscript|>", "<|notimestamps|>")
        missing = [t for t in need if t not in specials]
        if missing:
            raise ValueError(f"{path} lacks Whisper's special tokens {missing}")
        self.eot_id = specials["<|endoftext|>"]
        self.sot_id = specials["<|startoftranscript|>"]
        self.no_timestamps_id = specials["<|notimestamps|>"]
        self.timestamp_begin = self.no_timestamps_id + 1  # <|0.00|>
        self.special_tokens = dict(sorted(specials.items(), key=lambda kv: kv[1]))
        self._special_by_id = {i: t for t, i in specials.items()}
        if self.timestamp_begin > self.d_vocab or self.eot_id >= self.sot_id:
            raise ValueError(
                f"{path}'s special tokens (<|endoftext|> {self.eot_id}, <|notimestamps|> "
                f"{self.no_timestamps_id}) do not fit a vocabulary of {self.d_vocab}"
            )

    def encode(self, text: str) -> list[int]:
        """The BPE ids of text (no special tokens added; a leading space matters: Whisper's
        transcripts start with one)."""
        instance_of(text, str, "text")
        return self.backend.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Sequence[int] | torch.Tensor, skip_special_tokens: bool = True) -> str:
        """The text of ids; special and timestamp tokens are dropped unless
        skip_special_tokens=False, which writes them as <|endoftext|>, <|0.02|>..."""
        instance_of(skip_special_tokens, bool, "skip_special_tokens")
        ids = self._check_ids(ids)
        if skip_special_tokens:
            return self.backend.decode([i for i in ids if i < self.eot_id])
        out, run = [], []
        for i in ids + [None]:
            if i is not None and i < self.eot_id:
                run.append(i)
                continue
            if run:
                out.append(self.backend.decode(run))
                run = []
            if i is not None:
                out.append(self.token(i))
        return "".join(out)

    def token(self, i: int) -> str:
        """The written form of id i: a BPE piece, a special token or a timestamp."""
        (i,) = self._check_ids([i])
        if i >= self.timestamp_begin:
            return f"<|{(i - self.timestamp_begin) * 0.02:.2f}|>"
        if i in self._special_by_id:
            return self._special_by_id[i]
        return cast(str, self.backend.id_to_token(i))  # checked ids are in the vocabulary

    def _check_ids(self, ids) -> list[int]:
        if isinstance(ids, torch.Tensor):
            if ids.is_floating_point() or ids.dtype == torch.bool or ids.dim() != 1:
                raise TypeError(
                    f"ids must be a 1-d integer tensor or a list of ints, got "
                    f"{ids.dtype} of shape {tuple(ids.shape)}"
                )
            ids = ids.tolist()
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
            raise TypeError(f"ids must be a list of ints, got {type(ids).__name__}")
        ids = list(ids)
        for i in ids:
            if not is_int(i):
                raise TypeError(f"token ids must be ints, got {type(i).__name__} ({i!r})")
        bad = [int(i) for i in ids if not 0 <= i < self.d_vocab]
        if bad:
            raise ValueError(f"token ids must be in [0, {self.d_vocab}), got {bad[:5]}")
        return [int(i) for i in ids]

    def __repr__(self) -> str:
        return f"WhisperTokenizer(d_vocab={self.d_vocab}, specials={len(self.special_tokens)})"
