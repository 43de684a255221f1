"""The fused decoding step (transformer_lab.nn.decode_step) against the Llama's modules: the
same logits (float32 rounding apart) over several cached steps, after a prompt, with
grouped-query attention, in every storage; the cache it writes into (KVCache.reserve and
advance) staying one cache for both kinds of call; and every case where the modules must run
instead (kernels off, a gradient, hooks, interventions, batches, masks, replaced weights)."""

from __future__ import annotations

import copy

import pytest
import torch

from transformer_lab.generation.sampling import generate
from transformer_lab.hooks import capture, intervene
from transformer_lab.models.llama import Llama, LlamaConfig
from transformer_lab.nn import decode_step, row_kernels
from transformer_lab.nn.decode_step import DecoderLayerWeights, FusedDecoder
from transformer_lab.nn.kv_cache import KVCache
from transformer_lab.nn.stored_weights import STORAGES, StoredWeight, storage_supported

pytestmark = pytest.mark.skipif(
    not all(storage_supported(s) for s in STORAGES), reason="this CPU lacks the kernels"
)

# grouped-query attention (6 query heads on 2 key/value heads), widths that are not
# multiples of the kernels' 16 or 64 lanes (d_head 12, d_mlp 100)
CONFIG = dict(d_vocab=53, n_ctx=64, n_layers=3, n_heads=6, n_kv_heads=2, d_model=72, d_mlp=100)


def stored(storage="float32-rows", seed=0, **overrides):
    """A small Llama stored as ``storage`` ("int8 g32": int8 with one scale per 32 inputs)."""
    storage, _, group = storage.partition(" g")
    torch.manual_seed(seed)
    model = Llama(LlamaConfig(**{**CONFIG, **overrides})).eval()
    with torch.no_grad():  # gains other than one, so that the norms' gains are read
        for b in model.blocks:
            b.norm1.gain.uniform_(0.5, 1.5)
            b.norm2.gain.uniform_(0.5, 1.5)
        model.ln_final.gain.uniform_(0.5, 1.5)
    return model.store_weights(storage, group_size=int(group) if group else None)


def ids(n, seed=1):
    return torch.randint(
        0, CONFIG["d_vocab"], (1, n), generator=torch.Generator().manual_seed(seed)
    )


class Calls:
    """Counts the fused steps a model takes."""

    def __init__(self, monkeypatch):
        self.n = 0
        original = FusedDecoder.__call__

        def counted(step, *args):
            self.n += 1
            return original(step, *args)

        monkeypatch.setattr(FusedDecoder, "__call__", counted)


def decode(model, tokens, prompt=4, fused=True):
    """Logits of a prompt run at once, then of each later token alone (cached)."""
    model.fused_decoding = fused
    cache = model.new_cache()
    with torch.no_grad():
        out = [model(tokens[:, :prompt], kv_cache=cache)]
        out += [model(tokens[:, t : t + 1], kv_cache=cache) for t in range(prompt, tokens.shape[1])]
    model.fused_decoding = True
    return torch.cat(out, dim=1), cache


@pytest.mark.parametrize("storage", [*STORAGES, "int8 g32"])
def test_fused_steps_give_the_modules_logits(storage, monkeypatch):
    calls = Calls(monkeypatch)
    model, tokens = stored(storage), ids(14)
    fused, fused_cache = decode(model, tokens)
    assert calls.n == 10  # every token after the prompt
    plain, plain_cache = decode(model, tokens, fused=False)
    assert calls.n == 10
    error = ((fused - plain).abs().max() / plain.abs().max()).item()
    assert error < 1e-4, error  # the same stored weights, summed in another order
    assert torch.equal(fused.argmax(-1), plain.argmax(-1))
    for (k1, v1), (k2, v2) in zip(fused_cache.layers, plain_cache.layers, strict=True):
        assert k1.shape == k2.shape == (1, 2, 14, 12)
        torch.testing.assert_close(k1, k2, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(v1, v2, rtol=1e-4, atol=1e-5)
    # and the whole sequence at once, uncached, chooses the same tokens
    with torch.no_grad():
        whole = model(tokens)
    assert torch.equal(fused.argmax(-1), whole.argmax(-1))


def test_greedy_generation_is_the_same_with_and_without_fusing(monkeypatch):
    calls = Calls(monkeypatch)
    model, prompt = stored("float32-rows"), ids(5)
    fused = generate(model, prompt, 12, temperature=0)
    assert calls.n == 11  # the prompt in PyTorch, then one fused step per token
    model.fused_decoding = False
    assert torch.equal(generate(model, prompt, 12, temperature=0), fused)
    assert calls.n == 11


def test_torch_calls_and_fused_steps_share_one_cache(monkeypatch):
    """Prompt in PyTorch, fused steps, two tokens in PyTorch, fused steps again: the cache
    stays one cache, and the logits are those of the modules alone."""
    calls = Calls(monkeypatch)
    model, tokens = stored("int8"), ids(12)
    cache = model.new_cache()
    with torch.no_grad():
        out = [model(tokens[:, :3], kv_cache=cache)]
        out += [model(tokens[:, t : t + 1], kv_cache=cache) for t in (3, 4, 5)]
        buffer = cache.reserve(1)
        out.append(model(tokens[:, 6:8], kv_cache=cache))  # two tokens: PyTorch's cat
        assert cache.layers[0][0].data_ptr() != buffer.data_ptr()
        out += [model(tokens[:, t : t + 1], kv_cache=cache) for t in range(8, 12)]
    assert calls.n == 7 and cache.length == 12
    plain, _ = decode(model, tokens, prompt=12, fused=False)
    torch.testing.assert_close(torch.cat(out, dim=1), plain, rtol=1e-4, atol=1e-4)


def test_a_long_generation_grows_the_cache_room():
    model, tokens = stored("bfloat16", n_ctx=300, n_layers=1), ids(270, seed=3)
    fused, cache = decode(model, tokens, prompt=2)  # room 259 at first, then more
    assert cache.reserve(1).shape[4] > 270
    plain, _ = decode(model, tokens, prompt=2, fused=False)
    assert ((fused - plain).abs().max() / plain.abs().max()).item() < 1e-4


def test_plain_float32_never_fuses(monkeypatch):
    calls = Calls(monkeypatch)
    torch.manual_seed(0)
    model = Llama(LlamaConfig(**CONFIG)).eval()
    generate(model, ids(4), 5, temperature=0)
    assert calls.n == 0 and model.storage == "float32"


def test_the_modules_run_where_something_needs_them(monkeypatch):
    calls = Calls(monkeypatch)
    model, tokens = stored(), ids(8)
    cache = model.new_cache()

    def step(t, **kwargs):
        with torch.no_grad():
            return model(tokens[:, t : t + 1], kv_cache=cache, **kwargs)

    with torch.no_grad():
        model(tokens[:, :4], kv_cache=cache)
    with capture(model, "blocks.1.attn.pattern") as store:  # a capture: the pattern is kept
        step(4)
    assert store["blocks.1.attn.pattern"].shape == (1, 6, 1, 5)
    zeroed = {"blocks.0.attn.z": lambda z: z * 0}
    with intervene(model, zeroed):  # an intervention changes what the modules compute
        ablated = step(5)
    seen = []
    handle = model.blocks[2].mlp.register_forward_hook(lambda m, i, o: seen.append(o.shape))
    step(6)
    handle.remove()
    assert seen == [(1, 1, 72)] and calls.n == 0
    step(7)  # nothing active: fused
    assert calls.n == 1
    # the intervention's logits are the modules' own
    model.fused_decoding = False
    again = model.new_cache()
    with torch.no_grad():
        model(tokens[:, :5], kv_cache=again)
        with intervene(model, zeroed):
            torch.testing.assert_close(model(tokens[:, 5:6], kv_cache=again), ablated)


def test_batches_masks_prompts_and_gradients_take_the_modules(monkeypatch):
    calls = Calls(monkeypatch)
    model, tokens = stored(), ids(6)
    with torch.no_grad():
        two = model.new_cache()
        model(tokens.repeat(2, 1)[:, :4], kv_cache=two)
        model(tokens.repeat(2, 1)[:, 4:5], kv_cache=two)  # batch 2
        masked = model.new_cache()
        model(tokens[:, :4], kv_cache=masked, attention_mask=torch.tensor([[0, 1, 1, 1]]))
        model(tokens[:, 4:5], kv_cache=masked)  # the cache remembers padding
        first = model.new_cache()
        model(tokens[:, :1], kv_cache=first)  # nothing cached yet
        model(tokens[:, 1:2])  # no cache
    cache = model.new_cache()
    with torch.no_grad():
        model(tokens[:, :4], kv_cache=cache)
    assert model.W_E.requires_grad
    model(tokens[:, 4:5], kv_cache=cache)  # grad mode, and a parameter that wants one
    assert calls.n == 0
    model.W_E.requires_grad_(False)
    for p in model.parameters():
        p.requires_grad_(False)
    model(tokens[:, 5:6], kv_cache=cache)  # grad mode, but nothing to differentiate
    assert calls.n == 1


def test_kernels_turned_off_leave_the_modules(monkeypatch):
    model = stored()
    monkeypatch.setenv("TRANSFORMER_LAB_KERNELS", "0")
    row_kernels._load.cache_clear()
    try:
        assert model._fused_step() is None
        with pytest.raises(RuntimeError, match="TRANSFORMER_LAB_KERNELS=0"):
            FusedDecoder(model._layer_weights(), model.ln_final.gain, model.stored_unembed,
                         n_heads=6, n_kv_heads=2, eps=1e-5, rope_base=1e4)  # fmt: skip
        torch.manual_seed(0)
        plain = Llama(LlamaConfig(**CONFIG)).eval()  # float32 needs no kernels
        assert generate(plain, ids(3), 3, temperature=0).shape == (1, 6)
    finally:
        monkeypatch.delenv("TRANSFORMER_LAB_KERNELS")
        row_kernels._load.cache_clear()
    with torch.no_grad():
        assert model._fused_step() is not None


def test_a_replaced_matrix_or_gain_is_read(monkeypatch):
    model, tokens = stored(), ids(7)
    with torch.no_grad():
        decode(model, tokens)
        first = model._fused.step
        model.blocks[1].attn.W_V = StoredWeight(torch.randn(72, 24) * 0.1, "float32-rows")
        model.blocks[0].norm2.gain = torch.nn.Parameter(torch.full((72,), 0.7))
        model.ln_final.gain.mul_(1.1)  # in place: the same tensor, read again
        model.blocks[2].norm1.gain.data = torch.full((72,), 1.3)  # the same Parameter, new data
    fused, _ = decode(model, tokens)
    assert model._fused.step is not first
    plain, _ = decode(model, tokens, fused=False)
    assert ((fused - plain).abs().max() / plain.abs().max()).item() < 1e-4
    model.blocks[2].mlp = torch.nn.Identity()  # not a part this class builds: no step
    assert model._fused_step() is None


def test_reserve_keeps_one_buffer_and_views_of_it():
    cache = KVCache(2)
    with pytest.raises(ValueError, match="the cache is empty"):
        cache.reserve(1)
    k, v = torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)
    cache.update(0, k, v)
    with pytest.raises(ValueError, match="the cache is empty"):
        cache.reserve(1)  # layer 1 holds nothing yet
    cache.update(1, k * 2, v * 2)
    with pytest.raises(ValueError, match="reserve first"):
        cache.advance(1)
    buffer = cache.reserve(3)
    assert buffer.shape == (2, 2, 1, 2, 5 + 3 + 256, 4)
    assert cache.layers[1][0].data_ptr() == buffer[1, 0].data_ptr()
    torch.testing.assert_close(cache.layers[1][1], v * 2)
    assert cache.reserve(2) is buffer  # room left: the same buffer
    buffer[:, :, :, :, 5] = 7.0
    cache.advance(1)
    assert cache.length == 6 and cache.num_bytes() == 2 * 2 * (2 * 6 * 4) * 4
    assert torch.equal(cache.layers[0][0][:, :, 5], torch.full((1, 2, 4), 7.0))
    with pytest.raises(ValueError, match="room for 258 more positions, not 300"):
        cache.advance(300)
    with pytest.raises(ValueError, match="n_new must be a positive int"):
        cache.reserve(0)
    cache.update(0, k[:, :, :1], v[:, :, :1])  # PyTorch's append: a new tensor
    with pytest.raises(ValueError, match="reserve first"):
        cache.advance(1)
    with pytest.raises(ValueError, match="one shape and dtype"):
        cache.reserve(1)  # layer 0 now holds 7 positions, layer 1 holds 6


def test_fused_decoder_refuses_bad_parts_and_inputs():
    model = stored()
    layers, gain, head = model._layer_weights(), model.ln_final.gain, model.stored_unembed
    sizes = dict(n_heads=6, n_kv_heads=2, eps=1e-5, rope_base=1e4)
    step = FusedDecoder(layers, gain, head, **sizes)
    assert "FusedDecoder(float32-rows, n_layers=3" in repr(step)
    with pytest.raises(TypeError, match="layers must be a non-empty list"):
        FusedDecoder([], gain, head, **sizes)
    with pytest.raises(TypeError, match="each of layers must be a DecoderLayerWeights"):
        FusedDecoder([tuple(layers[0])], gain, head, **sizes)
    with pytest.raises(ValueError, match="n_heads=4 must be a multiple of n_kv_heads=3"):
        FusedDecoder(layers, gain, head, **{**sizes, "n_heads": 4, "n_kv_heads": 3})
    swapped = layers[0]._replace(W_K=layers[0].W_Q)
    with pytest.raises(ValueError, match=r"W_K of layer 0 is \(72, 72\), expected \(72, 24\)"):
        FusedDecoder([swapped], gain, head, **sizes)
    other = layers[0]._replace(W_O=StoredWeight(torch.randn(72, 72), "int8"))
    with pytest.raises(ValueError, match="every matrix must be stored as float32-rows"):
        FusedDecoder([other], gain, head, **sizes)
    with pytest.raises(ValueError, match=r"every gain must be a float32 tensor \[72\]"):
        FusedDecoder(layers, gain[:5], head, **sizes)
    with pytest.raises(ValueError, match="eps must be"):
        FusedDecoder(layers, gain, head, **{**sizes, "eps": 0.0})
    cache = model.new_cache()
    with pytest.raises(ValueError, match="the cache is empty"):
        step(model.W_E[0], cache)
    with torch.no_grad():
        model(ids(3), kv_cache=cache)
    with pytest.raises(ValueError, match=r"embedding must be a float32 CPU tensor \[72\]"):
        step(model.W_E[:2], cache)
    with pytest.raises(TypeError, match="cache must be a KVCache"):
        step(model.W_E[0], [])
    with pytest.raises(ValueError, match="cache has 2 layers, the decoder 3"):
        step(model.W_E[0], KVCache(2))
    wide = KVCache(3)
    for i in range(3):
        wide.update(i, torch.randn(1, 3, 2, 12), torch.randn(1, 3, 2, 12))
    with pytest.raises(ValueError, match=r"float32 keys and values \[1, 2, pos, 12\]"):
        step(model.W_E[0], wide)
    assert step(model.W_E[0].detach(), cache).shape == (1, 1, 53) and cache.length == 4
    assert isinstance(layers[0], DecoderLayerWeights) and decode_step.MATRICES[0] == "W_Q"


def test_a_copy_builds_its_own_step():
    model, tokens = stored("int8"), ids(6)
    fused, _ = decode(model, tokens)
    twin = copy.deepcopy(model)
    assert twin._fused is None
    again, _ = decode(twin, tokens)
    assert torch.equal(fused, again) and twin._fused.step is not model._fused.step


def test_a_model_in_another_dtype_takes_the_modules(monkeypatch):
    calls = Calls(monkeypatch)
    model = stored("bfloat16")
    model.blocks[1].norm2.gain.data = model.blocks[1].norm2.gain.data.bfloat16()
    out = generate(model, ids(4), 3, temperature=0)  # one gain in bfloat16: the modules
    assert out.shape == (1, 7) and calls.n == 0
    model.blocks[1].norm2.gain.data = model.blocks[1].norm2.gain.data.float()
    model.W_E.data = model.W_E.data.bfloat16()  # the residual stream in bfloat16
    assert generate(model, ids(4), 3, temperature=0).shape == (1, 7) and calls.n == 0
