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
"""

from __future__ import annotations

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
        self.layers: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * integer(
            n_layers, "n_layers", minimum=1
        )
        self.padding: torch.Tensor | None = None

    @property
    def length(self) -> int:
        """How many positions are cached."""
        first = self.layers[0]
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
        if len(cache.layers) != n_layers:
            raise ValueError(
                f"kv_cache has {len(cache.layers)} layers but the model has {n_layers}"
            )
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

    def num_bytes(self) -> int:
        """Memory held by the cached keys and values."""
        return sum(t.numel() * t.element_size() for kv in self.layers if kv for t in kv)

    def __repr__(self) -> str:
        return f"KVCache(n_layers={len(self.layers)}, length={self.length})"
