"""What the bad-input cases share: the ``case`` register, the small models and tensors the
cases are built on, and the callables that need no case (records, predicates, questions
about the process). Each stage's cases live beside its tests (``tests/nn/bad_inputs_nn.py``
...); ``tests/test_bad_inputs.py`` runs them all and checks that none is missing."""

from __future__ import annotations

import functools
import importlib
import pkgutil

import numpy as np
import pytest
import torch
from torch import nn

import transformer_lab
from transformer_lab import checks as CHECKS
from transformer_lab import hooks as H
from transformer_lab import viz as V
from transformer_lab.analysis import baselines as BL
from transformer_lab.analysis import head_patterns as ANALYSIS_HEAD_PATTERNS
from transformer_lab.analysis import loss_surface as ANALYSIS_LOSS_SURFACE
from transformer_lab.analysis import sequential_depth as PA
from transformer_lab.analysis import word_vectors as E
from transformer_lab.data import cache as CACHE
from transformer_lab.data import genres as GR
from transformer_lab.data import gguf_tokenizer as GT
from transformer_lab.data import mlm as MLM
from transformer_lab.data import number_words as NW
from transformer_lab.data import numbers as NU
from transformer_lab.data import scenes as SC
from transformer_lab.data import shakespeare as SH
from transformer_lab.data import tokenizers as TK
from transformer_lab.data import topics as TOP
from transformer_lab.data import toy as DATA_TOY
from transformer_lab.data import wordpiece as WP
from transformer_lab.generation import sampling as G
from transformer_lab.generation import search as D
from transformer_lab.models import bert as BE
from transformer_lab.models import captioner as CAP
from transformer_lab.models import gpt as GP
from transformer_lab.models import llama as LL
from transformer_lab.models import rnn as R
from transformer_lab.models import toy as MODELS_TOY
from transformer_lab.models import transformer as TR
from transformer_lab.nn import attention as NN_ATTENTION
from transformer_lab.nn import blocks as B
from transformer_lab.nn import feed_forward as SW
from transformer_lab.nn import kv_cache as KV
from transformer_lab.nn import masks as M
from transformer_lab.nn import multi_head as NN_MULTI_HEAD
from transformer_lab.nn import norms as RN
from transformer_lab.nn import positions as P
from transformer_lab.nn import positions as RO
from transformer_lab.nn import scores as NN_SCORES
from transformer_lab.pretrained import minilm as PT
from transformer_lab.pretrained import smollm2 as GL
from transformer_lab.pretrained import tiny_bert as PRETRAINED_TINY_BERT
from transformer_lab.training import bert_pretraining as BP
from transformer_lab.training import bert_reports as BR
from transformer_lab.training import checkpoint as CK
from transformer_lab.training import distributed as DI
from transformer_lab.training import finetune as FT
from transformer_lab.training import gpt as TRAINING_GPT
from transformer_lab.training import loop as TRN
from transformer_lab.training import losses as TRAINING_LOSSES
from transformer_lab.training import progress as PRG
from transformer_lab.training import schedules as SCH
from transformer_lab.training import toy as T
from transformer_lab.training import train_gpt as TG
from transformer_lab.viz import bertviz as BV
from transformer_lab.viz import display as DSP
from transformer_lab.viz import figure_text as FIGURE_TEXT
from transformer_lab.viz.chapters import architecture as AR
from transformer_lab.viz.chapters import overlay as VIZ_OVERLAY
from transformer_lab.viz.chapters import timeline as TL
from transformer_lab.viz.chapters import toy_attention as W
from transformer_lab.viz.chapters import word_map as WM

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
    TOP.Sentence,
    TOP.TopicTask,
    DI.DistInfo,
    BP.ShakespeareCorpus,
    BP.ShakespeareWords,
}

# Predicates: any object is a fair question (answer False).
PREDICATES = {PA.is_matrix_product, CHECKS.is_int}

# Questions about the process itself, with no input to get wrong.
NO_INPUT = {DI.launched, DI.info, DI.teardown, CK.rng_state}


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
    return WP.WordPieceTokenizer.train(texts, vocab_size=60, min_frequency=1)


def ids(*rows):
    return torch.tensor(rows)


def f(*shape):
    return torch.randn(*shape)


def x3(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


for n in (0, 1, 2):
    case(
        WP.WordPieceTokenizer,
        lambda n=n: wordpiece()("the cat", max_length=n),
        ValueError,
        f"max_length must be an int >= 3 (room for [CLS] A [SEP] with at least one token "
        f"per text), got {n}",
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


@functools.cache
def classifier():
    torch.manual_seed(0)
    cfg = BE.BertConfig(d_vocab=20, d_model=8, n_heads=2, d_mlp=16, n_layers=1, max_pos=16)
    return FT.SequenceClassifier(BE.BertModel(cfg), 3)


def labelled(n=4):
    return FT.ClassificationBatch(
        ids(*[[1, 2, 3]] * n), torch.ones(n, 3, dtype=torch.long), torch.arange(n) % 3
    )


RECORDS.add(GL.GGUFContents)

NO_INPUT.add(GL.smollm2_path)

LLAMA_SMALL = dict(d_vocab=11, n_ctx=8, n_layers=1, n_heads=2, n_kv_heads=1, d_model=8, d_mlp=12)


@functools.cache
def llama():
    torch.manual_seed(0)
    return LL.Llama(LL.LlamaConfig(**LLAMA_SMALL)).eval()


NO_INPUT.add(SC.all_scenes)

from transformer_lab.nn import row_kernels as RK  # noqa: E402

NO_INPUT.update({RK.kernels_available, RK.kernels_status})  # they report; nothing to refuse

CAP_SCENE = SC.Scene(SC.Thing("red", "circle", 0, 0), SC.Thing("blue", "square", 1, 2))


@functools.cache
def captioner():
    torch.manual_seed(0)
    return CAP.Captioner(CAP.CaptionerConfig(d_vocab=12, d_model=8, d_embed=4, channels=4)).eval()


class _Drawing:
    def _repr_svg_(self):
        return "<svg></svg>"


def gguf_contents(**changes) -> GL.GGUFContents:
    """A small llama GGUF file's contents (LLAMA_SMALL's sizes, random weights), as
    :func:`GL.read_gguf` would return them; ``changes`` replace tensors by name."""
    c = LL.LlamaConfig(**LLAMA_SMALL)
    d, q, kv = c.d_model, c.n_heads * c.d_head, c.n_kv_heads * c.d_head
    meta = {
        "general.architecture": "llama",
        "llama.block_count": c.n_layers,
        "llama.context_length": c.n_ctx,
        "llama.embedding_length": d,
        "llama.feed_forward_length": c.d_mlp,
        "llama.attention.head_count": c.n_heads,
        "llama.attention.head_count_kv": c.n_kv_heads,
        "llama.attention.layer_norm_rms_epsilon": 1e-5,
        "llama.vocab_size": c.d_vocab,
    }
    shapes = {"token_embd.weight": (c.d_vocab, d), "output_norm.weight": (d,)}
    for i in range(c.n_layers):
        shapes |= {
            f"blk.{i}.attn_norm.weight": (d,),
            f"blk.{i}.ffn_norm.weight": (d,),
            f"blk.{i}.attn_q.weight": (q, d),
            f"blk.{i}.attn_k.weight": (kv, d),
            f"blk.{i}.attn_v.weight": (kv, d),
            f"blk.{i}.attn_output.weight": (d, q),
            f"blk.{i}.ffn_gate.weight": (c.d_mlp, d),
            f"blk.{i}.ffn_up.weight": (c.d_mlp, d),
            f"blk.{i}.ffn_down.weight": (d, c.d_mlp),
        }
    rng = np.random.default_rng(0)
    tensors = {k: rng.standard_normal(v).astype(np.float32) for k, v in shapes.items()}
    tensors |= changes
    return GL.GGUFContents(meta, tensors, {k: "F32" for k in tensors})


class DigitTokenizer:
    """A tokenizer of nine ids (1..9) for the LoRA and greedy-answer tables; 0 ends text."""

    eos_id = 0

    def encode(self, text):
        return [1 + ord(c) % 9 for c in text]

    def decode(self, ids):
        return "".join(chr(48 + i) for i in ids)


def tiny_llama():
    """A one-block random Llama of 11 tokens for the LoRA and greedy-answer tables."""
    from transformer_lab.models.llama import Llama, LlamaConfig

    torch.manual_seed(0)
    c = LlamaConfig(d_vocab=11, n_ctx=16, n_layers=1, n_heads=2, n_kv_heads=1, d_model=8, d_mlp=12)
    return Llama(c)
