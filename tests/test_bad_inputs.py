"""Bad input fails clearly: every public callable of the package, a table of bad inputs
and the error each must give (type and a fragment of the message), and a check that no
public callable is missing from the table, so that new API is covered from day one.

An entry is ``case(callable, thunk, error, fragment)``: calling ``thunk()`` must raise
``error`` (a ValueError or TypeError, or a KeyError/IndexError subclass that is also a
ValueError) whose message contains ``fragment``. Fixtures that cost time (tiny models, a
tokenizer) are built once, on first use. ``transformer_lab.exercises`` is covered by its
own tests.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

import numpy as np
import pytest
import torch
from torch import nn

import transformer_lab
from transformer_lab import hooks as H
from transformer_lab import viz as V
from transformer_lab.analysis import head_patterns as ANALYSIS_HEAD_PATTERNS
from transformer_lab.analysis import sequential_depth as PA
from transformer_lab.analysis import word_vectors as E
from transformer_lab.data import cache as CACHE
from transformer_lab.data import genres as GR
from transformer_lab.data import mlm as MLM
from transformer_lab.data import number_words as NW
from transformer_lab.data import numbers as NU
from transformer_lab.data import scenes as SC
from transformer_lab.data import shakespeare as SH
from transformer_lab.data import tokenizers as TK
from transformer_lab.data import toy as DATA_TOY
from transformer_lab.generation import sampling as G
from transformer_lab.generation import search as D
from transformer_lab.models import bert as BE
from transformer_lab.models import captioner as CAP
from transformer_lab.models import gpt as GP
from transformer_lab.models import llama as LL
from transformer_lab.models import rnn as R
from transformer_lab.models import toy as MODELS_TOY
from transformer_lab.models import transformer as TR
from transformer_lab.nn import attention as A
from transformer_lab.nn import attention as GQ
from transformer_lab.nn import blocks as B
from transformer_lab.nn import feed_forward as SW
from transformer_lab.nn import kv_cache as KV
from transformer_lab.nn import masks as M
from transformer_lab.nn import multi_head as L
from transformer_lab.nn import norms as RN
from transformer_lab.nn import positions as P
from transformer_lab.nn import positions as RO
from transformer_lab.nn import scores as NN_SCORES
from transformer_lab.pretrained import minilm as PT
from transformer_lab.pretrained import smollm2 as GL
from transformer_lab.pretrained import tiny_bert as PRETRAINED_TINY_BERT
from transformer_lab.pretrained import tokenizers as TOK
from transformer_lab.training import checkpoint as CK
from transformer_lab.training import distributed as DI
from transformer_lab.training import finetune as FT
from transformer_lab.training import gpt as TRAINING_GPT
from transformer_lab.training import loop as TRN
from transformer_lab.training import losses as TRAINING_LOSSES
from transformer_lab.training import progress as PRG
from transformer_lab.training import schedules as SCH
from transformer_lab.training import tiny_bert as TBT
from transformer_lab.training import toy as T
from transformer_lab.training import train_gpt as TG
from transformer_lab.viz import architecture as AR
from transformer_lab.viz import bertviz as BV
from transformer_lab.viz import display as DSP
from transformer_lab.viz import overlay as VIZ_OVERLAY
from transformer_lab.viz import timeline as TL
from transformer_lab.viz import toy_attention as W
from transformer_lab.viz import word_map as WM

DV = importlib.import_module("transformer_lab.device")  # the package exports device()

CASES: list[tuple[object, str, object, type[Exception], str]] = []


def case(target, thunk, error, fragment):
    CASES.append((target, fragment, thunk, error, fragment))


# Plain records that the package fills in and returns (no input of the reader's to check).
RECORDS = {
    BE.BertOutput,
    BE.PreTrainingOutput,
    BE.PreTrainingLoss,
    R.Memory,
    D.Hypothesis,
    NU.Pair,
    GR.Passage,
    GR.GenreTask,
    DI.DistInfo,
    TBT.ShakespeareCorpus,
}
# A predicate over autograd graph nodes: any object is a fair question (answer False).
PREDICATES = {PA.is_matrix_product}
# Questions about the process itself, with no input to get wrong.
NO_INPUT = {DI.launched, DI.info, DI.teardown, CK.rng_state}


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
def bert():
    torch.manual_seed(0)
    cfg = BE.BertConfig(d_vocab=20, d_model=8, n_heads=2, d_mlp=16, n_layers=1, max_pos=16)
    return BE.BertForPreTraining(cfg).eval()


@functools.cache
def s2s():
    torch.manual_seed(0)
    return R.Seq2Seq(R.Seq2SeqConfig(d_vocab_src=9, d_vocab_tgt=7, d_embed=4, d_hidden=8)).eval()


@functools.cache
def toy():
    torch.manual_seed(0)
    return MODELS_TOY.TinyTransformer(
        MODELS_TOY.ToyConfig(d_vocab=6, d_model=8, n_heads=2, d_mlp=8)
    )


@functools.cache
def wordpiece():
    texts = ["the cat sat on the mat", "a dog ran in the park"] * 20
    return TOK.WordPieceTokenizer.train(texts, vocab_size=60, min_frequency=1)


def ids(*rows):
    return torch.tensor(rows)


def f(*shape):
    return torch.randn(*shape)


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
    TRAINING_GPT.train_gpt,
    lambda: TRAINING_GPT.train_gpt(
        gpt(), torch.arange(-1, 40) % 12 - 1, TRAINING_GPT.TrainRecipe(steps=1, warmup=0)
    ),
    ValueError,
    "train_ids must be in [0, 11)",
)
case(
    MODELS_TOY.TinyTransformer,
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
        TOK.WordPieceTokenizer,
        lambda n=n: wordpiece()("the cat", max_length=n),
        ValueError,
        f"max_length must be an int >= 3 (room for [CLS] A [SEP] with at least one token "
        f"per text), got {n}",
    )
case(
    TOK.WordPieceTokenizer,
    lambda: wordpiece()("the cat", "a dog", max_length=3),
    ValueError,
    "max_length must be an int >= 5 (room for a pair [CLS] A [SEP] B [SEP]",
)
case(
    TOK.WordPieceTokenizer,
    lambda: TOK.WordPieceTokenizer(wordpiece().backend, max_length=1),
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
    RN.LayerNorm,
    lambda: RN.LayerNorm(4, eps=0),
    ValueError,
    "eps must be a positive finite number, got 0",
)
case(
    RN.LayerNorm,
    lambda: RN.LayerNorm(4, eps=-1e-5),
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


# --- obscure errors made clear, one or more per public callable -----------------------------

case(
    A.scaled_dot_product_attention,
    lambda: A.scaled_dot_product_attention(f(2, 3, 4), f(2, 3, 5), f(2, 3, 4)),
    ValueError,
    "key has d_head=5 but query has d_head=4",
)
case(
    A.scaled_dot_product_attention,
    lambda: A.scaled_dot_product_attention(
        f(2, 3, 4), f(2, 3, 4), f(2, 3, 4), torch.ones(4, 7, dtype=torch.bool)
    ),
    ValueError,
    "mask shape (4, 7) does not broadcast to (2, 3, 3)",
)
case(
    A.attention_weights,
    lambda: A.attention_weights(f(3, 4), torch.ones(3, 5, dtype=torch.bool)),
    ValueError,
    "mask shape (3, 5) does not broadcast to (3, 4)",
)
case(
    A.attention_weights,
    lambda: A.attention_weights([[1.0]]),
    TypeError,
    "scores must be a floating-point tensor, got list",
)
case(
    A.empty_rows,
    lambda: A.empty_rows(torch.ones(3, 3)),
    TypeError,
    "mask must be a bool tensor (True = may attend), got torch.float32",
)
case(
    A.check_qkv,
    lambda: A.check_qkv(None, f(2, 3), f(2, 3)),
    TypeError,
    "query must be a torch.Tensor, got NoneType",
)
case(
    A.check_qkv,
    lambda: A.check_qkv(f(2, 3), f(2, 3).double(), f(2, 3)),
    TypeError,
    "query, key and value dtypes differ: torch.float32, torch.float64,",
)
case(
    A.broadcast_shape,
    lambda: A.broadcast_shape((2, 3), None),
    TypeError,
    "shapes must be tuples of ints, got NoneType",
)
case(
    NN_SCORES.DotScore,
    lambda: NN_SCORES.DotScore()(f(2, 4), f(2, 5, 3)),
    ValueError,
    "dot score needs equal sizes: query has 4, keys have 3",
)
case(
    NN_SCORES.MultiplicativeScore,
    lambda: NN_SCORES.MultiplicativeScore(4, 3)(f(2, 5), f(2, 5, 3)),
    ValueError,
    "query has 5 features but the score expects 4",
)
case(
    NN_SCORES.MultiplicativeScore,
    lambda: NN_SCORES.MultiplicativeScore(0, 3),
    ValueError,
    "d_query must be a positive int, got 0",
)
case(
    NN_SCORES.AdditiveScore,
    lambda: NN_SCORES.AdditiveScore(4, 3)(f(2, 4), f(2, 5, 6)),
    ValueError,
    "keys have 6 features but the score expects 3",
)
case(
    NN_SCORES.AdditiveScore,
    lambda: NN_SCORES.AdditiveScore(4, -3),
    ValueError,
    "d_key must be a positive int, got -3",
)
case(
    NN_SCORES.make_score,
    lambda: NN_SCORES.make_score("cosine", 4, 4),
    ValueError,
    "score kind must be one of ['additive', 'dot', 'multiplicative'], got",
)
case(
    NN_SCORES.make_score,
    lambda: NN_SCORES.make_score("dot", 0, 4),
    ValueError,
    "d_query must be a positive int, got 0",
)
case(
    NN_SCORES.attend,
    lambda: NN_SCORES.attend(NN_SCORES.DotScore(), f(2, 4), f(2, 5, 4), f(2, 6, 4)),
    ValueError,
    "values must be [batch, key_pos, d_value] with [batch, key_pos]=(2,",
)
case(
    NN_SCORES.attend,
    lambda: NN_SCORES.attend(
        NN_SCORES.DotScore(), f(2, 4), f(2, 5, 4), mask=torch.ones(2, 6, dtype=torch.bool)
    ),
    ValueError,
    "mask shape (2, 6) does not broadcast to (2, 5)",
)
case(M.causal_mask, lambda: M.causal_mask(0), ValueError, "n_query must be positive, got 0")
case(M.causal_mask, lambda: M.causal_mask(3.0), TypeError, "n_query must be an int, got float")
case(
    M.padding_mask, lambda: M.padding_mask([2, -1]), ValueError, "lengths must be >= 0, got [2, -1]"
)
case(
    M.padding_mask,
    lambda: M.padding_mask([2, 3], max_len=2),
    ValueError,
    "max_len=2 is shorter than the longest sequence (3)",
)
case(
    M.padding_mask_from_ids,
    lambda: M.padding_mask_from_ids(ids(1, 2), 0),
    ValueError,
    "ids must be [batch, pos], got shape (2,)",
)
case(
    M.padding_mask_from_ids,
    lambda: M.padding_mask_from_ids([[1, 2]], 0),
    TypeError,
    "ids must be a torch.Tensor of token ids, got list",
)
case(
    M.combine_masks,
    lambda: M.combine_masks(torch.ones(3, 3, dtype=torch.bool), torch.ones(4, 4, dtype=torch.bool)),
    ValueError,
    "mask shapes (3, 3) and (4, 4) do not broadcast together",
)
case(
    M.combine_masks,
    lambda: M.combine_masks(torch.ones(3, 3), None),
    TypeError,
    "masks must be bool (True = may attend), got torch.float32",
)
case(
    M.combine_masks,
    lambda: M.combine_masks([[True]]),
    TypeError,
    "masks must be bool tensors or None, got list",
)
case(
    M.check_mask,
    lambda: M.check_mask(torch.ones(4, 7, dtype=torch.bool), (2, 8, 5, 5)),
    ValueError,
    "mask shape (4, 7) does not broadcast to (2, 8, 5, 5)",
)
case(
    M.check_mask,
    lambda: M.check_mask(torch.ones(5, 5), (2, 8, 5, 5)),
    TypeError,
    "mask must be bool with True = may attend, got dtype torch.float32;",
)
case(
    M.to_torch_mask,
    lambda: M.to_torch_mask(torch.ones(2, 5, dtype=torch.bool), key_padding=True),
    ValueError,
    "a key padding mask must be [batch, 1, 1, key_pos], got shape (2, 5)",
)
case(
    M.to_torch_mask,
    lambda: M.to_torch_mask(torch.ones(2, 5)),
    TypeError,
    "mask must be bool with True = may attend, got dtype torch.float32;",
)
case(
    M.to_torch_mask,
    lambda: M.to_torch_mask([[True]]),
    TypeError,
    "mask must be a bool tensor or None, got list",
)
case(
    M.from_torch_mask,
    lambda: M.from_torch_mask(torch.ones(2, 5, dtype=torch.long)),
    TypeError,
    "expected a bool or float PyTorch mask, got dtype torch.int64",
)
case(
    M.from_torch_mask,
    lambda: M.from_torch_mask(torch.full((2, 5), 0.5)),
    ValueError,
    "expected an additive float mask of only 0 and -inf; one with other",
)
case(
    M.from_torch_mask,
    lambda: M.from_torch_mask([[True]]),
    TypeError,
    "torch_mask must be a tensor or None, got list",
)
case(
    P.sinusoidal_encoding,
    lambda: P.sinusoidal_encoding(0, 4),
    ValueError,
    "n_positions must be positive, got 0",
)
case(
    P.SinusoidalPositions,
    lambda: P.SinusoidalPositions(8, 4)(f(2, 3, 5)),
    ValueError,
    "expected x of shape [..., pos, 4], got (2, 3, 5)",
)
case(
    P.SinusoidalPositions,
    lambda: P.SinusoidalPositions(8, 4)(f(2, 3, 4), offset=-1),
    ValueError,
    "offset must be a non-negative int, got -1",
)
case(
    P.SinusoidalPositions,
    lambda: P.SinusoidalPositions(8, 4)(None),
    TypeError,
    "x must be a floating-point tensor [..., pos, d_model], got NoneType",
)
case(
    P.SinusoidalPositions,
    lambda: P.SinusoidalPositions(0, 4),
    ValueError,
    "n_positions must be positive, got 0",
)
case(
    P.LearnedPositions,
    lambda: P.LearnedPositions(4, 4)(f(1, 5, 4)),
    ValueError,
    "learned positions cover 4 positions but positions 0..4 were asked for",
)
case(
    P.LearnedPositions,
    lambda: P.LearnedPositions(-1, 4),
    ValueError,
    "max_pos must be a positive int, got -1",
)
case(
    P.LearnedPositions,
    lambda: P.LearnedPositions(4, 4)(ids(1, 2)),
    TypeError,
    "x must be a floating-point tensor [..., pos, d_model], got torch.int64",
)
case(
    RN.LayerNorm,
    lambda: RN.LayerNorm(4)(torch.ones(2, 4, dtype=torch.long)),
    TypeError,
    "LayerNorm expects a floating-point tensor, got torch.int64",
)
case(
    RN.LayerNorm,
    lambda: RN.LayerNorm.from_torch(nn.Linear(4, 4)),
    TypeError,
    "expected nn.LayerNorm, got Linear",
)
case(
    SW.FeedForward,
    lambda: SW.FeedForward(8, 16)(f(2, 6)),
    ValueError,
    "FeedForward expects [..., d_model=8], got (2, 6)",
)
case(
    SW.FeedForward,
    lambda: SW.FeedForward(8, 16)(f(2, 8).double()),
    TypeError,
    "input has dtype torch.float64 but the weights torch.float32",
)
case(
    SW.FeedForward,
    lambda: SW.FeedForward(8, 16, activation="tanh"),
    ValueError,
    "activation must be one of ['gelu', 'gelu_tanh', 'relu'], got 'tanh'",
)
case(
    SW.FeedForward,
    lambda: SW.FeedForward(8, 16).load_linear(nn.Linear(8, 4), nn.Linear(16, 8)),
    ValueError,
    "linear1 must be nn.Linear with bias and weight (16, 8), got weight",
)
case(
    L.MultiHeadAttention,
    lambda: L.MultiHeadAttention(8, 2)(f(2, 3, 8).double()),
    TypeError,
    "query has dtype torch.float64 but the weights torch.float32",
)
case(
    L.MultiHeadAttention,
    lambda: L.MultiHeadAttention(8, 2)(f(2, 3, 8), f(3, 4, 8)),
    ValueError,
    "query has batch=2 but key has batch=3",
)
case(
    L.MultiHeadAttention,
    lambda: L.MultiHeadAttention.from_torch(nn.Linear(8, 8)),
    TypeError,
    "expected nn.MultiheadAttention, got Linear",
)
case(
    L.MultiHeadAttention,
    lambda: L.MultiHeadAttention(8, 3),
    ValueError,
    "d_model=8 is not divisible by n_heads=3",
)
case(
    L.affine,
    lambda: L.affine(f(2, 3), f(4, 5)),
    ValueError,
    "affine needs tensors x [..., d_in], W [d_in, d_out], b [d_out] or None of one dtype; "
    "got x (2, 3), W (4, 5)",
)
case(
    L.affine,
    lambda: L.affine(None, f(4, 5)),
    TypeError,
    "got x NoneType, W (4, 5)",
)
case(
    B.EncoderBlock,
    lambda: B.EncoderBlock(8, 2, 16)(f(2, 3, 6)),
    ValueError,
    "query has 6 features but the layer expects 8",
)
case(
    B.EncoderBlock,
    lambda: B.EncoderBlock.from_torch(nn.TransformerDecoderLayer(8, 2, 16)),
    TypeError,
    "expected nn.TransformerEncoderLayer, got TransformerDecoderLayer",
)
case(
    B.EncoderBlock,
    lambda: B.EncoderBlock(8, 2, 16, dropout=2.0),
    ValueError,
    "dropout must be in [0, 1), got 2.0",
)
case(
    B.DecoderBlock,
    lambda: B.DecoderBlock.from_torch(nn.TransformerEncoderLayer(8, 2, 16)),
    TypeError,
    "expected nn.TransformerDecoderLayer, got TransformerEncoderLayer",
)
case(
    TR.TransformerConfig,
    lambda: TR.TransformerConfig(0, 5),
    ValueError,
    "d_vocab_src must be a positive int, got 0",
)
case(
    TR.Encoder, lambda: TR.Encoder(None), TypeError, "cfg must be a TransformerConfig, got NoneType"
)
case(
    TR.Decoder,
    lambda: TR.Decoder({"d_model": 8}),
    TypeError,
    "cfg must be a TransformerConfig, got dict",
)
case(
    TR.EncoderDecoder,
    lambda: TR.EncoderDecoder(None),
    TypeError,
    "cfg must be a TransformerConfig, got NoneType",
)
case(
    TR.EncoderDecoder,
    lambda: enc_dec()(ids([1, 9]), ids([1, 2])),
    ValueError,
    "token ids must be in [0, 9), got values from 1 to 9",
)
case(
    TR.EncoderDecoder,
    lambda: enc_dec().load_torch_transformer(nn.TransformerEncoderLayer(8, 2, 16)),
    TypeError,
    "expected nn.Transformer, got TransformerEncoderLayer",
)
case(
    TR.EncoderDecoder,
    lambda: enc_dec()(ids([1, 2]), ids([1, 2]), src_mask=torch.ones(3, 3, dtype=torch.bool)),
    ValueError,
    "mask shape (3, 3) does not broadcast to (1, 2, 2, 2)",
)
case(
    BE.BertConfig,
    lambda: BE.BertConfig(d_vocab=0),
    ValueError,
    "d_vocab must be a positive int, got 0",
)
case(BE.BertModel, lambda: BE.BertModel(None), TypeError, "cfg must be a BertConfig, got NoneType")
case(
    BE.BertModel,
    lambda: bert().bert(ids([1, 25])),
    ValueError,
    "token ids must lie in [0, 20), got [1, 25]",
)
case(
    BE.BertModel,
    lambda: bert().bert(ids([1, 2]), attention_mask=torch.ones(1, 3)),
    ValueError,
    "attention_mask must be [batch, pos] = (1, 2) (1 = real token, 0 =",
)
case(
    BE.BertModel,
    lambda: bert().bert(ids([1, 2]), segment_ids=ids([0, 5])),
    ValueError,
    "segment_ids must lie in [0, 2)",
)
case(
    BE.BertForPreTraining,
    lambda: bert().pretraining_loss(ids([1, 2]), ids([-100, 30])),
    ValueError,
    "labels must be in [0, 20) (or ignore_index=-100), got values from 0",
)
case(
    BE.BertForPreTraining,
    lambda: bert().pretraining_loss(ids([1, 2]), ids([-100, 3]), is_next=torch.tensor([2])),
    ValueError,
    "is_next must hold 0 or 1, got [2]",
)
case(
    BE.BertForPreTraining,
    lambda: bert()(None),
    TypeError,
    "input_ids must be an int64 or int32 tensor, got NoneType",
)
case(
    R.Seq2SeqConfig,
    lambda: R.Seq2SeqConfig(5, 5, cell="transformer"),
    ValueError,
    "cell must be one of ['gru', 'lstm'], got 'transformer'",
)
case(
    R.Seq2Seq,
    lambda: s2s()(ids([1, 20]), ids([1, 2])),
    ValueError,
    "src has ids in [1, 20] but the vocabulary has 9 tokens",
)
case(
    R.Seq2Seq,
    lambda: s2s()(ids([1, 2]), ids([[1], [2]])),
    ValueError,
    "tgt_in must be a non-empty [batch, pos] tensor, got (1, 2, 1)",
)
case(R.Seq2Seq, lambda: R.Seq2Seq(None), TypeError, "cfg must be a Seq2SeqConfig, got NoneType")
case(
    GP.GPTConfig,
    lambda: GP.GPTConfig(d_vocab=10, eps=float("nan")),
    ValueError,
    "eps must be positive, got nan",
)
case(
    GP.GPTConfig,
    lambda: GP.GPTConfig(d_vocab=10, init_std=float("inf")),
    ValueError,
    "init_std must be a positive finite number, got inf",
)
case(GP.GPT, lambda: GP.GPT({"d_vocab": 3}), TypeError, "config must be a GPTConfig, got dict")
case(
    GP.GPT,
    lambda: GP.GPT.from_hf_gpt2(nn.Linear(3, 3)),
    TypeError,
    "expected a Hugging Face GPT2LMHeadModel or GPT2Model, got Linear",
)
case(
    GP.GPTBlock,
    lambda: GP.GPTBlock(8, 2, 16)(f(2, 3, 6)),
    ValueError,
    "query has 6 features but the layer expects 8",
)
case(
    GP.GPTBlock,
    lambda: GP.GPTBlock(8, 2, 16).forward_cached(f(2, 3, 8), None, 0),
    TypeError,
    "cache must be a KVCache, got NoneType",
)
case(KV.KVCache, lambda: KV.KVCache(0), ValueError, "n_layers must be a positive int, got 0")
case(
    KV.KVCache,
    lambda: (lambda c: (gpt()(ids([1, 2], [3, 4]), kv_cache=c), gpt()(ids([5]), kv_cache=c)))(
        gpt().new_cache()
    ),
    ValueError,
    "the cache holds [batch, n_heads, pos, d_head]=(2, 2, 2, 4) but the",
)
case(
    TRAINING_LOSSES.lm_loss,
    lambda: TRAINING_LOSSES.lm_loss(gpt(), (ids([1, 2]), ids([1, 2, 3]))),
    ValueError,
    "targets y must have the shape of x (1, 2), got (1, 3)",
)
case(
    TRAINING_LOSSES.lm_loss,
    lambda: TRAINING_LOSSES.lm_loss(gpt(), (ids([1, 2]), ids([1, 12]))),
    ValueError,
    "labels must be in [0, 11), got values from 1 to 12",
)
case(
    TRAINING_LOSSES.lm_loss,
    lambda: TRAINING_LOSSES.lm_loss(gpt(), ids([1, 2])),
    TypeError,
    "batch must be a pair (x, y) of token-id tensors, got Tensor",
)
case(
    TRAINING_GPT.evaluate_lm,
    lambda: TRAINING_GPT.evaluate_lm(gpt(), torch.arange(20) % 11, batch_size=0),
    ValueError,
    "batch_size must be a positive int, got 0",
)
case(
    TRAINING_GPT.evaluate_lm,
    lambda: TRAINING_GPT.evaluate_lm(gpt(), torch.arange(20) % 11 - 1),
    ValueError,
    "data must be in [0, 11), got values from -1 to 9",
)
case(
    TRAINING_GPT.evaluate_lm,
    lambda: TRAINING_GPT.evaluate_lm(gpt(), [1, 2, 3]),
    TypeError,
    "data must be a tensor of integer token ids, got list",
)
case(
    TRAINING_GPT.TrainRecipe,
    lambda: TRAINING_GPT.TrainRecipe(batch_size=0),
    ValueError,
    "batch_size must be a positive int, got 0",
)
case(
    TRAINING_GPT.TrainRecipe,
    lambda: TRAINING_GPT.TrainRecipe(lr=float("nan")),
    ValueError,
    "lr must be positive, got nan",
)
case(
    TRAINING_GPT.TrainRecipe,
    lambda: TRAINING_GPT.TrainRecipe(grad_clip=None),
    TypeError,
    "grad_clip must be a number, got None",
)
case(
    SCH.lr_factor,
    lambda: SCH.lr_factor(-1, TRAINING_GPT.TrainRecipe()),
    ValueError,
    "step must be an int >= 0, got -1",
)
case(
    SCH.lr_factor,
    lambda: SCH.lr_factor(0, None),
    TypeError,
    "recipe must be a TrainRecipe, got NoneType",
)
case(
    TRAINING_GPT.make_optimizer,
    lambda: TRAINING_GPT.make_optimizer(None, TRAINING_GPT.TrainRecipe()),
    TypeError,
    "model must be an nn.Module, got NoneType",
)
case(
    TRAINING_GPT.make_optimizer,
    lambda: TRAINING_GPT.make_optimizer(gpt(), {"lr": 1}),
    TypeError,
    "recipe must be a TrainRecipe, got dict",
)
case(
    TRAINING_GPT.train_gpt,
    lambda: TRAINING_GPT.train_gpt(gpt(), torch.arange(40) % 11, None),
    TypeError,
    "recipe must be a TrainRecipe, got NoneType",
)
case(
    TRAINING_GPT.train_gpt,
    lambda: TRAINING_GPT.train_gpt(
        gpt(), torch.arange(40) % 11, TRAINING_GPT.TrainRecipe(steps=1, warmup=0), device="gpu"
    ),
    ValueError,
    "device must name a device such as 'cpu', 'cuda' or 'mps', got 'gpu'",
)
case(
    TRAINING_GPT.train_gpt,
    lambda: TRAINING_GPT.train_gpt(
        gpt(), torch.arange(5) % 11, TRAINING_GPT.TrainRecipe(steps=1, warmup=0)
    ),
    ValueError,
    "train_ids has 5 tokens; windows of n_ctx=8 need more",
)
case(
    TRAINING_GPT.preset,
    lambda: TRAINING_GPT.preset("huge", 10),
    ValueError,
    "unknown preset 'huge'; choose from ['book-cpu', 'gpu', 'nanogpt-cpu']",
)
case(
    TRAINING_GPT.preset,
    lambda: TRAINING_GPT.preset("book-cpu", 0),
    ValueError,
    "d_vocab must be a positive int, got 0",
)
case(
    G.top_k_filter,
    lambda: G.top_k_filter(f(2, 5), 0),
    ValueError,
    "top_k must be a positive int, got 0",
)
case(
    G.top_k_filter,
    lambda: G.top_k_filter([1.0, 2.0], 1),
    TypeError,
    "logits must be a floating-point tensor [..., d_vocab], got list",
)
case(
    G.top_p_filter,
    lambda: G.top_p_filter(f(2, 5), 1.5),
    ValueError,
    "top_p must be a number in (0, 1], got 1.5",
)
case(
    G.top_p_filter,
    lambda: G.top_p_filter(ids(1, 2), 0.5),
    TypeError,
    "logits must be a floating-point tensor [..., d_vocab], got torch.int64",
)
case(
    G.next_token_probs,
    lambda: G.next_token_probs(torch.full((2, 5), float("-inf"))),
    ValueError,
    "logits contain NaN or +inf, or a row of only -inf: there is no",
)
case(
    G.next_token_probs,
    lambda: G.next_token_probs(torch.full((2, 5), float("nan"))),
    ValueError,
    "logits contain NaN or +inf, or a row of only -inf: there is no",
)
case(
    G.sample_next,
    lambda: G.sample_next(torch.full((2, 5), float("-inf"))),
    ValueError,
    "logits contain NaN or +inf, or a row of only -inf: there is no",
)
case(
    G.sample_next,
    lambda: G.sample_next(f(5)),
    ValueError,
    "logits must be [batch, d_vocab], got shape (5,)",
)
case(
    G.sample_next,
    lambda: G.sample_next(f(2, 5), generator=123),
    TypeError,
    "generator must be a CPU torch.Generator, got 123",
)
case(
    G.generate,
    lambda: G.generate(gpt(), ids([1, 2]), -1),
    ValueError,
    "max_new_tokens must be a non-negative int, got -1",
)
case(
    G.generate,
    lambda: G.generate(gpt(), [[1, 2]], 1),
    TypeError,
    "idx must be an integer tensor of token ids, got list",
)
case(
    G.generate,
    lambda: G.generate(gpt(), ids([1, 2]), 1, temperature=-1),
    ValueError,
    "temperature must be a finite number >= 0, got -1",
)
case(
    G.generate,
    lambda: G.generate(nn.Linear(2, 2), ids([1, 2]), 1, use_cache=True),
    ValueError,
    "Linear has no key/value cache (no new_cache method)",
)
case(
    D.greedy_decode,
    lambda: D.greedy_decode(enc_dec(), ids(1, 2), bos_id=1, eos_id=2),
    ValueError,
    "src must be a non-empty [batch, src_pos] tensor of ids, got (2,)",
)
case(
    D.greedy_decode,
    lambda: D.greedy_decode(enc_dec(), ids([1, 2]), bos_id=10, eos_id=2),
    ValueError,
    "token ids must be in [0, 7), got values from 10 to 10",
)
case(
    D.greedy_decode,
    lambda: D.greedy_decode(enc_dec(), ids([1, 2]), bos_id=1, eos_id=2, max_len=0),
    ValueError,
    "max_len must be a positive int, got 0",
)
case(
    D.greedy_decode,
    lambda: D.greedy_decode(None, ids([1, 2]), bos_id=1, eos_id=2),
    TypeError,
    "model must be an encoder-decoder with encode(src) and decode(tgt,",
)
case(
    D.beam_search,
    lambda: D.beam_search(enc_dec(), ids([1, 2]), bos_id=1, eos_id=2, beam_size=0),
    ValueError,
    "beam_size must be a positive int, got 0",
)
case(
    D.beam_search,
    lambda: D.beam_search(enc_dec(), ids([1, 2]), bos_id=1, eos_id=2, length_penalty=-1.0),
    ValueError,
    "length_penalty must be a finite number >= 0, got -1.0",
)
case(
    D.beam_hypotheses,
    lambda: D.beam_hypotheses(enc_dec(), ids([1.0, 2.0]), bos_id=1, eos_id=2),
    TypeError,
    "src must hold integer token ids, got torch.float32",
)
case(
    D.sequence_score,
    lambda: D.sequence_score(enc_dec(), ids([1, 2]), ids([1, 9]), bos_id=1, eos_id=2),
    ValueError,
    "outputs must be in [0, 7), got values from 1 to 9",
)
case(
    D.sequence_score,
    lambda: D.sequence_score(enc_dec(), ids([1, 2]), ids([1, 2], [3, 4]), bos_id=1, eos_id=2),
    ValueError,
    "outputs has batch=2 but src has batch=1",
)
case(
    DV.device,
    lambda: DV.device("gpu"),
    ValueError,
    "prefer must name a device such as 'cpu', 'cuda' or 'mps', got 'gpu'",
)
case(DV.device, lambda: DV.device("cuda:99"), ValueError, "prefer='cuda:99' but ")
case(
    DV.device,
    lambda: DV.device(3),
    TypeError,
    "prefer must be a device name such as 'cpu', got int",
)
case(
    DV.seed_everything, lambda: DV.seed_everything(1.5), TypeError, "seed must be an int, got float"
)
case(DV.seed_everything, lambda: DV.seed_everything(-1), ValueError, "seed must be >= 0, got -1")
case(
    DV.check_device,
    lambda: DV.check_device("tpu:x"),
    ValueError,
    "device must name a device such as 'cpu', 'cuda' or 'mps', got 'tpu:x'",
)
case(
    TK.Vocabulary,
    lambda: TK.Vocabulary(["a", "a"]),
    ValueError,
    "token 'a' appears twice (at 0 and 1)",
)
case(
    TK.Vocabulary,
    lambda: TK.Vocabulary(["a"]).encode("a"),
    TypeError,
    "tokens must be a list of tokens; a str would be read character by",
)
case(
    TK.Vocabulary,
    lambda: TK.Vocabulary(["a"]).encode(["b"]),
    ValueError,
    "not in the vocabulary: ['b']",
)
case(
    TK.Vocabulary,
    lambda: TK.Vocabulary(["a"]).decode([3]),
    ValueError,
    "indices [3] are outside 0..0",
)
case(TK.Vocabulary, lambda: TK.Vocabulary([1, 2]), TypeError, "tokens must be strings, got [1, 2]")
case(
    E.one_hot,
    lambda: E.one_hot(ids(1, 5), 3),
    ValueError,
    "indices must be in 0..2, got values from 1 to 5",
)
case(
    E.one_hot, lambda: E.one_hot(f(3), 3), TypeError, "indices must be integers, got torch.float32"
)
case(
    E.one_hot,
    lambda: E.one_hot(ids(1), 0),
    ValueError,
    "vocab_size must be a positive int, got 0",
)
case(
    E.cosine_similarity,
    lambda: E.cosine_similarity(f(3), f(4)),
    ValueError,
    "a has 3 features but b has 4",
)
case(
    E.cosine_similarity,
    lambda: E.cosine_similarity([1.0], f(1)),
    TypeError,
    "a must be a floating-point tensor, got list",
)
case(
    E.euclidean_distance,
    lambda: E.euclidean_distance(f(2, 3), f(4, 3)),
    ValueError,
    "shapes (2, 3) and (4, 3) do not broadcast together",
)
case(
    E.nearest,
    lambda: E.nearest("a", f(4, 2), TK.Vocabulary("abcd"), k=0),
    ValueError,
    "k must be an int in [1, 3], got 0",
)
case(
    E.nearest,
    lambda: E.nearest("z", f(4, 2), TK.Vocabulary("abcd")),
    ValueError,
    "k must be an int in [1, 3], got 5",
)
case(H.Hook, lambda: H.Hook()(None), TypeError, "a hook passes tensors through, got NoneType")
case(
    H.capture,
    lambda: H.capture(None).__enter__(),
    TypeError,
    "model must be an nn.Module, got NoneType",
)
case(
    H.capture,
    lambda: H.capture(gpt(), "no.such.hook").__enter__(),
    ValueError,
    "no hook matches ['no.such.hook']; available: ['blocks.0.attn.q',",
)
case(
    H.run_with_cache,
    lambda: H.run_with_cache(gpt(), ids([1, 2]), names=["nope"]),
    ValueError,
    "no hook matches ['nope']; available: ['blocks.0.attn.q',",
)
case(
    TRN.train,
    lambda: TRN.train(gpt(), [1, 2], TRAINING_LOSSES.lm_loss, lr=-1),
    ValueError,
    "lr must be a positive finite number, got -1",
)
case(
    TRN.train,
    lambda: TRN.train(gpt(), iter([]), TRAINING_LOSSES.lm_loss, steps=-1),
    ValueError,
    "steps must be a non-negative int, got -1",
)
case(
    TRN.train,
    lambda: TRN.train(gpt(), [1], TRAINING_LOSSES.lm_loss, device="gpu"),
    ValueError,
    "device must name a device such as 'cpu', 'cuda' or 'mps', got 'gpu'",
)
case(TRN.train, lambda: TRN.train(None, [1]), TypeError, "model must be an nn.Module, got NoneType")
case(
    TRN.evaluate,
    lambda: TRN.evaluate(gpt(), [], TRAINING_LOSSES.lm_loss),
    ValueError,
    "evaluate got no batches",
)
case(
    TRN.evaluate,
    lambda: TRN.evaluate(gpt(), [1], TRAINING_LOSSES.lm_loss, device="cuda:x"),
    ValueError,
    "device must name a device such as 'cpu', 'cuda' or 'mps', got 'cuda:x'",
)
case(
    TRN.seq2seq_loss,
    lambda: TRN.seq2seq_loss(enc_dec(), (ids([1]), ids([2]))),
    TypeError,
    "batch must have src, tgt_in, tgt_out and pad_id (a numbers.Batch),",
)
case(
    TRN.to_device,
    lambda: TRN.to_device(f(2), "gpu"),
    ValueError,
    "device must name a device such as 'cpu', 'cuda' or 'mps', got 'gpu'",
)
case(
    TRN.num_threads,
    lambda: TRN.num_threads(0).__enter__(),
    ValueError,
    "the number of threads must be a positive int, got 0",
)
case(
    DATA_TOY.previous_token,
    lambda: DATA_TOY.previous_token(2, 1, 5),
    ValueError,
    "sequences need at least 2 tokens to have neighbours, got n=1",
)
case(
    DATA_TOY.neighbours,
    lambda: DATA_TOY.neighbours(0, 4, 5),
    ValueError,
    "batch must be a positive int, got 0",
)
case(
    MODELS_TOY.ToyConfig,
    lambda: MODELS_TOY.ToyConfig(d_vocab=0),
    ValueError,
    "d_vocab must be a positive int, got 0",
)
case(
    MODELS_TOY.TinyTransformer,
    lambda: MODELS_TOY.TinyTransformer(None),
    TypeError,
    "cfg must be a ToyConfig, got NoneType",
)
case(
    T.toy_batches,
    lambda: next(T.toy_batches("reverse", 5)),
    ValueError,
    "task must be one of ['neighbours', 'previous_token'] or a function,",
)
case(
    T.toy_batches,
    lambda: next(T.toy_batches("previous_token", 5, lengths=[1])),
    ValueError,
    "lengths must be ints >= 2, got [1]",
)
case(
    T.toy_batches,
    lambda: next(T.toy_batches("previous_token", 5, batch_size=0)),
    ValueError,
    "batch must be a positive int, got 0",
)
case(
    T.toy_loss,
    lambda: T.toy_loss(
        MODELS_TOY.TinyTransformer(MODELS_TOY.ToyConfig(d_vocab=6, d_model=8, n_heads=2, d_mlp=8)),
        (ids([1, 2]), ids([1, 2])),
    ),
    ValueError,
    "targets y must be [batch, pos, n_answers]=(1, 2, 1), got (1, 2)",
)
case(
    T.train_toy,
    lambda: T.train_toy(
        MODELS_TOY.TinyTransformer(MODELS_TOY.ToyConfig(d_vocab=6, d_model=8, n_heads=2, d_mlp=8)),
        steps=-1,
    ),
    ValueError,
    "steps must be a non-negative int, got -1",
)
case(
    T.train_toy,
    lambda: T.train_toy(None),
    TypeError,
    "model must be a TinyTransformer (an nn.Module with a cfg), got",
)
case(
    T.accuracy,
    lambda: T.accuracy(
        MODELS_TOY.TinyTransformer(MODELS_TOY.ToyConfig(d_vocab=6, d_model=8, n_heads=2, d_mlp=8)),
        n=1,
    ),
    ValueError,
    "sequences need at least 2 tokens to have neighbours, got n=1",
)
case(
    T.accuracy,
    lambda: T.accuracy(None),
    TypeError,
    "model must be a TinyTransformer (an nn.Module with a cfg), got",
)
case(
    PT.config_from_hf,
    lambda: PT.config_from_hf({}),
    ValueError,
    "the BERT config lacks ['vocab_size', 'hidden_size',",
)
case(
    PT.config_from_hf,
    lambda: PT.config_from_hf(None),
    TypeError,
    "hf must be a dict (a parsed config.json), got NoneType",
)
case(
    PT.load_hf_bert_weights,
    lambda: PT.load_hf_bert_weights(bert(), {}),
    ValueError,
    "the state dict lacks 30 tensors, e.g.",
)
case(
    PT.load_hf_bert_weights,
    lambda: PT.load_hf_bert_weights(nn.Linear(2, 2), {}),
    TypeError,
    "model must be a BertModel or BertForPreTraining, got Linear",
)
case(
    PT.mean_pool,
    lambda: PT.mean_pool(f(2, 3, 4), torch.ones(2, 5)),
    ValueError,
    "attention_mask must be [batch, pos]=(2, 3), got (2, 5)",
)
case(
    PT.mean_pool,
    lambda: PT.mean_pool(f(3, 4)),
    ValueError,
    "last_hidden_state must be [batch, pos, d_model], got (3, 4)",
)
case(
    PT.sentence_embeddings,
    lambda: PT.sentence_embeddings(None, None, 5),
    TypeError,
    "sentences must be a list of strings, got int",
)
case(
    PT.minilm,
    lambda: PT.minilm(device="gpu"),
    ValueError,
    "device must name a device such as 'cpu', 'cuda' or 'mps', got 'gpu'",
)
case(
    MLM.mask_tokens,
    lambda: MLM.mask_tokens(ids([1, 2]), mask_id=3, vocab_size=5, mask_prob=1.5),
    ValueError,
    "mask_prob must be a probability in [0, 1], got 1.5",
)
case(
    MLM.mask_tokens,
    lambda: MLM.mask_tokens([[1, 2]], mask_id=3, vocab_size=5),
    TypeError,
    "input_ids must be an integer tensor of token ids",
)
case(
    MLM.mask_tokens,
    lambda: MLM.mask_tokens(ids([1, 2]), mask_id=9, vocab_size=5),
    ValueError,
    "mask_id=9 is not in [0, vocab_size=5)",
)
case(
    MLM.SentencePair,
    lambda: MLM.SentencePair([1], [2], 3),
    ValueError,
    "is_next must be 0 or 1, got 3",
)
case(
    MLM.next_sentence_pairs,
    lambda: MLM.next_sentence_pairs([[1, 2]], -1),
    ValueError,
    "n_pairs must be an int >= 0, got -1",
)
case(
    MLM.next_sentence_pairs,
    lambda: MLM.next_sentence_pairs([[1, 2], [3]], 2, next_prob=2.0),
    ValueError,
    "next_prob must be in [0, 1], got 2.0",
)
case(
    MLM.pack_pair,
    lambda: MLM.pack_pair([1], [2], cls_id=0, sep_id=1, max_len=2),
    ValueError,
    "max_len must leave room for 3 special tokens and 1 token each, got 2",
)
case(MLM.pad_batch, lambda: MLM.pad_batch([], 0), ValueError, "need at least one sequence")
case(
    MLM.pad_batch,
    lambda: MLM.pad_batch([[1], ["a"]], 0),
    TypeError,
    "sequences must hold lists of int token ids, got ['a']",
)
case(
    MLM.pretraining_batch,
    lambda: MLM.pretraining_batch([], cls_id=0, sep_id=1, pad_id=2, mask_id=3, vocab_size=10),
    ValueError,
    "need at least one sequence",
)
case(
    NU.NumbersConfig,
    lambda: NU.NumbersConfig(src_lang="xx"),
    ValueError,
    "language must be one of ('en', 'de', 'fr'), got 'xx'",
)
case(
    NU.NumbersConfig,
    lambda: NU.NumbersConfig(n_train=-1),
    ValueError,
    "need n_train > 0 and n_val, n_test >= 0, got -1, 500, 2000",
)
case(
    TK.Vocab,
    lambda: TK.Vocab(["a"]).encode("a"),
    TypeError,
    "encode takes a list of tokens, not a string; use tokenize() first",
)
case(
    TK.Vocab,
    lambda: TK.Vocab(["a"]).decode([99]),
    ValueError,
    "id 99 is outside the vocabulary of 5 tokens",
)
case(
    NU.NumberData,
    lambda: NU.NumberData(None, {}),
    TypeError,
    "config must be a NumbersConfig, got NoneType",
)
case(
    NW.number_to_words,
    lambda: NW.number_to_words(-5, "en"),
    ValueError,
    "number must be in [0, 10**16), got -5",
)
case(
    NW.number_to_words,
    lambda: NW.number_to_words(1.5, "en"),
    TypeError,
    "number must be an int, got float",
)
case(
    NW.number_to_words,
    lambda: NW.number_to_words(5, "xx"),
    ValueError,
    "language must be one of ('en', 'de', 'fr'), got 'xx'",
)
case(NW.tokenize, lambda: NW.tokenize(None, "en"), TypeError, "text must be a str, got NoneType")
case(NW.split_german, lambda: NW.split_german(None), TypeError, "word must be a str, got NoneType")
case(
    NU.load,
    lambda: NU.load(n_train=-1),
    ValueError,
    "need n_train > 0 and n_val, n_test >= 0, got -1, 500, 2000",
)
case(
    NU.load,
    lambda: NU.load(nope=1),
    TypeError,
    "NumbersConfig.__init__() got an unexpected keyword argument 'nope'",
)
case(
    NU.predict,
    lambda: NU.predict(None, None),
    TypeError,
    "translate must be a function src -> ids, got NoneType",
)
case(
    NU.exact_match,
    lambda: NU.exact_match([["a"]], [["a"], ["b"]]),
    ValueError,
    "1 predictions for 2 references",
)
case(
    NU.accuracy_by_length,
    lambda: NU.accuracy_by_length([True], [1, 2], [0, 5]),
    ValueError,
    "correct has shape (1,), lengths (2,)",
)
case(
    NU.accuracy_by_length,
    lambda: NU.accuracy_by_length([True], [1], [5, 0]),
    ValueError,
    "bins must be at least two increasing edges, got [5, 0]",
)
case(
    SH.markdown_to_text,
    lambda: SH.markdown_to_text(None),
    TypeError,
    "expected string or bytes-like object, got 'NoneType'",
)
case(
    SH.split_plays,
    lambda: SH.split_plays(min_val_chars=-1),
    ValueError,
    "min_val_chars must be positive, got -1",
)
case(
    SH.split_plays,
    lambda: SH.split_plays([], 10),
    ValueError,
    "0 plays cannot hold out 10 characters",
)
case(
    SH.train_val_text,
    lambda: SH.train_val_text(min_val_chars=10**9),
    ValueError,
    "38 plays cannot hold out 1000000000 characters",
)
case(
    TK.CharTokenizer,
    lambda: TK.CharTokenizer("ab").encode("abz"),
    ValueError,
    "character 'z' is not in the vocabulary",
)
case(
    TK.CharTokenizer,
    lambda: TK.CharTokenizer("ab").decode([5]),
    ValueError,
    "ids must be in [0, 2), got [5]",
)
case(
    TK.CharTokenizer, lambda: TK.CharTokenizer(None), TypeError, "chars must be a str, got NoneType"
)
case(
    TK.BPETokenizer,
    lambda: TK.BPETokenizer(None),
    TypeError,
    "tokenizer must be a tokenizers.Tokenizer, got NoneType",
)
case(
    SH.bpe_tokenizer,
    lambda: SH.bpe_tokenizer(10),
    ValueError,
    "vocab_size must be at least 257 (256 bytes + merges), got 10",
)
case(
    SH.encode_splits,
    lambda: SH.encode_splits("chars"),
    TypeError,
    "tokenizer must be a CharTokenizer, a BPETokenizer or None, got str",
)
case(
    SH.get_batch,
    lambda: SH.get_batch(torch.arange(20), -1, 8),
    ValueError,
    "batch_size must be a positive int, got -1",
)
case(
    SH.get_batch,
    lambda: SH.get_batch(torch.arange(5), 2, 8),
    ValueError,
    "data has 5 tokens, need more than block_size=8",
)
case(
    V.heatmap,
    lambda: V.heatmap(np.zeros((2, 3, 4))),
    ValueError,
    "matrix must be 2-d (rows, columns), got shape (2, 3, 4)",
)
case(
    V.heatmap,
    lambda: V.heatmap(np.zeros((2, 3)), x_labels=["a"]),
    ValueError,
    "1 column labels for 3 columns",
)
case(
    V.attention_heatmap,
    lambda: V.attention_heatmap(np.zeros((2, 3)), ["a", "b"]),
    ValueError,
    "2 column labels for 3 columns",
)
case(
    V.plot_heads,
    lambda: V.plot_heads(np.zeros((2, 3)), ["a", "b", "c"]),
    ValueError,
    "pattern must be [n_heads, query_pos, key_pos], got shape (2, 3)",
)
case(
    V.svg_heatmap,
    lambda: V.svg_heatmap(np.zeros(3)),
    ValueError,
    "matrix must be 2-d (rows, columns), got shape (3,)",
)
case(V.show, lambda: V.show(None), ValueError, "")
case(V.mimebundle, lambda: V.mimebundle(None), ValueError, "")
case(V.figure_html, lambda: V.figure_html(None), ValueError, "")
case(
    V.heatmap_explorer,
    lambda: V.heatmap_explorer(
        {}, labels={}, panel_titles=[], slider_label=None, dropdown_label=None
    ),
    ValueError,
    "states is empty",
)
case(
    V.slider_heatmaps,
    lambda: V.slider_heatmaps({}, ["a"], ["b"], "t", "s"),
    ValueError,
    "states[''] has no slider values",
)
case(
    V.dropdown_heatmaps,
    lambda: V.dropdown_heatmaps({}, ["a"], ["b"], "t", "d"),
    ValueError,
    "states is empty",
)
case(
    W.tokenize,
    lambda: W.tokenize(""),
    ValueError,
    "the sentence has no tokens; type at least one word",
)
case(
    W.token_embedding,
    lambda: W.token_embedding(None),
    TypeError,
    "token must be a str, got NoneType",
)
case(W.projections, lambda: W.projections(0), ValueError, "d_k must be a positive int, got 0")
case(
    W.explore, lambda: W.explore("hi there", d_k=0), ValueError, "d_k must be a positive int, got 0"
)
case(
    W.explore,
    lambda: W.explore("hi there", mask_kind="diagonal"),
    ValueError,
    "mask_kind must be one of ('none', 'causal', 'padding',",
)
case(
    W.AttentionExplorer,
    lambda: W.AttentionExplorer("hi", temperature=0),
    ValueError,
    "temperature must be a positive number, got 0",
)
case(
    W.attention_explorer,
    lambda: W.attention_explorer("hi", d_k=-1),
    ValueError,
    "d_k must be a positive int, got -1",
)
case(
    W.static_attention_explorer,
    lambda: W.static_attention_explorer("hi", slider="colour"),
    ValueError,
    "slider must be 'temperature' or 'd_k', got 'colour'",
)
case(
    BV.stack_attentions,
    lambda: BV.stack_attentions([f(2, 3)]),
    ValueError,
    "layer 0: expected [batch, n_heads, pos, pos] or [n_heads, pos, pos],",
)
case(
    BV.stack_attentions,
    lambda: BV.stack_attentions(None),
    TypeError,
    "attentions must be a list of [batch, n_heads, pos, pos] tensors or a 4-d array, got NoneType",
)
case(
    ANALYSIS_HEAD_PATTERNS.head_pattern_scores,
    lambda: ANALYSIS_HEAD_PATTERNS.head_pattern_scores([f(1, 2, 3, 3)], ["a", "b"]),
    ValueError,
    "2 tokens for attention over 3 positions",
)
# the shipped tiny BERT (chapter 12)
case(TBT.TinyBertRecipe, lambda: TBT.TinyBertRecipe(d_model=130), ValueError, "d_model=130")
case(TBT.TinyBertRecipe, lambda: TBT.TinyBertRecipe(steps=0), ValueError, "steps must be positive")
case(TBT.TinyBertRecipe, lambda: TBT.TinyBertRecipe(batch=2.5), TypeError, "batch must be an int")
case(
    TBT.shakespeare_corpus,
    lambda: TBT.shakespeare_corpus(5),
    ValueError,
    "vocab_size must be an int >= 100, got 5",
)
case(
    TBT.held_out_batch,
    lambda: TBT.held_out_batch(None),
    TypeError,
    "corpus must be a ShakespeareCorpus, got NoneType",
)
case(
    TBT.word_tokens,
    lambda: TBT.word_tokens("abc"),
    TypeError,
    "tokenizer must be a WordPieceTokenizer, got str",
)
case(
    TBT.masked_lm_report,
    lambda: TBT.masked_lm_report(bert().bert, None, None),
    TypeError,
    "model must be a BertForPreTraining, got BertModel",
)
case(
    TBT.pretrain_tiny_bert,
    lambda: TBT.pretrain_tiny_bert(stop_after=0),
    ValueError,
    "stop_after must be an int in 1..",
)
case(
    TBT.pretrain_tiny_bert,
    lambda: TBT.pretrain_tiny_bert({"steps": 5}),
    TypeError,
    "recipe must be a TinyBertRecipe, got dict",
)
case(
    PRETRAINED_TINY_BERT.save_tiny_bert,
    lambda: PRETRAINED_TINY_BERT.save_tiny_bert(None, wordpiece(), {}),
    TypeError,
    "model must be a BertForPreTraining, got NoneType",
)
case(
    PRETRAINED_TINY_BERT.tiny_bert_info,
    lambda: PRETRAINED_TINY_BERT.tiny_bert_info("/nonexistent-dir"),
    ValueError,
    "no tiny_bert.json in /nonexistent-dir",
)
case(
    PRETRAINED_TINY_BERT.load_tiny_bert,
    lambda: PRETRAINED_TINY_BERT.load_tiny_bert(directory="/nonexistent-dir"),
    ValueError,
    "run scripts/pretrain_tiny_bert.py",
)
case(
    ANALYSIS_HEAD_PATTERNS.bag_of_words_scores,
    lambda: ANALYSIS_HEAD_PATTERNS.bag_of_words_scores([f(1, 2, 3, 3)], ["[CLS]", "a", "[SEP]"]),
    ValueError,
    "need at least 2 tokens besides [CLS], [SEP] and [PAD], got 1",
)
case(
    ANALYSIS_HEAD_PATTERNS.bag_of_words_scores,
    lambda: ANALYSIS_HEAD_PATTERNS.bag_of_words_scores([f(1, 2, 3, 3)], ["a", "b"]),
    ValueError,
    "2 tokens for attention over 3 positions",
)
case(
    ANALYSIS_HEAD_PATTERNS.top_heads,
    lambda: ANALYSIS_HEAD_PATTERNS.top_heads(np.zeros(3)),
    ValueError,
    "scores must be [n_layers, n_heads], got shape (3,)",
)
case(
    ANALYSIS_HEAD_PATTERNS.top_heads,
    lambda: ANALYSIS_HEAD_PATTERNS.top_heads(np.zeros((2, 2)), k=0),
    ValueError,
    "k must be a positive int, got 0",
)
case(
    BV.head_view,
    lambda: BV.head_view([f(1, 2, 3, 3)], ["a", "b", "c"], layer=5),
    ValueError,
    "layer=5 is not in 0..0",
)
case(
    BV.model_view,
    lambda: BV.model_view([f(1, 2, 3, 3)], ["a", "b"]),
    ValueError,
    "2 tokens for attention over 3 positions",
)
case(
    BV.AttentionBrowser,
    lambda: BV.AttentionBrowser(None, None, 5),
    TypeError,
    "sentence must be a str, got int",
)

# Functions of no argument: an argument is Python's own clear TypeError.
for fn in (
    CACHE.cache_dir,
    SH.char_tokenizer,
    SH.load_plays,
    E.minilm_token_embeddings,
    PT.minilm_dir,
):
    case(fn, lambda fn=fn: fn("extra"), TypeError, "positional argument")

# --- more entries: records' methods, vectors, parallelism -----------------------------------

case(
    E.nearest,
    lambda: E.nearest(f(3), f(4, 2), TK.Vocabulary(["a", "b", "c", "d"]), k=2),
    ValueError,
    "a query vector must be [d_model]=[2], got (3,)",
)
case(
    TOK.TokenBatch,
    lambda: wordpiece()(["the cat"]).to("gpu"),
    ValueError,
    "device must name a device such as 'cpu', 'cuda' or 'mps', got 'gpu'",
)
case(
    MLM.PretrainingBatch,
    lambda: MLM.PretrainingBatch(*[ids([1])] * 5).to("gpu"),
    ValueError,
    "got 'gpu'",
)
case(NU.Batch, lambda: NU.Batch(ids([1]), ids([1]), ids(0)).to("tpu!"), ValueError, "got 'tpu!'")
case(TRN.TrainResult, lambda: TRN.TrainResult([1.0]).smoothed(0), ValueError, "window must be")
case(PA.interleaved_medians, lambda: PA.interleaved_medians({}), ValueError, "fns is empty")
case(PA.longest_chain, lambda: PA.longest_chain(None), TypeError, "output must be a torch.Tensor")
case(PA.multiply_adds, lambda: PA.multiply_adds(None), TypeError, "not callable")
case(
    L.MultiHeadAttention,
    lambda: L.MultiHeadAttention(8, 2)(x3(2, 3, 8), mask=torch.ones(4, 7, dtype=torch.bool)),
    ValueError,
    "mask shape (4, 7) does not broadcast to (2, 2, 3, 3)",
)


# --- the timeline and the word map (chapter 1) ----------------------------------------------

case(
    TL.TimelineEntry,
    lambda: TL.TimelineEntry(2020, "x", "k", "A et al.", "rnn", "y"),
    ValueError,
    "family must be one of",
)
case(
    TL.TimelineEntry,
    lambda: TL.TimelineEntry("2017", "x", "k", "A et al.", "decoder", "y"),
    TypeError,
    "year must be an int, got str",
)
case(
    TL.timeline_figure,
    lambda: TL.timeline_figure([("2017",)]),
    TypeError,
    "TimelineEntry objects, got ['tuple']",
)
case(TL.timeline_plotly, lambda: TL.timeline_plotly([]), ValueError, "entries is empty")
case(E.pca_2d, lambda: E.pca_2d(f(2, 3)), ValueError, "n >= 3 rows and d >= 2, got (2, 3)")
case(E.pca_2d, lambda: E.pca_2d(ids(1, 2, 3)), TypeError, "X must be a floating-point tensor")
case(
    E.group_separation,
    lambda: E.group_separation(f(3, 2), ["a", "b"]),
    ValueError,
    "2 labels for 3 rows",
)
case(
    E.analogy,
    lambda: E.analogy("a", "b", "z", f(4, 2), TK.Vocabulary("abcd")),
    ValueError,
    "not single tokens of the vocabulary: ['z']",
)
case(
    E.analogy_rank,
    lambda: E.analogy_rank("a", "b", "c", "a", f(4, 2), TK.Vocabulary("abcd")),
    ValueError,
    "expected='a' is one of the question's words",
)
case(
    WM.word_map_plotly,
    lambda: WM.word_map_plotly(f(3, 3), ["a", "b", "c"], ["x", "x", "y"]),
    ValueError,
    "coords must be an [n, 2] tensor, got (3, 3)",
)

# data parallelism, checkpoints and the training command
case(DI.setup, lambda: DI.setup("gpu"), ValueError, "must name a device such as 'cpu'")
case(DI.setup, lambda: DI.setup("cpu", backend="mpi"), ValueError, "backend must be 'nccl'")
case(DI.shard, lambda: DI.shard(torch.zeros(5, 2), 0, 2), ValueError, "does not split evenly")
case(DI.shard, lambda: DI.shard("text", 0, 1), TypeError, "got str")
case(DI.all_mean, lambda: DI.all_mean("1"), TypeError, "value must be a number, got str")
case(DI.ring_all_reduce, lambda: DI.ring_all_reduce([]), ValueError, "non-empty list of tensors")
case(CK.set_rng_state, lambda: CK.set_rng_state({}), ValueError, "a dict from rng_state()")
case(
    CK.save_checkpoint,
    lambda: CK.save_checkpoint("c.pt", model=gpt(), optimizer=None, step=0),
    TypeError,
    "optimizer must be a torch optimizer, got NoneType",
)
case(CK.load_checkpoint, lambda: CK.load_checkpoint(None), TypeError, "path must be a file path")
case(TG.main, lambda: TG.main("--steps 5"), TypeError, "argv must be a list of strings")
case(TG.parse_args, lambda: TG.parse_args([1]), TypeError, "argv must be a list of strings")


# --- fine-tuning and the genre task (chapter 15) -------------------------------------------


@functools.cache
def classifier():
    torch.manual_seed(0)
    cfg = BE.BertConfig(d_vocab=20, d_model=8, n_heads=2, d_mlp=16, n_layers=1, max_pos=16)
    return FT.SequenceClassifier(BE.BertModel(cfg), 3)


def labelled(n=4):
    return FT.ClassificationBatch(
        ids(*[[1, 2, 3]] * n), torch.ones(n, 3, dtype=torch.long), torch.arange(n) % 3
    )


case(
    FT.SequenceClassifier,
    lambda: FT.SequenceClassifier(nn.Linear(2, 2), 3),
    TypeError,
    "encoder must be a BertModel, got Linear",
)
case(
    FT.SequenceClassifier,
    lambda: FT.SequenceClassifier(classifier().encoder, 3, pooling="max"),
    ValueError,
    "pooling must be one of ('cls', 'mean'), got 'max'",
)
case(
    FT.SequenceClassifier,
    lambda: classifier().parameter_groups(1e-3, 0),
    ValueError,
    "encoder_lr must be a positive number, got 0",
)
case(FT.ClassificationBatch, lambda: labelled().to("gpu"), ValueError, "got 'gpu'")
case(
    FT.build_classifier,
    lambda: FT.build_classifier(classifier().encoder, 3, "distil"),
    ValueError,
    "method must be one of ('scratch', 'probe', 'finetune'), got 'distil'",
)
case(
    FT.build_classifier,
    lambda: FT.build_classifier(nn.Linear(2, 2), 3, "probe"),
    TypeError,
    "encoder must be a BertModel, got Linear",
)
case(
    FT.tokenize_labelled,
    lambda: FT.tokenize_labelled(None, ["a"], [0], 8),
    TypeError,
    "tokenizer must be a WordPieceTokenizer, got NoneType",
)
case(
    FT.tokenize_labelled,
    lambda: FT.tokenize_labelled(wordpiece(), "the cat", [0], 8),
    ValueError,
    "texts must be a list of strings as long as labels",
)
case(
    FT.classification_batches,
    lambda: next(FT.classification_batches(labelled(), 0, 0)),
    ValueError,
    "batch_size must be a positive int, got 0",
)
case(
    FT.classification_batches,
    lambda: next(FT.classification_batches([1, 2], 2, 0)),
    TypeError,
    "data must be a ClassificationBatch, got list",
)
case(
    FT.classification_loss,
    lambda: FT.classification_loss(
        classifier(), FT.ClassificationBatch(ids([1, 2]), ids([1, 1]), ids(3))
    ),
    ValueError,
    "labels must be in [0, 3), got values from 3",
)
case(FT.predict, lambda: FT.predict(None, labelled()), TypeError, "model must be an nn.Module")
case(
    FT.accuracy,
    lambda: FT.accuracy(classifier(), (ids([1]), ids([0]))),
    TypeError,
    "data must be a ClassificationBatch, got tuple",
)
case(
    FT.encode_features,
    lambda: FT.encode_features(nn.Linear(2, 2), labelled()),
    TypeError,
    "model must be a SequenceClassifier, got Linear",
)
case(SCH.warmup_linear, lambda: SCH.warmup_linear(0), ValueError, "steps must be a positive int")
case(SCH.warmup_linear, lambda: SCH.warmup_linear(10, 1.5), ValueError, "warmup must be a share")
case(
    FT.train_classifier,
    lambda: FT.train_classifier(nn.Linear(2, 2), labelled(), steps=1, batch_size=2, lr=1e-3),
    TypeError,
    "model must be a SequenceClassifier, got Linear",
)
case(
    FT.fit_probe,
    lambda: FT.fit_probe(f(4), ids(0, 1, 2, 0), 3),
    ValueError,
    "features must be a [n, d] tensor, got (4,)",
)
case(
    FT.fit_probe,
    lambda: FT.fit_probe(f(4, 2), ids(0, 1, 2, 0), 2),
    ValueError,
    "labels must be in [0, 2), got values from 0 to 2",
)
case(GR.split_passages, lambda: GR.split_passages(["a line"]), TypeError, "text must be a str")
case(
    GR.split_passages,
    lambda: GR.split_passages("a", words=0),
    ValueError,
    "words must be a positive int, got 0",
)
case(GR.genre_task, lambda: GR.genre_task(0), ValueError, "test_per_genre must be positive, got 0")
case(GR.genre_task, lambda: GR.genre_task(2.5), TypeError, "test_per_genre must be an int")
case(
    GR.sample_labelled,
    lambda: GR.sample_labelled([], 10, 0),
    ValueError,
    "n must be a positive multiple of 3, got 10",
)
case(
    GR.sample_labelled,
    lambda: GR.sample_labelled([GR.Passage("a", 0, "x")] * 3, 3, 0),
    ValueError,
    "the pool has 0 history passages, need 1",
)
case(
    GR.majority_baseline,
    lambda: GR.majority_baseline(None),
    TypeError,
    "task must be a GenreTask, got NoneType",
)


# --- today's decoder (chapter 14): RMSNorm, RoPE, SwiGLU, GQA, Llama, the GGUF loader -------


RECORDS.add(GL.GGUFContents)
NO_INPUT.add(GL.smollm2_path)
LLAMA_SMALL = dict(d_vocab=11, n_ctx=8, n_layers=1, n_heads=2, n_kv_heads=1, d_model=8, d_mlp=12)


@functools.cache
def llama():
    torch.manual_seed(0)
    return LL.Llama(LL.LlamaConfig(**LLAMA_SMALL)).eval()


case(
    RN.rms_norm,
    lambda: RN.rms_norm(f(2, 4), torch.ones(5)),
    ValueError,
    "x has 4 features but gain has 5",
)
case(
    RN.rms_norm,
    lambda: RN.rms_norm(ids([1, 2]), torch.ones(2)),
    TypeError,
    "expects a floating-point tensor x, got torch.int64",
)
case(RN.RMSNorm, lambda: RN.RMSNorm(4, eps=-1.0), ValueError, "eps must be a positive finite")
case(RN.RMSNorm, lambda: RN.RMSNorm(4)(f(2, 3)), ValueError, "x has 3 features but gain has 4")
case(
    RO.rotary_frequencies,
    lambda: RO.rotary_frequencies(5),
    ValueError,
    "d_head must be a positive even int, got 5",
)
case(
    RO.rotary_cos_sin,
    lambda: RO.rotary_cos_sin(torch.arange(3.0), 4),
    TypeError,
    "positions must be an integer tensor, got torch.float32",
)
case(
    RO.apply_rotary,
    lambda: RO.apply_rotary(f(1, 2, 3, 4), *RO.rotary_cos_sin(torch.arange(5), 4)),
    ValueError,
    "cos must be [..., pos, d_head/2]=(3, 2)",
)
case(
    RO.RotaryEmbedding,
    lambda: RO.RotaryEmbedding(4)(f(1, 2, 3, 6)),
    ValueError,
    "x must be [batch, n_heads, pos, d_head=4], got (1, 2, 3, 6)",
)
case(
    SW.SwiGLU,
    lambda: SW.SwiGLU(4, 8)(f(2, 5)),
    ValueError,
    "SwiGLU expects d_model=4, got shape (2, 5)",
)
case(SW.SwiGLU, lambda: SW.SwiGLU(4, 0), ValueError, "d_mlp must be a positive int, got 0")
case(
    GQ.repeat_kv, lambda: GQ.repeat_kv(f(1, 2, 3, 4), 0), ValueError, "n_rep must be a positive int"
)
case(
    GQ.grouped_query_attention,
    lambda: GQ.grouped_query_attention(f(1, 6, 3, 4), f(1, 4, 3, 4), f(1, 4, 3, 4)),
    ValueError,
    "q has n_heads=6, which n_kv_heads=4 does not divide",
)
case(
    GQ.grouped_query_attention,
    lambda: GQ.grouped_query_attention(f(1, 4, 3, 4), f(1, 2, 3, 4), f(1, 1, 3, 4)),
    ValueError,
    "k has 2 heads but v has 1",
)
case(
    LL.LlamaConfig,
    lambda: LL.LlamaConfig(d_vocab=11, n_heads=4, n_kv_heads=3),
    ValueError,
    "n_heads=4 is not divisible by n_kv_heads=3",
)
case(
    KV.KVCache,
    lambda: KV.KVCache(0),
    ValueError,
    "n_layers must be a positive int, got 0",
)
case(
    LL.LlamaAttention,
    lambda: LL.LlamaAttention(None),
    TypeError,
    "config must be a LlamaConfig, got NoneType",
)
case(
    LL.LlamaBlock,
    lambda: LL.LlamaBlock(LLAMA_SMALL),
    TypeError,
    "config must be a LlamaConfig, got dict",
)
case(
    LL.Llama,
    lambda: llama()(ids([1, 11])),
    ValueError,
    "idx must be in [0, 11), got values from 1 to 11",
)
case(
    LL.Llama,
    lambda: llama()(ids([1, 2]), kv_cache=KV.KVCache(2)),
    ValueError,
    "kv_cache has 2 layers but the model has 1",
)
case(GL.read_gguf, lambda: GL.read_gguf(3), TypeError, "path must be a str or Path, got int")
case(
    GL.unpermute_qk,
    lambda: GL.unpermute_qk(np.zeros((6, 2)), 2),
    ValueError,
    "6 rows do not split into 2 heads of an even size",
)
case(
    GL.llama_config_from_gguf,
    lambda: GL.llama_config_from_gguf({"general.architecture": "gpt2"}),
    ValueError,
    "expected a 'llama' GGUF file, got general.architecture='gpt2'",
)
case(
    GL.llama_from_gguf,
    lambda: GL.llama_from_gguf({}),
    TypeError,
    "contents must be GGUFContents, got dict",
)
case(
    TOK.GGUFTokenizer,
    lambda: TOK.GGUFTokenizer({"tokenizer.ggml.model": "llama"}),
    ValueError,
    "only byte-level BPE ('gpt2') tokenizers are supported, got 'llama'",
)
case(
    GL.smollm2,
    lambda: GL.smollm2(device=3),
    TypeError,
    "device must be a device name or torch.device",
)
case(
    GL.chat,
    lambda: GL.chat(llama(), None, "Hi"),
    TypeError,
    "tokenizer must be a GGUFTokenizer, got NoneType",
)


# --- the architecture diagram ---------------------------------------------------------------

case(AR.boxes, lambda: AR.boxes("bert"), ValueError, "variant must be one of")
case(
    AR.architecture_svg,
    lambda: AR.architecture_svg(highlight=["attention"]),
    ValueError,
    "unknown part(s) ['attention']; the known parts are",
)
case(
    AR.architecture_svg,
    lambda: AR.architecture_svg("encoder", "cross_attention"),
    ValueError,
    "the encoder variant has no ['cross_attention']",
)
case(AR.architecture_svg, lambda: AR.architecture_svg(highlight=3), TypeError, "got 3")
case(AR.architecture_html, lambda: AR.architecture_html(link="web"), ValueError, "got 'web'")
case(AR.architecture_html, lambda: AR.architecture_html(caption=1), TypeError, "got int")
case(
    AR.architecture_diagram,
    lambda: AR.architecture_diagram("decoder", ["self_attention"]),
    ValueError,
    "the decoder variant has no ['self_attention']",
)
case(AR.where_we_are, lambda: AR.where_we_are("02_rnn_bottleneck"), ValueError, "no diagram")


# --- the captioner and its scenes (chapter 3) ----------------------------------------------


NO_INPUT.add(SC.all_scenes)
CAP_SCENE = SC.Scene(SC.Thing("red", "circle", 0, 0), SC.Thing("blue", "square", 1, 2))


@functools.cache
def captioner():
    torch.manual_seed(0)
    return CAP.Captioner(CAP.CaptionerConfig(d_vocab=12, d_model=8, d_embed=4, channels=4)).eval()


case(
    SC.Thing,
    lambda: SC.Thing("purple", "circle", 0, 0),
    ValueError,
    "colour must be one of ['blue', 'green', 'red', 'yellow'], got 'purple'",
)
case(
    SC.Thing,
    lambda: SC.Thing("red", "circle", 3, 0),
    ValueError,
    "row must be an int in 0..2, got 3",
)
case(
    SC.Scene,
    lambda: SC.Scene(SC.Thing("red", "circle", 0, 2), SC.Thing("blue", "square", 0, 1)),
    ValueError,
    "first must stand in a column left of second's, got columns 2 and 1",
)
case(
    SC.Scene,
    lambda: SC.Scene("red circle", CAP_SCENE.second),
    TypeError,
    "a Scene holds two Things, got str, Thing",
)
case(SC.caption, lambda: SC.caption("a red circle"), TypeError, "scene must be a Scene, got str")
case(
    SC.parse_caption,
    lambda: SC.parse_caption("a red circle"),
    TypeError,
    "parse_caption takes a list of words (str)",
)
case(
    SC.parse_caption,
    lambda: SC.parse_caption(["a", "red", "circle", "above"]),
    ValueError,
    "expected a caption 'a <colour> <shape> left of a <colour> <shape>', got 'a red circle above'",
)
case(
    SC.render,
    lambda: SC.render(CAP_SCENE, jitter=2),
    ValueError,
    "jitter must be 0 or 1 pixel, got 2",
)
case(SC.render, lambda: SC.render(None), TypeError, "scene must be a Scene, got NoneType")
case(
    SC.SceneData,
    lambda: SC.SceneData({"test": [CAP_SCENE]}, 0),
    ValueError,
    "splits must be a dict with a non-empty 'train' list of scenes",
)
case(
    SC.SceneData,
    lambda: SC.SceneData({"train": ["a red circle"]}, 0),
    TypeError,
    "splits['train'] must be a non-empty list of Scenes",
)
case(
    SC.load,
    lambda: SC.load(test_fraction=1.5),
    ValueError,
    "test_fraction must be a float in (0, 1), got 1.5",
)
case(SC.load, lambda: SC.load(seed="0"), TypeError, "seed must be an int, got str")
case(
    CAP.CaptionerConfig,
    lambda: CAP.CaptionerConfig(12, canvas=20),
    ValueError,
    "canvas=20 is not a multiple of patch=8",
)
case(
    CAP.CaptionerConfig,
    lambda: CAP.CaptionerConfig(12, score="cosine"),
    ValueError,
    "score must be 'dot', 'multiplicative' or 'additive', got 'cosine'",
)
case(
    CAP.CaptionerConfig,
    lambda: CAP.CaptionerConfig(12, d_model=0),
    ValueError,
    "d_model must be a positive int, got 0",
)
case(
    CAP.ConvEncoder,
    lambda: CAP.ConvEncoder({"d_vocab": 12}),
    TypeError,
    "cfg must be a CaptionerConfig, got dict",
)
case(
    CAP.ConvEncoder,
    lambda: captioner().encoder(f(2, 3, 16, 16)),
    ValueError,
    "images must be [batch, 3, 24, 24], got (2, 3, 16, 16)",
)
case(
    CAP.Captioner,
    lambda: captioner()(f(1, 3, 24, 24), ids([1, 12])),
    ValueError,
    "tgt_in has ids in [1, 12] but the vocabulary has 12 words",
)
case(
    CAP.Captioner,
    lambda: captioner().decode(f(1, 4, 8), ids([1])),
    ValueError,
    "cells must be [batch, 9, 8], got (1, 4, 8)",
)
case(
    CAP.Captioner,
    lambda: captioner().greedy_caption(f(1, 3, 24, 24), max_len=0),
    ValueError,
    "max_len must be a positive int, got 0",
)
case(
    CAP.caption_accuracy,
    lambda: CAP.caption_accuracy(ids([1]), ids([1], [2])),
    ValueError,
    "predicted has 1 captions, reference 2",
)
case(
    CAP.caption_accuracy,
    lambda: CAP.caption_accuracy(f(1, 2), ids([1, 2])),
    TypeError,
    "predicted must be a tensor of word ids, got torch.float32",
)
case(
    VIZ_OVERLAY.attention_overlay,
    lambda: VIZ_OVERLAY.attention_overlay(f(3, 24, 24), f(8)),
    ValueError,
    "8 weights do not tile a 24x24 picture as a square grid",
)
case(
    VIZ_OVERLAY.attention_overlay,
    lambda: VIZ_OVERLAY.attention_overlay(f(24, 24), f(9)),
    ValueError,
    "image must be [3, H, W], got (24, 24)",
)


# --- the tests ------------------------------------------------------------------------------


def _name(target) -> str:
    return getattr(target, "__qualname__", repr(target))


# --- explorations built by the package (chapters 2, 13, 15) ----------------------------------

case(
    V.dropdown_bars,
    lambda: V.dropdown_bars({}, headings={}, dropdown_label="n"),
    ValueError,
    "bars is empty",
)
case(
    V.decoding_explorer,
    lambda: V.decoding_explorer(["a"], {}, {}, [1.0], ["f"], "fr"),
    ValueError,
    "no state or sample for ('f', 1.0)",
)
case(
    V.slider_bars,
    lambda: V.slider_bars({}, ["x"], slider_label="s", title="t"),
    ValueError,
    "states is empty",
)
case(V.wrap_title, lambda: V.wrap_title(None), TypeError, "expected string")
case(V.title_layout, lambda: V.title_layout(None, 400), TypeError, "expected string")


# --- what chapters show: numbered figures, listings, tables, the progress line ---------------


class _Drawing:
    def _repr_svg_(self):
        return "<svg></svg>"


case(DSP.figure_number, lambda: DSP.figure_number("figure-1"), ValueError, "ch02-some-words")
case(DSP.figure, lambda: DSP.figure(_Drawing(), "chapter2", "c", "a"), ValueError, "look like")
case(DSP.figure, lambda: DSP.figure(_Drawing(), "ch99-x", "", "a"), ValueError, "caption must")
case(DSP.figure, lambda: DSP.figure(_Drawing(), "ch99-y", "c", None), ValueError, "alt must")
case(DSP.figure, lambda: DSP.figure(42, "ch99-z", "c", "a"), TypeError, "Matplotlib figure")
case(DSP.source, lambda: DSP.source(42), TypeError, "source needs")
case(DSP.source, lambda: DSP.source("transformer_lab.nn.masks.nope"), ValueError, "has no 'nope'")
case(DSP.source, lambda: DSP.source(DSP.table, start_at="zzz"), ValueError, "start_at='zzz'")
case(DSP.source, lambda: DSP.source(DSP.table, end_before="zzz"), ValueError, "end_before")
case(DSP.table, lambda: DSP.table([(1, 2, 3)], ["a", "b"]), ValueError, "row 0 has 3 cells")
case(PRG.progress_bar, lambda: PRG.progress_bar(-1, "x"), ValueError, "non-negative int")
case(PRG.progress_bar, lambda: PRG.progress_bar(True, "x"), ValueError, "non-negative int")
case(PRG.progress_bar, lambda: PRG.progress_bar(3, None), TypeError, "desc must be a string")


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


def public_callables() -> dict[int, tuple[object, str]]:
    """Every callable named in the ``__all__`` of a package module (exercises excepted)."""
    found: dict[int, tuple[object, str]] = {}
    modules = [transformer_lab] + [
        importlib.import_module(m.name)
        for m in pkgutil.walk_packages(transformer_lab.__path__, "transformer_lab.")
        if not m.name.startswith("transformer_lab.exercises")
    ]
    for module in modules:
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if callable(obj):
                found.setdefault(id(obj), (obj, f"{module.__name__}.{name}"))
    return found


def test_every_public_callable_has_bad_inputs_in_the_table():
    covered = {id(c[0]) for c in CASES} | {id(o) for o in RECORDS | PREDICATES | NO_INPUT}
    missing = sorted(name for key, (_, name) in public_callables().items() if key not in covered)
    assert not missing, f"add bad inputs for these public callables to CASES: {missing}"


def test_no_public_callable_returns_nan_for_a_documented_edge():
    """A fully masked row and a padded batch give zeros or finite values, never NaN."""
    q = k = v = f(1, 2, 3, 4)
    mask = torch.zeros(3, 3, dtype=torch.bool)
    for need_weights in (True, False):
        out, _ = A.scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights)
        assert torch.equal(out, torch.zeros_like(out))
    assert np.isfinite(gpt()(ids([1, 2, 3])).detach().numpy()).all()
