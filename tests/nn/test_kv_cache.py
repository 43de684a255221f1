"""The one key/value cache of both decoders: the cache itself, cached == uncached logits
for the GPT and the Llama (float32 on the CPU, atol 1e-5), and the cached path running
through the same attention modules: hooks fire and dropout acts as without the cache."""

from __future__ import annotations

import pytest
import torch

from transformer_lab import run_with_cache
from transformer_lab.generation.sampling import generate
from transformer_lab.models.gpt import GPT, GPTConfig
from transformer_lab.models.llama import Llama, LlamaConfig
from transformer_lab.nn.kv_cache import KVCache
from transformer_lab.nn.masks import causal_mask
from transformer_lab.nn.multi_head import MultiHeadAttention

TOL = dict(atol=1e-5, rtol=1e-5)


def gpt(seed=0, **overrides):
    torch.manual_seed(seed)
    config = dict(d_vocab=31, n_ctx=16, n_layers=2, n_heads=2, d_model=16, **overrides)
    return GPT(GPTConfig(**config)).eval()


def llama(seed=0):
    torch.manual_seed(seed)
    config = dict(d_vocab=37, n_ctx=32, n_layers=2, n_heads=4, n_kv_heads=2, d_model=32, d_mlp=64)
    return Llama(LlamaConfig(**config)).eval()


MODELS = {"gpt": gpt, "llama": llama}


def test_the_cache_appends_each_layer_and_counts_positions():
    cache = KVCache(2)
    assert cache.length == 0 and cache.num_bytes() == 0
    k, v = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 5, 4)
    assert cache.update(0, k, v)[0] is k
    k2, v2 = torch.randn(2, 3, 1, 4), torch.randn(2, 3, 1, 4)
    all_k, all_v = cache.update(0, k2, v2)
    torch.testing.assert_close(all_k, torch.cat([k, k2], dim=2))
    torch.testing.assert_close(all_v, torch.cat([v, v2], dim=2))
    assert cache.length == 6 and cache.layers[1] is None
    assert cache.num_bytes() == 2 * (2 * 3 * 6 * 4) * 4
    with pytest.raises(ValueError, match=r"the cache holds .*\(2, 3, 6, 4\).*new_cache"):
        cache.update(0, torch.randn(1, 3, 1, 4), torch.randn(1, 3, 1, 4))
    assert "length=6" in repr(cache)


def test_offset_of_checks_the_cache_a_model_is_given():
    assert KVCache.offset_of(None, 3) == 0
    with pytest.raises(TypeError, match="kv_cache must be a KVCache or None, got list"):
        KVCache.offset_of([], 3)
    with pytest.raises(ValueError, match="kv_cache has 2 layers but the model has 3"):
        KVCache.offset_of(KVCache(2), 3)
    with pytest.raises(ValueError, match="n_layers must be a positive int, got 0"):
        KVCache(0)
    for bad in (True, 2.0):
        with pytest.raises(TypeError, match="n_layers must be an int, got "):
            KVCache(bad)


@pytest.mark.parametrize("name", MODELS)
def test_both_decoders_use_the_one_cache_class(name):
    model = MODELS[name]()
    cache = model.new_cache()
    assert type(cache) is KVCache and len(cache.layers) == 2


@pytest.mark.parametrize("name", MODELS)
def test_cached_logits_equal_uncached(name):
    model = MODELS[name]()
    d_vocab = model.config.d_vocab
    ids = torch.randint(d_vocab, (3, 14), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = model(ids)
        cache = model.new_cache()
        parts = [model(ids[:, :5], kv_cache=cache)]  # a prompt
        parts += [model(ids[:, t : t + 1], kv_cache=cache) for t in range(5, 11)]  # one by one
        parts.append(model(ids[:, 11:], kv_cache=cache))  # several at once
    assert cache.length == 14
    torch.testing.assert_close(torch.cat(parts, dim=1), full, **TOL)


@pytest.mark.parametrize("name", MODELS)
def test_cached_generation_equals_uncached(name):
    model = MODELS[name]()
    prompt = torch.tensor([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]])
    cached = generate(model, prompt, 9, temperature=0, use_cache=True)
    uncached = generate(model, prompt, 9, temperature=0, use_cache=False)
    assert torch.equal(cached, uncached)


@pytest.mark.parametrize("name", MODELS)
def test_hooks_fire_on_the_cached_path(name):
    model = MODELS[name]()
    ids = torch.randint(model.config.d_vocab, (2, 9), generator=torch.Generator().manual_seed(2))
    names = ["blocks.*.attn.pattern", "blocks.*.attn.z"]
    with torch.no_grad():
        _, full = run_with_cache(model, ids, names=names)
        cache = model.new_cache()
        model(ids[:, :8], kv_cache=cache)
        _, last = run_with_cache(model, ids[:, 8:], kv_cache=cache, names=names)
    for layer in range(2):
        pattern = last[f"blocks.{layer}.attn.pattern"]  # [batch, n_heads, 1, key_pos]
        assert pattern.shape == (2, model.config.n_heads, 1, 9)
        torch.testing.assert_close(pattern, full[f"blocks.{layer}.attn.pattern"][:, :, -1:], **TOL)
        z = last[f"blocks.{layer}.attn.z"]  # [batch, 1, n_heads d_head]
        torch.testing.assert_close(z, full[f"blocks.{layer}.attn.z"][:, -1:], **TOL)


def test_gpt_block_hooks_fire_on_the_cached_path():
    model = gpt()
    ids = torch.randint(31, (1, 6))
    with torch.no_grad():
        cache = model.new_cache()
        model(ids[:, :5], kv_cache=cache)
        _, seen = run_with_cache(model, ids[:, 5:], kv_cache=cache)
    for hook in ("resid_pre", "attn_out", "resid_mid", "mlp_out", "resid_post", "attn.q"):
        assert f"blocks.1.{hook}" in seen, hook
    assert seen["blocks.1.attn.k"].shape == (1, 2, 1, 8)  # the new position's keys only


def test_gpt_dropout_acts_on_the_cached_path_as_without_the_cache():
    model = gpt(dropout=0.3).train()
    ids = torch.randint(31, (2, 10), generator=torch.Generator().manual_seed(3))
    torch.manual_seed(7)
    uncached = model(ids)
    torch.manual_seed(7)
    cached = model(ids, kv_cache=model.new_cache())  # the same modules draw the same masks
    torch.testing.assert_close(cached, uncached, **TOL)
    with torch.no_grad():
        assert not torch.allclose(cached, model.eval()(ids), atol=1e-3)  # dropout did act


def test_multi_head_attention_with_a_cache_equals_causal_attention():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 7, 16)
    with torch.no_grad():
        full, _ = mha(x, mask=causal_mask(7))
        cache = KVCache(1)
        first, _ = mha(x[:, :4], mask=causal_mask(4), cache=cache)
        rest = [mha(x[:, t : t + 1], cache=cache)[0] for t in range(4, 7)]
    torch.testing.assert_close(torch.cat([first, *rest], dim=1), full, **TOL)
    with pytest.raises(ValueError, match="cache is for self-attention"):
        mha(x, torch.randn(2, 3, 16), cache=KVCache(1))
