"""The key/value cache that decoders generate with.

Generating token ``t + 1`` runs the decoder on one new position, yet its attention reads
the keys and values of every earlier position. Those are the same as at step ``t`` (the
causal mask keeps them from seeing later tokens), so the cache keeps them: one ``(k, v)``
pair per layer, each ``[batch, n_heads, pos, d_head]``, where ``n_heads`` counts the heads
that have their own keys (the shared key/value heads under grouped-query attention, after
rotary embeddings where the model has them). A call then computes the new positions'
query, key and value only, and attention appends the new keys and values and reads them
all::

    cache = model.new_cache()
    logits = model(prompt, kv_cache=cache)            # fills the cache
    logits = model(next_ids, kv_cache=cache)          # the new tokens only

Inside the model each attention layer receives the cache and its own layer number,
``attn(h, ..., cache=cache, layer=i)``, and calls :meth:`KVCache.update`; hooks, masks and
dropout are those of the uncached call. The cache knows no model (karpathy/nanochat keeps
it beside the model in the same way).

:meth:`KVCache.update` makes a new tensor at every call (the old positions and the new
ones, concatenated). A decoding step written outside PyTorch (the Llama's fused step for
stored weights, :mod:`transformer_lab.nn.decode_step`) instead writes each new position
into room kept behind the cached ones: :meth:`KVCache.reserve` moves every layer's keys and
values into one buffer with room for more positions, and :meth:`KVCache.advance` counts
the positions written there. ``layers`` then holds views of that buffer, so the cache looks
the same from outside and both kinds of call can follow each other.
"""

from __future__ import annotations

from typing import cast

import torch

from transformer_lab.checks import integer

__all__ = ["KVCache"]


class KVCache:
    """Keys and values of the positions seen so far, for every layer of a decoder.

    ``layers[i]`` is layer ``i``'s ``(k, v)``, each ``[batch, n_heads, pos, d_head]``, or
    None before the first call. ``padding`` keeps the ``[batch, pos]`` mask of real tokens
    when a model was given a padded batch (True = real token), None otherwise.
    """

    def __init__(self, n_layers: int):
        self._pending: int | None = None  # see advance()
        self.layers: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * integer(
            n_layers, "n_layers", minimum=1
        )
        self.padding: torch.Tensor | None = None
        self._buffer: torch.Tensor | None = None  # see reserve()
        self._views: list[tuple[torch.Tensor, torch.Tensor]] | None = None

    @property
    def layers(self) -> list[tuple[torch.Tensor, torch.Tensor] | None]:
        """Every layer's ``(k, v)`` (None before the first call)."""
        if self._pending is not None:  # positions that advance() counted: views of them now
            self._show(self._pending)
        return self._layers

    @layers.setter
    def layers(self, value: list[tuple[torch.Tensor, torch.Tensor] | None]) -> None:
        self._layers, self._pending = value, None

    @property
    def n_layers(self) -> int:
        return len(self._layers)

    @property
    def length(self) -> int:
        """How many positions are cached."""
        if self._pending is not None:
            return self._pending
        first = self._layers[0]
        return 0 if first is None else first[0].shape[-2]

    @classmethod
    def offset_of(cls, cache: KVCache | None, n_layers: int) -> int:
        """The positions ``cache`` holds, 0 for None: where a model's new tokens start.
        Checks that ``cache`` is a KVCache for ``n_layers`` layers (what a decoder's
        forward asks of its ``kv_cache`` argument)."""
        if cache is None:
            return 0
        if not isinstance(cache, cls):
            raise TypeError(f"kv_cache must be a KVCache or None, got {type(cache).__name__}")
        if cache.n_layers != n_layers:
            raise ValueError(f"kv_cache has {cache.n_layers} layers but the model has {n_layers}")
        return cache.length

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        """Append the new positions' ``k``, ``v`` ``[batch, n_heads, new_pos, d_head]`` to
        layer ``layer`` and return all its keys and values ``[batch, n_heads, key_pos, d_head]``."""
        old = self.layers[layer]
        if old is not None:
            if old[0].shape[:2] != k.shape[:2] or old[0].shape[3] != k.shape[3]:
                raise ValueError(
                    f"the cache holds [batch, n_heads, pos, d_head]={tuple(old[0].shape)} but the "
                    f"new keys are {tuple(k.shape)}; use model.new_cache() for another batch"
                )
            k, v = torch.cat([old[0], k], dim=-2), torch.cat([old[1], v], dim=-2)
        self.layers[layer] = (k, v)
        return k, v

    def reserve(self, n_new: int) -> torch.Tensor:
        """One buffer ``[n_layers, 2, batch, n_heads, capacity, d_head]`` holding every
        layer's cached keys (``[i, 0]``) and values (``[i, 1]``) at positions ``0 ..
        length - 1``, with room for at least ``n_new`` more after them; ``layers`` become
        views of it. The buffer is kept and reused while ``layers`` still holds those views
        (nothing has replaced them) and has room; otherwise the positions are copied once
        into a new buffer with room for ``n_new`` plus as many again as are cached (at least
        256). Every layer must already hold keys and values of one shape and dtype."""
        n_new = integer(n_new, "n_new", minimum=1)
        length = self.length
        buffer = self._buffer
        if buffer is not None and self._ours() and length + n_new <= buffer.shape[4]:
            return buffer
        first = self.layers[0]
        if first is None or any(kv is None for kv in self.layers):
            raise ValueError("the cache is empty: run the model on the first tokens, then reserve")
        layers = cast(list[tuple[torch.Tensor, torch.Tensor]], self.layers)  # none is None
        shape, dtype, device = first[0].shape, first[0].dtype, first[0].device
        for kv in layers:
            for t in kv:
                if t.shape != shape or t.dtype != dtype or t.device != device:
                    raise ValueError(
                        f"every layer's keys and values must share one shape and dtype to share "
                        f"a buffer, got {tuple(t.shape)} {t.dtype} and {tuple(shape)} {dtype}"
                    )
        capacity = length + n_new + max(length, 256)
        buffer = torch.empty(
            len(layers), 2, shape[0], shape[1], capacity, shape[3], dtype=dtype, device=device
        )
        for i, kv in enumerate(layers):
            for j, t in enumerate(kv):
                buffer[i, j, :, :, :length] = t
        self._buffer = buffer
        self._show(length)
        return buffer

    def advance(self, n_new: int) -> None:
        """Count ``n_new`` positions written into :meth:`reserve`'s buffer after the cached
        ones: ``layers`` become views that include them (made when ``layers`` is next read,
        so that a run of decoding steps makes none)."""
        n_new = integer(n_new, "n_new", minimum=1)
        if self._buffer is None or not self._ours():
            raise ValueError(
                "advance counts positions written into reserve()'s buffer: reserve first"
            )
        if self.length + n_new > self._buffer.shape[4]:
            raise ValueError(
                f"the buffer has room for {self._buffer.shape[4] - self.length} more positions, "
                f"not {n_new}: reserve({n_new}) first"
            )
        self._pending = self.length + n_new

    def _ours(self) -> bool:
        """Whether ``layers`` still holds the views of the buffer that :meth:`_show` set."""
        views, layers = self._views, self._layers
        if views is None or len(views) != len(layers):
            return False
        return all(a is b for a, b in zip(layers, views, strict=True))

    def _show(self, length: int) -> None:
        """Make ``layers`` views of the first ``length`` positions of the buffer."""
        b = self._buffer
        assert b is not None  # reserve made it before anything shows its positions
        views = [(b[i, 0, :, :, :length], b[i, 1, :, :, :length]) for i in range(b.shape[0])]
        self.layers, self._views = list(views), views

    def num_bytes(self) -> int:
        """Memory held by the cached keys and values (not counting the room that
        :meth:`reserve` keeps behind them)."""
        return sum(t.numel() * t.element_size() for kv in self.layers if kv for t in kv)

    def __repr__(self) -> str:
        return f"KVCache(n_layers={len(self.layers)}, length={self.length})"
