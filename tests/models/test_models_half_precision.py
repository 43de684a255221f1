"""Every model of ``transformer_lab.models`` (small, random) in bfloat16 and float16 against
float32, forward and backward, with the weights cast and under CPU autocast; the losses
in float32 whatever the logits' dtype.

Error measure: per tensor (logits, then every parameter's gradient), the largest absolute
difference to float32 over the largest float32 magnitude. The float32 reference of cast
weights runs on the weights rounded to the low dtype (so that only the arithmetic
differs); under autocast it is the float32 model itself. Gradients that are zero in exact
arithmetic (below 1e-5 of the largest: a key bias) are checked for finiteness only.

Tolerances per dtype, forward and backward (``TOL``); the models chain more roundings
than one component, so they are twice the components' (tests/nn/test_half_precision.py):

- float16: 2e-2;  bfloat16: 1e-1.

The file is named after its folder: pytest imports test files by their base name, and
tests/nn/test_half_precision.py has the plain one.
"""

from __future__ import annotations

import copy
from contextlib import nullcontext

import pytest
import torch

from transformer_lab.models.bert import BertConfig, BertForPreTraining, BertModel
from transformer_lab.models.captioner import Captioner, CaptionerConfig
from transformer_lab.models.classifier import SequenceClassifier
from transformer_lab.models.gpt import GPT, GPTConfig
from transformer_lab.models.llama import Llama, LlamaConfig
from transformer_lab.models.rnn import Seq2Seq, Seq2SeqConfig
from transformer_lab.models.toy import TinyTransformer, ToyConfig
from transformer_lab.models.transformer import EncoderDecoder, TransformerConfig
from transformer_lab.training.losses import lm_loss, seq2seq_loss

TOL = {torch.float16: 2e-2, torch.bfloat16: 1e-1}
MODES = [
    pytest.param(torch.float16, "cast", id="float16"),
    pytest.param(torch.bfloat16, "cast", id="bfloat16"),
    pytest.param(torch.float16, "autocast", id="autocast-float16"),
    pytest.param(torch.bfloat16, "autocast", id="autocast-bfloat16"),
]

pytestmark = pytest.mark.usefixtures("one_thread")


def ids(*shape, high, seed=0, low=0):
    return torch.randint(low, high, shape, generator=torch.Generator().manual_seed(seed))


LLAMA = LlamaConfig(d_vocab=40, n_ctx=16, n_layers=2, n_heads=4, n_kv_heads=2, d_model=32, d_mlp=48)
BERT = BertConfig(d_vocab=40, d_model=32, n_heads=4, d_mlp=64, n_layers=2, max_pos=16, dropout=0.0)


def _left_padded(batch, pos):
    mask = torch.ones(batch, pos, dtype=torch.bool)
    mask[0, :3] = False
    return mask


def _gelu(model):
    """The toy model with GELU for ReLU: a pre-activation within rounding of 0 flips ReLU's
    derivative between 0 and 1, a difference of the function, not of the arithmetic (the
    ReLU layer itself is compared in tests/nn/test_half_precision.py)."""
    for block in model.blocks:
        block.mlp.activation = "gelu"
    return model


# name -> (model factory, inputs, forward returning logits). Random ids, fixed seeds.
MODELS = {
    "gpt": (
        lambda: GPT(GPTConfig(d_vocab=40, n_ctx=16, n_layers=2, n_heads=4, d_model=32)),
        lambda: [ids(2, 10, high=40)],
        lambda m, x: m(x),
    ),
    "gpt_unfused_norms": (
        lambda: GPT(
            GPTConfig(d_vocab=40, n_ctx=16, n_layers=2, n_heads=4, d_model=32, fused_norm=False)
        ),
        lambda: [ids(2, 10, high=40)],
        lambda m, x: m(x),
    ),
    "llama": (lambda: Llama(LLAMA), lambda: [ids(2, 10, high=40)], lambda m, x: m(x)),
    "llama_padded": (
        lambda: Llama(LLAMA),
        lambda: [ids(2, 10, high=40), _left_padded(2, 10)],
        lambda m, x, mask: m(x, attention_mask=mask)[mask],
    ),
    "bert": (
        lambda: BertModel(BERT),
        lambda: [ids(2, 9, high=40, low=1), _left_padded(2, 9).flip(1)],
        lambda m, x, mask: m(x, mask).last_hidden_state[mask],
    ),
    "bert_pretraining": (
        lambda: BertForPreTraining(BERT),
        lambda: [ids(2, 9, high=40, low=1)],
        lambda m, x: (m(x).mlm_logits, m(x).nsp_logits),
    ),
    "classifier": (
        lambda: SequenceClassifier(BertModel(BERT), 3, pooling="mean", dropout=0.0),
        lambda: [ids(2, 9, high=40, low=1)],
        lambda m, x: m(x),
    ),
    "transformer": (
        lambda: EncoderDecoder(
            TransformerConfig(40, 30, d_model=32, n_heads=4, d_mlp=64, activation="gelu", pad_id=0)
        ),
        lambda: [ids(2, 7, high=40, low=1), ids(2, 6, high=30, low=1, seed=1)],
        lambda m, src, tgt: m(src, tgt),
    ),
    "toy": (
        lambda: _gelu(TinyTransformer(ToyConfig(d_vocab=16, n_answers=2, n_layers=2, causal=True))),
        lambda: [ids(2, 12, high=16)],
        lambda m, x: m(x),
    ),
    "toy_post_ln_learned": (
        lambda: _gelu(
            TinyTransformer(ToyConfig(d_vocab=16, positional="learned", norm_first=False))
        ),
        lambda: [ids(2, 12, high=16)],
        lambda m, x: m(x),
    ),
    **{
        f"rnn_{cell}_{attention}": (
            lambda cell=cell, attention=attention: Seq2Seq(
                Seq2SeqConfig(20, 20, d_embed=8, d_hidden=16, cell=cell, attention=attention)
            ),
            lambda: [torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]]), ids(2, 5, high=20, low=3)],
            lambda m, src, tgt: m(src, tgt),
        )
        for cell, attention in [
            ("gru", None),
            ("gru", "dot"),
            ("lstm", "multiplicative"),
            ("gru", "additive"),
        ]
    },
    "captioner": (
        lambda: Captioner(CaptionerConfig(d_vocab=12, d_model=16, d_embed=8, channels=4)),
        lambda: [
            torch.rand(2, 3, 24, 24, generator=torch.Generator().manual_seed(0)),
            ids(2, 5, high=12, low=3),
        ],
        lambda m, images, tgt: m(images, tgt),
    ),  # fmt: skip
}


def run(name, dtype=torch.float32, mode="cast", rounded=False):
    """Outputs and parameter gradients (float32) of model ``name`` in ``dtype``, and the
    outputs' dtypes. ``rounded``: float32 weights rounded to ``dtype`` first."""
    make, make_inputs, forward = MODELS[name]
    torch.manual_seed(0)
    model = make().train()
    if rounded:
        model.to(dtype).float()
    elif mode == "cast" and dtype is not torch.float32:
        model.to(dtype)
    inputs = make_inputs()
    if mode == "cast" and not rounded:
        inputs = [x.to(dtype) if x.is_floating_point() else x for x in inputs]
    context = torch.autocast("cpu", dtype=dtype) if mode == "autocast" else nullcontext()
    with context:
        outs = forward(model, *inputs)
    outs = [outs] if isinstance(outs, torch.Tensor) else list(outs)
    g = torch.Generator().manual_seed(1)
    sum((o.float() * torch.randn(o.shape, generator=g)).sum() for o in outs).backward()
    grads = [p.grad.float() for p in model.parameters() if p.grad is not None]
    return [o.detach().float() for o in outs], grads, [o.dtype for o in outs]


def rel_errors(got, want):
    top = max(w.abs().max().item() for w in want)
    return [
        (g - w).abs().max().item() / w.abs().max().item()
        for g, w in zip(got, want, strict=True)
        if w.abs().max().item() > 1e-5 * top
    ]


@pytest.mark.parametrize("dtype, mode", MODES)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_matches_float32(name, dtype, mode):
    if "lstm" in name and mode == "autocast" and dtype is torch.float16:
        pytest.xfail("PyTorch's CPU LSTM (oneDNN) has no float16 kernel under autocast")
    want_out, want_grad, _ = run(name, dtype, mode, rounded=mode == "cast")
    got_out, got_grad, dtypes = run(name, dtype, mode)
    assert len(got_grad) == len(want_grad)
    for t in got_out + got_grad:
        assert torch.isfinite(t).all(), "non-finite output or gradient"
    if mode == "cast":
        assert all(d == dtype for d in dtypes), dtypes
    err_out, err_grad = rel_errors(got_out, want_out), rel_errors(got_grad, want_grad)
    assert max(err_out) <= TOL[dtype], f"outputs differ by {max(err_out):.3g}"
    assert max(err_grad) <= TOL[dtype], f"gradients differ by {max(err_grad):.3g}"


# ---- regression cases and the losses ------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_llama_gradients_are_finite_without_padding(dtype):
    torch.manual_seed(0)
    model = Llama(LLAMA).to(dtype)
    x = ids(2, 12, high=40)
    loss = lm_loss(model, (x[:, :-1], x[:, 1:]))
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())


def test_llama_with_a_large_residual_stream_matches_float32_in_float16():
    """An embedding row of size 1000 (squares of 1e6 overflow float16) as in SmolLM2,
    whose residual stream reaches about 25,000."""
    torch.manual_seed(0)
    model = Llama(LLAMA).eval()
    with torch.no_grad():
        model.W_E[3] *= 1000 / model.W_E[3].abs().max()
    x = torch.tensor([[3, 5, 7, 3, 9, 11]])
    want = model(x)
    got = copy.deepcopy(model).half()(x)
    assert torch.isfinite(got).all()
    assert torch.equal(got.argmax(-1), want.argmax(-1))
    atol = TOL[torch.float16] * want.abs().max().item()
    torch.testing.assert_close(got.float(), want, atol=atol, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("model_name", ["gpt", "llama"])
def test_cached_decoding_in_half_precision_equals_uncached(model_name, dtype):
    torch.manual_seed(0)
    model = MODELS[model_name][0]().eval().to(dtype)
    x = ids(1, 8, high=40)
    full = model(x)
    cache = model.new_cache()
    steps = [model(x[:, :5], kv_cache=cache)] + [
        model(x[:, i : i + 1], kv_cache=cache) for i in range(5, 8)
    ]
    torch.testing.assert_close(
        torch.cat(steps, 1).float(),
        full.float(),
        atol=TOL[dtype] * full.abs().max().item(),
        rtol=0,
    )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_losses_are_float32_and_match(dtype):
    torch.manual_seed(0)
    gpt = MODELS["gpt"][0]()
    x = ids(2, 11, high=40)
    batch = (x[:, :-1], x[:, 1:])
    want = lm_loss(copy.deepcopy(gpt).to(dtype).float(), batch)
    got = lm_loss(copy.deepcopy(gpt).to(dtype), batch)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, atol=0, rtol=TOL[dtype])
    with torch.autocast("cpu", dtype=dtype):
        auto = lm_loss(gpt, batch)
    assert auto.dtype == torch.float32
    torch.testing.assert_close(auto, lm_loss(gpt, batch), atol=0, rtol=TOL[dtype])

    class Numbers:  # a numbers.Batch: ids from 1, padding 0
        src, tgt_in, tgt_out, pad_id = x[:, :6] % 39 + 1, x[:, :5] % 29 + 1, x[:, 1:6] % 29 + 1, 0

    seq2seq = MODELS["transformer"][0]()
    want = seq2seq_loss(copy.deepcopy(seq2seq).to(dtype).float(), Numbers)
    got = seq2seq_loss(copy.deepcopy(seq2seq).to(dtype), Numbers)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, atol=0, rtol=TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_bert_pretraining_loss_is_float32(dtype):
    torch.manual_seed(0)
    model = BertForPreTraining(BERT).eval()
    x = ids(2, 9, high=40, low=1)
    labels = torch.full_like(x, -100)
    labels[:, 2] = x[:, 2]
    is_next = torch.tensor([0, 1])
    want = model.pretraining_loss(x, labels, is_next)
    got = copy.deepcopy(model).to(dtype).pretraining_loss(x, labels, is_next)
    assert got.loss.dtype == torch.float32
    torch.testing.assert_close(got.loss, want.loss, atol=0, rtol=TOL[dtype])
