"""The GPT model: config checks, causality, weight tying, the key/value cache, parity with
Hugging Face's GPT-2 (float32 on the CPU: logits within atol 1e-5), hooks and evaluation."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_lab import run_with_cache
from transformer_lab.generation.sampling import generate
from transformer_lab.models import GPT, GPTConfig
from transformer_lab.nn.norms import LayerNorm
from transformer_lab.training.gpt import evaluate_lm
from transformer_lab.training.losses import lm_loss
from transformer_lab.training.run import Run

SMALL = dict(d_vocab=31, n_ctx=16, n_layers=2, n_heads=2, d_model=16)


def small_gpt(seed=0, **overrides):
    torch.manual_seed(seed)
    return GPT(GPTConfig(**{**SMALL, **overrides})).eval()


@pytest.mark.parametrize(
    "bad, field",
    [
        (dict(d_model=18, n_heads=4), "n_heads"),
        (dict(n_layers=0), "n_layers"),
        (dict(d_vocab=-3), "d_vocab"),
        (dict(d_mlp=0), "d_mlp"),
        (dict(dropout=1.0), "dropout"),
        (dict(activation="swish"), "activation"),
        (dict(n_ctx=2.5), "n_ctx"),
    ],
)
def test_config_validation_names_the_field(bad, field):
    with pytest.raises((TypeError, ValueError), match=field):  # a wrong type: TypeError
        GPTConfig(**{**SMALL, **bad})


def test_config_defaults_and_frozen():
    c = GPTConfig(d_vocab=65)
    assert c.mlp_width == 4 * c.d_model and c.d_head == c.d_model // c.n_heads
    with pytest.raises(AttributeError):
        c.d_model = 3  # frozen


def test_fused_norm_gives_the_same_logits_as_the_written_out_norm():
    fused = small_gpt()
    written = GPT(GPTConfig(**{**SMALL, "fused_norm": False})).eval()
    written.load_state_dict(fused.state_dict())
    assert all(m.fused for m in fused.modules() if isinstance(m, LayerNorm))
    assert not any(m.fused for m in written.modules() if isinstance(m, LayerNorm))
    idx = torch.randint(31, (2, 9))
    torch.testing.assert_close(fused(idx), written(idx), atol=1e-5, rtol=1e-5)
    with pytest.raises(TypeError, match="fused_norm"):
        GPTConfig(**{**SMALL, "fused_norm": 1})


def test_logits_shape_and_bad_inputs():
    model = small_gpt()
    idx = torch.randint(31, (3, 7))
    assert model(idx).shape == (3, 7, 31)
    with pytest.raises(ValueError, match="n_ctx=16"):
        model(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(TypeError, match="integer"):
        model(torch.zeros(1, 4))
    with pytest.raises(ValueError, match=r"\[batch, pos\]"):
        model(torch.zeros(4, dtype=torch.long))


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 15), st.integers(0, 2**31 - 1))
def test_causal_future_tokens_do_not_change_past_logits(t, seed):
    model = small_gpt()
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(31, (2, 16), generator=g)
    changed = idx.clone()
    changed[:, t:] = torch.randint(31, (2, 16 - t), generator=g)
    with torch.no_grad():
        torch.testing.assert_close(model(idx)[:, :t], model(changed)[:, :t], atol=1e-6, rtol=0)


def test_weight_tying_shares_the_embedding():
    tied, untied = small_gpt(), small_gpt(tie_weights=False)
    assert tied.W_U is None and tied.unembed.data_ptr() == tied.W_E.data_ptr()
    assert untied.num_params() - tied.num_params() == SMALL["d_vocab"] * SMALL["d_model"]
    idx = torch.randint(31, (2, 5))
    tied.train()
    lm_loss(tied, (idx, idx)).backward()
    assert tied.W_E.grad is not None and tied.W_E.grad.abs().sum() > 0


def test_initial_loss_is_near_uniform():
    model = small_gpt(d_vocab=65)
    idx, targets = torch.randint(65, (2, 8, 16))
    assert abs(lm_loss(model, (idx, targets)).item() - math.log(65)) < 0.1


def test_kv_cache_gives_the_same_logits_as_the_full_sequence():
    model = small_gpt()
    idx = torch.randint(31, (3, 16))
    with torch.no_grad():
        full = model(idx)
        cache = model.new_cache()
        parts = [model(idx[:, :5], kv_cache=cache)]  # a prompt in one call
        parts += [model(idx[:, i : i + 1], kv_cache=cache) for i in range(5, 12)]  # one at a time
        parts.append(model(idx[:, 12:], kv_cache=cache))  # several new tokens at once
    assert cache.length == 16
    torch.testing.assert_close(torch.cat(parts, dim=1), full, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="n_ctx"):
        model(idx[:, :1], kv_cache=cache)  # the cache is full: 17 positions


def test_hooks_capture_causal_attention_patterns():
    model = small_gpt()
    idx = torch.randint(31, (1, 6))
    logits, cache = run_with_cache(model, idx, names="blocks.*.attn.pattern")
    pattern = cache["blocks.1.attn.pattern"]  # [batch, n_heads, query_pos, key_pos]
    assert pattern.shape == (1, 2, 6, 6)
    assert torch.all(pattern.triu(1) == 0)
    torch.testing.assert_close(pattern.sum(-1), torch.ones(1, 2, 6))
    torch.testing.assert_close(logits, model(idx))


def test_evaluate_lm_covers_every_token_once():
    model = small_gpt()
    data = torch.randint(31, (16 * 3 + 5,))  # three full windows and a partial one
    with torch.no_grad():
        manual = []
        for start in range(0, len(data) - 1, 16):
            x = data[start : start + 16][: len(data) - 1 - start]
            y = data[start + 1 : start + 17]
            manual.append(F.cross_entropy(model(x[None])[0], y, reduction="none"))
        expected = torch.cat(manual)
    assert expected.numel() == len(data) - 1
    assert evaluate_lm(model, data, batch_size=2) == pytest.approx(expected.mean().item(), abs=1e-5)


# --- parity with Hugging Face GPT-2 -----------------------------------------------------

transformers = pytest.importorskip("transformers")


def hf_gpt2(tie=True, activation="gelu_new", seed=0):
    torch.manual_seed(seed)
    config = transformers.GPT2Config(
        vocab_size=97, n_positions=48, n_embd=32, n_layer=3, n_head=4,
        activation_function=activation, layer_norm_epsilon=1e-5, initializer_range=0.2,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0,
        pad_token_id=0, tie_word_embeddings=tie,
    )  # fmt: skip
    model = transformers.GPT2LMHeadModel(config).eval()
    with torch.no_grad():  # HF initialises biases and layer norms trivially: make them count
        for name, p in model.named_parameters():
            if name.endswith("bias") or "ln_" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model


@pytest.mark.parametrize("tie", [True, False])
def test_from_hf_gpt2_gives_equal_logits(tie):
    hf = hf_gpt2(tie=tie)
    ours = GPT.from_hf_gpt2(hf).eval()
    assert ours.config.tie_weights is tie and ours.config.activation == "gelu_tanh"
    assert ours.num_params() == sum(p.numel() for p in hf.parameters())
    idx = torch.randint(97, (2, 48))
    with torch.no_grad():
        expected = hf(idx).logits
        got = ours(idx)
    assert expected.abs().max() > 1.0  # logits large enough for the comparison to mean something
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)


def test_from_hf_gpt2_greedy_continuations_are_identical():
    hf = hf_gpt2()
    ours = GPT.from_hf_gpt2(hf)
    prompt = torch.randint(97, (3, 6))
    theirs = prompt
    with torch.no_grad():  # greedy decoding with the Hugging Face model's own logits
        for _ in range(20):
            next_id = hf(theirs).logits[:, -1].argmax(-1)
            theirs = torch.cat([theirs, next_id[:, None]], dim=1)
    mine = generate(ours, prompt, 20, temperature=0.0)
    assert mine.shape == (3, 26)
    assert torch.equal(mine, theirs)
    assert torch.equal(generate(ours, prompt, 20, temperature=0.0, use_cache=False), theirs)


def test_from_hf_gpt2_rejects_what_it_cannot_copy():
    hf = hf_gpt2(activation="relu")
    with pytest.raises(ValueError, match="activation_function"):
        GPT.from_hf_gpt2(hf)


def _bench_gpt():
    from script_loader import load_script

    return load_script("bench/bench_gpt")


def test_bench_gpt_applies_overrides_and_reports_the_target_time():
    bench = _bench_gpt()
    report = bench.train_to_target(
        "book-cpu",
        torch.device("cpu"),
        target=10.0,
        eval_every=2,
        steps=3,
        max_val=2000,
        lr=2e-3,
        n_layers=1,
    )
    assert report["config"]["n_layers"] == 1
    assert report["recipe"]["steps"] == 3 and report["recipe"]["lr"] == 2e-3
    assert report["held_out_chars"] == 2000
    assert report["tokens"] == 3 * report["recipe"]["batch_size"] * report["config"]["n_ctx"]
    # a target above the untrained loss (ln 75 = 4.3) is reached at the first evaluation
    assert report["reached_target_at"]["step"] == 2
    assert 0 < report["reached_target_at"]["train_s"] <= report["train_s"]
    assert report["final_val"] < math.log(75) + 0.5


def test_train_gpt_seed_reproduces_a_run_with_dropout():
    from transformer_lab.training.gpt import TrainRecipe, train_gpt

    ids = torch.randint(31, (400,), generator=torch.Generator().manual_seed(0))
    recipe = TrainRecipe(batch_size=4, steps=6, lr=1e-2, warmup=2)

    def run(seed, caller_seed):
        model = small_gpt(0, dropout=0.3)
        torch.manual_seed(caller_seed)  # the caller's random state must not matter, nor change
        before = torch.get_rng_state()
        losses = train_gpt(model, ids, recipe, Run(seed=seed)).losses
        assert torch.equal(torch.get_rng_state(), before)
        return losses, model.W_E.detach().clone()

    (a, w_a), (b, w_b), (c, _) = run(5, 1), run(5, 2), run(6, 1)
    assert a == b and torch.equal(w_a, w_b)
    assert a != c
