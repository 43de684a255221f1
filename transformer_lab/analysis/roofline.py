"""The memory-bandwidth limit of decoding one token at a time.

At batch 1 a decoder's step multiplies one vector by every weight matrix once, so it reads
every weight from memory once per token and does about two operations per weight read:
far too little arithmetic to keep a core busy, so the time goes on moving bytes. The
fastest possible step then takes ``bytes read / memory bandwidth``; that is the roofline of
decoding on a machine, and how close a decoder comes to it is the measure of its speed.

- :func:`read_bandwidth` measures the bandwidth of a streaming read on this machine (a
  buffer far larger than the caches, summed in place: by torch, and where the package's
  kernels run, by a plain AVX-512 loop over memory on 2 MiB pages, where the weights stored
  as rows lie; the faster of the two is the wall);
- :func:`decode_bytes_per_token` counts the bytes one decoding step reads from a model's
  weights and its key/value cache;
- :func:`roofline` turns the two into the limit in tokens per second.
"""

from __future__ import annotations

import statistics
import time

import torch
from torch import nn

from transformer_lab.checks import finite_number, instance_of, integer
from transformer_lab.nn.row_kernels import kernels_available, library
from transformer_lab.nn.stored_weights import StoredWeight, huge_page_buffer

__all__ = ["read_bandwidth", "decode_bytes_per_token", "roofline"]


def read_bandwidth(n_bytes: int = 1 << 30, repeats: int = 5) -> float:
    """Bytes per second of a streaming read, the median of ``repeats`` sums over a float32
    buffer of ``n_bytes`` (keep it far above the last-level cache: the default 1 GiB).

    Two reads are timed and the faster one counts, so that no decoder can beat the wall by
    reading its weights better than the wall was measured: torch's sum over ordinary
    memory (on torch's intra-op threads as set by the caller; one thread: the bandwidth one
    core can draw), and, where the package's kernels run, one thread's AVX-512 loop
    (``stream_sum``) over memory backed by 2 MiB pages, as the weights stored as rows are.
    """
    integer(n_bytes, "n_bytes", minimum=1)
    integer(repeats, "repeats", minimum=1)
    if n_bytes < 4:
        raise ValueError(f"n_bytes must hold at least one float32, got {n_bytes}")
    n = n_bytes // 4
    buffer = torch.ones(n)
    rates = [n * 4 / _median_seconds(buffer.sum, repeats)]
    del buffer
    if kernels_available():
        pages = huge_page_buffer(n * 4).view(torch.float32)
        pages.fill_(1.0)
        stream_sum, address = library().stream_sum, pages.data_ptr()
        rates.append(n * 4 / _median_seconds(lambda: stream_sum(address, n), repeats))
    return max(rates)


def _median_seconds(read, repeats: int) -> float:
    read()  # touch every page once before timing
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        read()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _kv_shape(config) -> tuple[int, int, int]:
    """(layers, key/value heads, head width) of a decoder's config."""
    n_layers = getattr(config, "n_layers", None)
    n_heads = getattr(config, "n_heads", None)
    d_model = getattr(config, "d_model", None)
    if not (isinstance(n_layers, int) and isinstance(n_heads, int) and isinstance(d_model, int)):
        raise TypeError(
            "model.config must name n_layers, n_heads and d_model (a GPT or a Llama), got "
            f"{type(config).__name__}"
        )
    return n_layers, getattr(config, "n_kv_heads", n_heads), d_model // n_heads


def decode_bytes_per_token(model: nn.Module, context: int, cache_dtype=None) -> dict[str, int]:
    """Bytes one decoding step of ``model`` reads at batch 1 with ``context`` tokens already
    in its key/value cache: ``{"weights": ..., "cache": ..., "total": ...}``.

    ``weights``: every parameter once (a matrix shared by the embedding and the output head
    is counted once: the head reads all of it, the embedding one row), and every stored
    matrix in its own bytes (after ``Llama.store_weights``, the head reads its stored copy
    and the float32 embedding one row); ``cache``: the keys
    and values of every layer for ``context`` positions, in ``cache_dtype`` (default: the
    weights' dtype). Activations are left out: at batch 1 they are a few kilobytes."""
    instance_of(model, nn.Module, "model", "an nn.Module")
    context = integer(context, "context", minimum=0)
    n_layers, n_kv_heads, d_head = _kv_shape(getattr(model, "config", None))
    seen, weights = set(), 0
    for p in model.parameters():  # parameters() yields a shared tensor once
        if p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            weights += p.numel() * p.element_size()
    # matrices kept in fewer bytes (transformer_lab.nn.stored_weights) are no parameters
    for m in model.modules():
        weights += sum(v.nbytes for v in vars(m).values() if isinstance(v, StoredWeight))
    embedding = getattr(model, "W_E", None)
    if getattr(model, "stored_unembed", None) is not None and isinstance(embedding, torch.Tensor):
        # the head reads its stored copy; the float32 embedding gives one row per token
        weights -= (embedding.shape[0] - 1) * embedding.shape[1] * embedding.element_size()
    dtype = cache_dtype or next(model.parameters()).dtype
    cache = (
        2 * n_layers * n_kv_heads * d_head * context * torch.empty((), dtype=dtype).element_size()
    )
    return {"weights": weights, "cache": cache, "total": weights + cache}


def roofline(bytes_per_token: int | float, bandwidth: float) -> float:
    """The most tokens per second a step that reads ``bytes_per_token`` can reach at
    ``bandwidth`` bytes per second."""
    return finite_number(bandwidth, "bandwidth", above=0) / finite_number(
        bytes_per_token, "bytes_per_token", above=0
    )
