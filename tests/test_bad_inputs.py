"""Bad input fails clearly: every public callable of the package, a table of bad inputs
and the error each must give (type and a fragment of the message), and a check that no
public callable is missing from the table, so that new API is covered from day one.

An entry is ``case(callable, thunk, error, fragment)``: calling ``thunk()`` must raise
``error`` (a ValueError or TypeError subclass) whose message contains ``fragment``.
Fixtures that cost time (a tiny model, a tokenizer) are built once, lazily.
"""

from __future__ import annotations

import functools

import pytest
import torch

from transformer_lab import blocks as B
from transformer_lab import decoding as D
from transformer_lab import generate as G
from transformer_lab import layers as L
from transformer_lab import positional as P
from transformer_lab import pretrained as PT
from transformer_lab import toy_tasks as T
from transformer_lab.models import gpt as GP
from transformer_lab.models import transformer as TR

CASES: list[tuple[object, str, object, type[Exception], str]] = []


def case(target, thunk, error, fragment, label=""):
    CASES.append((target, label or fragment, thunk, error, fragment))


# --- small fixtures, built on first use ---------------------------------------------------


@functools.cache
def gpt():
    torch.manual_seed(0)
    return GP.GPT(GP.GPTConfig(d_vocab=11, n_ctx=8, n_layers=1, n_heads=2, d_model=8)).eval()


@functools.cache
def enc_dec():
    torch.manual_seed(0)
    cfg = TR.TransformerConfig(d_vocab_src=9, d_vocab_tgt=7, d_model=8, n_heads=2, d_mlp=16)
    return TR.EncoderDecoder(cfg).eval()


@functools.cache
def toy():
    torch.manual_seed(0)
    return T.TinyTransformer(T.ToyConfig(d_vocab=6, d_model=8, n_heads=2, d_mlp=8))


@functools.cache
def wordpiece():
    texts = ["the cat sat on the mat", "a dog ran in the park"] * 20
    return PT.WordPieceTokenizer.train(texts, vocab_size=60, min_frequency=1)


def ids(*rows):
    return torch.tensor(rows)


def x3(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


# --- silent wrong results (issue 18), now errors -------------------------------------------

case(
    TR.EncoderDecoder,
    lambda: enc_dec().decode(ids([1, 2]), None),
    TypeError,
    "memory (the encoder output [batch, src_pos, d_model]) must be a torch.Tensor, got NoneType",
)
case(
    B.DecoderBlock,
    lambda: B.DecoderBlock(8, 2, 16)(x3(1, 3, 8), None),
    TypeError,
    "memory (the encoder output",
)
case(
    B.DecoderBlock,
    lambda: B.DecoderBlock(8, 2, 16)(x3(1, 3, 8), x3(3, 8)),
    ValueError,
    "memory must be [batch, src_pos, d_model], got shape (3, 8)",
)
case(
    GP.GPT,
    lambda: gpt()(ids([1, -1])),
    ValueError,
    "idx must be in [0, 11), got values from -1 to 1",
)
case(
    GP.GPT,
    lambda: gpt()(ids([1, 11])),
    ValueError,
    "idx must be in [0, 11), got values from 1 to 11",
)
case(
    G.generate,
    lambda: G.generate(gpt(), ids([3, -2]), 2),
    ValueError,
    "idx must be in [0, 11), got values from -2 to 3",
)
case(
    GP.train_gpt,
    lambda: GP.train_gpt(gpt(), torch.arange(-1, 40) % 12 - 1, GP.TrainRecipe(steps=1, warmup=0)),
    ValueError,
    "train_ids must be in [0, 11)",
)
case(
    T.TinyTransformer,
    lambda: toy()(ids([0, -1])),
    ValueError,
    "x must be in [0, 6), got values from -1 to 0",
)
case(
    PT.sentence_embeddings,
    lambda: PT.sentence_embeddings(None, None, "hello"),
    TypeError,
    "a single str would be read as one sentence per character",
)
for n in (0, 1, 2):
    case(
        PT.WordPieceTokenizer,
        lambda n=n: wordpiece()("the cat", max_length=n),
        ValueError,
        f"max_length must be an int >= 3 (room for [CLS] A [SEP] with at least one token "
        f"per text), got {n}",
    )
case(
    PT.WordPieceTokenizer,
    lambda: wordpiece()("the cat", "a dog", max_length=3),
    ValueError,
    "max_length must be an int >= 5 (room for a pair [CLS] A [SEP] B [SEP]",
)
case(
    PT.WordPieceTokenizer,
    lambda: PT.WordPieceTokenizer(wordpiece().backend, max_length=1),
    ValueError,
    "max_length must be an int >= 3",
)
case(
    P.sinusoidal_encoding,
    lambda: P.sinusoidal_encoding(4, 8, base=0),
    ValueError,
    "base must be a positive finite number, got 0",
)
case(
    P.sinusoidal_encoding,
    lambda: P.sinusoidal_encoding(4, 8, base=-10.0),
    ValueError,
    "base must be a positive finite number",
)
case(
    P.sinusoidal_encoding,
    lambda: P.sinusoidal_encoding(4, 8, base=float("nan")),
    ValueError,
    "base must be a positive finite number",
)
case(
    L.LayerNorm,
    lambda: L.LayerNorm(4, eps=0),
    ValueError,
    "eps must be a positive finite number, got 0",
)
case(
    L.LayerNorm,
    lambda: L.LayerNorm(4, eps=-1e-5),
    ValueError,
    "eps must be a positive finite number",
)
case(
    G.next_token_probs,
    lambda: G.next_token_probs(torch.randn(2, 5), temperature=float("nan")),
    ValueError,
    "temperature must be a finite number >= 0, got nan",
)
case(
    G.next_token_probs,
    lambda: G.next_token_probs(torch.randn(2, 5) * 10, temperature=1e-40),
    ValueError,
    "temperature=1e-40 is too small for these logits",
)
case(
    G.sample_next,
    lambda: G.sample_next(torch.randn(2, 5) * 10, temperature=1e-40),
    ValueError,
    "is too small for these logits",
)
case(
    D.sequence_score,
    lambda: D.sequence_score(
        enc_dec(), ids([1, 2]), torch.zeros(1, 0, dtype=torch.long), bos_id=1, eos_id=2
    ),
    ValueError,
    "outputs must be [batch, n] with n >= 1 tokens to score, got (1, 0)",
)
case(
    L.MultiHeadAttention,
    lambda: L.MultiHeadAttention(8, 2, dropout=1.5),
    ValueError,
    "dropout must be in [0, 1), got 1.5",
)
case(
    L.MultiHeadAttention,
    lambda: L.MultiHeadAttention(8, 2, dropout=-0.1),
    ValueError,
    "dropout must be in [0, 1)",
)


# --- the tests ------------------------------------------------------------------------------


def _name(target) -> str:
    return getattr(target, "__qualname__", repr(target))


@pytest.mark.parametrize(
    "target, label, thunk, error, fragment",
    CASES,
    ids=[f"{_name(c[0])}-{i}" for i, c in enumerate(CASES)],
)
def test_bad_input_gives_a_clear_error(target, label, thunk, error, fragment):
    assert issubclass(error, (ValueError, TypeError))
    with pytest.raises(error) as info:
        thunk()
    assert fragment in str(info.value), f"message {str(info.value)!r} lacks {fragment!r}"
