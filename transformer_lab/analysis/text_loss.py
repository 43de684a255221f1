"""A language model's loss on a held-out text, in nats per token and in nats per character.

Nats per token depend on the tokenizer: a model whose tokens are words pays more per token
than one that spells characters, for the same text. Nats per *character* do not: the
total negative log-probability of the whole text, divided by its length in characters, is
the same kind of number for a character model, a byte-level BPE model or a count table::

    loss = text_loss(model, tokenizer, text, window=2048, stride=1024, start_id=0)
    loss.nats_per_char, loss.nats_per_token, loss.chars_per_token

The text is encoded once; it must decode back to exactly itself (otherwise the characters
counted would not be the characters scored). A long text is scored with sliding windows,
as a decoder with a fixed context is evaluated: the targets are taken ``stride`` at a time,
and each chunk of targets is predicted from a window of at most ``window`` input tokens that
ends just before its last target. Every token is scored exactly once, and each has at least
``window - stride + 1`` tokens before it in its window (all the tokens before it, near the
start). ``stride = window`` is quickest (each token is run through the model about once);
``stride = window // 2`` gives every token at least half a window of context for about
twice the work.

The first token has nothing before it to be predicted from. With ``start_id`` (a token the
model saw at the start of documents, such as ``<|endoftext|>``) the sequence starts with it
as context only, and every token of the text, so every character, is scored. Without it,
the first token is not scored and the characters it spells are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from transformer_lab.checks import instance_of, integer, string
from transformer_lab.device import evaluating

__all__ = ["TextLoss", "text_loss"]


@dataclass(frozen=True)
class TextLoss:
    """What :func:`text_loss` measured."""

    nats: float  # summed negative log-probability of the scored tokens (natural log)
    tokens: int  # tokens scored
    characters: int  # characters of the text that the scored tokens spell
    window: int  # input tokens per forward pass, at most
    stride: int  # targets scored per forward pass, at most

    @property
    def nats_per_token(self) -> float:
        return self.nats / self.tokens

    @property
    def nats_per_char(self) -> float:
        return self.nats / self.characters

    @property
    def chars_per_token(self) -> float:
        return self.characters / self.tokens


def _encode(tokenizer, text: str) -> list[int]:
    """``tokenizer.encode(text)`` as a list of ints, checked to decode back to ``text``."""
    ids = tokenizer.encode(text)
    ids = ids.tolist() if isinstance(ids, torch.Tensor) else [int(i) for i in ids]
    back = tokenizer.decode(ids)
    if back != text:
        at = next((i for i, (a, b) in enumerate(zip(back, text, strict=False)) if a != b), None)
        at = min(len(back), len(text)) if at is None else at
        raise ValueError(
            f"the tokenizer does not give the text back: decode(encode(text)) differs from "
            f"character {at} on ({text[at : at + 20]!r} became {back[at : at + 20]!r}), so "
            "the characters counted would not be the characters scored"
        )
    return ids


@torch.no_grad()
def text_loss(
    model: nn.Module,
    tokenizer,
    text: str,
    window: int = 1024,
    stride: int = 512,
    start_id: int | None = None,
) -> TextLoss:
    """The loss of the causal language model ``model`` (token ids ``[batch, pos]`` to
    next-token logits ``[batch, pos, d_vocab]``) on ``text`` as ``tokenizer`` encodes it,
    scored with sliding windows of at most ``window`` input tokens, ``stride`` targets at a
    time (see the module's docstring); ``start_id`` is a token put before the text as
    context only, so that its first token is scored too. Run on the model's device, in
    evaluation mode."""
    instance_of(model, nn.Module, "model", "an nn.Module (a causal language model)")
    if not all(callable(getattr(tokenizer, m, None)) for m in ("encode", "decode")):
        raise TypeError(
            f"tokenizer must have encode(text) and decode(ids), got {type(tokenizer).__name__}"
        )
    text = string(text, "text")
    window = integer(window, "window", minimum=1)
    stride = integer(stride, "stride", minimum=1)
    if stride > window:
        raise ValueError(
            f"stride={stride} must be at most window={window}: tokens would be skipped"
        )
    n_ctx = getattr(getattr(model, "config", None), "n_ctx", None)
    if n_ctx is not None and window > n_ctx:
        raise ValueError(f"window={window} is longer than the model's context n_ctx={n_ctx}")
    if start_id is not None:
        start_id = integer(start_id, "start_id", minimum=0)
    ids = _encode(tokenizer, text)
    if start_id is None:
        if len(ids) < 2:
            raise ValueError(
                f"text must encode to at least 2 tokens without a start_id, got {len(ids)}"
            )
        first = tokenizer.decode(ids[:1])
        if not text.startswith(first):
            raise ValueError(
                f"the first token alone decodes to {first!r}, not the start of the text "
                "(a character split between tokens): pass a start_id to score it"
            )
        characters = len(text) - len(first)
    else:
        if not ids:
            raise ValueError("text must not be empty")
        ids, characters = [start_id, *ids], len(text)
    device = next(iter(model.parameters()), torch.empty(0)).device
    seq = torch.tensor(ids, dtype=torch.long, device=device)  # [n]
    nats = 0.0
    with evaluating(model):
        for lo in range(1, len(seq), stride):  # targets lo .. hi - 1
            hi = min(lo + stride, len(seq))
            begin = max(0, hi - 1 - window)  # inputs begin .. hi - 2
            logits = model(seq[None, begin : hi - 1])[0, lo - 1 - begin :]  # [hi - lo, d_vocab]
            loss = F.cross_entropy(logits.float(), seq[lo:hi], reduction="sum")
            nats += float(loss)
    return TextLoss(nats, len(seq) - 1, characters, window, stride)
