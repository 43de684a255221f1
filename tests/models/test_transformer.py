"""The encoder-decoder Transformer: configuration checks, embeddings, automatic masks,
and the whole model against ``nn.Transformer`` after copying its weights.

Tolerance: float32 on the CPU, ``atol=1e-5, rtol=1e-5`` on logits.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import pytest
import torch
from torch import nn

from transformer_lab.hooks import run_with_cache
from transformer_lab.models import EncoderDecoder, TransformerConfig
from transformer_lab.nn.masks import causal_mask, to_torch_mask
from transformer_lab.nn.positions import sinusoidal_encoding

F32 = dict(atol=1e-5, rtol=1e-5)
PAD = 0


def small_config(**overrides) -> TransformerConfig:
    fields = dict(
        d_vocab_src=11,
        d_vocab_tgt=13,
        d_model=16,
        n_heads=4,
        d_mlp=32,
        n_layers_enc=2,
        n_layers_dec=3,
        max_pos=32,
        pad_id=PAD,
    )
    return TransformerConfig(**{**fields, **overrides})


def padded_batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(1, 11, (3, 7), generator=g)
    src[1, 5:] = PAD
    src[2, 2:] = PAD
    tgt = torch.randint(1, 13, (3, 6), generator=g)
    tgt[2, 4:] = PAD
    return src, tgt


# --- configuration --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "error", "message"),
    [
        (dict(d_model=30, n_heads=4), ValueError, r"d_model=30 is not divisible by n_heads=4"),
        (dict(d_model=0), ValueError, r"d_model must be a positive int, got 0"),
        (dict(d_vocab_src=-3), ValueError, r"d_vocab_src must be a positive int, got -3"),
        (dict(n_heads=2.0), TypeError, r"n_heads must be an int, got float"),
        (dict(max_pos=True), TypeError, r"max_pos must be an int, got bool"),
        (dict(n_layers_enc=-1), ValueError, r"n_layers_enc must be a non-negative int, got -1"),
        (dict(dropout=1.0), ValueError, r"dropout must be in \[0, 1\), got 1.0"),
        (dict(dropout="0.1"), ValueError, r"dropout must be in \[0, 1\), got '0.1'"),
        (
            dict(positional="rotary"),
            ValueError,
            r"positional must be one of \('sinusoidal', 'learned'\), got 'rotary'",
        ),
        (
            dict(activation="tanh"),
            ValueError,
            r"activation must be one of \('relu', 'gelu'\), got 'tanh'",
        ),
        (dict(pad_id=11), ValueError, r"pad_id=11 is not a token of both vocabularies \(0..10\)"),
        (dict(pad_id=-1), ValueError, r"pad_id=-1 is not a token of both vocabularies \(0..10\)"),
        (dict(pad_id=True), ValueError, r"pad_id=True is not a token of both vocabularies"),
        (dict(norm_first=1), TypeError, r"norm_first must be a bool, got int"),
        (dict(final_norm="yes"), TypeError, r"final_norm must be None or a bool, got str"),
        (dict(tie_embeddings=None), TypeError, r"tie_embeddings must be a bool, got NoneType"),
        (dict(scale_embeddings=0), TypeError, r"scale_embeddings must be a bool, got int"),
        (dict(share_embeddings="no"), TypeError, r"share_embeddings must be a bool, got str"),
        (
            dict(share_embeddings=True),
            ValueError,
            r"share_embeddings needs one joint vocabulary, but d_vocab_src=11 and d_vocab_tgt=13",
        ),
    ],
)
def test_config_validation(overrides, error, message):
    with pytest.raises(error, match=message):
        small_config(**overrides)


def test_config_is_frozen_and_derives_sizes():
    cfg = small_config()
    assert cfg.d_head == 4
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.d_model = 32
    assert not cfg.use_final_norm  # post-LN: no final norm by default
    assert small_config(norm_first=True).use_final_norm
    assert small_config(final_norm=True).use_final_norm
    assert small_config(n_layers_enc=0).n_layers_enc == 0


# --- the model ------------------------------------------------------------------------------


def test_forward_shapes_and_embedding_scale():
    torch.manual_seed(0)
    model = EncoderDecoder(small_config()).eval()
    src, tgt = padded_batch()
    logits, cache = run_with_cache(model, src, tgt, names=["embed_src", "embed_tgt", "memory"])
    assert logits.shape == (3, 6, 13)
    assert cache["memory"].shape == (3, 7, 16)
    # embeddings are scaled by sqrt(d_model) and the sinusoidal table is added
    expected = model.W_E_src(src) * math.sqrt(16) + sinusoidal_encoding(7, 16)
    torch.testing.assert_close(cache["embed_src"], expected, **F32)
    expected = model.W_E_tgt(tgt) * 4.0 + sinusoidal_encoding(6, 16)
    torch.testing.assert_close(cache["embed_tgt"], expected, **F32)


def test_learned_positions_and_tied_embeddings():
    model = EncoderDecoder(small_config(positional="learned", tie_embeddings=True))
    assert model.W_U.weight is model.W_E_tgt.weight
    assert model.pos_src.W_pos.shape == (32, 16)
    src, tgt = padded_batch()
    assert model(src, tgt).shape == (3, 6, 13)


def test_embedding_scale_can_be_switched_off():
    torch.manual_seed(0)
    model = EncoderDecoder(small_config(scale_embeddings=False)).eval()
    src, tgt = padded_batch()
    _, cache = run_with_cache(model, src, tgt, names=["embed_src", "embed_tgt"])
    torch.testing.assert_close(cache["embed_src"], model.W_E_src(src) + sinusoidal_encoding(7, 16))
    torch.testing.assert_close(cache["embed_tgt"], model.W_E_tgt(tgt) + sinusoidal_encoding(6, 16))


def test_shared_embeddings_are_one_table_for_source_target_and_read_out():
    cfg = small_config(d_vocab_tgt=11, share_embeddings=True, tie_embeddings=True)
    model = EncoderDecoder(cfg)
    assert model.W_E_tgt.weight is model.W_E_src.weight is model.W_U.weight
    shared = sum(p.numel() for p in model.parameters())
    apart = sum(p.numel() for p in EncoderDecoder(small_config(d_vocab_tgt=11)).parameters())
    assert apart - shared == 2 * 11 * 16  # two of the three tables are gone
    src, tgt = padded_batch()
    model(src, tgt % 11).sum().backward()  # gradients of both sides land on the one table
    assert model.W_E_src.weight.grad is model.W_E_tgt.weight.grad


def test_dropout_reaches_embeddings_attention_weights_and_residual_branches():
    torch.manual_seed(0)
    model = EncoderDecoder(small_config(dropout=0.5, norm_first=True))
    src, tgt = padded_batch()
    block = "decoder.blocks.0"
    names = ["embed_src", f"{block}.resid_pre", f"{block}.attn_out", f"{block}.resid_mid",
             f"{block}.cross_attn.pattern"]  # fmt: skip
    model.train()
    _, c = run_with_cache(model, src, tgt, names=names)
    embedded = model.W_E_src(src) * 4.0 + sinusoidal_encoding(7, 16)
    kept = c["embed_src"] != 0
    assert 0.3 < kept.float().mean() < 0.7  # about half of the embedding entries dropped
    torch.testing.assert_close(c["embed_src"][kept], 2 * embedded[kept])  # the rest scaled up
    branch = c[f"{block}.resid_mid"] - c[f"{block}.resid_pre"]  # what the sublayer added
    dropped = (branch == 0) & (c[f"{block}.attn_out"] != 0)
    assert 0.3 < dropped.float().mean() < 0.7
    rows = c[f"{block}.cross_attn.pattern"].sum(-1)  # weights dropped and rescaled by 2
    assert not torch.allclose(rows, torch.ones_like(rows))
    model.eval()
    _, c = run_with_cache(model, src, tgt, names=names)
    torch.testing.assert_close(c["embed_src"], embedded)
    rows = c[f"{block}.cross_attn.pattern"].sum(-1)
    torch.testing.assert_close(rows, torch.ones_like(rows))


def test_padding_in_the_source_is_ignored():
    torch.manual_seed(0)
    model = EncoderDecoder(small_config()).eval()
    src, tgt = padded_batch()
    with torch.no_grad():
        logits = model(src, tgt)
        # a source padded further, with a different length, gives the same logits
        longer = torch.cat([src, torch.full((3, 4), PAD)], dim=1)
        torch.testing.assert_close(model(longer, tgt), logits, **F32)


def test_decoder_is_causal():
    torch.manual_seed(0)
    model = EncoderDecoder(small_config(pad_id=None)).eval()
    src, tgt = padded_batch()
    tgt2 = tgt.clone()
    tgt2[:, 3:] = (tgt2[:, 3:] + 5) % 13
    with torch.no_grad():
        torch.testing.assert_close(model(src, tgt)[:, :3], model(src, tgt2)[:, :3], **F32)
        assert not torch.allclose(model(src, tgt)[:, 3:], model(src, tgt2)[:, 3:])


def test_encode_decode_equals_forward():
    torch.manual_seed(0)
    model = EncoderDecoder(small_config()).eval()
    src, tgt = padded_batch()
    with torch.no_grad():
        memory = model.encode(src)
        logits = model.decode(tgt, memory, model.source_mask(src))
        torch.testing.assert_close(logits, model(src, tgt), **F32)


# --- parity with nn.Transformer --------------------------------------------------------------


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_matches_nn_transformer(norm_first):
    """Our logits equal W_U(nn.Transformer(our source embedding, our target embedding))
    with the same masks, converted to PyTorch's convention."""
    torch.manual_seed(0)
    cfg = small_config(norm_first=norm_first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "use_nested_tensor is False because norm_first"
        theirs = nn.Transformer(
            16,
            4,
            cfg.n_layers_enc,
            cfg.n_layers_dec,
            32,
            dropout=0.1,
            batch_first=True,
            norm_first=norm_first,
        )
    with torch.no_grad():  # non-trivial final norms, so that copying them is tested
        for norm in (theirs.encoder.norm, theirs.decoder.norm):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.normal_(0, 0.1)
    theirs.eval()
    model = EncoderDecoder(cfg).load_torch_transformer(theirs).eval()
    src, tgt = padded_batch()
    with torch.no_grad():
        logits, cache = run_with_cache(model, src, tgt, names=["embed_src", "embed_tgt", "memory"])
        src_padding, tgt_padding = src == PAD, tgt == PAD  # torch: True = ignore
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nested-tensor prototype warnings
            out = theirs(
                cache["embed_src"],
                cache["embed_tgt"],
                tgt_mask=to_torch_mask(causal_mask(6)),
                src_key_padding_mask=src_padding,
                tgt_key_padding_mask=tgt_padding,
                memory_key_padding_mask=src_padding,
            )
            memory = theirs.encoder(cache["embed_src"], src_key_padding_mask=src_padding)
    torch.testing.assert_close(logits, model.W_U(out), **F32)
    # In eval mode the post-LN encoder takes PyTorch's nested-tensor fast path, which
    # returns zeros at padded source positions, where ours computes (unused) values:
    # cross-attention never reads them, so the logits agree everywhere, but the memory
    # is compared at real source positions only.
    real = ~src_padding
    torch.testing.assert_close(cache["memory"][real], memory[real], **F32)


def test_load_torch_transformer_bad_shapes():
    model = EncoderDecoder(small_config())
    with pytest.raises(ValueError, match=r"layer counts differ: torch has 1\+1, ours 2\+3"):
        model.load_torch_transformer(nn.Transformer(16, 4, 1, 1, 32, batch_first=True))
    with pytest.raises(ValueError, match=r"torch model has d_model=8 but ours has 16"):
        model.load_torch_transformer(nn.Transformer(8, 4, 2, 3, 32, batch_first=True))


# --- bad input ------------------------------------------------------------------------------


def test_bad_token_ids():
    model = EncoderDecoder(small_config())
    src, tgt = padded_batch()
    with pytest.raises(TypeError, match=r"src must be an integer tensor .*got torch.float32"):
        model(src.float(), tgt)
    with pytest.raises(
        ValueError, match=r"token ids must be in \[0, 11\), got values from 0 to 11"
    ):
        model(torch.cat([src, torch.full((3, 1), 11)], 1), tgt)
    with pytest.raises(ValueError, match=r"tgt must be \[batch, pos\] .*got shape \(3, 0\)"):
        model(src, tgt[:, :0])
    with pytest.raises(ValueError, match=r"src must be \[batch, pos\] .*got shape \(7,\)"):
        model(src[0], tgt)
    with pytest.raises(TypeError, match=r"src must be an integer tensor of token ids, got list"):
        model.encode(src.tolist())
