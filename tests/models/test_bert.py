"""The BERT encoder and its pretraining heads.

Parity: a small randomly initialised ``transformers.BertForPreTraining`` copied into ours
gives the same hidden states, attentions, masked-LM and next-sentence logits (float32,
CPU, atol 1e-5; real positions only where there is padding).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_lab import capture
from transformer_lab.device import num_threads
from transformer_lab.models.bert import IGNORE_INDEX, BertConfig, BertForPreTraining, BertModel
from transformer_lab.nn.blocks import EncoderBlock
from transformer_lab.pretrained.minilm import load_hf_bert_weights

ATOL = 1e-5
CFG = BertConfig(d_vocab=50, d_model=32, n_heads=4, d_mlp=64, n_layers=2, max_pos=16, dropout=0.0)


def _model(seed=0, cls=BertModel, cfg=CFG):
    torch.manual_seed(seed)
    return cls(cfg).eval()


def _ids(batch=2, pos=7, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(5, CFG.d_vocab, (batch, pos), generator=g)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(d_vocab=0), "d_vocab"),
        (dict(d_vocab=10, d_model=30, n_heads=4), "d_model=30"),
        (dict(d_vocab=10, n_layers=0), "n_layers"),
        (dict(d_vocab=10, dropout=1.0), "dropout"),
        (dict(d_vocab=10, eps=0.0), "eps"),
        (dict(d_vocab=10, pad_id=10), "pad_id"),
        (dict(d_vocab=10, max_pos=-1), "max_pos"),
        (dict(d_vocab=10, n_heads=True), "n_heads"),
    ],
)
def test_config_validation_names_the_field(kwargs, field):
    with pytest.raises((TypeError, ValueError), match=field):  # a wrong type: TypeError
        BertConfig(**kwargs)


def test_config_is_frozen():
    with pytest.raises(AttributeError):
        CFG.d_model = 64  # type: ignore[misc]
    assert CFG.d_head == 8


def test_output_shapes_and_attention_rows():
    model = _model()
    ids = _ids()
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3])
    out = model(ids, mask)
    assert out.last_hidden_state.shape == (2, 7, 32)
    assert out.pooler_output.shape == (2, 32)
    assert len(out.hidden_states) == 3
    assert len(out.attentions) == 2
    for a in out.attentions:
        assert a.shape == (2, 4, 7, 7)
        torch.testing.assert_close(a.sum(-1), torch.ones(2, 4, 7))
        assert a[1, :, :, 4:].abs().max() == 0  # padding keys get no attention
    assert model(ids, output_attentions=False).attentions is None


def test_block_is_the_post_ln_gelu_encoder_block():
    model = _model()
    block = model.blocks[0]
    assert isinstance(block, EncoderBlock)
    assert not block.norm_first and block.mlp.activation == "gelu" and block.ln1.eps == 1e-12
    x = torch.randn(2, 5, 32)
    plain = EncoderBlock(32, 4, 64, norm_first=False, activation="gelu", eps=1e-12)
    plain.load_state_dict(block.state_dict())
    out, weights = block(x, return_weights=True)
    torch.testing.assert_close(out, plain(x))
    assert weights.shape == (2, 4, 5, 5)
    assert block(x)[1] is None


def test_bidirectional_later_tokens_change_earlier_outputs():
    model = _model()
    ids = _ids(batch=1)
    changed = ids.clone()
    changed[0, -1] = (ids[0, -1] + 1) % CFG.d_vocab
    a = model(ids).last_hidden_state
    b = model(changed).last_hidden_state
    assert (a[0, 0] - b[0, 0]).abs().max() > 1e-4  # no causal mask: position 0 sees the last


@settings(max_examples=20, deadline=None)
@given(length=st.integers(1, 10), extra=st.integers(1, 5), pad_token=st.integers(0, 49))
def test_padding_never_changes_real_positions(length, extra, pad_token):
    model = _model()
    ids = _ids(batch=1, pos=length)
    padded = torch.cat([ids, torch.full((1, extra), pad_token)], dim=1)
    mask = torch.cat([torch.ones(1, length), torch.zeros(1, extra)], dim=1).long()
    a = model(ids).last_hidden_state
    b = model(padded, mask).last_hidden_state[:, :length]
    torch.testing.assert_close(a, b, atol=ATOL, rtol=0)


def test_segments_and_positions_matter():
    model = _model()
    ids = _ids(batch=1)
    seg = torch.zeros_like(ids)
    seg[0, 4:] = 1
    a = model(ids).last_hidden_state
    assert (a - model(ids, segment_ids=seg).last_hidden_state).abs().max() > 1e-4
    swapped = ids[:, [1, 0, *range(2, ids.shape[1])]]
    b = model(swapped).last_hidden_state
    assert (a[0, 0] - b[0, 1]).abs().max() > 1e-4  # same token, new position, new vector


def test_bad_inputs_are_explained():
    model = _model()
    ids = _ids()
    with pytest.raises(TypeError, match="int64"):
        model(ids.float())
    with pytest.raises(ValueError, match="attention_mask must be"):
        model(ids, torch.ones(2, 3))
    with pytest.raises(ValueError, match="1 for real tokens"):
        model(ids, torch.full((2, 7), 0.5))
    with pytest.raises(ValueError, match="max_pos=16"):
        model(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match=r"\[0, 50\)"):
        model(torch.full((1, 3), 50))
    with pytest.raises(ValueError, match="segment_ids"):
        model(ids, segment_ids=torch.full_like(ids, 2))


def test_attentions_equal_the_hooked_patterns():
    model = _model()
    ids = _ids()
    with capture(model, "*.attn.pattern") as cache:
        out = model(ids)
    for i, a in enumerate(out.attentions):
        torch.testing.assert_close(cache[f"blocks.{i}.attn.pattern"], a)


def test_mlm_decoder_is_tied_to_token_embedding():
    model = _model(cls=BertForPreTraining)
    h = torch.randn(3, 32)
    scores = model.mlm_scores(h)
    assert scores.shape == (3, 50)
    with torch.no_grad():
        model.bert.embeddings.W_E.weight[7, 0] += 1.0  # a row-wide shift would cancel
    assert (model.mlm_scores(h)[:, 7] - scores[:, 7]).abs().max() > 1e-3


def test_pretraining_loss_equals_full_cross_entropy():
    model = _model(cls=BertForPreTraining)
    ids = _ids(batch=3)
    labels = torch.full_like(ids, IGNORE_INDEX)
    labels[0, 2], labels[1, 5], labels[2, 0] = 11, 12, 13
    is_next = torch.tensor([1, 0, 1])
    parts = model.pretraining_loss(ids, labels, is_next)
    out = model(ids)
    mlm = F.cross_entropy(out.mlm_logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE_INDEX)
    nsp = F.cross_entropy(out.nsp_logits, is_next)
    torch.testing.assert_close(parts.mlm_loss, mlm)
    torch.testing.assert_close(parts.nsp_loss, nsp)
    torch.testing.assert_close(parts.loss, mlm + nsp)
    chosen = labels != IGNORE_INDEX
    acc = (out.mlm_logits[chosen].argmax(-1) == labels[chosen]).float().mean()
    torch.testing.assert_close(parts.mlm_accuracy, acc)
    assert model.pretraining_loss(ids, labels).nsp_loss == 0
    with pytest.raises(ValueError, match="no position is masked"):
        model.pretraining_loss(ids, torch.full_like(ids, IGNORE_INDEX))


def test_a_few_steps_fit_a_tiny_batch():
    model = _model(cls=BertForPreTraining).train()
    ids = _ids(batch=4)
    labels = torch.full_like(ids, IGNORE_INDEX)
    labels[:, 3] = ids[:, 3]
    masked = ids.clone()
    masked[:, 3] = 4  # a [MASK]-like id
    is_next = torch.tensor([1, 0, 1, 0])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    first = model.pretraining_loss(masked, labels, is_next).loss.item()
    with num_threads(1):  # a model this small only loses time to thread hand-offs
        for _ in range(40):
            loss = model.pretraining_loss(masked, labels, is_next).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert loss.item() < 0.2 * first


def test_matches_hf_bert_for_pretraining():
    transformers = pytest.importorskip("transformers")
    hf_cfg = transformers.BertConfig(
        vocab_size=50,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=16,
        attn_implementation="eager",
    )
    torch.manual_seed(0)
    hf = transformers.BertForPreTraining(hf_cfg).eval()
    cfg = BertConfig(d_vocab=50, d_model=32, n_heads=4, d_mlp=64, n_layers=2, max_pos=16)
    ours = load_hf_bert_weights(BertForPreTraining(cfg), hf.state_dict()).eval()
    ids = _ids(batch=2, pos=9)
    mask = torch.tensor([[1] * 9, [1] * 6 + [0] * 3])
    seg = torch.tensor([[0] * 5 + [1] * 4, [0] * 3 + [1] * 3 + [0] * 3])
    with torch.no_grad():
        theirs = hf(
            ids,
            attention_mask=mask,
            token_type_ids=seg,
            output_attentions=True,
            output_hidden_states=True,
        )
        mine = ours(ids, mask, seg, output_attentions=True)
    real = mask.bool()
    torch.testing.assert_close(
        mine.mlm_logits[real], theirs.prediction_logits[real], atol=ATOL, rtol=0
    )
    torch.testing.assert_close(mine.nsp_logits, theirs.seq_relationship_logits, atol=ATOL, rtol=0)
    for a, b in zip(mine.bert.hidden_states, theirs.hidden_states, strict=True):
        torch.testing.assert_close(a[real], b[real], atol=ATOL, rtol=0)
    for a, b in zip(mine.bert.attentions, theirs.attentions, strict=True):
        rows = real[:, None, :, None].expand_as(a)
        torch.testing.assert_close(a[rows], b[rows], atol=ATOL, rtol=0)


def test_weight_loading_reports_problems():
    model = BertModel(CFG)
    state = {k: v for k, v in _hf_like_state(model).items() if "pooler" not in k}
    with pytest.raises(KeyError, match="lacks"):
        load_hf_bert_weights(model, state)
    state = _hf_like_state(model)
    state["encoder.layer.9.extra.weight"] = torch.zeros(1)
    with pytest.raises(ValueError, match="no place"):
        load_hf_bert_weights(model, state)
    state = _hf_like_state(model)
    state["pooler.dense.bias"] = torch.zeros(3)
    with pytest.raises(ValueError, match="shape"):
        load_hf_bert_weights(model, state)


def _hf_like_state(model):
    """A Hugging Face-named state dict built from our own model (round trip)."""
    from transformer_lab.pretrained.minilm import _hf_names

    params = dict(model.named_parameters())
    return {
        hf: (params[o].T if t else params[o]).detach().clone()
        for o, (hf, t) in _hf_names(model.config, heads=False).items()
    }


def test_weight_round_trip():
    a, b = _model(seed=0), _model(seed=1)
    load_hf_bert_weights(b, _hf_like_state(a))
    ids = _ids()
    torch.testing.assert_close(a(ids).last_hidden_state, b(ids).last_hidden_state)
