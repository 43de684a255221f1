"""Checkers for chapter 14, today's decoders.

:func:`check_rms_norm` runs the reader's RMSNorm against
:func:`transformer_lab.nn.norms.rms_norm` and names the usual mistakes (the mean subtracted
as in layer norm, ``eps`` outside the square root, the sum instead of the mean).
:func:`check_kv_cache_bytes` checks a formula for the memory the key/value cache holds,
against :meth:`transformer_lab.nn.kv_cache.KVCache.num_bytes` on real caches.
"""

from __future__ import annotations

import math

import torch

from transformer_lab.exercises.runner import (
    CheckResult,
    WrongAnswer,
    as_number,
    call,
    compare,
    need_tensor,
    run_check,
)
from transformer_lab.models.llama import Llama, LlamaConfig
from transformer_lab.nn.norms import rms_norm

__all__ = ["check_rms_norm", "check_kv_cache_bytes"]


def check_rms_norm(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(x, gain, eps)``: ``x / sqrt(mean(x^2) + eps) * gain`` over the last axis
    of ``x [..., d_model]``, as :func:`transformer_lab.nn.norms.rms_norm` computes it."""
    gen = torch.Generator().manual_seed(14)

    def body():
        for shape, scale in [((4, 6), 3.0), ((2, 5, 8), 1.0), ((3, 7, 4), 1e-3)]:
            x = (torch.randn(*shape, generator=gen) + 1.5) * scale
            gain = torch.randn(shape[-1], generator=gen)
            eps = 1e-5
            describe = f"x of shape {shape} with features of size about {scale:g}, eps={eps}"
            out = need_tensor(call(fn, (x, gain, eps), describe))
            want = rms_norm(x, gain, eps)

            def mistakes(x=x, gain=gain, eps=eps):
                centred = x - x.mean(-1, keepdim=True)
                ms = x.pow(2).mean(-1, keepdim=True)
                return [
                    (
                        "you subtracted the mean first, as layer norm does; RMSNorm keeps the "
                        "mean and divides x itself by its root mean square",
                        rms_norm(centred, gain, eps),
                    ),
                    (
                        "you divided by the standard deviation (layer norm's statistics); "
                        "RMSNorm divides by sqrt(mean(x**2) + eps), with no mean subtracted",
                        x / (x.var(-1, unbiased=False, keepdim=True) + eps).sqrt() * gain,
                    ),
                    (
                        "eps belongs inside the square root, sqrt(mean(x**2) + eps); it matters "
                        "when the features are tiny",
                        x / (ms.sqrt() + eps) * gain,
                    ),
                    (
                        "you used the sum of the squares; RMSNorm takes their mean over the "
                        "d_model features (dim=-1)",
                        x / (x.pow(2).sum(-1, keepdim=True) + eps).sqrt() * gain,
                    ),
                    (
                        "the square root is missing: divide by sqrt(mean(x**2) + eps)",
                        x / (ms + eps) * gain,
                    ),
                    (
                        "the gain is missing: multiply the result by gain",
                        rms_norm(x, torch.ones_like(gain), eps),
                    ),
                    (
                        "the mean was taken over the wrong axis: each token is normalized over "
                        "its own d_model features, the last axis (dim=-1)",
                        x / (x.pow(2).mean(0, keepdim=True) + eps).sqrt() * gain,
                    ),
                ]

            compare(out, want, describe, mistakes)
        return "correct on 3 inputs, including tiny features where eps matters."

    return run_check("check_rms_norm", body, strict, verbose)


_CONFIGS = (
    dict(d_vocab=11, n_ctx=16, n_layers=2, n_heads=4, n_kv_heads=2, d_model=16, d_mlp=8),
    dict(d_vocab=11, n_ctx=16, n_layers=3, n_heads=6, n_kv_heads=1, d_model=24, d_mlp=8),
    dict(d_vocab=11, n_ctx=16, n_layers=1, n_heads=2, n_kv_heads=2, d_model=8, d_mlp=8),
)


def _cache_bytes(config: LlamaConfig, n_tokens: int, batch: int) -> int:
    """What the package's cache really holds after ``n_tokens`` tokens (float32)."""
    torch.manual_seed(0)
    model = Llama(config).eval()
    cache = model.new_cache()
    with torch.no_grad():
        model(torch.zeros(batch, n_tokens, dtype=torch.long), kv_cache=cache)
    return cache.num_bytes()


def check_kv_cache_bytes(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(config, n_tokens, batch)``: the bytes of float32 keys and values that a
    :class:`~transformer_lab.nn.kv_cache.KVCache` holds after ``n_tokens`` tokens of
    ``batch`` sequences, compared with real caches of small models."""

    def body():
        for cfg in _CONFIGS:
            config = LlamaConfig(**cfg)
            for n_tokens, batch in ((5, 1), (7, 3)):
                describe = (
                    f"n_layers={config.n_layers}, n_heads={config.n_heads}, "
                    f"n_kv_heads={config.n_kv_heads}, d_head={config.d_head}, "
                    f"n_tokens={n_tokens}, batch={batch}"
                )
                out = call(fn, (config, n_tokens, batch), describe)
                got = as_number(out)
                if got is None:
                    raise WrongAnswer(f"return a number of bytes, got {type(out).__name__}.")
                want = _cache_bytes(config, n_tokens, batch)
                if math.isclose(got, want, rel_tol=1e-9):
                    continue
                c = config
                per = n_tokens * batch * c.n_layers * c.d_head * 4  # bytes of one head's k
                wrong = [
                    (
                        2 * per * c.n_heads,
                        "you counted n_heads key/value heads; grouped-query "
                        "attention caches only the n_kv_heads shared heads",
                    ),
                    (
                        per * c.n_kv_heads,
                        "you counted the keys only; the cache holds keys *and* "
                        "values, twice as much",
                    ),
                    (
                        2 * per * c.n_kv_heads // 4,
                        "you counted values, not bytes: float32 takes 4 bytes per number",
                    ),
                    (2 * per * c.n_kv_heads * 8, "you counted bits; the answer is in bytes"),
                    (
                        2 * per * c.n_kv_heads // c.n_layers,
                        "you counted one layer; every layer keeps its own keys and values",
                    ),
                    (
                        2 * per * c.n_kv_heads // batch,
                        "you left out the batch: every sequence has its own cache",
                    ),
                ]
                for value, message in wrong:
                    if math.isclose(got, value, rel_tol=1e-9):
                        raise WrongAnswer(f"{message} ({describe}).")
                if got == 0:
                    raise WrongAnswer("your function returns 0; is it still a placeholder?")
                raise WrongAnswer(
                    f"expected {want:,} bytes, got {got:,} ({describe}). Per token and layer the "
                    "cache holds a key and a value for each key/value head, d_head numbers each."
                )
        return "correct on 6 caches: 2 * n_layers * n_kv_heads * d_head * 4 bytes per token."

    return run_check("check_kv_cache_bytes", body, strict, verbose)
