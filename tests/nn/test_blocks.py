"""Encoder and decoder blocks against ``nn.TransformerEncoderLayer`` and
``nn.TransformerDecoderLayer`` after copying weights (post-LN and norm_first, relu and
gelu, with masks), in eval mode; properties; the residual-stream hooks.

Tolerance: float32 on the CPU, ``atol=1e-5, rtol=1e-5``.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from transformer_lab.hooks import run_with_cache
from transformer_lab.nn.blocks import DecoderBlock, EncoderBlock
from transformer_lab.nn.masks import causal_mask, combine_masks, from_torch_mask, to_torch_mask

F32 = dict(atol=1e-5, rtol=1e-5)
PROPERTY = settings(max_examples=20, deadline=None, database=None)
D_MODEL, N_HEADS, D_MLP = 16, 4, 24

VARIANTS = [(norm_first, act) for norm_first in (False, True) for act in ("relu", "gelu")]
variant_ids = [f"{'pre' if nf else 'post'}-LN-{act}" for nf, act in VARIANTS]


def randomize_norms(layer: nn.Module) -> None:
    """Give the layer norms non-trivial gains and biases, so copying them is tested."""
    with torch.no_grad():
        for module in layer.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0, 0.1)


def lengths_to_torch_padding(lengths, pos):
    return torch.arange(pos)[None, :] >= torch.tensor(lengths)[:, None]  # True = ignore


@pytest.mark.parametrize(("norm_first", "activation"), VARIANTS, ids=variant_ids)
@pytest.mark.parametrize("masking", ["none", "padding", "causal", "causal+padding"])
def test_encoder_block_matches_torch(norm_first, activation, masking):
    torch.manual_seed(0)
    theirs = nn.TransformerEncoderLayer(
        D_MODEL,
        N_HEADS,
        D_MLP,
        dropout=0.1,
        activation=activation,
        batch_first=True,
        norm_first=norm_first,
    )
    randomize_norms(theirs)
    theirs.eval()
    ours = EncoderBlock.from_torch(theirs).eval()
    assert ours.norm_first == norm_first and ours.mlp.activation == activation
    x = torch.randn(3, 7, D_MODEL)
    padding = lengths_to_torch_padding([7, 4, 1], 7)
    kwargs, mask = {}, None
    if "padding" in masking:
        kwargs["src_key_padding_mask"] = padding
        mask = from_torch_mask(padding, key_padding=True)
    if masking.startswith("causal"):
        kwargs["src_mask"] = to_torch_mask(causal_mask(7))
        mask = combine_masks(mask, causal_mask(7))
    with torch.no_grad():
        expected = theirs(x, **kwargs)
        out = ours(x, mask)
    torch.testing.assert_close(out, expected, **F32)


@pytest.mark.parametrize(("norm_first", "activation"), VARIANTS, ids=variant_ids)
def test_decoder_block_matches_torch(norm_first, activation):
    torch.manual_seed(1)
    theirs = nn.TransformerDecoderLayer(
        D_MODEL,
        N_HEADS,
        D_MLP,
        dropout=0.1,
        activation=activation,
        batch_first=True,
        norm_first=norm_first,
    )
    randomize_norms(theirs)
    theirs.eval()
    ours = DecoderBlock.from_torch(theirs).eval()
    x, memory = torch.randn(3, 6, D_MODEL), torch.randn(3, 9, D_MODEL)
    tgt_padding = lengths_to_torch_padding([6, 5, 2], 6)
    memory_padding = lengths_to_torch_padding([9, 3, 1], 9)
    with torch.no_grad():
        expected = theirs(
            x,
            memory,
            tgt_mask=to_torch_mask(causal_mask(6)),
            tgt_key_padding_mask=tgt_padding,
            memory_key_padding_mask=memory_padding,
        )
        self_mask = combine_masks(causal_mask(6), from_torch_mask(tgt_padding, key_padding=True))
        out = ours(x, memory, self_mask, from_torch_mask(memory_padding, key_padding=True))
    torch.testing.assert_close(out, expected, **F32)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("shape", [(1, 1), (1, 4), (2, 3)], ids=str)
def test_encoder_block_small_shapes_match_torch(shape, norm_first):
    torch.manual_seed(4)
    theirs = nn.TransformerEncoderLayer(
        D_MODEL, N_HEADS, D_MLP, batch_first=True, norm_first=norm_first
    )
    randomize_norms(theirs)
    theirs.eval()
    ours = EncoderBlock.from_torch(theirs).eval()
    x = torch.randn(*shape, D_MODEL)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), **F32)


def test_decoder_block_without_masks_matches_torch():
    torch.manual_seed(2)
    theirs = nn.TransformerDecoderLayer(D_MODEL, N_HEADS, D_MLP, batch_first=True).eval()
    ours = DecoderBlock.from_torch(theirs).eval()
    x, memory = torch.randn(1, 1, D_MODEL), torch.randn(1, 5, D_MODEL)
    with torch.no_grad():
        torch.testing.assert_close(ours(x, memory), theirs(x, memory), **F32)


def test_sequence_first_torch_layer():
    torch.manual_seed(3)
    theirs = nn.TransformerEncoderLayer(D_MODEL, N_HEADS, D_MLP, batch_first=False).eval()
    ours = EncoderBlock.from_torch(theirs).eval()
    x = torch.randn(2, 5, D_MODEL)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x.transpose(0, 1)).transpose(0, 1), **F32)


def test_from_torch_activation_modules():
    theirs = nn.TransformerEncoderLayer(8, 2, 16, activation=nn.GELU(approximate="tanh"))
    assert EncoderBlock.from_torch(theirs).mlp.activation == "gelu_tanh"
    theirs = nn.TransformerEncoderLayer(8, 2, 16, activation=nn.ReLU())
    assert EncoderBlock.from_torch(theirs).mlp.activation == "relu"
    theirs = nn.TransformerEncoderLayer(8, 2, 16, activation=torch.tanh)
    with pytest.raises(ValueError, match=r"unsupported activation .*expected relu or gelu"):
        EncoderBlock.from_torch(theirs)


def test_post_ln_and_pre_ln_placement():
    """Post-LN normalises the residual stream after each addition; pre-LN leaves the
    stream un-normalised and normalises only the sublayer inputs."""
    torch.manual_seed(0)
    x = torch.randn(2, 5, D_MODEL) * 10 + 3
    post, cache_post = run_with_cache(EncoderBlock(D_MODEL, N_HEADS, D_MLP), x)
    block = EncoderBlock(D_MODEL, N_HEADS, D_MLP, norm_first=True)
    pre, cache_pre = run_with_cache(block, x)
    torch.testing.assert_close(post.mean(-1), torch.zeros(2, 5), atol=1e-4, rtol=0)
    torch.testing.assert_close(
        cache_post["resid_mid"].std(-1, unbiased=False), torch.ones(2, 5), atol=1e-3, rtol=0
    )
    torch.testing.assert_close(cache_pre["resid_mid"], x + cache_pre["attn_out"], **F32)
    torch.testing.assert_close(pre, cache_pre["resid_mid"] + cache_pre["mlp_out"], **F32)
    torch.testing.assert_close(cache_pre["attn_out"], block.attn(block.ln1(x))[0], **F32)


def test_dropout_only_in_training():
    torch.manual_seed(0)
    block = EncoderBlock(D_MODEL, N_HEADS, D_MLP, dropout=0.5)
    x = torch.randn(2, 5, D_MODEL)
    assert not torch.allclose(block(x), block(x))
    block.eval()
    assert torch.equal(block(x), block(x))


# --- properties -----------------------------------------------------------------------------

dims = st.tuples(st.integers(1, 3), st.integers(1, 7), st.integers(0, 2**16), st.booleans())


@PROPERTY
@given(dims)
def test_encoder_block_causal_outputs_ignore_future_tokens(d):
    batch, pos, seed, norm_first = d
    torch.manual_seed(0)
    block = EncoderBlock(8, 2, 16, norm_first=norm_first).eval()
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, pos, 8, generator=g)
    cut = seed % pos
    x2 = x.clone()
    x2[:, cut + 1 :] = torch.randn(batch, pos - cut - 1, 8, generator=g) * 3
    with torch.no_grad():
        out, out2 = block(x, causal_mask(pos)), block(x2, causal_mask(pos))
    torch.testing.assert_close(out[:, : cut + 1], out2[:, : cut + 1], **F32)


@PROPERTY
@given(dims)
def test_encoder_block_permutation_equivariance(d):
    batch, pos, seed, norm_first = d
    torch.manual_seed(0)
    block = EncoderBlock(8, 2, 16, norm_first=norm_first).eval()
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, pos, 8, generator=g)
    perm = torch.randperm(pos, generator=g)
    with torch.no_grad():
        torch.testing.assert_close(block(x[:, perm]), block(x)[:, perm], **F32)


# --- bad input ------------------------------------------------------------------------------


def test_block_bad_input():
    block = EncoderBlock(8, 2, 16)
    with pytest.raises(ValueError, match=r"d_model=8 is not divisible by n_heads=3"):
        EncoderBlock(8, 3, 16)
    with pytest.raises(ValueError, match=r"query has 6 features but the layer expects 8"):
        block(torch.randn(2, 4, 6))
    with pytest.raises(
        ValueError, match=r"mask shape \(3, 3\) does not broadcast to \(2, 2, 4, 4\)"
    ):
        block(torch.randn(2, 4, 8), causal_mask(3))
    decoder = DecoderBlock(8, 2, 16)
    with pytest.raises(ValueError, match=r"key has 5 features but the layer expects 8"):
        decoder(torch.randn(2, 4, 8), torch.randn(2, 3, 5))
