"""LoRA (transformer_lab.nn.lora): the adapted model starts equal to the base, merge and
unmerge round trip, and the book's Llama with LoRA equals ``peft``'s LoRA on transformers'
LlamaForCausalLM with the same weights and adapters.

Tolerances, float32 on the CPU: logits within atol 1e-5 of peft's (the two add the low-rank
change in another order: ``x (W + dW)`` here, ``x W + (x A^T) B^T`` there); a merge then an
unmerge gives the stored weights back within 1e-6.
"""

from __future__ import annotations

import pytest
import torch
from torch.nn.utils import parametrize

from transformer_lab.models.llama import Llama, LlamaConfig
from transformer_lab.nn import lora as NN_LORA

ATTN = ["W_Q", "W_K", "W_V", "W_O"]
ALL = ATTN + ["W_gate", "W_up", "W_down"]
CONFIG = LlamaConfig(
    d_vocab=97, n_ctx=32, n_layers=2, n_heads=4, n_kv_heads=2, d_model=32, d_mlp=48
)


def small_llama(seed: int = 0) -> Llama:
    torch.manual_seed(seed)
    return Llama(CONFIG).eval()


def randomize_b(model, seed: int = 1, scale: float = 0.05) -> None:
    """Nonzero B everywhere (B starts at zero, which would hide a wrong layout)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, lora in NN_LORA.lora_modules(model):
            lora.B.copy_(torch.randn(lora.B.shape, generator=gen) * scale)


IDS = torch.randint(0, 97, (3, 11), generator=torch.Generator().manual_seed(5))


def test_starts_equal_to_the_base_and_freezes_it():
    model = small_llama()
    before = model(IDS)
    names = NN_LORA.add_lora(model, ALL, rank=4, alpha=8)
    assert len(names) == 7 * CONFIG.n_layers and names[0] == "blocks.0.attn.W_Q"
    torch.testing.assert_close(model(IDS), before, rtol=0, atol=0)  # B = 0: exactly the base
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(n.endswith((".A", ".B")) for n in trainable)
    lora = dict(NN_LORA.lora_modules(model))["blocks.1.mlp.W_down"]
    assert lora.A.shape == (4, 48) and lora.B.shape == (32, 4) and lora.scale == 2.0


def test_parameter_count_is_r_times_d_in_plus_d_out():
    model = small_llama()
    NN_LORA.add_lora(model, ["W_Q", "W_V"], rank=4, alpha=4)
    trainable, total = NN_LORA.count_parameters(model)
    per_layer = 4 * (32 + 32) + 4 * (32 + 16)  # W_Q [32, 32], W_V [32, 2 kv heads x 8]
    assert trainable == CONFIG.n_layers * per_layer
    assert total == small_llama().num_params() + trainable


def test_forward_is_w_plus_scaled_a_transpose_b_transpose():
    model = small_llama()
    W = model.blocks[0].attn.W_Q.detach().clone()
    NN_LORA.add_lora(model, ["W_Q"], rank=3, alpha=6)
    randomize_b(model)
    lora = dict(NN_LORA.lora_modules(model))["blocks.0.attn.W_Q"]
    torch.testing.assert_close(model.blocks[0].attn.W_Q, W + 2.0 * lora.A.T @ lora.B.T)


def test_merge_unmerge_round_trip_and_remove():
    model = small_llama()
    base = model(IDS)
    NN_LORA.add_lora(model, ALL, rank=4, alpha=8)
    randomize_b(model)
    stored = [W.detach().clone() for W, _ in NN_LORA._adapters(model)]
    adapted = model(IDS)
    assert (adapted - base).abs().max() > 1e-3
    NN_LORA.merge_lora(model)
    torch.testing.assert_close(model(IDS), adapted, rtol=0, atol=1e-5)
    with pytest.raises(ValueError, match="merged already"):
        NN_LORA.merge_lora(model)
    NN_LORA.unmerge_lora(model)
    for (W, _), old in zip(NN_LORA._adapters(model), stored, strict=True):
        torch.testing.assert_close(W, old, rtol=0, atol=1e-6)
    with NN_LORA.merged(model):
        torch.testing.assert_close(model(IDS), adapted, rtol=0, atol=1e-5)
    assert not any(lora.merged for _, lora in NN_LORA.lora_modules(model))
    NN_LORA.remove_lora(model, merge=True)
    assert not any(parametrize.is_parametrized(m) for m in model.modules())
    torch.testing.assert_close(model(IDS), adapted, rtol=0, atol=1e-5)


def test_remove_without_merge_gives_the_base_back():
    model = small_llama()
    base = model(IDS)
    NN_LORA.add_lora(model, ATTN, rank=2, alpha=2)
    randomize_b(model)
    NN_LORA.remove_lora(model, merge=False)
    torch.testing.assert_close(model(IDS), base, rtol=0, atol=1e-6)


def test_state_dict_round_trip_and_seeded_a():
    a, b = small_llama(), small_llama()
    NN_LORA.add_lora(a, ATTN, rank=2, alpha=4, seed=3)
    NN_LORA.add_lora(b, ATTN, rank=2, alpha=4, seed=3)
    for (_, x), (_, y) in zip(NN_LORA.lora_modules(a), NN_LORA.lora_modules(b), strict=True):
        torch.testing.assert_close(x.A, y.A, rtol=0, atol=0)  # the same seed, the same A
    randomize_b(a)
    NN_LORA.load_lora_state_dict(b, NN_LORA.lora_state_dict(a))
    torch.testing.assert_close(b(IDS), a(IDS), rtol=0, atol=0)
    state = NN_LORA.lora_state_dict(a)
    state.pop(next(iter(state)))
    with pytest.raises(ValueError, match="missing"):
        NN_LORA.load_lora_state_dict(b, state)


def test_only_adapters_learn():
    model = small_llama()
    NN_LORA.add_lora(model, ATTN, rank=2, alpha=4)
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    opt = torch.optim.AdamW(NN_LORA.lora_parameters(model), lr=1e-2)
    for _ in range(3):
        loss = torch.nn.functional.cross_entropy(
            model(IDS)[:, :-1].flatten(0, 1), IDS[:, 1:].flatten()
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    for n, p in model.named_parameters():
        if n in frozen:
            assert torch.equal(p, frozen[n]), n
    assert any(lora.B.abs().max() > 0 for _, lora in NN_LORA.lora_modules(model))


def test_refuses_bad_targets_and_twice():
    model = small_llama()
    with pytest.raises(ValueError, match=r"\['W_X'\] name no parameter"):
        NN_LORA.add_lora(model, ["W_Q", "W_X"])
    with pytest.raises(ValueError, match="not 2-d"):
        NN_LORA.add_lora(model, ["gain"])
    with pytest.raises(TypeError, match="non-empty list"):
        NN_LORA.add_lora(model, "W_Q")
    NN_LORA.add_lora(model, ["W_Q"])
    with pytest.raises(ValueError, match="already has LoRA"):
        NN_LORA.add_lora(model, ["W_V"])
    with pytest.raises(ValueError, match="no LoRA adapters"):
        NN_LORA.merge_lora(small_llama())


# --- parity with peft on transformers' Llama ---------------------------------------------


@pytest.fixture(scope="module")
def hf_pair():
    """transformers' LlamaForCausalLM holding the small Llama's weights (nn.Linear keeps
    ``[out, in]``, the book ``[in, out]``: every matrix is transposed on the way)."""
    transformers = pytest.importorskip("transformers")
    ours = small_llama(seed=7)
    c = CONFIG
    cfg = transformers.LlamaConfig(
        vocab_size=c.d_vocab, hidden_size=c.d_model, intermediate_size=c.d_mlp,
        num_hidden_layers=c.n_layers, num_attention_heads=c.n_heads,
        num_key_value_heads=c.n_kv_heads, max_position_embeddings=c.n_ctx,
        rms_norm_eps=c.eps, rope_theta=c.rope_base, tie_word_embeddings=True,
        attention_bias=False, mlp_bias=False,
    )  # fmt: skip
    torch.manual_seed(0)
    hf = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        hf.model.embed_tokens.weight.copy_(ours.W_E)
        hf.model.norm.weight.copy_(ours.ln_final.gain)
        for block, layer in zip(ours.blocks, hf.model.layers, strict=True):
            a, m, at, mlp = block.attn, block.mlp, layer.self_attn, layer.mlp
            for mine, theirs in [(a.W_Q, at.q_proj), (a.W_K, at.k_proj), (a.W_V, at.v_proj),
                                 (a.W_O, at.o_proj), (m.W_gate, mlp.gate_proj),
                                 (m.W_up, mlp.up_proj), (m.W_down, mlp.down_proj)]:  # fmt: skip
                theirs.weight.copy_(mine.T)
            layer.input_layernorm.weight.copy_(block.norm1.gain)
            layer.post_attention_layernorm.weight.copy_(block.norm2.gain)
    torch.testing.assert_close(hf(IDS).logits, ours(IDS), rtol=0, atol=1e-5)
    return ours, hf


PEFT_NAMES = {"W_Q": "q_proj", "W_K": "k_proj", "W_V": "v_proj", "W_O": "o_proj",
              "W_gate": "gate_proj", "W_up": "up_proj", "W_down": "down_proj"}  # fmt: skip


@pytest.mark.parametrize("targets", [ATTN, ALL], ids=["attention", "attention+mlp"])
def test_equals_peft_lora(hf_pair, targets):
    peft = pytest.importorskip("peft")
    import copy

    ours, hf = (copy.deepcopy(m) for m in hf_pair)
    NN_LORA.add_lora(ours, targets, rank=4, alpha=8)
    randomize_b(ours)
    cfg = peft.LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0,
                          target_modules=[PEFT_NAMES[t] for t in targets])  # fmt: skip
    theirs = peft.get_peft_model(hf, cfg).eval()
    layers = theirs.base_model.model.model.layers
    with torch.no_grad():
        for name, lora in NN_LORA.lora_modules(ours):
            _, i, kind, attr = name.split(".")
            owner = getattr(layers[int(i)], "self_attn" if kind == "attn" else "mlp")
            linear = getattr(owner, PEFT_NAMES[attr])
            assert linear.scaling["default"] == lora.scale
            linear.lora_A["default"].weight.copy_(lora.A)  # the same shapes: [r, in], [out, r]
            linear.lora_B["default"].weight.copy_(lora.B)
    adapted = ours(IDS)
    torch.testing.assert_close(theirs(IDS).logits, adapted, rtol=0, atol=1e-5)
    assert (adapted - hf_pair[0](IDS)).abs().max() > 1e-3  # the adapters matter
    # the gradients of A and B agree too
    target = IDS[:, 1:].flatten()
    torch.nn.functional.cross_entropy(adapted[:, :-1].flatten(0, 1), target).backward()
    torch.nn.functional.cross_entropy(theirs(IDS).logits[:, :-1].flatten(0, 1), target).backward()
    first = dict(NN_LORA.lora_modules(ours))[
        f"blocks.0.{'attn' if targets[0] == 'W_Q' else 'mlp'}.{targets[0]}"
    ]
    theirs_a = layers[0].self_attn.q_proj.lora_A["default"].weight.grad
    torch.testing.assert_close(first.A.grad, theirs_a, rtol=1e-4, atol=1e-6)
    # merged: ours and peft's merge_and_unload give the same plain model
    NN_LORA.merge_lora(ours)
    merged = theirs.merge_and_unload()
    torch.testing.assert_close(merged(IDS).logits, ours(IDS), rtol=0, atol=1e-5)
