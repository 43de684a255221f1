"""Generating text from a language model, one token at a time.

At each step the model gives logits for the next token; a *decoding rule* turns them into a
choice:

* greedy: the most likely token (``temperature=0``);
* temperature ``T``: sample from ``softmax(logits / T)``; ``T < 1`` sharpens the
  distribution towards greedy, ``T > 1`` flattens it towards uniform;
* top-k: sample only among the ``k`` most likely tokens, renormalised;
* top-p (nucleus sampling, Holtzman et al. 2020): sample only from the *smallest* set of
  most likely tokens whose probabilities add up to at least ``p``, renormalised; the set
  is small where the model is confident and large where it is not.

The filters compose in the order temperature, top-k, top-p. :func:`generate` runs the loop,
with or without the model's key/value cache (same tokens either way, the cache only saves
work), and crops the context to the model's last ``n_ctx`` tokens when it grows longer.
"""

from __future__ import annotations

import inspect
from typing import Any, cast

import torch
from torch import nn

from transformer_lab.checks import (
    check_token_range,
    finite_number,
    floating_tensor,
    integer,
    token_batch,
)
from transformer_lab.device import evaluating

__all__ = ["top_k_filter", "top_p_filter", "next_token_probs", "sample_next", "generate"]


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep the ``k`` largest logits of each row (ties at the k-th value are all kept);
    set the rest to ``-inf``."""
    _check_logits(logits)
    return _top_k(logits, integer(k, "top_k", minimum=1))


def _top_k(logits: torch.Tensor, k: int) -> torch.Tensor:
    k = min(k, logits.shape[-1])
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # [..., 1]
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Keep the smallest set of most likely tokens whose probabilities sum to at least
    ``p`` (nucleus sampling, Holtzman et al. 2020); set the rest to ``-inf``.

    Tokens are ranked by probability; a token is kept when the probability mass ranked
    strictly before it is still below ``p``, so the most likely token is always kept.
    """
    _check_logits(logits)
    return _top_p(logits, _check_top_p(p))


def _check_top_p(p) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 < p <= 1.0:
        raise ValueError(f"top_p must be a number in (0, 1], got {p!r}")
    return p


def _top_p(logits: torch.Tensor, p: float) -> torch.Tensor:
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
    probs = torch.softmax(sorted_logits.float(), dim=-1)  # [..., d_vocab], largest first
    mass_before = torch.cumsum(probs, dim=-1) - probs  # probability ranked before each token
    drop_sorted = mass_before >= p
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))


def next_token_probs(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> torch.Tensor:
    """The distribution the sampler draws from, ``[..., d_vocab]``: ``softmax(logits / T)``
    restricted by top-k and top-p. ``temperature=0`` puts all mass on the argmax.

    Logits with NaN, ``+inf``, or a row of only ``-inf`` have no distribution: ValueError.
    """
    _check_logits(logits)
    _check_rule(temperature, top_k, top_p)
    return _probs(logits, temperature, top_k, top_p)


def _probs(logits, temperature, top_k, top_p) -> torch.Tensor:
    """:func:`next_token_probs` of arguments already checked (the logits are the model's:
    they are checked for NaN and infinities here, on every call)."""
    _check_finite_rows(logits)
    logits = logits.float()
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    logits = logits / temperature
    if top_k is not None:
        logits = _top_k(logits, top_k)
    if top_p is not None:
        logits = _top_p(logits, top_p)
    probs = torch.softmax(logits, dim=-1)
    if not torch.isfinite(probs).all():
        raise ValueError(
            f"temperature={temperature!r} is too small for these logits: the scaled logits "
            "overflow; use temperature=0 for greedy decoding"
        )
    return probs


def _check_logits(logits) -> None:
    if floating_tensor(logits, "logits", shape="[..., d_vocab]").dim() == 0 or not logits.shape[-1]:
        raise ValueError(
            f"logits must be [..., d_vocab] with d_vocab >= 1, got {tuple(logits.shape)}"
        )


def _check_rule(temperature, top_k, top_p) -> None:
    """The decoding rule: ``temperature >= 0``, ``top_k`` and ``top_p`` None or in range."""
    finite_number(temperature, "temperature", at_least=0)
    if top_k is not None:
        integer(top_k, "top_k", minimum=1)
    if top_p is not None:
        _check_top_p(top_p)


def _check_generator(generator) -> None:
    if generator is not None and (
        not isinstance(generator, torch.Generator) or generator.device.type != "cpu"
    ):
        raise TypeError(f"generator must be a CPU torch.Generator, got {generator!r}")


def _check_finite_rows(logits: torch.Tensor) -> None:
    """NaN or +inf anywhere, or a row with no finite logit, has no distribution."""
    bad = torch.isnan(logits).any() | torch.isposinf(logits).any()
    if bool(bad | torch.isneginf(logits).all(dim=-1).any()):
        raise ValueError(
            "logits contain NaN or +inf, or a row of only -inf: there is no distribution to "
            "sample from (check the model's output and the masks)"
        )


def sample_next(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Choose the next token ``[batch]`` from the last position's logits ``[batch, d_vocab]``.

    ``temperature=0`` is greedy decoding (argmax, no randomness). ``generator`` (a CPU
    ``torch.Generator``) makes the draw reproducible on any device.
    """
    _check_logits(logits)
    if logits.dim() != 2:
        raise ValueError(f"logits must be [batch, d_vocab], got shape {tuple(logits.shape)}")
    _check_rule(temperature, top_k, top_p)
    _check_generator(generator)
    return _sample(logits, temperature, top_k, top_p, generator)


def _sample(logits, temperature, top_k, top_p, generator) -> torch.Tensor:
    """:func:`sample_next` of arguments already checked."""
    if temperature == 0:
        _check_finite_rows(logits)
        return logits.argmax(dim=-1)
    probs = _probs(logits, temperature, top_k, top_p)
    return torch.multinomial(probs.cpu(), 1, generator=generator).squeeze(-1).to(logits.device)


@torch.no_grad()
def generate(
    model: nn.Module,
    idx: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    *,
    use_cache: bool | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Extend ``idx [batch, pos]`` by ``max_new_tokens`` tokens and return ``[batch,
    pos + max_new_tokens]``.

    The model must map ``[batch, pos]`` ids to ``[batch, pos, d_vocab]`` logits. When it
    has a ``config.n_ctx`` the context is cropped to its last ``n_ctx`` tokens. The
    key/value cache needs ``model.new_cache()`` and ``kv_cache=``
    (:class:`~transformer_lab.models.gpt.GPT` has both); ``use_cache=None`` uses it when
    the model has it. With the cache each step feeds only the newest token; once the
    sequence outgrows ``n_ctx`` the window slides and every step recomputes the last
    ``n_ctx`` tokens, exactly as without the cache.
    """
    token_batch(idx, "idx")
    integer(max_new_tokens, "max_new_tokens", minimum=0)
    _check_rule(temperature, top_k, top_p)
    _check_generator(generator)
    config = getattr(model, "config", None)
    if isinstance(d_vocab := getattr(config, "d_vocab", None), int):
        check_token_range(idx, d_vocab, "idx")
    n_ctx = getattr(config, "n_ctx", None) or idx.shape[1] + max_new_tokens
    has_cache = hasattr(model, "new_cache")
    if use_cache and not has_cache:
        raise ValueError(f"{type(model).__name__} has no key/value cache (no new_cache method)")
    with evaluating(model):  # which also checks that model is an nn.Module
        cached = has_cache if use_cache is None else use_cache
        cache = cast(Any, model).new_cache() if cached else None  # a method has_cache found
        # a model whose forward takes last_only (the Llama) unembeds the last position only
        takes_last_only = "last_only" in inspect.signature(model.forward).parameters
        last = {"last_only": True} if takes_last_only else {}
        fed = 0  # how many tokens of idx the cache holds
        for _ in range(max_new_tokens):
            if cache is not None and idx.shape[1] <= n_ctx:
                logits = model(idx[:, fed:], kv_cache=cache, **last)[:, -1]  # [batch, d_vocab]
                fed = idx.shape[1]
            else:
                logits = model(idx[:, -n_ctx:], **last)[:, -1]  # [batch, d_vocab]
            next_id = _sample(logits, temperature, top_k, top_p, generator)  # [batch]
            idx = torch.cat([idx, next_id[:, None]], dim=1)
    return idx
