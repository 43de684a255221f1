"""Short answers from a decoder: the greedy continuation of each prompt, batched.

For a decoder ``model`` with a key/value cache and a padding mask (the book's
:class:`~transformer_lab.models.llama.Llama`, SmolLM2) and its tokenizer (``encode``,
``decode`` and ``eos_id``)::

    replies = greedy_answers(model, tokenizer, ["drei =", "zwölf ="])
    replies = greedy_answers(model, tokenizer, prompts, prefix=worked_examples)

The prompts are left-padded so that every row's last token sits in the last column; a
shared ``prefix`` is run once and its keys and values are shared by every row. A batched
answer is the answer the prompt gets alone.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn.utils import parametrize

from transformer_lab.checks import check_tokenizer, instance_of, integer, string, string_list
from transformer_lab.device import evaluating

__all__ = ["greedy_answers"]


def _left_padded(rows: list[list[int]], device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long, device=device)
    mask = torch.zeros(len(rows), width, dtype=torch.long, device=device)
    for i, r in enumerate(rows):
        ids[i, width - len(r) :] = torch.tensor(r, device=device)
        mask[i, width - len(r) :] = 1
    return ids, mask


@torch.no_grad()
def _answer_rows(model, tokenizer, prompts, prefix_ids, max_new_tokens, stop) -> list[str]:
    """Greedy answers of one batch of prompts, all after the same ``prefix_ids``."""
    device = next(model.parameters()).device
    cache = model.new_cache()
    if prefix_ids:  # the shared prefix once, its keys and values shared by every row
        model(torch.tensor([prefix_ids], device=device), kv_cache=cache)
        cache.layers = [(k.expand(len(prompts), -1, -1, -1), v.expand(len(prompts), -1, -1, -1))
                        for k, v in cache.layers]  # fmt: skip
    ids, mask = _left_padded([tokenizer.encode(p) for p in prompts], device)
    logits = model(ids, kv_cache=cache, attention_mask=mask, last_only=True)[:, -1]
    out: list[list[int]] = [[] for _ in prompts]
    done = [False] * len(prompts)
    for _ in range(max_new_tokens):
        next_ids = logits.argmax(-1)  # [batch]
        for i, t in enumerate(next_ids.tolist()):
            if not done[i]:
                out[i].append(t)
                done[i] = t == tokenizer.eos_id or stop in tokenizer.decode(out[i])
        if all(done):
            break
        logits = model(next_ids[:, None], kv_cache=cache, last_only=True)[:, -1]
    texts = [tokenizer.decode([t for t in o if t != tokenizer.eos_id]) for o in out]
    return [t.split(stop)[0] if stop else t for t in texts]


def check_takes_attention_mask(model: nn.Module, what: str) -> None:
    """A TypeError naming ``model``'s class when its forward has no ``attention_mask`` (the
    padded rows of ``what`` need one)."""
    try:
        params = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):  # no signature to read: the call itself decides
        return
    if not any(p.name == "attention_mask" or p.kind is p.VAR_KEYWORD for p in params):
        raise TypeError(
            f"{type(model).__name__}.forward takes no attention_mask: {what} need a "
            "model whose forward takes attention_mask (the book's Llama or SmolLM2)"
        )


def greedy_answers(
    model: nn.Module,
    tokenizer,
    prompts: Sequence[str],
    *,
    prefix: str = "",
    max_new_tokens: int = 8,
    batch_size: int = 64,
    stop: str = "\n",
) -> list[str]:
    """The greedy continuation of ``prefix + prompt`` for every prompt, cut at the first
    ``stop`` (or the end-of-text token, or ``max_new_tokens``), in eval mode. The prefix
    (worked examples, a chat turn) is run once per batch and its keys and values shared;
    the prompts are left-padded. A model with LoRA adapters forms each ``W + dW`` once for
    the whole call (``parametrize.cached``): quick, and the stored weights stay untouched
    (merging and unmerging would leave rounding errors in them)."""
    instance_of(model, nn.Module, "model", "an nn.Module (a decoder)")
    check_takes_attention_mask(model, "greedy answers")
    check_tokenizer(tokenizer)
    prompts = string_list(prompts, "prompts")
    prefix, stop = string(prefix, "prefix"), string(stop, "stop")
    max_new_tokens = integer(max_new_tokens, "max_new_tokens", minimum=1)
    batch_size = integer(batch_size, "batch_size", minimum=1)
    prefix_ids = tokenizer.encode(prefix) if prefix else []
    answers = []
    with evaluating(model), parametrize.cached():  # W + dW formed once, not at every token
        for start in range(0, len(prompts), batch_size):
            chunk = prompts[start : start + batch_size]
            answers += _answer_rows(model, tokenizer, chunk, prefix_ids, max_new_tokens, stop)
    return answers
