"""The pieces of a Transformer, grouped by kind; each knows no model.

``masks`` (causal and padding masks, True = may attend), ``attention`` (scaled dot-product
attention and grouped-query attention), ``scores`` (the score functions of recurrent
seq2seq attention), ``multi_head`` (multi-head attention), ``norms`` (LayerNorm, RMSNorm),
``feed_forward`` (the MLP and SwiGLU), ``positions`` (sinusoidal, learned, rotary),
``blocks`` (encoder and decoder blocks), ``kv_cache`` (the cache decoders generate with),
``pooling`` (one vector per sequence), ``lora`` (low-rank adapters on any module's matrices)
and ``functional`` (``affine``, shared by the layers).
"""

from transformer_lab.nn import (  # noqa: F401
    attention,
    blocks,
    feed_forward,
    functional,
    kv_cache,
    lora,
    masks,
    multi_head,
    norms,
    pooling,
    positions,
    scores,
)
