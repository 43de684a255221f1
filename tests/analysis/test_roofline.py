"""The roofline of decoding: bytes read per token, counted by hand for small models, and a
bandwidth measurement that returns a plausible number."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_lab.analysis.roofline import decode_bytes_per_token, read_bandwidth, roofline
from transformer_lab.models.gpt import GPT, GPTConfig
from transformer_lab.models.llama import Llama, LlamaConfig
from transformer_lab.nn.row_kernels import kernels_available, library


def test_a_gpts_bytes_are_its_weights_once_and_its_cache():
    model = GPT(GPTConfig(d_vocab=11, n_ctx=16, n_layers=2, n_heads=2, d_model=8))
    by_hand = sum(p.numel() for p in model.parameters()) * 4  # the tied matrix once
    report = decode_bytes_per_token(model, context=10)
    assert report["weights"] == by_hand
    assert report["cache"] == 2 * 2 * 2 * 4 * 10 * 4  # k and v, layers, heads, d_head, positions
    assert report["total"] == report["weights"] + report["cache"]
    assert decode_bytes_per_token(model.half(), 10)["weights"] == by_hand // 2


def test_a_shared_matrix_is_read_once_and_grouped_heads_shrink_the_cache():
    config = LlamaConfig(d_vocab=13, n_ctx=16, n_layers=3, n_heads=4, n_kv_heads=2, d_model=16,
                         d_mlp=32)  # fmt: skip
    model = Llama(config)
    assert model.config.tie_weights  # the head reads W_E: counted once
    weights = 4 * sum(p.numel() for p in model.parameters())
    assert decode_bytes_per_token(model, 0) == {"weights": weights, "cache": 0, "total": weights}
    assert decode_bytes_per_token(model, 5)["cache"] == 2 * 3 * 2 * 4 * 5 * 4  # 2 kv heads of 4
    cache16 = decode_bytes_per_token(model, 5, cache_dtype=torch.bfloat16)["cache"]
    assert cache16 == 2 * 3 * 2 * 4 * 5 * 2


def test_the_bandwidth_of_a_read_is_plausible():
    rate = read_bandwidth(n_bytes=64 << 20, repeats=2)
    assert math.isfinite(rate) and 1e8 < rate < 1e13  # between 0.1 GB/s and 10 TB/s


def test_the_roofline_is_bandwidth_over_bytes():
    assert roofline(500e6, 28e9) == pytest.approx(56.0)
    with pytest.raises(ValueError, match="bytes_per_token must be a positive finite number"):
        roofline(0, 1e9)


@pytest.mark.skipif(not kernels_available(), reason="the package's kernels do not run here")
def test_the_kernels_streaming_read_sums_every_number():
    x = torch.randn(1000 * 64 + 13)  # whole blocks of 64 and a tail
    got = library().stream_sum(x.data_ptr(), x.numel())
    assert got == pytest.approx(x.double().sum().item(), abs=1e-2)
    assert library().stream_sum(x.data_ptr(), 5) == pytest.approx(x[:5].sum().item(), abs=1e-5)
