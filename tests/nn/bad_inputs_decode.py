"""Bad inputs of the fused decoding step (transformer_lab.nn.decode_step) and the huge-page
buffers of the stored weights."""

from __future__ import annotations

import functools

import torch
from bad_input_support import RECORDS, case

from transformer_lab.models.llama import Llama, LlamaConfig
from transformer_lab.nn import decode_step as DS
from transformer_lab.nn import stored_weights as STW
from transformer_lab.nn.kv_cache import KVCache

RECORDS.add(DS.DecoderLayerWeights)  # a named tuple of a layer's weights


@functools.cache
def parts():
    """A stored two-layer Llama's layers, final gain and head (the kernels must run)."""
    torch.manual_seed(0)
    config = LlamaConfig(d_vocab=11, n_layers=2, n_heads=2, n_kv_heads=1, d_model=8, d_mlp=12)
    model = Llama(config).eval().store_weights("bfloat16")
    return model._layer_weights(), model.ln_final.gain, model.stored_unembed


SIZES = dict(n_heads=2, n_kv_heads=1, eps=1e-5, rope_base=1e4)


def fused(layers=None, gain=None, head=None, **sizes):
    d_layers, d_gain, d_head = parts()
    return DS.FusedDecoder(
        d_layers if layers is None else layers, d_gain if gain is None else gain,
        d_head if head is None else head, **{**SIZES, **sizes},
    )  # fmt: skip


case(DS.FusedDecoder, lambda: fused(layers="layers"), TypeError,
     "layers must be a non-empty list of DecoderLayerWeights")  # fmt: skip
case(DS.FusedDecoder, lambda: fused(layers=[1]), TypeError,
     "each of layers must be a DecoderLayerWeights, got int")  # fmt: skip
case(DS.FusedDecoder, lambda: fused(head=torch.ones(8, 11)), TypeError,
     "head must be a StoredWeight, got Tensor")  # fmt: skip
case(DS.FusedDecoder, lambda: fused(gain=torch.ones(7)), ValueError,
     "every gain must be a float32 tensor [8], got (7,)")  # fmt: skip
case(DS.FusedDecoder, lambda: fused(n_heads=3), ValueError,
     "n_heads=3 must be a multiple of n_kv_heads=1 and divide d_model=8")  # fmt: skip
case(DS.FusedDecoder, lambda: fused(n_kv_heads=0), ValueError,
     "n_kv_heads must be a positive int, got 0")  # fmt: skip
case(DS.FusedDecoder, lambda: fused(rope_base=float("nan")), ValueError, "rope_base")
case(DS.FusedDecoder, lambda: fused()(torch.ones(8), KVCache(2)), ValueError,
     "the cache is empty")  # fmt: skip
case(DS.FusedDecoder, lambda: fused()(torch.ones(8, dtype=torch.float64), KVCache(2)),
     ValueError, "embedding must be a float32 CPU tensor [8], got (8,)")  # fmt: skip
case(DS.FusedDecoder, lambda: fused()(torch.ones(8), "cache"), TypeError,
     "cache must be a KVCache, got str")  # fmt: skip

case(STW.pack_rows, lambda: STW.pack_rows([]), TypeError,
     "weights must be a non-empty list of StoredWeight")  # fmt: skip
case(STW.pack_rows, lambda: STW.pack_rows([torch.ones(2, 2)]), TypeError,
     "each of weights must be a StoredWeight, got Tensor")  # fmt: skip
case(STW.pack_rows, lambda: (lambda w: STW.pack_rows([w, w]))(parts()[2]), ValueError,
     "weights names one StoredWeight twice")  # fmt: skip
case(STW.huge_page_buffer, lambda: STW.huge_page_buffer(0), ValueError,
     "n_bytes must be a positive int, got 0")  # fmt: skip
case(STW.huge_page_buffer, lambda: STW.huge_page_buffer(2.5), TypeError, "n_bytes")
case(STW.huge_page_buffer, lambda: STW.huge_page_buffer(1 << 62), ValueError,
     "cannot map")  # fmt: skip
case(STW.StoredWeight, lambda: STW.StoredWeight(torch.randn(32, 4), "int8", group_size=24),
     ValueError, "a power of two from 16; got 24 with int8")  # fmt: skip
case(STW.StoredWeight, lambda: STW.StoredWeight(torch.randn(32, 4), "bfloat16", group_size=32),
     ValueError, "group_size is for int8 storage")  # fmt: skip
case(STW.StoredWeight, lambda: STW.StoredWeight(torch.randn(32, 4), "int8", group_size=1.5),
     TypeError, "group_size")  # fmt: skip
