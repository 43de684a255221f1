"""Greedy and beam-search decoding: beam size 1 is greedy, a wide beam finds the best
sequence found by exhaustive search, <eos> stops a row, length normalisation changes the
winner when it should, and bad input is refused with a message."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from torch import nn

from transformer_lab.device import num_threads
from transformer_lab.generation.search import (
    beam_hypotheses,
    beam_search,
    greedy_decode,
    sequence_score,
)
from transformer_lab.models import EncoderDecoder, TransformerConfig

PAD, BOS, EOS = 0, 1, 2


@pytest.fixture(autouse=True)
def _one_thread():
    """These models are tiny: one thread is faster, and much faster on a busy machine."""
    with num_threads(1):
        yield


def small_model(seed: int, d_vocab_tgt: int = 6, pad_id: int | None = PAD) -> EncoderDecoder:
    torch.manual_seed(seed)
    cfg = TransformerConfig(
        d_vocab_src=7,
        d_vocab_tgt=d_vocab_tgt,
        d_model=16,
        n_heads=2,
        d_mlp=32,
        n_layers_enc=1,
        n_layers_dec=2,
        pad_id=pad_id,
    )
    model = EncoderDecoder(cfg).eval()
    with torch.no_grad():  # sharper distributions than at init, so outputs differ by source
        model.W_U.weight.mul_(6.0)
    return model


def sources() -> torch.Tensor:
    return torch.tensor([[3, 4, 5, 6], [6, 5, PAD, PAD], [4, PAD, PAD, PAD]])


class MarkovModel(nn.Module):
    """A stand-in decoder whose next-token distribution depends only on the last token:
    ``probs[last]``. The source is ignored; ``decode_calls`` counts decoder runs."""

    def __init__(self, probs):
        super().__init__()
        self.register_buffer("log_table", torch.tensor(probs).log())
        self.decode_calls = 0

    def encode(self, src, src_mask=None):
        return torch.zeros(src.shape[0], src.shape[1], 1)

    def decode(self, tgt, memory, src_mask=None):
        self.decode_calls += 1
        return self.log_table[tgt]  # [batch, tgt_pos, d_vocab]


@pytest.mark.parametrize("seed", range(4))
def test_beam_size_one_equals_greedy(seed):
    model = small_model(seed)
    greedy = greedy_decode(model, sources(), bos_id=BOS, eos_id=EOS, max_len=7)
    beam = beam_search(model, sources(), bos_id=BOS, eos_id=EOS, beam_size=1, max_len=7)
    assert torch.equal(greedy, beam)


def test_a_batch_is_searched_as_each_row_alone():
    model = small_model(2)
    src = sources()
    together = beam_hypotheses(model, src, bos_id=BOS, eos_id=EOS, beam_size=3, max_len=6)
    for b in range(src.shape[0]):
        alone = beam_hypotheses(
            model, src[b : b + 1], bos_id=BOS, eos_id=EOS, beam_size=3, max_len=6
        )[0]
        assert [h.tokens for h in alone] == [h.tokens for h in together[b]]
        assert [h.score for h in alone] == pytest.approx([h.score for h in together[b]], abs=1e-5)


def test_greedy_matches_teacher_forced_argmax():
    model = small_model(1)
    src = sources()
    out = greedy_decode(model, src, bos_id=BOS, eos_id=EOS, max_len=6)
    tgt_in = torch.cat([torch.full((3, 1), BOS), out[:, :-1]], dim=1)
    with torch.no_grad():
        argmax = model(src, tgt_in).argmax(-1)
    for row, (o, a) in enumerate(zip(out, argmax, strict=True)):
        n = int((o == EOS).nonzero()[0]) + 1 if (o == EOS).any() else len(o)
        assert torch.equal(o[:n], a[:n]), row
        assert torch.all(o[n:] == PAD), row


def all_outputs(d_vocab: int, max_len: int):
    """Every output of at most max_len tokens: finished ones end at their only <eos>,
    unfinished ones have max_len tokens and no <eos>."""
    plain = [t for t in range(d_vocab) if t != EOS]
    for length in range(1, max_len + 1):
        for prefix in itertools.product(plain, repeat=length - 1):
            yield (*prefix, EOS)
    yield from itertools.product(plain, repeat=max_len)


@pytest.mark.parametrize("length_penalty", [0.0, 1.0])
@pytest.mark.parametrize("seed", [0, 3])
def test_wide_beam_finds_the_exhaustive_best(seed, length_penalty):
    model = small_model(seed, d_vocab_tgt=4, pad_id=None)
    src = torch.tensor([[3, 5, 4]])
    max_len = 3
    candidates = list(all_outputs(4, max_len))
    best_score, best = -math.inf, None
    for cand in candidates:
        score = sequence_score(
            model, src, torch.tensor([cand]), bos_id=BOS, eos_id=EOS, length_penalty=length_penalty
        ).item()
        if score > best_score:
            best_score, best = score, cand
    tokens, scores = beam_search(
        model,
        src,
        bos_id=BOS,
        eos_id=EOS,
        beam_size=len(candidates),
        max_len=max_len,
        length_penalty=length_penalty,
        pad_id=PAD,
        return_scores=True,
    )
    assert tuple(tokens[0].tolist()) == best
    assert scores[0].item() == pytest.approx(best_score, abs=1e-5)


def test_hypothesis_scores_agree_with_teacher_forcing():
    model = small_model(2)
    src = sources()
    nbest = beam_hypotheses(
        model, src, bos_id=BOS, eos_id=EOS, beam_size=3, max_len=6, length_penalty=0.6
    )
    for b, hyps in enumerate(nbest):
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        for h in hyps[:3]:
            rescored = sequence_score(
                model,
                src[b : b + 1],
                torch.tensor([h.tokens]),
                bos_id=BOS,
                eos_id=EOS,
                length_penalty=0.6,
            )
            assert rescored.item() == pytest.approx(h.score, abs=1e-4)
            assert h.finished == (h.tokens[-1] == EOS)


def test_beam_is_at_least_as_good_as_greedy_here():
    model = small_model(0)
    src = sources()
    greedy = greedy_decode(model, src, bos_id=BOS, eos_id=EOS, max_len=6)
    beam, beam_scores = beam_search(
        model, src, bos_id=BOS, eos_id=EOS, beam_size=4, max_len=6, return_scores=True
    )
    greedy_scores = sequence_score(model, src, greedy, bos_id=BOS, eos_id=EOS)
    assert torch.all(beam_scores >= greedy_scores - 1e-5)


def test_eos_stops_each_row_and_the_loop():
    # from <bos>: token 3 is likely; after 3: <eos> is likely; after <eos>: anything
    probs = [[0.1, 0.1, 0.1, 0.7]] * 2 + [[0.25] * 4] + [[0.05, 0.05, 0.85, 0.05]]
    model = MarkovModel(probs)
    src = torch.tensor([[5, 6], [7, 8]])
    out = greedy_decode(model, src, bos_id=BOS, eos_id=EOS, max_len=10, pad_id=PAD)
    assert out.tolist() == [[3, EOS], [3, EOS]]
    assert model.decode_calls == 2  # stopped as soon as every row had <eos>
    model.decode_calls = 0
    out = beam_search(model, src, bos_id=BOS, eos_id=EOS, beam_size=2, max_len=10)
    assert out.tolist() == [[3, EOS], [3, EOS]]
    assert model.decode_calls < 2 * 10  # stopped long before max_len


def test_rows_finishing_early_are_padded():
    model = small_model(0)
    out = greedy_decode(model, sources(), bos_id=BOS, eos_id=EOS, max_len=8, pad_id=PAD)
    for row in out:
        if (row == EOS).any():
            first = int((row == EOS).nonzero()[0])
            assert torch.all(row[first + 1 :] == PAD)


def test_length_penalty_changes_the_winner():
    # <bos> -> <eos> (0.5) or a=3 (0.45); a -> <eos> (0.9)
    probs = [[0.025, 0.025, 0.5, 0.45]] * 2 + [[0.25] * 4] + [[0.025, 0.025, 0.9, 0.05]]
    model = MarkovModel(probs)
    src = torch.tensor([[5]])
    short = beam_search(model, src, bos_id=BOS, eos_id=EOS, beam_size=2, max_len=4)
    normalised = beam_search(
        model, src, bos_id=BOS, eos_id=EOS, beam_size=2, max_len=4, length_penalty=1.0
    )
    assert short.tolist() == [[EOS]]  # log 0.5 > log 0.45 + log 0.9
    assert normalised.tolist() == [[3, EOS]]  # (log 0.45 + log 0.9) / 2 > log 0.5


def test_unfinished_hypotheses_count_at_max_len():
    probs = [[0.05, 0.05, 0.05, 0.85]] * 4  # <eos> is never likely
    model = MarkovModel(probs)
    hyps = beam_hypotheses(
        model, torch.tensor([[4]]), bos_id=BOS, eos_id=EOS, beam_size=2, max_len=3
    )[0]
    assert hyps[0].tokens == (3, 3, 3) and not hyps[0].finished


def test_training_mode_is_restored():
    model = small_model(0).train()
    greedy_decode(model, sources(), bos_id=BOS, eos_id=EOS, max_len=3)
    beam_search(model, sources(), bos_id=BOS, eos_id=EOS, max_len=3)
    assert model.training


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"src": torch.randn(2, 3)}, TypeError, "integer token ids"),
        ({"src": torch.tensor([1, 2])}, ValueError, "batch, src_pos"),
        ({"max_len": 0}, ValueError, "max_len"),
        ({"beam_size": 0}, ValueError, "beam_size"),
        ({"length_penalty": -1.0}, ValueError, "length_penalty"),
    ],
)
def test_bad_input(kwargs, error, message):
    args = {"src": sources(), "bos_id": BOS, "eos_id": EOS, **kwargs}
    with pytest.raises(error, match=message):
        beam_search(small_model(0), **args)
