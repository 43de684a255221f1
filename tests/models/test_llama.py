"""The Llama-style decoder: config checks, parity with a small random transformers
LlamaForCausalLM (float32, atol 1e-5), causality, the key/value cache, padding, hooks."""

from __future__ import annotations

import pytest
import torch

from transformer_lab.generation.sampling import generate
from transformer_lab.hooks import capture
from transformer_lab.models.llama import Llama, LlamaConfig
from transformer_lab.nn.kv_cache import KVCache

SMALL = dict(d_vocab=37, n_ctx=32, n_layers=2, n_heads=4, n_kv_heads=2, d_model=32, d_mlp=48)


def small(seed=0, **overrides):
    torch.manual_seed(seed)
    return Llama(LlamaConfig(**{**SMALL, **overrides})).eval()


@pytest.mark.parametrize(
    "bad, field",
    [
        (dict(d_model=30), "n_heads"),
        (dict(n_kv_heads=3), "n_kv_heads"),
        (dict(d_model=12, n_heads=4), "d_head=3"),
        (dict(n_layers=0), "n_layers"),
        (dict(rope_base=1.0), "rope_base"),
        (dict(eps="1e-5"), "eps"),
        (dict(tie_weights=1), "tie_weights"),
    ],
)
def test_config_validation_names_the_field(bad, field):
    with pytest.raises((ValueError, TypeError), match=field):
        LlamaConfig(**{**SMALL, **bad})


def hf_twin(model: Llama):
    """A transformers LlamaForCausalLM holding ``model``'s weights."""
    transformers = pytest.importorskip("transformers")
    c = model.config
    cfg = transformers.LlamaConfig(
        vocab_size=c.d_vocab,
        hidden_size=c.d_model,
        intermediate_size=c.d_mlp,
        num_hidden_layers=c.n_layers,
        num_attention_heads=c.n_heads,
        num_key_value_heads=c.n_kv_heads,
        max_position_embeddings=c.n_ctx,
        rope_theta=c.rope_base,
        rms_norm_eps=c.eps,
        tie_word_embeddings=c.tie_weights,
        attn_implementation="eager",
    )
    hf = transformers.LlamaForCausalLM(cfg).eval()
    sd = {"model.embed_tokens.weight": model.W_E, "model.norm.weight": model.ln_final.gain}
    for i, b in enumerate(model.blocks):
        p = f"model.layers.{i}."
        sd |= {
            p + "input_layernorm.weight": b.norm1.gain,
            p + "post_attention_layernorm.weight": b.norm2.gain,
            p + "self_attn.q_proj.weight": b.attn.W_Q.T,
            p + "self_attn.k_proj.weight": b.attn.W_K.T,
            p + "self_attn.v_proj.weight": b.attn.W_V.T,
            p + "self_attn.o_proj.weight": b.attn.W_O.T,
            p + "mlp.gate_proj.weight": b.mlp.W_gate.T,
            p + "mlp.up_proj.weight": b.mlp.W_up.T,
            p + "mlp.down_proj.weight": b.mlp.W_down.T,
        }
    sd["lm_head.weight"] = model.unembed.T
    missing, unexpected = hf.load_state_dict(
        {k: v.detach().clone() for k, v in sd.items()}, strict=False
    )
    assert not unexpected and not [m for m in missing if "rotary" not in m], (missing, unexpected)
    return hf


def test_equals_transformers_llama():
    model = small()
    with torch.no_grad():  # gains away from one, so that a swapped norm would show
        for b in model.blocks:
            b.norm1.gain.uniform_(0.5, 1.5)
            b.norm2.gain.uniform_(0.5, 1.5)
    hf = hf_twin(model)
    ids = torch.randint(0, 37, (3, 11), generator=torch.Generator().manual_seed(1))
    with torch.no_grad(), capture(model, "blocks.1.attn.pattern") as store:
        ours = model(ids)
        out = hf(ids, output_attentions=True)
    torch.testing.assert_close(ours, out.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        store["blocks.1.attn.pattern"], out.attentions[1], atol=1e-6, rtol=1e-5
    )


def test_causal_future_tokens_do_not_matter():
    model = small()
    a = torch.tensor([[1, 2, 3, 4, 5, 6]])
    b = a.clone()
    b[0, 4:] = torch.tensor([9, 9])
    with torch.no_grad():
        torch.testing.assert_close(model(a)[:, :4], model(b)[:, :4])


def test_cache_equals_uncached_and_holds_kv_heads_only():
    model = small()
    ids = torch.randint(0, 37, (2, 12), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full = model(ids)
        cache = model.new_cache()
        parts = [model(ids[:, :4], kv_cache=cache)]
        parts += [model(ids[:, t : t + 1], kv_cache=cache) for t in range(4, 12)]
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-5, rtol=1e-5)
    assert cache.length == 12
    assert cache.layers[0][0].shape == (2, 2, 12, 8)  # n_kv_heads = 2, not 4
    assert cache.num_bytes() == 2 * 2 * (2 * 2 * 12 * 8) * 4


def test_cached_generation_equals_uncached():
    model = small()
    ids = torch.tensor([[3, 1, 4, 1, 5]])
    cached = generate(model, ids, 10, temperature=0, use_cache=True)
    uncached = generate(model, ids, 10, temperature=0, use_cache=False)
    assert torch.equal(cached, uncached)


def test_left_padded_rows_equal_alone_and_cache_continues():
    model = small()
    seqs = [[5, 6, 7, 8, 9], [3, 4]]
    ids = torch.tensor([[5, 6, 7, 8, 9], [0, 0, 0, 3, 4]])
    mask = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 0, 1, 1]])
    with torch.no_grad():
        batch = model(ids, attention_mask=mask)
        for i, s in enumerate(seqs):
            alone = model(torch.tensor([s]))[0]
            torch.testing.assert_close(batch[i, 5 - len(s) :], alone, atol=1e-5, rtol=1e-5)
        cache = model.new_cache()
        model(ids, attention_mask=mask, kv_cache=cache)
        step = model(torch.tensor([[10], [10]]), kv_cache=cache)
        alone = model(torch.tensor([seqs[1] + [10]]))[0, -1]
        torch.testing.assert_close(step[1, 0], alone, atol=1e-5, rtol=1e-5)


def test_untied_unembedding():
    model = small(tie_weights=False)
    assert model.W_U is not None and model.unembed is model.W_U
    assert model.num_params() == small().num_params() + 32 * 37


@pytest.mark.parametrize(
    "thunk, error, fragment",
    [
        (lambda: small()(torch.tensor([[1.0, 2.0]])), TypeError, "integer tensor"),
        (lambda: small()(torch.tensor([1, 2])), ValueError, "[batch, pos]"),
        (lambda: small()(torch.tensor([[1, 37]])), ValueError, "in [0, 37)"),
        (lambda: small()(torch.zeros(1, 33, dtype=torch.long)), ValueError, "n_ctx=32"),
        (lambda: small()(torch.tensor([[1]]), kv_cache=[]), TypeError, "KVCache"),
        (lambda: small()(torch.tensor([[1]]), kv_cache=KVCache(3)), ValueError, "3 layers"),
        (
            lambda: small()(torch.tensor([[1, 2]]), attention_mask=torch.ones(1, 3)),
            ValueError,
            "attention_mask",
        ),
        (lambda: Llama(SMALL), TypeError, "LlamaConfig"),
        (lambda: KVCache(0), ValueError, "n_layers"),
    ],
)
def test_bad_inputs(thunk, error, fragment):
    with pytest.raises(error) as info:
        thunk()
    assert fragment in str(info.value)
