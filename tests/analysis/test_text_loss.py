"""text_loss: every token scored once, from the context the windows promise, and the units.

- a uniform model pays ln(d_vocab) nats for every token, whatever the windows; nats per
  character are nats per token times tokens per character;
- with ``stride=1`` each target is predicted from exactly the ``window`` tokens before it
  (all of them near the start): equal to scoring the tokens one by one;
- a window that holds the whole text gives the same loss for every stride: one pass;
- without ``start_id`` the first token is not scored and its characters are not counted.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from torch import nn

from transformer_lab.analysis.text_loss import TextLoss, text_loss
from transformer_lab.data.tokenizers import CharTokenizer
from transformer_lab.models.gpt import GPT, GPTConfig

pytestmark = pytest.mark.usefixtures("one_thread")

ALPHABET = "ab c\nd"
CHARS = CharTokenizer(ALPHABET)
N_CTX = 24


class Uniform(nn.Module):
    """Equal logits for every token: ln(d_vocab) nats per token."""

    def __init__(self, d_vocab: int):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(d_vocab))

    def forward(self, idx):  # [batch, pos] -> [batch, pos, d_vocab]
        return self.bias.expand(*idx.shape, len(self.bias))


class Pairs:
    """A tokenizer of two characters per token (one at the end of an odd text)."""

    def encode(self, text):
        return [ALPHABET.index(text[i]) * 7 + (ALPHABET.index(text[i + 1]) if i + 1 < len(text)
                else 6) for i in range(0, len(text), 2)]  # fmt: skip

    def decode(self, ids):
        return "".join(ALPHABET[i // 7] + (ALPHABET[i % 7] if i % 7 < 6 else "") for i in ids)


@pytest.fixture(scope="module")
def gpt():
    torch.manual_seed(0)
    cfg = GPTConfig(d_vocab=len(ALPHABET), n_ctx=N_CTX, n_layers=2, n_heads=2, d_model=16)
    return GPT(cfg).eval()


texts = st.text(alphabet=ALPHABET, min_size=2, max_size=60)


@settings(max_examples=40, deadline=None)
@given(texts, st.integers(1, 12), st.integers(1, 12), st.booleans(), st.booleans())
def test_a_uniform_model_pays_ln_vocab_per_token(text, window, stride, pairs, start):
    stride = min(stride, window)
    tok, vocab = (Pairs(), 42) if pairs else (CHARS, len(ALPHABET))
    ids = tok.encode(text)
    assume(start or len(ids) >= 2)  # without a start token, one token leaves none to score
    got = text_loss(Uniform(vocab), tok, text, window, stride, 0 if start else None)
    first = 0 if start else len(tok.decode(ids[:1]))
    assert got.tokens == len(ids) - (not start) and got.characters == len(text) - first
    assert got.nats_per_token == pytest.approx(math.log(vocab), rel=1e-5)
    assert got.nats_per_char == pytest.approx(got.nats_per_token / got.chars_per_token, rel=1e-12)
    assert got.nats_per_char == pytest.approx(got.nats_per_token * got.tokens / len(text[first:]))


def _one_by_one(model, seq, window):
    """Each target ``t`` predicted from the ``window`` tokens before it, by its own pass."""
    out = 0.0
    for t in range(1, len(seq)):
        context = seq[max(0, t - window) : t]
        logits = model(torch.tensor([context]))[0, -1]
        out += float(F.cross_entropy(logits, torch.tensor(seq[t])))
    return out


@settings(max_examples=15, deadline=None)
@given(st.text(alphabet=ALPHABET, min_size=2, max_size=40), st.integers(1, N_CTX))
def test_stride_one_predicts_each_token_from_the_window_before_it(gpt, text, window):
    with torch.no_grad():
        want = _one_by_one(gpt, [0, *CHARS.encode(text)], window)
    got = text_loss(gpt, CHARS, text, window, 1, start_id=0)
    assert got.nats == pytest.approx(want, rel=1e-5, abs=1e-5)


@settings(max_examples=15, deadline=None)
@given(st.text(alphabet=ALPHABET, min_size=2, max_size=N_CTX), st.integers(1, N_CTX))
def test_a_window_that_holds_the_text_scores_it_in_one_pass(gpt, text, stride):
    ids = CHARS.encode(text)
    with torch.no_grad():
        logits = gpt(torch.tensor([ids[:-1]]))[0]
    want = float(F.cross_entropy(logits, torch.tensor(ids[1:]), reduction="sum"))
    got = text_loss(gpt, CHARS, text, window=N_CTX, stride=stride)
    assert got.nats == pytest.approx(want, rel=1e-5, abs=1e-5)
    assert (got.tokens, got.characters) == (len(ids) - 1, len(text) - 1)


def test_a_worked_example_and_the_record():
    got = text_loss(Uniform(6), CHARS, "abcd", window=2, stride=2, start_id=3)
    assert isinstance(got, TextLoss) and got.nats == pytest.approx(4 * math.log(6))
    assert (got.tokens, got.characters, got.window, got.stride) == (4, 4, 2, 2)
    assert got.chars_per_token == 1.0


def test_the_model_is_put_back_in_training_mode(gpt):
    gpt.train()
    try:
        text_loss(gpt, CHARS, "ab cd", window=4, stride=2)
        assert gpt.training
    finally:
        gpt.eval()
