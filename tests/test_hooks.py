"""Capturing attention patterns and residual-stream states by name."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from transformer_lab.hooks import Hook, capture, run_with_cache
from transformer_lab.models import EncoderDecoder, TransformerConfig
from transformer_lab.nn.blocks import EncoderBlock
from transformer_lab.nn.masks import causal_mask
from transformer_lab.nn.multi_head import MultiHeadAttention

BATCH, SRC, TGT, D_MODEL, N_HEADS = 2, 7, 5, 16, 4


@pytest.fixture
def model_and_batch():
    torch.manual_seed(0)
    cfg = TransformerConfig(
        d_vocab_src=11,
        d_vocab_tgt=13,
        d_model=D_MODEL,
        n_heads=N_HEADS,
        d_mlp=32,
        n_layers_enc=2,
        n_layers_dec=2,
        pad_id=0,
    )
    src = torch.randint(1, 11, (BATCH, SRC))
    src[1, 4:] = 0
    tgt = torch.randint(1, 13, (BATCH, TGT))
    return EncoderDecoder(cfg).eval(), src, tgt


def test_names_and_shapes(model_and_batch):
    model, src, tgt = model_and_batch
    _, cache = run_with_cache(model, src, tgt)
    expected = {
        "embed_src": (BATCH, SRC, D_MODEL),
        "embed_tgt": (BATCH, TGT, D_MODEL),
        "memory": (BATCH, SRC, D_MODEL),
        "encoder.blocks.0.attn.pattern": (BATCH, N_HEADS, SRC, SRC),
        "encoder.blocks.1.attn.pattern": (BATCH, N_HEADS, SRC, SRC),
        "encoder.blocks.0.attn.q": (BATCH, N_HEADS, SRC, D_MODEL // N_HEADS),
        "encoder.blocks.0.attn.z": (BATCH, SRC, D_MODEL),
        "encoder.blocks.1.resid_pre": (BATCH, SRC, D_MODEL),
        "encoder.blocks.1.resid_mid": (BATCH, SRC, D_MODEL),
        "encoder.blocks.1.resid_post": (BATCH, SRC, D_MODEL),
        "encoder.blocks.0.mlp.hidden": (BATCH, SRC, 32),
        "decoder.blocks.0.attn.pattern": (BATCH, N_HEADS, TGT, TGT),
        "decoder.blocks.1.cross_attn.pattern": (BATCH, N_HEADS, TGT, SRC),
        "decoder.blocks.1.cross_out": (BATCH, TGT, D_MODEL),
        "decoder.blocks.1.resid_cross": (BATCH, TGT, D_MODEL),
        "decoder.blocks.1.attn_out": (BATCH, TGT, D_MODEL),
        "decoder.blocks.1.mlp_out": (BATCH, TGT, D_MODEL),
    }
    for name, shape in expected.items():
        assert name in cache, f"{name} missing; have {sorted(cache)[:10]}..."
        assert cache[name].shape == shape, name


def test_captured_values_are_the_real_ones(model_and_batch):
    model, src, tgt = model_and_batch
    _, cache = run_with_cache(model, src, tgt)
    # the residual stream is passed along: one block's output is the next one's input
    assert torch.equal(cache["encoder.blocks.0.resid_post"], cache["encoder.blocks.1.resid_pre"])
    assert torch.equal(cache["embed_src"], cache["encoder.blocks.0.resid_pre"])
    # decoder self-attention is causal, cross-attention ignores source padding
    pattern = cache["decoder.blocks.0.attn.pattern"]
    assert (pattern[..., ~causal_mask(TGT)] == 0).all()
    torch.testing.assert_close(pattern.sum(-1), torch.ones(BATCH, N_HEADS, TGT))
    assert (cache["decoder.blocks.0.cross_attn.pattern"][1, ..., 4:] == 0).all()
    assert not any(t.requires_grad for t in cache.values())  # stored detached


def test_capturing_does_not_change_outputs(model_and_batch):
    model, src, tgt = model_and_batch
    with torch.no_grad():
        plain = model(src, tgt)
        captured, cache = run_with_cache(model, src, tgt)
        only_resid, _ = run_with_cache(model, src, tgt, names="*resid*")
    # Capturing a pattern makes attention take the explicit path (softmax, then weights @ v)
    # instead of the fused kernel, which sums in another order: equal to float32 rounding.
    torch.testing.assert_close(captured, plain, atol=1e-6, rtol=1e-6)
    # Capturing anything else leaves the computation exactly as it was.
    assert torch.equal(only_resid, plain)
    assert len(cache) > 20


def test_pattern_captured_when_weights_are_not_needed():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 5, 8)
    with capture(mha, "pattern") as cache:
        out, weights = mha(x, mask=causal_mask(5), need_weights=False)
    assert weights is None  # the caller still gets what it asked for
    expected_out, expected_weights = mha(x, mask=causal_mask(5))
    torch.testing.assert_close(cache["pattern"], expected_weights)
    torch.testing.assert_close(out, expected_out)
    assert list(cache) == ["pattern"]


def test_hooks_inactive_after_the_block(model_and_batch):
    model, src, tgt = model_and_batch
    with capture(model, "*.pattern") as cache:
        model(src, tgt)
    n_captured = len(cache)
    assert n_captured == 2 + 2 * 2  # encoder self, decoder self and cross, per layer
    hooks = [m for m in model.modules() if isinstance(m, Hook)]
    assert hooks and not any(h.active for h in hooks)
    model(src, tgt)
    assert len(cache) == n_captured  # nothing more was stored


def test_hooks_inactive_after_an_exception(model_and_batch):
    model, src, tgt = model_and_batch
    with pytest.raises(ValueError), capture(model) as cache:
        model(src, tgt[:, :0])  # empty target: raises
    assert not any(m.active for m in model.modules() if isinstance(m, Hook))
    assert "memory" in cache  # the encoder ran before the error


def test_patterns_select_names(model_and_batch):
    model, src, tgt = model_and_batch
    _, cache = run_with_cache(model, src, tgt, names=["encoder.*.resid_post", "memory"])
    assert sorted(cache) == ["encoder.blocks.0.resid_post", "encoder.blocks.1.resid_post", "memory"]


def test_nested_captures(model_and_batch):
    model, src, tgt = model_and_batch
    with capture(model, "memory") as outer:
        with capture(model, "memory") as inner:
            model(src, tgt)
        model(src[:1], tgt[:1])  # the outer capture still works after the inner one
    assert inner["memory"].shape[0] == BATCH
    assert outer["memory"].shape[0] == 1


def test_blocks_names_for_a_decoder_only_stack():
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(EncoderBlock(8, 2, 16) for _ in range(2))

        def forward(self, x):
            for block in self.blocks:
                x = block(x, causal_mask(x.shape[1]))
            return x

    _, cache = run_with_cache(Stack(), torch.randn(1, 4, 8), names="blocks.*.attn.pattern")
    assert sorted(cache) == ["blocks.0.attn.pattern", "blocks.1.attn.pattern"]
    assert cache["blocks.1.attn.pattern"].shape == (1, 2, 4, 4)


def test_no_matching_hook(model_and_batch):
    model, _, _ = model_and_batch
    with (
        pytest.raises(
            ValueError,
            match=r"no hook matches \['\*\.attention'\]; available: \['encoder.blocks.0.attn.q'",
        ),
        capture(model, "*.attention"),
    ):
        pass
