"""One decoding step of a Llama-style decoder at batch 1, in a single C call.

Decoding at batch 1 reads every weight once per token, so its speed is set by how fast the
weights stream in from memory (chapter 14's roofline). With the matrices stored as rows
(:mod:`transformer_lab.nn.stored_weights`) the products run near that speed, and what is
left is everything else: per layer some twenty small PyTorch operations (RMSNorm, rotary
embeddings, the cache append, attention, the residual sums, SiLU), each with a fixed cost of
a few microseconds, plus the Python calls of the modules. Over 30 layers that was as much
time again as the products. A :class:`FusedDecoder` does the whole step, all layers and the
output head, in one call of ``decode_token`` in ``decode_kernels.c``, with the same row
kernels for the products, writing into buffers kept between tokens:

    step = FusedDecoder(layers, final_gain, head, n_heads=9, n_kv_heads=3, eps=1e-5,
                        rope_base=10000.0)
    logits = step(embedding_row, cache)       # [1, 1, d_vocab]; the cache grows by one

The cache must already hold the earlier positions (a prompt run by the model itself, in
PyTorch); the step reserves room behind them (:meth:`KVCache.reserve`) and writes the new
key and value there, so PyTorch calls and fused steps can follow each other. The numbers
are those of the PyTorch code up to float32 rounding (sums taken in another order).
:class:`~transformer_lab.models.llama.Llama` uses it by itself where it applies.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import NamedTuple

import torch

from transformer_lab.checks import finite_number, instance_of, integer
from transformer_lab.nn.kv_cache import KVCache
from transformer_lab.nn.positions import rotary_cos_sin
from transformer_lab.nn.row_kernels import library
from transformer_lab.nn.stored_weights import StoredWeight

__all__ = ["DecoderLayerWeights", "FusedDecoder"]

KINDS = {torch.float32: 0, torch.bfloat16: 1, torch.int8: 2}  # decode_kernels.c's `kind`
MATRICES = ("W_Q", "W_K", "W_V", "W_O", "W_gate", "W_up", "W_down")  # its order


class DecoderLayerWeights(NamedTuple):
    """What one pre-norm layer reads: the RMSNorm gains ``[d_model]`` and the seven stored
    matrices, each as it is used, ``x @ W`` with ``W [in, out]``."""

    norm1: torch.Tensor
    W_Q: StoredWeight
    W_K: StoredWeight
    W_V: StoredWeight
    W_O: StoredWeight
    norm2: torch.Tensor
    W_gate: StoredWeight
    W_up: StoredWeight
    W_down: StoredWeight


class _Weights(ctypes.Structure):
    """decode_kernels.c's ``DecoderWeights``, field for field."""

    _fields_ = [
        *[(n, ctypes.c_long) for n in ("n_layers", "d_model", "n_heads", "n_kv_heads")],
        *[(n, ctypes.c_long) for n in ("d_head", "d_mlp", "d_vocab", "kind", "group")],
        ("eps", ctypes.c_double),
        ("rows", ctypes.c_void_p),
        ("scales", ctypes.c_void_p),
        ("gains", ctypes.c_void_p),
    ]


def _pointers(tensors: Sequence[torch.Tensor | None]):
    """A C array of the tensors' data pointers (NULL for None)."""
    return (ctypes.c_void_p * len(tensors))(*[None if t is None else t.data_ptr() for t in tensors])


class FusedDecoder:
    """The decoding step of a pre-norm decoder with RMSNorm, rotary embeddings,
    grouped-query attention and SwiGLU (the book's Llama) for one new token at batch 1.

    ``layers``: one :class:`DecoderLayerWeights` per layer, every matrix stored alike
    (float32 rows, bfloat16 or int8); ``final_gain [d_model]``: the last RMSNorm's gain;
    ``head``: the stored unembedding ``[d_model, d_vocab]``. ``step(embedding, cache)`` takes
    the new token's embedding ``[d_model]`` (float32) and a :class:`KVCache` that holds the
    earlier positions (batch 1, ``n_kv_heads`` heads), appends the token's keys and values,
    and returns its logits ``[1, 1, d_vocab]``. The step keeps references to every tensor it
    reads; ``reads(layers, final_gain, head)`` says whether those are still the ones given.
    """

    def __init__(
        self,
        layers: Sequence[DecoderLayerWeights],
        final_gain: torch.Tensor,
        head: StoredWeight,
        *,
        n_heads: int,
        n_kv_heads: int,
        eps: float,
        rope_base: float,
    ):
        if isinstance(layers, (str, bytes)) or not isinstance(layers, Sequence) or not layers:
            raise TypeError(
                f"layers must be a non-empty list of DecoderLayerWeights, got {layers!r:.80}"
            )
        for layer in layers:
            instance_of(layer, DecoderLayerWeights, "each of layers")
        instance_of(head, StoredWeight, "head")
        n_heads = integer(n_heads, "n_heads", minimum=1)
        n_kv_heads = integer(n_kv_heads, "n_kv_heads", minimum=1)
        self.eps = finite_number(eps, "eps", above=0)
        self.rope_base = finite_number(rope_base, "rope_base", above=1)
        d_model, d_mlp = head.shape[0], layers[0].W_gate.shape[1]
        if n_heads % n_kv_heads or d_model % n_heads or (d_model // n_heads) % 2:
            raise ValueError(
                f"n_heads={n_heads} must be a multiple of n_kv_heads={n_kv_heads} and divide "
                f"d_model={d_model} into heads of an even width"
            )
        d_head = d_model // n_heads
        want = {
            "W_Q": (d_model, d_model), "W_K": (d_model, n_kv_heads * d_head),
            "W_V": (d_model, n_kv_heads * d_head), "W_O": (d_model, d_model),
            "W_gate": (d_model, d_mlp), "W_up": (d_model, d_mlp), "W_down": (d_mlp, d_model),
        }  # fmt: skip
        stored = [getattr(layer, name) for layer in layers for name in MATRICES] + [head]
        for i, w in enumerate(stored):
            instance_of(w, StoredWeight, "every matrix of layers")
            name = MATRICES[i % 7] if i < len(stored) - 1 else "head"
            if name != "head" and w.shape != want[name]:
                raise ValueError(f"{name} of layer {i // 7} is {w.shape}, expected {want[name]}")
            same = w.storage == head.storage and w.group_size == head.group_size
            if not same or not w.rows.is_contiguous():
                raise ValueError(
                    f"every matrix must be stored as {head.storage} (group_size "
                    f"{head.group_size}), with rows in order"
                )
        gains = [g for layer in layers for g in (layer.norm1, layer.norm2)] + [final_gain]
        for g in gains:
            if not isinstance(g, torch.Tensor) or g.shape != (d_model,) or g.dtype != torch.float32:
                got = tuple(g.shape) if isinstance(g, torch.Tensor) else type(g).__name__
                raise ValueError(f"every gain must be a float32 tensor [{d_model}], got {got}")
        self.layers, self.final_gain, self.head = tuple(layers), final_gain, head
        self.n_heads, self.n_kv_heads, self.d_head = n_heads, n_kv_heads, d_head
        self.d_model, self.d_mlp, self.d_vocab = d_model, d_mlp, head.shape[1]
        self._rows = [w.rows for w in stored]  # held: the C code reads them by address
        self._scales = [w.scale for w in stored]
        self._gains = [g.detach().contiguous() for g in gains]
        self._arrays = [_pointers(self._rows), _pointers(self._scales), _pointers(self._gains)]
        sizes = (len(layers), d_model, n_heads, n_kv_heads, d_head, d_mlp, head.shape[1])
        kind, group = KINDS[head.rows.dtype], head.group_size or 0
        self._c = _Weights(
            *sizes, kind, group, self.eps, *[ctypes.addressof(a) for a in self._arrays]
        )
        self._kernel = library().decode_token
        self._work = torch.empty(0)
        self._cos = self._sin = torch.empty(0, d_head // 2)

    def reads(self, layers, final_gain, head) -> bool:
        """Whether ``layers``, ``final_gain`` and ``head`` are the weights this step reads
        (the same objects, with the same rows)."""
        if (
            head is not self.head
            or final_gain is not self.final_gain
            or len(layers) != len(self.layers)
        ):
            return False
        for new, old in zip(layers, self.layers, strict=True):
            if any(a is not b for a, b in zip(new, old, strict=True)):
                return False
        return all(w.rows is r for w, r in zip(self._stored(), self._rows, strict=True))

    def _stored(self):
        for layer in self.layers:
            yield from (getattr(layer, name) for name in MATRICES)
        yield self.head

    def __call__(self, embedding: torch.Tensor, cache: KVCache) -> torch.Tensor:
        if (
            not isinstance(embedding, torch.Tensor)
            or embedding.shape != (self.d_model,)
            or embedding.dtype != torch.float32
            or embedding.device.type != "cpu"
        ):
            got = tuple(embedding.shape) if isinstance(embedding, torch.Tensor) else type(embedding)
            raise ValueError(f"embedding must be a float32 CPU tensor [{self.d_model}], got {got}")
        instance_of(cache, KVCache, "cache")
        if cache.n_layers != len(self.layers):
            raise ValueError(f"cache has {cache.n_layers} layers, the decoder {len(self.layers)}")
        position = cache.length
        kv = cache.reserve(1)  # [n_layers, 2, batch, n_kv_heads, capacity, d_head]
        capacity = kv.shape[4]
        want = (len(self.layers), 2, 1, self.n_kv_heads, capacity, self.d_head)
        if kv.shape != want or kv.dtype != torch.float32 or not kv.is_contiguous():
            first = cache.layers[0]
            assert first is not None  # reserve checked that every layer holds keys and values
            raise ValueError(
                f"the cache must hold float32 keys and values [1, {self.n_kv_heads}, pos, "
                f"{self.d_head}] in every layer, got {tuple(first[0].shape)} {first[0].dtype}"
            )
        if self._cos.shape[0] <= position:  # cos and sin of positions 0 .. 2 x position
            positions = torch.arange(max(1024, 2 * position))
            self._cos, self._sin = rotary_cos_sin(positions, self.d_head, self.rope_base)
        scratch = 3 * self.d_model + 2 * (self.n_heads + self.n_kv_heads) * self.d_head
        scratch += 2 * self.d_mlp + capacity
        if self._work.numel() < scratch:
            self._work = torch.empty(scratch)
        logits = torch.empty(1, 1, self.d_vocab)
        row = position * (self.d_head // 2) * 4  # bytes to this position's cos and sin
        x = embedding.contiguous()
        self._kernel(
            ctypes.addressof(self._c), x.data_ptr(), self._cos.data_ptr() + row,
            self._sin.data_ptr() + row, kv.data_ptr(), position, capacity,
            self._work.data_ptr(), logits.data_ptr(),
        )  # fmt: skip
        cache.advance(1)
        return logits

    def __repr__(self) -> str:
        return (
            f"FusedDecoder({self.head.storage}, n_layers={len(self.layers)}, "
            f"d_model={self.d_model}, n_heads={self.n_heads}, n_kv_heads={self.n_kv_heads})"
        )
