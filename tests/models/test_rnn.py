"""The recurrent encoder-decoder: shapes, masks, batched vs step-by-step, greedy decoding."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_lab.hooks import run_with_cache
from transformer_lab.models.rnn import Seq2Seq, Seq2SeqConfig
from transformer_lab.nn.scores import attend

V_SRC, V_TGT = 11, 13
ATTENTIONS = [None, "dot", "multiplicative", "additive"]
TOL = dict(atol=1e-5, rtol=1e-5)  # float32 on the CPU


def make(attention=None, cell="gru", seed=0, **kw):
    torch.manual_seed(seed)
    cfg = Seq2SeqConfig(V_SRC, V_TGT, d_embed=8, d_hidden=16, cell=cell, attention=attention, **kw)
    return Seq2Seq(cfg).eval()


def padded_batch(lengths, seed=0, vocab=V_SRC):
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, vocab, (len(lengths), max(lengths)), generator=gen)
    for i, n in enumerate(lengths):
        ids[i, n:] = 0
    return ids


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_forward_shapes_and_attention_pattern(attention, cell):
    model = make(attention, cell)
    src = padded_batch([5, 3, 1])
    tgt_in = torch.randint(1, V_TGT, (3, 4))
    logits, cache = (
        (model(src, tgt_in), {}) if attention is None else run_with_cache(model, src, tgt_in)
    )
    assert logits.shape == (3, 4, V_TGT)
    if attention is not None:
        weights = cache["pattern"]
        assert weights.shape == (3, 4, 5)
        torch.testing.assert_close(weights.sum(-1), torch.ones(3, 4))
        assert bool((weights[1, :, 3:] == 0).all()) and bool((weights[2, :, 1:] == 0).all())
        assert bool((weights[2, :, 0] == 1).all())  # one real token takes all the weight


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_final_state_ignores_padding(cell):
    """Each row's final state is its state after its last real token, as if run alone."""
    model = make("dot", cell)
    src = padded_batch([6, 2, 4], seed=1)
    memory = model.encode(src)
    for i, n in enumerate([6, 2, 4]):
        alone = model.encode(src[i : i + 1, :n])
        final, final_alone = (
            (memory.final[0], alone.final[0]) if cell == "lstm" else (memory.final, alone.final)
        )
        torch.testing.assert_close(final[:, i], final_alone[:, 0], **TOL)
        torch.testing.assert_close(memory.states[i, :n], alone.states[0], **TOL)
        assert bool((memory.states[i, n:] == 0).all())


@settings(max_examples=15, deadline=None)
@given(
    st.lists(st.integers(1, 7), min_size=1, max_size=4),
    st.sampled_from(ATTENTIONS),
    st.integers(0, 10_000),
)
def test_padding_does_not_change_outputs(lengths, attention, seed):
    """Adding extra padding columns to the source leaves the logits unchanged."""
    model = make(attention, seed=seed % 7)
    src = padded_batch(lengths, seed=seed)
    more = torch.cat([src, torch.zeros(len(lengths), 3, dtype=torch.long)], dim=1)
    tgt_in = torch.randint(
        1, V_TGT, (len(lengths), 5), generator=torch.Generator().manual_seed(seed)
    )
    with torch.no_grad():
        torch.testing.assert_close(model(src, tgt_in), model(more, tgt_in), **TOL)


@pytest.mark.parametrize("attention", ["dot", "multiplicative", "additive"])
def test_batched_scores_equal_the_score_module_step_by_step(attention):
    model = make(attention)
    s = torch.randn(2, 4, 16)
    keys = torch.randn(2, 5, 16)
    batched = model.all_scores(s, keys)
    for t in range(4):
        torch.testing.assert_close(batched[:, t], model.score(s[:, t], keys), **TOL)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_decode_steps_equal_teacher_forcing(attention, cell):
    """Feeding the target one step at a time gives the logits of the batched forward."""
    model = make(attention, cell)
    src = padded_batch([5, 2])
    tgt_in = torch.randint(1, V_TGT, (2, 6))
    with torch.no_grad():
        full = model(src, tgt_in)
        memory = model.encode(src)
        state, steps = memory.final, []
        for t in range(6):
            logits, state, weights = model.decode_step(tgt_in[:, t], state, memory)
            steps.append(logits)
            if attention is not None:
                ref = attend(
                    model.score,
                    state[0][0] if cell == "lstm" else state[0],
                    memory.states,
                    mask=memory.mask,
                )[1]
                torch.testing.assert_close(weights, ref, **TOL)
    torch.testing.assert_close(torch.stack(steps, 1), full, **TOL)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_greedy_decoding_agrees_with_teacher_forced_argmax(attention):
    """Fed its own greedy output, the teacher-forced argmax reproduces that output."""
    model = make(attention, seed=3, max_len=9)
    src = padded_batch([4, 7, 1], seed=2)
    ids, weights = model.greedy_decode(src)
    assert ids.shape[0] == 3 and ids.shape[1] <= 9
    bos = torch.full((3, 1), model.config.bos_id)
    with torch.no_grad():
        argmax = model(src, torch.cat([bos, ids[:, :-1]], dim=1)).argmax(-1)
    for i in range(3):
        row = ids[i].tolist()
        n = row.index(2) + 1 if 2 in row else len(row)  # up to and including <eos>
        assert argmax[i, :n].tolist() == row[:n]
        assert all(t == 0 for t in row[n:])  # padding after <eos>
        if attention is not None:
            assert bool((weights[i, n:] == 0).all())
            torch.testing.assert_close(weights[i, :n].sum(-1), torch.ones(n))
    assert (weights is None) == (attention is None)


def test_greedy_stops_at_eos_for_every_row():
    model = make("dot")
    with torch.no_grad():  # make <eos> always the most likely token
        model.W_U.bias.zero_()
        model.W_U.bias[2] = 100.0
    ids, weights = model.greedy_decode(padded_batch([3, 2]))
    assert ids.tolist() == [[2], [2]] and weights.shape == (2, 1, 3)


def test_gradients_reach_every_real_source_token():
    model = make("dot").train()
    src = padded_batch([5, 3])
    embedded = model.W_E_src(src).detach().requires_grad_()
    memory = model.encode(src, embedded=embedded)
    memory.final.sum().backward()
    norms = embedded.grad.norm(dim=-1)
    assert bool((norms[0] > 0).all()) and bool((norms[1, :3] > 0).all())
    assert bool((norms[1, 3:] == 0).all())


def test_bad_inputs():
    model = make("dot")
    src = padded_batch([3, 2])
    with pytest.raises(TypeError, match="int64"):
        model(src.float(), src)
    with pytest.raises(ValueError, match=r"\[batch, pos\]"):
        model(src[0], src)
    with pytest.raises(ValueError, match="vocabulary"):
        model(src + 20, torch.ones(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="batch 2 but tgt_in has batch 1"):
        model(src, torch.ones(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="at least one token"):
        model.encode(torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="right-padded"):
        model.encode(torch.tensor([[0, 5, 6]]))
    with pytest.raises(ValueError, match="embedded has shape"):
        model.encode(src, embedded=torch.zeros(2, 3, 5))
    with pytest.raises(ValueError, match="max_len"):
        model.greedy_decode(src, max_len=0)
    with pytest.raises(ValueError, match="attention"):
        Seq2SeqConfig(5, 5, attention="cosine")
    with pytest.raises(ValueError, match="cell"):
        Seq2SeqConfig(5, 5, cell="rnn")
    with pytest.raises(ValueError, match="d_hidden"):
        Seq2SeqConfig(5, 5, d_hidden=0)
    with pytest.raises(ValueError, match="eos_id"):
        Seq2SeqConfig(2, 5, eos_id=2)


# --- input feeding ----------------------------------------------------------------------------
SCORES = ["dot", "multiplicative", "additive"]


def make_fed(attention="dot", cell="gru", seed=0, **kw):
    return make(attention, cell, seed, input_feeding=True, **kw)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_input_feeding_widens_the_decoders_first_layer_by_the_attentional_vector(cell):
    plain, fed = make("dot", cell), make_fed("dot", cell)
    assert plain.decoder.weight_ih_l0.shape[1] == 8  # d_embed
    assert fed.decoder.weight_ih_l0.shape[1] == 8 + 16  # d_embed + d_hidden (o_{t-1})
    gates = 3 if cell == "gru" else 4
    extra = sum(p.numel() for p in fed.parameters()) - sum(p.numel() for p in plain.parameters())
    assert extra == gates * 16 * 16  # the gates' weights on o_{t-1}, nothing else


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("attention", SCORES)
def test_input_feeding_decode_steps_equal_teacher_forcing(attention, cell):
    """Step by step from initial_state, the logits and weights are the forward pass's."""
    model = make_fed(attention, cell)
    src = padded_batch([5, 2])
    tgt_in = torch.randint(1, V_TGT, (2, 6), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        full, cache = run_with_cache(model, src, tgt_in)
        memory = model.encode(src)
        state, steps, weights = model.initial_state(memory), [], []
        for t in range(6):
            logits, state, w = model.decode_step(tgt_in[:, t], state, memory)
            steps.append(logits)
            weights.append(w)
    assert torch.equal(torch.stack(steps, 1), full)
    assert torch.equal(torch.stack(weights, 1), cache["pattern"])
    assert bool((cache["pattern"][1, :, 2:] == 0).all())  # padding still gets no weight


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_input_feeding_step_by_hand(cell):
    """The decoder's input is [W_E y_{t-1}; o_{t-1}], with o_0 = 0, and the step returns
    o_t = tanh(W_c [a_t; s_t]) in its state for the next step."""
    model = make_fed("dot", cell)
    src = padded_batch([4, 3], seed=5)
    prev = torch.tensor([1, 1])
    with torch.no_grad():
        memory = model.encode(src)
        state = model.initial_state(memory)
        rnn_state, o_0 = state
        assert rnn_state is memory.final and torch.equal(o_0, torch.zeros(2, 16))
        for _ in range(2):  # o_0 = 0, then the o_1 the first step returned
            rnn_state, o_prev = state
            x = torch.cat([model.W_E_tgt(prev), o_prev], dim=-1)[:, None]
            out, rnn_next = model.decoder(x, rnn_state)
            s = out[:, 0]
            a, w = attend(model.score, s, memory.states, mask=memory.mask)
            o = torch.tanh(model.W_c(torch.cat([a, s], dim=-1)))
            logits, state, weights = model.decode_step(prev, state, memory)
            torch.testing.assert_close(logits, model.W_U(o), **TOL)
            torch.testing.assert_close(weights, w, **TOL)
            torch.testing.assert_close(state[1], o, **TOL)
            prev = logits.argmax(-1)
        # the fed vector matters: another o_prev, another step
        changed, _, _ = model.decode_step(prev, (state[0], state[1] + 1.0), memory)
        same, _, _ = model.decode_step(prev, state, memory)
        assert not torch.allclose(changed, same)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_input_feeding_greedy_agrees_with_teacher_forced_argmax(cell):
    model = make_fed("additive", cell, seed=3, max_len=9)
    src = padded_batch([4, 7, 1], seed=2)
    ids, weights = model.greedy_decode(src)
    assert torch.equal(model.greedy_ids(src), ids)
    bos = torch.full((3, 1), model.config.bos_id)
    with torch.no_grad():
        argmax = model(src, torch.cat([bos, ids[:, :-1]], dim=1)).argmax(-1)
    for i in range(3):
        row = ids[i].tolist()
        n = row.index(2) + 1 if 2 in row else len(row)
        assert argmax[i, :n].tolist() == row[:n]
        torch.testing.assert_close(weights[i, :n].sum(-1), torch.ones(n))


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_input_feeding_off_reproduces_the_batched_model_bit_for_bit(attention, cell):
    """With the option off (the default), the weights drawn from a seed, the logits and the
    gradients are those of the batched equations: one decoder pass over the whole target,
    the scores of all steps as one product, and logits = W_U tanh(W_c [a; s])."""
    default, off = make(attention, cell), make(attention, cell, input_feeding=False)
    assert default.config == off.config
    assert off.decoder.weight_ih_l0.shape[1] == off.config.d_embed
    for (name, p), (_, q) in zip(
        default.state_dict().items(), off.state_dict().items(), strict=True
    ):
        assert torch.equal(p, q), name
    src = padded_batch([5, 3, 1], seed=6)
    tgt_in = torch.randint(1, V_TGT, (3, 5), generator=torch.Generator().manual_seed(6))
    logits = off(src, tgt_in)
    memory = off.encode(src)
    s, _ = off.decoder(off.W_E_tgt(tgt_in), memory.final)  # all steps at once
    if attention is None:
        final_h = memory.final[0] if cell == "lstm" else memory.final
        context = final_h[0].unsqueeze(1).expand_as(s)
    else:
        weights = torch.softmax(
            off.all_scores(s, memory.states).masked_fill(~memory.mask[:, None], float("-inf")), -1
        )
        context = weights @ memory.states
    want = off.W_U(torch.tanh(off.W_c(torch.cat([context, s], dim=-1))))
    assert torch.equal(logits, want)
    assert off.initial_state(memory) is memory.final  # greedy decoding starts where it did


def test_input_feeding_bad_inputs():
    with pytest.raises(ValueError, match="input_feeding needs attention"):
        Seq2SeqConfig(5, 5, input_feeding=True)
    with pytest.raises(TypeError, match="input_feeding must be a bool, got str"):
        Seq2SeqConfig(5, 5, attention="dot", input_feeding="yes")
    model = make_fed("dot", "lstm")
    memory = model.encode(padded_batch([3, 2]))
    prev = torch.tensor([1, 1])
    with pytest.raises(ValueError, match="see initial_state"):
        model.decode_step(prev, memory.final, memory)  # the LSTM's (h, c) without o_prev
    h, c = memory.final
    with pytest.raises(
        ValueError, match=r"got prev \(2,\) and state \[\(1, 2, 16\), \(1, 2, 16\), \(2, 8\)\]"
    ):
        model.decode_step(prev, ((h, c), torch.zeros(2, 8)), memory)
