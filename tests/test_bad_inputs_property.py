"""Property: a public callable given one bad argument raises a clear error from the package.

For each callable with a valid call in :data:`VALID`, hypothesis replaces one argument at a
time by a value drawn for that argument's kind (the type of its valid value):

- ``invalid`` values (a wrong type, NaN, a string for a number, a float for an int, a bool,
  a list for a tensor): the call must raise a ``ValueError`` or ``TypeError``;
- ``edge`` values (zero, negative and huge sizes, infinities, empty tensors, another dtype,
  one dimension more): the call may succeed, but a result that was finite for the valid
  call must stay finite;
- ``numpy`` values (the valid number as ``np.int64``, ``np.float32`` ...): must be accepted.

Every error must be a ``ValueError``/``TypeError`` raised by the package's own code (the
last frame of its traceback is in ``transformer_lab``), never an error from deep inside
torch or NumPy, nor another type (RuntimeError, IndexError ...), and every call must end
within :data:`TIME_LIMIT` seconds. Callables without a valid call here are listed in
:data:`SKIPPED` with the reason; failures that belong to code fixed elsewhere are listed in
:data:`KNOWN_FAILURES` and checked to still fail, so the list shrinks as they are fixed."""

from __future__ import annotations

import functools
import inspect
import math
import os
import signal
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from bad_input_support import (
    CAP,
    CAP_SCENE,
    CHECKS,
    FT,
    GL,
    GR,
    NO_INPUT,
    PREDICATES,
    RECORDS,
    SC,
    TK,
    WM,
    E,
    M,
    bert,
    captioner,
    classifier,
    gguf_contents,
    gpt,
    ids,
    labelled,
    wordpiece,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_bad_inputs import public_callables

import transformer_lab
from transformer_lab import viz as VIZ
from transformer_lab.analysis import alignment as ALIGN
from transformer_lab.analysis import roofline as ROOF
from transformer_lab.analysis import speech_metrics as SPM
from transformer_lab.analysis import text_loss as TLOSS
from transformer_lab.data import recall as RD
from transformer_lab.data import speech as SPEECH
from transformer_lab.data import toy_sentences as TOY_SENTENCES
from transformer_lab.models import gpt as GPT_MOD
from transformer_lab.models import ngram as NG
from transformer_lab.models import recall as RM
from transformer_lab.nn import pooling as POOL
from transformer_lab.nn import stored_weights as STORED
from transformer_lab.nn.functional import at_least_float32
from transformer_lab.pretrained import book_gpt as BOOK_GPT
from transformer_lab.pretrained import ctranslate2_format as CT2_FORMAT
from transformer_lab.pretrained import whisper as WHISPER
from transformer_lab.training import lora as TRAINING_LORA
from transformer_lab.training import recall as RT
from transformer_lab.training import run as RUN
from transformer_lab.training import toy as TRAINING_TOY
from transformer_lab.viz import bar_labels as BAR_LABELS
from transformer_lab.viz.chapters import pictures as PICTURES
from transformer_lab.viz.chapters import pictures_ring as PICTURES_RING

PACKAGE = str(Path(transformer_lab.__file__).resolve().parent)
TIME_LIMIT = 10.0  # seconds per call


def _scene_data():
    return SC.SceneData({"train": SC.all_scenes()[:4]}, 0)


def _vectors():
    gen = torch.Generator().manual_seed(0)
    return torch.randn(6, 4, generator=gen), TK.Vocabulary(list("abcdef"))


def _passages():
    return [GR.Passage(f"text {i}", i % 3, "play") for i in range(6)]


def _gru_state():
    cells = captioner().encode(torch.rand(1, 3, 24, 24))
    return ids(1), captioner().start(cells), cells


def _axes_with_bars():
    """Matplotlib axes (outside pyplot's open figures) with two bars, one of height zero."""
    from matplotlib.figure import Figure

    ax = Figure().add_subplot()
    ax.bar([0, 1], [0.0, 1.0])
    return ax


def _recall_model():
    config = RM.RecallConfig("gpt", n_keys=8, n_values=4, d_model=8, n_ctx=8, n_heads=2)
    return RM.RecallLM(config)


def _recall_batch():
    return RD.RecallTask(n_keys=8, n_values=4).batch(2, 3, torch.Generator().manual_seed(0))


@functools.cache
def _ct2_file() -> str:
    """A small CTranslate2 model.bin in a temporary folder (one float16 variable, an alias)."""
    folder = Path(tempfile.mkdtemp(prefix="property_ct2_"))
    variables = {"w": torch.ones(2, 3, dtype=torch.float16)}
    return str(CT2_FORMAT.write_ctranslate2(folder, variables, spec="T", aliases={"v": "w"}))


# name -> () -> (callable, args, kwargs): one valid call each, on small inputs
VALID = {
    "transformer_lab.analysis.roofline.roofline": lambda: (ROOF.roofline, (5e8, 2.8e10), {}),
    "transformer_lab.nn.stored_weights.StoredWeight": lambda: (
        STORED.StoredWeight, (torch.randn(6, 4), "int8"), {}),
    "transformer_lab.nn.stored_weights.storage_supported": lambda: (
        STORED.storage_supported, ("bfloat16",), {}),
    "transformer_lab.analysis.alignment.dtw_path": lambda: (
        ALIGN.dtw_path, (torch.rand(3, 5),), {}),
    "transformer_lab.analysis.alignment.token_words": lambda: (
        ALIGN.token_words, ([" a", "b", " c"],), {}),
    "transformer_lab.analysis.alignment.attention_word_times": lambda: (
        ALIGN.attention_word_times, (torch.rand(2, 4, 12), [" a", " b", " c"], 10, 50.0), {}),
    "transformer_lab.analysis.alignment.voiced_span": lambda: (
        ALIGN.voiced_span, (torch.sin(torch.arange(400.0)), 1000), {}),
    "transformer_lab.analysis.alignment.spread_word_times": lambda: (
        ALIGN.spread_word_times, (["ab", "c"], 0.5, 1.5), {}),
    "transformer_lab.analysis.alignment.timing_errors": lambda: (
        ALIGN.timing_errors, ([("a", 0.0, 0.5)], [("a", 0.1, 0.4)]), {}),
    "transformer_lab.pretrained.book_gpt.quantize_rows": lambda: (
        BOOK_GPT.quantize_rows,
        (torch.randn(3, 4),), {}),
    "transformer_lab.checks.integer": lambda: (CHECKS.integer, (3, "n"), {"minimum": 1}),
    "transformer_lab.checks.seed_int": lambda: (CHECKS.seed_int, (7,), {}),
    "transformer_lab.checks.finite_number": lambda: (
        CHECKS.finite_number, (0.5, "x"), {"above": 0.0}),
    "transformer_lab.checks.fraction": lambda: (CHECKS.fraction, (0.5, "p"), {}),
    "transformer_lab.checks.floating_tensor": lambda: (
        CHECKS.floating_tensor, (torch.ones(2, 3), "x"), {"dim": 2}),
    "transformer_lab.checks.token_ids": lambda: (CHECKS.token_ids, (ids(1, 2),), {}),
    "transformer_lab.checks.token_batch": lambda: (CHECKS.token_batch, (ids([1, 2]),), {}),
    "transformer_lab.checks.check_token_range": lambda: (
        CHECKS.check_token_range, (ids([1, 2]), 5), {}),
    "transformer_lab.checks.check_labels": lambda: (CHECKS.check_labels, (ids(0, 1), 3), {}),
    "transformer_lab.checks.check_token_batch": lambda: (
        CHECKS.check_token_batch, (ids([1, 2]), 8, 5), {}),
    "transformer_lab.checks.layer_input": lambda: (
        CHECKS.layer_input, (torch.ones(2, 4), 4, "LayerNorm"), {}),
    "transformer_lab.nn.functional.at_least_float32": lambda: (
        at_least_float32, (torch.ones(2, 3, dtype=torch.float16),), {}),
    "transformer_lab.nn.masks.causal_mask": lambda: (M.causal_mask, (4,), {}),
    "transformer_lab.nn.masks.padding_mask": lambda: (M.padding_mask, (ids(2, 3), 4), {}),
    "transformer_lab.nn.pooling.mean_pool": lambda: (
        POOL.mean_pool, (torch.ones(2, 3, 4), ids([1, 1, 0], [1, 0, 0])), {}),
    "transformer_lab.models.classifier.SequenceClassifier": lambda: (
        type(classifier()), (bert().bert, 3), {"pooling": "mean", "dropout": 0.1}),
    "transformer_lab.training.finetune.build_classifier": lambda: (
        FT.build_classifier, (bert().bert, 3, "probe"), {"pooling": "cls", "seed": 0}),
    "transformer_lab.training.finetune.ClassificationBatch": lambda: (
        FT.ClassificationBatch, labelled()._tensors(), {}),
    "transformer_lab.training.finetune.tokenize_labelled": lambda: (
        FT.tokenize_labelled, (wordpiece(), ["the cat", "a dog"], [0, 1], 8), {}),
    "transformer_lab.training.finetune.classification_batches": lambda: (
        FT.classification_batches, (labelled(), 2, 0), {}),
    "transformer_lab.training.finetune.classification_loss": lambda: (
        FT.classification_loss, (classifier(), labelled()), {}),
    "transformer_lab.training.finetune.predict": lambda: (
        FT.predict, (classifier(), labelled()), {"batch_size": 2}),
    "transformer_lab.training.finetune.classification_accuracy": lambda: (
        FT.classification_accuracy, (classifier(), labelled()), {"batch_size": 2}),
    "transformer_lab.training.finetune.encode_features": lambda: (
        FT.encode_features, (classifier(), labelled()), {"batch_size": 2}),
    "transformer_lab.training.finetune.ClassifierRecipe": lambda: (
        FT.ClassifierRecipe, (),
        {"steps": 2, "batch_size": 2, "lr": 1e-3, "encoder_lr": 1e-4, "weight_decay": 0.01,
         "warmup": 0.1}),
    "transformer_lab.training.finetune.train_classifier": lambda: (
        FT.train_classifier,
        (FT.build_classifier(bert().bert, 3, "finetune"), labelled(),
         FT.ClassifierRecipe(steps=2, batch_size=2, lr=1e-3, encoder_lr=1e-4),
         RUN.Run(seed=0)), {}),
    "transformer_lab.training.lora.LoraRecipe": lambda: (
        TRAINING_LORA.LoraRecipe, (),
        {"steps": 3, "batch_size": 2, "lr": 1e-3, "weight_decay": 0.0, "warmup": 0.1}),
    "transformer_lab.training.toy.ToyRecipe": lambda: (
        TRAINING_TOY.ToyRecipe, (), {"batch_size": 4, "lengths": 6, "lr": 1e-3, "grad_clip": 1.0}),
    "transformer_lab.training.finetune.fit_probe": lambda: (
        FT.fit_probe, (torch.randn(6, 3), ids(0, 1, 2, 0, 1, 2), 3),
        {"steps": 3, "lr": 0.01, "weight_decay": 0.01, "seed": 0}),
    "transformer_lab.models.gpt.init_blocks": lambda: (
        GPT_MOD.init_blocks, (gpt().blocks, 0.02), {}),
    "transformer_lab.data.recall.RecallTask": lambda: (RD.RecallTask, (), {"n_keys": 8}),
    "transformer_lab.models.recall.RecallConfig": lambda: (RM.RecallConfig, ("gru",), {}),
    "transformer_lab.models.recall.RecallLM": lambda: (
        RM.RecallLM, (RM.RecallConfig("lstm", n_keys=8, n_values=4, d_model=8),), {}),
    "transformer_lab.models.recall.matched_width": lambda: (
        RM.matched_width, ("gru", 2000), {"n_keys": 8, "n_values": 4}),
    "transformer_lab.training.recall.new_model": lambda: (
        RT.new_model, ("gru", RD.RecallTask(n_keys=8, n_values=4)), {}),
    "transformer_lab.training.recall.recall_loss": lambda: (
        RT.recall_loss, (_recall_model(), _recall_batch()), {}),
    "transformer_lab.training.recall.recall_accuracy": lambda: (
        RT.recall_accuracy, (_recall_model(), _recall_batch()), {}),
    "transformer_lab.training.recall.RecallRecipe": lambda: (
        RT.RecallRecipe, (), {"lr": 1e-3, "batch_size": 4, "evals": 2}),
    "transformer_lab.training.recall.train_recall": lambda: (
        RT.train_recall,
        (_recall_model(), RD.RecallTask(n_keys=8, n_values=4), 2,
         RT.RecallRecipe(lr=1e-3, batch_size=4), RUN.Run(steps=2)), {}),
    "transformer_lab.training.recall.choose_lr": lambda: (
        RT.choose_lr, ("gru", RD.RecallTask(n_keys=8, n_values=4), 2),
        {"steps": 1, "lrs": (1e-3,), "batch_size": 4}),
    "transformer_lab.models.ngram.NGramLM": lambda: (NG.NGramLM, (3, 5), {"discount": 0.5}),
    "transformer_lab.models.ngram.select_ngram": lambda: (
        NG.select_ngram, (ids(0, 1, 2, 3, 4, 0, 1, 2), ids(0, 1, 2, 3), 5),
        {"orders": (1, 2), "discounts": (None, 0.5)}),
    "transformer_lab.models.captioner.CaptionerConfig": lambda: (
        CAP.CaptionerConfig, (12,), {"d_model": 8, "d_embed": 4, "channels": 4, "max_len": 5}),
    "transformer_lab.models.captioner.ConvEncoder": lambda: (
        CAP.ConvEncoder, (captioner().config,), {}),
    "transformer_lab.models.captioner.Captioner": lambda: (
        CAP.Captioner, (captioner().config,), {}),
    "transformer_lab.models.captioner.caption_accuracy": lambda: (
        CAP.caption_accuracy, (ids([3, 2, 0]), ids([3, 2])), {"pad_id": 0}),
    "transformer_lab.data.scenes.Thing": lambda: (SC.Thing, ("red", "circle", 0, 1), {}),
    "transformer_lab.data.scenes.Scene": lambda: (
        SC.Scene, (CAP_SCENE.first, CAP_SCENE.second), {}),
    "transformer_lab.data.scenes.caption": lambda: (SC.caption, (CAP_SCENE,), {}),
    "transformer_lab.data.scenes.parse_caption": lambda: (
        SC.parse_caption, (SC.caption(CAP_SCENE),), {}),
    "transformer_lab.data.scenes.render": lambda: (
        SC.render, (CAP_SCENE, torch.Generator().manual_seed(0)), {"jitter": 1, "noise": 0.05}),
    "transformer_lab.data.scenes.SceneData": lambda: (
        SC.SceneData, ({"train": SC.all_scenes()[:3]}, 0), {}),
    "transformer_lab.training.run.Run": lambda: (
        RUN.Run, (), {"steps": 3, "seed": 0, "threads": 1, "desc": "demo", "eval_every": 1,
                      "eval_fn": lambda m: 0.0, "progress": False, "config": {"a": 1}}),
    "transformer_lab.data.genres.split_passages": lambda: (
        GR.split_passages, ("HAMLET:\nTo be or not to be\nthat is the question\n",), {"words": 3}),
    "transformer_lab.data.genres.sample_labelled": lambda: (
        GR.sample_labelled, (_passages(), 3, 0), {}),
    "transformer_lab.data.genres.majority_baseline": lambda: (
        GR.majority_baseline, (GR.GenreTask(tuple(_passages()), tuple(_passages())),), {}),
    "transformer_lab.analysis.text_loss.text_loss": lambda: (
        TLOSS.text_loss, (gpt(), TK.CharTokenizer("abc"), "abcab"),
        {"window": 4, "stride": 2, "start_id": 0}),
    "transformer_lab.analysis.word_vectors.one_hot": lambda: (E.one_hot, (ids(1, 2), 4), {}),
    "transformer_lab.analysis.word_vectors.cosine_similarity": lambda: (
        E.cosine_similarity, (torch.randn(3, 4), torch.randn(4)), {}),
    "transformer_lab.analysis.word_vectors.euclidean_distance": lambda: (
        E.euclidean_distance, (torch.randn(3, 4), torch.randn(4)), {}),
    "transformer_lab.analysis.word_vectors.nearest": lambda: (
        E.nearest, ("a", *_vectors()), {"k": 2, "metric": "cosine"}),
    "transformer_lab.analysis.word_vectors.pca_2d": lambda: (E.pca_2d, (torch.randn(5, 3),), {}),
    "transformer_lab.analysis.word_vectors.group_separation": lambda: (
        E.group_separation, (torch.randn(4, 3), ["x", "x", "y", "y"]), {}),
    "transformer_lab.analysis.word_vectors.analogy": lambda: (
        E.analogy, ("a", "b", "c", *_vectors()), {"k": 2}),
    "transformer_lab.analysis.word_vectors.analogy_rank": lambda: (
        E.analogy_rank, ("a", "b", "c", "d", *_vectors()), {"query": "a-b+c"}),
    "transformer_lab.viz.chapters.word_map.word_map_plotly": lambda: (
        WM.word_map_plotly, (torch.randn(2, 2), ["a", "b"], ["x", "y"]),
        {"arrows": {"m": [("a", "b")]}, "title": "t"}),
    "transformer_lab.pretrained.smollm2.unpermute_qk": lambda: (
        GL.unpermute_qk, (np.zeros((8, 3), np.float32), 2), {}),
    "transformer_lab.pretrained.smollm2.llama_config_from_gguf": lambda: (
        GL.llama_config_from_gguf, (gguf_contents().metadata,), {}),
    "transformer_lab.pretrained.smollm2.llama_from_gguf": lambda: (
        GL.llama_from_gguf, (gguf_contents(),), {}),
    "transformer_lab.data.toy_sentences.tokenize": lambda: (
        TOY_SENTENCES.tokenize, ("I love dogs.",), {}),
    "transformer_lab.data.toy_sentences.token_embedding": lambda: (
        TOY_SENTENCES.token_embedding, ("dogs",), {}),
    "transformer_lab.data.speech.speak": lambda: (
        SPEECH.speak, ("hi",), {"words_per_minute": 150, "voice": "en-us", "pause_ms": 0}),
    "transformer_lab.analysis.speech_metrics.words_in": lambda: (SPM.words_in, ("A b!",), {}),
    "transformer_lab.analysis.speech_metrics.word_error_rate": lambda: (
        SPM.word_error_rate, ("the cat sat", "the bat sat"), {}),
    "transformer_lab.pretrained.ctranslate2_format.read_ctranslate2": lambda: (
        CT2_FORMAT.read_ctranslate2, (_ct2_file(),), {}),
    "transformer_lab.pretrained.whisper.log_mel": lambda: (
        WHISPER.log_mel, (0.1 * torch.randn(1600),), {"sample_rate": 16000, "truncate": False}),
    "transformer_lab.pretrained.whisper.mel_filters": lambda: (
        WHISPER.mel_filters, (8,), {"n_fft": 64, "sample_rate": 8000}),
    "transformer_lab.pretrained.whisper.whisper_sinusoids": lambda: (
        WHISPER.whisper_sinusoids, (4, 8), {"max_timescale": 100.0}),
    "transformer_lab.pretrained.whisper.WhisperConfig": lambda: (
        WHISPER.WhisperConfig, (),
        {"d_model": 8, "n_audio_heads": 2, "n_text_heads": 2, "d_mlp": 8, "eps": 1e-5}),
    "transformer_lab.pretrained.whisper.WhisperGeneration": lambda: (
        WHISPER.WhisperGeneration, (),
        {"sot_id": 5, "suppress_ids": (1, 2), "suppress_ids_begin": (3,),
         "alignment_heads": ((0, 1),), "max_length": 16}),
    "transformer_lab.viz.label_bars": lambda: (
        VIZ.label_bars, (_axes_with_bars(),), {"fmt": ".2f", "fontsize": 8.0, "zero_text": "0"}),
    "transformer_lab.viz.chapters.pictures.qkv_shapes_figure": lambda: (
        PICTURES.qkv_shapes_figure, (4, 8, 4), {"d_v": 2}),
    "transformer_lab.viz.chapters.pictures.head_split_figure": lambda: (
        PICTURES.head_split_figure, (8, 2), {"n_tokens": 2}),
    "transformer_lab.viz.chapters.pictures.kv_cache_figure": lambda: (
        PICTURES.kv_cache_figure, (["a", "b"], 4), {}),
    "transformer_lab.viz.chapters.pictures.lora_figure": lambda: (
        PICTURES.lora_figure, (8, 6, 2), {"alpha": 4.0}),
    "transformer_lab.viz.chapters.pictures_ring.ring_all_reduce_figure": lambda: (
        PICTURES_RING.ring_all_reduce_figure, (3,), {}),
    "transformer_lab.viz.bar_labels.value_labels": lambda: (
        BAR_LABELS.value_labels, ([0.0, 0.004, -0.5, 1.0],), {"fmt": ".2f"}),
}  # fmt: skip

# callables without a valid call here, each with the reason
_R0 = "measures a model or the autograd graph; table cases in tests/analysis/bad_inputs_analysis.py"
_R1 = "package-level helper; table cases in bad_inputs_core.py"
_R2 = (
    "a check of the package's own callers: its name and choices come from the call site; "
    "table cases in bad_inputs_core.py"
)
_R3 = "reads a data set or tokenizer state; table cases in tests/data/bad_inputs_data.py"
_R4 = "decoding loop over a model; table cases in tests/generation/bad_inputs_generation.py"
_R5 = (
    "a model class or config whose valid call needs a config object; table cases in "
    "tests/models/bad_inputs_models.py"
)
_R6 = (
    "a layer or function of nn/, whose inputs have tied shapes (heads, masks, caches) that "
    "one-at-a-time substitution cannot keep valid; table cases in tests/nn/bad_inputs_nn.py"
)
_R7 = (
    "needs the installed pretrained weights or a trained tokenizer; table cases in "
    "tests/pretrained/bad_inputs_pretrained.py"
)
_R8 = (
    "a training run or its plumbing (processes, files, clocks): too slow or stateful for a "
    "per-argument search; table cases in tests/training/bad_inputs_training.py"
)
_R9 = (
    "builds a figure or widget from a model or records; table cases in tests/viz/bad_inputs_viz.py"
)
_R_TOKENIZERS = (
    "needs a trained WordPiece tokenizer or a GGUF file's vocabulary; table cases in "
    "tests/data/bad_inputs_tokenizers.py"
)
_R_EXPORT = (
    "exports a model, measures a tokenizer or reads the shipped GPT checkpoint (seconds, "
    "files); table cases in tests/export/bad_inputs_export.py"
)
_R_WHISPER = (
    "needs Whisper's installed weights and tokenizer, or a model built from a config (a "
    "second or more a call); table cases in tests/pretrained/bad_inputs_whisper.py"
)
SKIPPED = {
    "transformer_lab.nn.stored_weights.store_matrices": "replaces a module's parameters in "
    "place (a drawn module has none to store); table cases in tests/nn/bad_inputs_nn.py",
    "transformer_lab.nn.stored_weights.pack_rows": "moves stored matrices' rows in place (a "
    "drawn list holds none); table cases in tests/nn/bad_inputs_decode.py",
    "transformer_lab.nn.stored_weights.huge_page_buffer": "maps fresh memory of the size asked "
    "(a drawn size could take gigabytes); table cases in tests/nn/bad_inputs_decode.py",
    "transformer_lab.nn.decode_step.FusedDecoder": "reads a stored model's weights by "
    "address (a drawn substitute has none); table cases in tests/nn/bad_inputs_decode.py",
    "transformer_lab.data.whisper_tokenizer.WhisperTokenizer": _R_WHISPER,
    **{
        f"transformer_lab.pretrained.whisper.{n}": _R_WHISPER
        for n in [
            "WhisperEncoder",
            "WhisperDecoderBlock",
            "WhisperDecoder",
            "Whisper",
            "config_from_ctranslate2",
            "whisper_from_ctranslate2",
            "whisper_tiny_en",
            "greedy_transcribe",
            "transcribe",
        ]
    },
    "transformer_lab.pretrained.whisper.whisper_dir": "takes no argument: it finds the "
    "installed package; table case in tests/pretrained/bad_inputs_whisper.py",
    "transformer_lab.pretrained.ctranslate2_format.write_ctranslate2": "writes a file where "
    "it is told (a substituted path would write into the working folder); table cases in "
    "tests/pretrained/bad_inputs_whisper.py",
    "transformer_lab.pretrained.ctranslate2_format.MissingVariableError": "an exception class; "
    "table case in tests/pretrained/bad_inputs_whisper.py",
    **{
        f"transformer_lab.nn.lora.{n}": "a module to adapt; table cases in "
        "tests/nn/bad_inputs_nn_lora.py"
        for n in [
            "LoRA",
            "add_lora",
            "lora_modules",
            "lora_parameters",
            "merge_lora",
            "unmerge_lora",
            "merged",
            "remove_lora",
            "lora_state_dict",
            "load_lora_state_dict",
            "count_parameters",
        ]
    },
    **{
        f"transformer_lab.training.lora.{n}": "a tokenizer and a decoder; table cases in "
        "tests/training/bad_inputs_training_lora.py"
        for n in [
            "AnswerBatch",
            "answer_batch",
            "answer_batches",
            "answer_loss",
            "answer_exact_match",
            "train_lora",
        ]
    },
    "transformer_lab.generation.answers.greedy_answers": "a tokenizer and a decoder; table "
    "cases in tests/generation/bad_inputs_answers.py",
    **{
        f"transformer_lab.data.german_numbers.{n}": "numbers and words; table cases in "
        "tests/data/bad_inputs_german_numbers.py"
        for n in [
            "german_words",
            "german_number_split",
            "prompt",
            "answer",
            "few_shot_prefix",
            "read_number",
            "nearest_word_answer",
        ]
    },
    "transformer_lab.analysis.baselines.fit_baseline": "fits scikit-learn on texts; "
    "table cases in tests/analysis/bad_inputs_analysis.py",
    "transformer_lab.analysis.baselines.baseline_accuracy": "fits scikit-learn on texts; "
    "table cases in tests/analysis/bad_inputs_analysis.py",
    "transformer_lab.data.topics.fill": "two strings; table cases in tests/data/bad_inputs_data.py",
    "transformer_lab.data.topics.topic_task": "a seed only; table cases in "
    "tests/data/bad_inputs_data.py",
    "transformer_lab.data.topics.sample_labelled": "a pool of Sentences; table cases in "
    "tests/data/bad_inputs_data.py",
    "transformer_lab.analysis.head_patterns.bag_of_words_scores": _R0,
    "transformer_lab.analysis.head_patterns.head_pattern_scores": _R0,
    "transformer_lab.analysis.head_patterns.stack_attentions": _R0,
    "transformer_lab.analysis.head_patterns.top_heads": _R0,
    "transformer_lab.analysis.loss_surface.loss_slice": _R0,
    "transformer_lab.analysis.loss_surface.random_direction": _R0,
    "transformer_lab.analysis.sequential_depth.interleaved_medians": _R0,
    "transformer_lab.analysis.sequential_depth.longest_chain": _R0,
    "transformer_lab.analysis.sequential_depth.multiply_adds": _R0,
    "transformer_lab.analysis.word_vectors.minilm_token_embeddings": _R0,
    "transformer_lab.capture": _R1,
    "transformer_lab.device": _R1,
    "transformer_lab.device.check_device": _R1,
    "transformer_lab.device.evaluating": _R1,
    "transformer_lab.device.num_threads": _R1,
    "transformer_lab.device.gpu_branch": "takes no argument: its input is an environment "
    "variable; table case in bad_inputs_core.py",
    "transformer_lab.hooks.Hook": _R1,
    "transformer_lab.hooks.intervene": "a context manager (checks run on entering); table "
    "cases in tests/training/bad_inputs_recall.py",
    "transformer_lab.analysis.ablation.ablate_heads": "a context manager (checks run on "
    "entering); table cases in tests/training/bad_inputs_recall.py",
    "transformer_lab.run_with_cache": _R1,
    "transformer_lab.seed_everything": _R1,
    "transformer_lab.checks.instance_of": _R2,
    "transformer_lab.checks.one_of": _R2,
    "transformer_lab.checks.torch_module": _R2,
    "transformer_lab.checks.torch_tensor": _R2,
    "transformer_lab.checks.weights_dtype": _R2,
    "transformer_lab.data.cache.cache_dir": _R3,
    "transformer_lab.data.cache.check_writable": _R3,
    "transformer_lab.analysis.roofline.read_bandwidth": "times a read of a large buffer "
    "(seconds); table cases in tests/analysis/bad_inputs_analysis.py",
    "transformer_lab.analysis.roofline.decode_bytes_per_token": "needs a decoder model; table "
    "cases in tests/analysis/bad_inputs_analysis.py",
    "transformer_lab.data.cache.folder_lock": "a lock file held for a block (processes, files); "
    "table cases in tests/training/bad_inputs_runs.py",
    "transformer_lab.data.cache.write_atomically": _R3,
    "transformer_lab.data.genres.genre_task": _R3,
    "transformer_lab.data.mlm.PretrainingBatch": _R3,
    "transformer_lab.data.mlm.SentencePair": _R3,
    "transformer_lab.data.mlm.mask_tokens": _R3,
    "transformer_lab.data.mlm.next_sentence_pairs": _R3,
    "transformer_lab.data.mlm.pack_pair": _R3,
    "transformer_lab.data.mlm.pad_batch": _R3,
    "transformer_lab.data.mlm.pretraining_batch": _R3,
    "transformer_lab.data.mlm.word_spans": _R3,
    "transformer_lab.data.number_words.number_to_words": _R3,
    "transformer_lab.data.number_words.split_german": _R3,
    "transformer_lab.data.number_words.tokenize": _R3,
    "transformer_lab.data.numbers.Batch": _R3,
    "transformer_lab.data.numbers.NumberData": _R3,
    "transformer_lab.data.numbers.NumbersConfig": _R3,
    "transformer_lab.data.numbers.accuracy_by_length": _R3,
    "transformer_lab.data.numbers.exact_match": _R3,
    "transformer_lab.data.numbers.load": _R3,
    "transformer_lab.data.numbers.predict": _R3,
    "transformer_lab.data.scenes.load": _R3,
    "transformer_lab.data.shakespeare.bpe_tokenizer": _R3,
    "transformer_lab.data.shakespeare.char_tokenizer": _R3,
    "transformer_lab.data.shakespeare.encode_splits": _R3,
    "transformer_lab.data.shakespeare.get_batch": _R3,
    "transformer_lab.data.shakespeare.load_plays": _R3,
    "transformer_lab.data.shakespeare.markdown_to_text": _R3,
    "transformer_lab.data.shakespeare.split_plays": _R3,
    "transformer_lab.data.shakespeare.spoken_lines": _R3,
    "transformer_lab.data.shakespeare.train_val_text": _R3,
    "transformer_lab.data.tokenizers.BPETokenizer": _R3,
    "transformer_lab.data.tokenizers.CharTokenizer": _R3,
    "transformer_lab.data.tokenizers.Vocab": _R3,
    "transformer_lab.data.tokenizers.Vocabulary": _R3,
    "transformer_lab.data.tokenizers.WordVocabulary": _R3,
    "transformer_lab.data.gguf_tokenizer.GGUFTokenizer": _R_TOKENIZERS,
    "transformer_lab.data.wordpiece.TokenBatch": _R_TOKENIZERS,
    "transformer_lab.data.wordpiece.WordPieceTokenizer": _R_TOKENIZERS,
    "transformer_lab.data.toy.neighbours": _R3,
    "transformer_lab.data.toy.previous_token": _R3,
    "transformer_lab.data.toy.toy_batches": _R3,
    "transformer_lab.generation.sampling.generate": _R4,
    "transformer_lab.generation.sampling.next_token_probs": _R4,
    "transformer_lab.generation.sampling.sample_next": _R4,
    "transformer_lab.generation.sampling.top_k_filter": _R4,
    "transformer_lab.generation.sampling.top_p_filter": _R4,
    "transformer_lab.generation.search.beam_hypotheses": _R4,
    "transformer_lab.generation.search.beam_search": _R4,
    "transformer_lab.generation.search.greedy_decode": _R4,
    "transformer_lab.generation.search.sequence_score": _R4,
    "transformer_lab.models.Decoder": _R5,
    "transformer_lab.models.Encoder": _R5,
    "transformer_lab.models.EncoderDecoder": _R5,
    "transformer_lab.models.TransformerConfig": _R5,
    "transformer_lab.models.bert.BertConfig": _R5,
    "transformer_lab.models.bert.BertForPreTraining": _R5,
    "transformer_lab.models.bert.BertModel": _R5,
    "transformer_lab.models.gpt.GPT": _R5,
    "transformer_lab.models.gpt.GPTBlock": _R5,
    "transformer_lab.models.gpt.GPTConfig": _R5,
    "transformer_lab.models.llama.Llama": _R5,
    "transformer_lab.models.llama.LlamaAttention": _R5,
    "transformer_lab.models.llama.LlamaBlock": _R5,
    "transformer_lab.models.llama.LlamaConfig": _R5,
    "transformer_lab.models.rnn.Seq2Seq": _R5,
    "transformer_lab.models.rnn.Seq2SeqConfig": _R5,
    "transformer_lab.models.toy.TinyTransformer": _R5,
    "transformer_lab.models.toy.ToyConfig": _R5,
    "transformer_lab.nn.attention.attention_weights": _R6,
    "transformer_lab.nn.attention.broadcast_shape": _R6,
    "transformer_lab.nn.attention.check_qkv": _R6,
    "transformer_lab.nn.attention.empty_rows": _R6,
    "transformer_lab.nn.attention.grouped_query_attention": _R6,
    "transformer_lab.nn.attention.repeat_kv": _R6,
    "transformer_lab.nn.attention.scaled_dot_product_attention": _R6,
    "transformer_lab.nn.blocks.DecoderBlock": _R6,
    "transformer_lab.nn.blocks.EncoderBlock": _R6,
    "transformer_lab.nn.feed_forward.FeedForward": _R6,
    "transformer_lab.nn.feed_forward.SwiGLU": _R6,
    "transformer_lab.nn.functional.affine": _R6,
    "transformer_lab.nn.kv_cache.KVCache": _R6,
    "transformer_lab.nn.masks.check_mask": _R6,
    "transformer_lab.nn.masks.combine_masks": _R6,
    "transformer_lab.nn.masks.from_torch_mask": _R6,
    "transformer_lab.nn.masks.padding_mask_from_ids": _R6,
    "transformer_lab.nn.masks.to_torch_mask": _R6,
    "transformer_lab.nn.multi_head.MultiHeadAttention": _R6,
    "transformer_lab.nn.norms.LayerNorm": _R6,
    "transformer_lab.nn.norms.RMSNorm": _R6,
    "transformer_lab.nn.norms.rms_norm": _R6,
    "transformer_lab.nn.positions.LearnedPositions": _R6,
    "transformer_lab.nn.positions.SinusoidalPositions": _R6,
    "transformer_lab.nn.positions.apply_rotary": _R6,
    "transformer_lab.nn.positions.rotary_cos_sin": _R6,
    "transformer_lab.nn.positions.rotary_frequencies": _R6,
    "transformer_lab.nn.positions.sinusoidal_encoding": _R6,
    "transformer_lab.nn.scores.AdditiveScore": _R6,
    "transformer_lab.nn.scores.DotScore": _R6,
    "transformer_lab.nn.scores.MultiplicativeScore": _R6,
    "transformer_lab.nn.scores.attend": _R6,
    "transformer_lab.export.float16.weights_to_float16": _R_EXPORT,
    "transformer_lab.export.live.gpt_live_json": _R_EXPORT,
    "transformer_lab.export.live.minilm_live_json": _R_EXPORT,
    "transformer_lab.export.live.wordpiece_char_classes": _R_EXPORT,
    "transformer_lab.export.live.write_live_models": _R_EXPORT,
    "transformer_lab.export.onnx.GPTWithAttention": _R_EXPORT,
    "transformer_lab.export.onnx.SentenceEncoderWithAttention": _R_EXPORT,
    "transformer_lab.export.onnx.export_bert": _R_EXPORT,
    "transformer_lab.export.onnx.export_gpt": _R_EXPORT,
    "transformer_lab.nn.scores.make_score": _R6,
    "transformer_lab.pretrained.book_gpt.book_gpt_info": _R_EXPORT,
    "transformer_lab.pretrained.book_gpt.load_book_gpt": _R_EXPORT,
    "transformer_lab.pretrained.book_gpt.save_book_gpt": _R_EXPORT,
    "transformer_lab.pretrained.minilm.config_from_hf": _R7,
    "transformer_lab.pretrained.minilm.load_hf_bert_weights": _R7,
    "transformer_lab.pretrained.minilm.minilm": _R7,
    "transformer_lab.pretrained.minilm.minilm_dir": _R7,
    "transformer_lab.pretrained.minilm.sentence_embeddings": _R7,
    "transformer_lab.pretrained.smollm2.chat": _R7,
    "transformer_lab.pretrained.smollm2.read_gguf": _R7,
    "transformer_lab.pretrained.smollm2.smollm2": _R7,
    "transformer_lab.pretrained.tiny_bert.load_tiny_bert": _R7,
    "transformer_lab.pretrained.tiny_bert.save_tiny_bert": _R7,
    "transformer_lab.pretrained.tiny_bert.tiny_bert_info": _R7,
    "transformer_lab.training.checkpoint.load_checkpoint": _R8,
    "transformer_lab.training.checkpoint.save_checkpoint": _R8,
    "transformer_lab.training.checkpoint.set_rng_state": _R8,
    "transformer_lab.training.distributed.ring_all_reduce": _R8,
    "transformer_lab.training.distributed.setup": _R8,
    "transformer_lab.training.distributed.shard": _R8,
    "transformer_lab.training.gpt.TrainRecipe": _R8,
    "transformer_lab.training.gpt.evaluate_lm": _R8,
    "transformer_lab.training.gpt.make_optimizer": _R8,
    "transformer_lab.training.gpt.preset": _R8,
    "transformer_lab.training.gpt.train_gpt": _R8,
    "transformer_lab.training.loop.TrainResult": _R8,
    "transformer_lab.training.loop.evaluate": _R8,
    "transformer_lab.training.loop.to_device": _R8,
    "transformer_lab.training.loop.train": _R8,
    "transformer_lab.training.losses.lm_loss": _R8,
    "transformer_lab.training.losses.seq2seq_loss": _R8,
    "transformer_lab.training.progress.progress_bar": _R8,
    "transformer_lab.training.gpt.lr_factor": _R8,
    "transformer_lab.training.schedules.transformer_peak_lr": _R8,
    "transformer_lab.training.schedules.warmup_inverse_sqrt": _R8,
    "transformer_lab.training.schedules.warmup_cosine": _R8,
    "transformer_lab.training.schedules.warmup_decay": _R8,
    "transformer_lab.training.schedules.warmup_linear": _R8,
    "transformer_lab.training.bert_pretraining.TinyBertRecipe": _R8,
    "transformer_lab.training.bert_pretraining.WordBertRecipe": _R8,
    "transformer_lab.training.bert_pretraining.held_out_batch": _R8,
    "transformer_lab.training.bert_pretraining.held_out_words": _R8,
    "transformer_lab.training.bert_pretraining.pretrain_tiny_bert": _R8,
    "transformer_lab.training.bert_pretraining.pretrain_word_bert": _R8,
    "transformer_lab.training.bert_pretraining.shakespeare_corpus": _R8,
    "transformer_lab.training.bert_pretraining.shakespeare_words": _R8,
    "transformer_lab.training.bert_pretraining.word_tokens": _R8,
    "transformer_lab.training.bert_reports.NeighbourCounts": _R8,
    "transformer_lab.training.bert_reports.blank_fill_report": _R8,
    "transformer_lab.training.bert_reports.masked_lm_report": _R8,
    "transformer_lab.training.bert_reports.word_mlm_report": _R8,
    "transformer_lab.training.toy.position_accuracy": _R8,
    "transformer_lab.training.toy.toy_loss": _R8,
    "transformer_lab.training.toy.train_toy": _R8,
    "transformer_lab.training.train_gpt.main": _R8,
    "transformer_lab.training.train_gpt.parse_args": _R8,
    "transformer_lab.viz.chapters.architecture.architecture_diagram": _R9,
    "transformer_lab.viz.chapters.architecture.architecture_html": _R9,
    "transformer_lab.viz.chapters.architecture.architecture_svg": _R9,
    "transformer_lab.viz.chapters.architecture.boxes": _R9,
    "transformer_lab.viz.chapters.architecture.where_we_are": _R9,
    "transformer_lab.viz.attention_heatmap": _R9,
    "transformer_lab.viz.chapters.bottleneck.bottleneck_figure": _R9,
    "transformer_lab.viz.chapters.bottleneck.chain_time_figure": _R9,
    "transformer_lab.viz.chapters.bottleneck.distance_figure": _R9,
    "transformer_lab.viz.chapters.bottleneck.sensitivity_box": _R9,
    "transformer_lab.viz.chapters.bottleneck.sensitivity_menu": _R9,
    "transformer_lab.viz.chapters.lookup.one_hot_lookup_figure": _R9,
    "transformer_lab.viz.chapters.similarity.similarity_controls": _R9,
    "transformer_lab.viz.chapters.similarity.similarity_explorer": _R9,
    "transformer_lab.viz.chapters.similarity.similarity_figure": _R9,
    "transformer_lab.viz.chapters.word_map.word_map_controls": _R9,
    "transformer_lab.viz.chapters.word_map.word_map_figure": _R9,
    "transformer_lab.viz.bertviz.AttentionBrowser": _R9,
    "transformer_lab.viz.bertviz.head_view": _R9,
    "transformer_lab.viz.bertviz.model_view": _R9,
    "transformer_lab.viz.live.LiveModel": _R9,
    "transformer_lab.viz.live_model": _R9,
    "transformer_lab.viz.decoding_explorer": _R9,
    "transformer_lab.viz.display.figure_number": _R9,
    "transformer_lab.viz.figure_text.chapter_words": _R9,
    "transformer_lab.viz.figure_text.figure_words": _R9,
    "transformer_lab.viz.dropdown_bars": _R9,
    "transformer_lab.viz.dropdown_heatmaps": _R9,
    "transformer_lab.viz.figure": _R9,
    "transformer_lab.viz.figure_html": _R9,
    "transformer_lab.viz.heatmap": _R9,
    "transformer_lab.viz.heatmap_explorer": _R9,
    "transformer_lab.viz.mimebundle": _R9,
    "transformer_lab.viz.chapters.overlay.attention_overlay": _R9,
    "transformer_lab.viz.plot_heads": _R9,
    "transformer_lab.viz.show": _R9,
    "transformer_lab.viz.slider_bars": _R9,
    "transformer_lab.viz.slider_heatmaps": _R9,
    "transformer_lab.viz.source": _R9,
    "transformer_lab.viz.svg_heatmap": _R9,
    "transformer_lab.viz.table": _R9,
    "transformer_lab.viz.chapters.timeline.TimelineEntry": _R9,
    "transformer_lab.viz.chapters.timeline.timeline_figure": _R9,
    "transformer_lab.viz.chapters.timeline.timeline_plotly": _R9,
    "transformer_lab.viz.title_layout": _R9,
    "transformer_lab.viz.chapters.toy_attention.AttentionExplorer": _R9,
    "transformer_lab.viz.chapters.toy_attention.attention_explorer": _R9,
    "transformer_lab.viz.chapters.toy_attention.explore": _R9,
    "transformer_lab.viz.chapters.toy_attention.projections": _R9,
    "transformer_lab.viz.chapters.toy_attention.static_attention_explorer": _R9,
    "transformer_lab.viz.wrap_title": _R9,
}

# Parameters left alone: the labels and sizes that the package's own code passes to its
# checks (an argument name for the message, a size from a validated config).
_LABELS = {"name", "what", "layer", "shape", "hint"}
NOT_SEARCHED = {
    **{n: _LABELS for n in VALID if n.startswith("transformer_lab.checks.")},
    "transformer_lab.checks.integer": _LABELS | {"minimum"},
    "transformer_lab.checks.finite_number": _LABELS | {"above", "at_least"},
    "transformer_lab.checks.fraction": _LABELS | {"closed"},
    "transformer_lab.checks.check_labels": {"n_classes", "ignore_index"},
    "transformer_lab.checks.check_token_batch": {"n_ctx", "d_vocab", "offset", "hint"},
    "transformer_lab.checks.check_token_range": {"d_vocab", "name"},
    "transformer_lab.checks.layer_input": {"d_model", "layer"},
}

# (callable, parameter, substitute) -> why it still fails
KNOWN_FAILURES: dict[tuple[str, str, str], str] = {}

NAN, INF = float("nan"), float("inf")


def substitutes(value, optional: bool) -> list[tuple[str, object]]:
    """``(kind, value)`` pairs to put in place of a valid ``value``: kinds ``invalid``,
    ``edge`` and ``numpy`` (see the module's docstring)."""
    wrong = [("invalid", object())] + ([] if optional else [("invalid", None)])
    if isinstance(value, bool):
        return [("invalid", object())]
    if isinstance(value, int):
        return wrong + [
            ("invalid", "3"), ("invalid", 2.5), ("invalid", NAN), ("invalid", True),
            ("edge", 0), ("edge", -1), ("edge", 2**70),
            ("numpy", np.int64(value)), ("numpy", np.int32(value)),
        ]  # fmt: skip
    if isinstance(value, float):
        return wrong + [
            ("invalid", "0.5"), ("invalid", NAN), ("invalid", [value]),
            ("edge", INF), ("edge", -INF), ("edge", 0.0), ("edge", -1.0), ("edge", 1e300),
            ("numpy", np.float32(value)), ("numpy", np.float64(value)),
        ]  # fmt: skip
    if isinstance(value, str):
        return wrong + [("invalid", 3), ("invalid", b"x"), ("edge", ""), ("edge", "zzz")]
    if isinstance(value, torch.Tensor):
        out = wrong + [("invalid", "tensor"), ("edge", value[None]), ("edge", value[:0])]
        if value.is_floating_point():
            out += [("invalid", value.tolist()), ("edge", value.double()), ("edge", value.long())]
        else:
            out += [("invalid", value.float() + 0.5), ("edge", value.float())]
            out += [("edge", value - 100), ("edge", value + 10**6)]
        return out
    if isinstance(value, np.ndarray):
        return wrong + [("invalid", "array"), ("edge", value[None]), ("edge", value[:0])]
    if isinstance(value, (list, tuple, dict)):
        return wrong + [("invalid", 3), ("invalid", "text"), ("edge", type(value)())]
    return wrong + [("invalid", "x"), ("invalid", 3)]


def _substitutions(name: str) -> list[tuple[str, str, object]]:
    """Every ``(parameter, kind, value)`` substitution of ``name``'s valid call, known
    failures left out."""
    fn, args, kwargs = VALID[name]()
    bound = inspect.signature(fn).bind(*args, **kwargs)
    params = inspect.signature(fn).parameters
    out = []
    for param, value in bound.arguments.items():
        if param in NOT_SEARCHED.get(name, ()):
            continue
        optional = params[param].default is None or "None" in str(params[param].annotation)
        if params[param].kind in (params[param].VAR_POSITIONAL, params[param].VAR_KEYWORD):
            continue
        for kind, bad in substitutes(value, optional):
            if (name, param, _label(bad)) not in KNOWN_FAILURES:
                out.append((param, kind, bad))
    return out


def _label(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor{tuple(value.shape)}:{str(value.dtype)[6:]}"
    if isinstance(value, np.generic):
        return f"{type(value).__name__}"
    if type(value) is object:
        return "object()"
    return repr(value)[:30]


class Hang(Exception):  # noqa: N818 (a verdict, not a failure)
    pass


def _alarm(signum, frame):
    raise Hang(f"no answer within {TIME_LIMIT} s")


def _finite(result, depth: int = 0) -> bool:
    """Whether every number in ``result`` (tensors, arrays, numbers, a module's parameters,
    lists, tuples and dicts of those, two levels deep) is finite."""
    if isinstance(result, torch.Tensor):
        return not result.is_floating_point() or bool(torch.isfinite(result).all())
    if isinstance(result, np.ndarray):
        return result.dtype.kind != "f" or bool(np.isfinite(result).all())
    if isinstance(result, float | np.floating):
        return math.isfinite(result)
    if isinstance(result, torch.nn.Module):
        return all(_finite(p) for p in result.parameters())
    if depth < 2 and isinstance(result, list | tuple):
        return all(_finite(r, depth + 1) for r in result)
    if depth < 2 and isinstance(result, dict):
        return all(_finite(r, depth + 1) for r in result.values())
    if depth < 2 and hasattr(result, "__dataclass_fields__"):
        return all(_finite(getattr(result, f), depth + 1) for f in result.__dataclass_fields__)
    return True


def run_call(fn, args, kwargs):
    """``("ok", result)`` or ``("raised", error)``, within the time limit."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT)
    try:
        return "ok", fn(*args, **kwargs)
    except Hang:
        raise
    except Exception as err:  # judged by verdict()
        return "raised", err
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _raised_in_package(err: BaseException) -> bool:
    tb = err.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return str(Path(tb.tb_frame.f_code.co_filename).resolve()).startswith(PACKAGE)


def verdict(name: str, param: str, kind: str, bad) -> str | None:
    """What is wrong with the call of ``name`` with ``param=bad`` (None: nothing)."""
    fn, args, kwargs = VALID[name]()
    _, baseline = run_call(fn, args, kwargs)
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.arguments[param] = bad
    try:
        outcome, got = run_call(fn, bound.args, bound.kwargs)
    except Hang as hang:
        return f"hangs: {hang}"
    what = f"{name}({param}={_label(bad)})"
    if outcome == "ok":
        if kind == "invalid":
            return f"{what} returned {type(got).__name__} instead of raising"
        if _finite(baseline) and not _finite(got):
            return f"{what} returned NaN or inf"
        return None
    if kind == "numpy":
        return f"{what} refused a NumPy number: {type(got).__name__}: {got}"
    if not isinstance(got, ValueError | TypeError | FileNotFoundError):
        return f"{what} raised {type(got).__name__}: {str(got)[:200]}"
    if not _raised_in_package(got):
        return f"{what} raised {type(got).__name__} from inside a dependency: {str(got)[:200]}"
    return None


EXAMPLES = int(os.environ.get("BAD_INPUT_EXAMPLES", 40))  # substitutions drawn per callable


@pytest.mark.parametrize("name", sorted(VALID))
def test_one_bad_argument_gives_a_clear_error(name):
    fn, args, kwargs = VALID[name]()
    outcome, got = run_call(fn, args, kwargs)
    assert outcome == "ok", f"the valid call of {name} failed: {got!r}"
    subs = _substitutions(name)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.sampled_from(subs))
    def check(sub):
        problem = verdict(name, *sub)
        assert problem is None, problem

    check()


def test_every_public_callable_is_covered_or_skipped_with_a_reason():
    trivial = {id(o) for o in RECORDS | PREDICATES | NO_INPUT}
    names = {name for key, (_, name) in public_callables().items() if key not in trivial}
    missing = sorted(names - set(VALID) - set(SKIPPED))
    assert not missing, f"give these a valid call in VALID or a reason in SKIPPED: {missing}"
    stale = sorted((set(VALID) | set(SKIPPED)) - names)
    assert not stale, f"no longer public callables (remove them): {stale}"
    assert all(reason.strip() for reason in SKIPPED.values())


@pytest.mark.parametrize("key", sorted(KNOWN_FAILURES, key=str), ids=lambda k: f"{k[0]}-{k[1]}")
def test_known_failures_still_fail(key):
    name, param, label = key
    fn, args, kwargs = VALID[name]()
    params = inspect.signature(fn).parameters
    value = inspect.signature(fn).bind(*args, **kwargs).arguments[param]
    optional = params[param].default is None or "None" in str(params[param].annotation)
    found = [(k, b) for k, b in substitutes(value, optional) if _label(b) == label]
    assert found, f"{key} names no substitution"
    problems = [verdict(name, param, k, b) for k, b in found]
    assert any(problems), f"{key} passes now: remove it from KNOWN_FAILURES"


def test_the_verdict_sees_hangs_foreign_errors_and_silent_results(monkeypatch):
    monkeypatch.setattr(__import__(__name__), "TIME_LIMIT", 0.2)

    def spins(n: int):
        while n != 1:
            pass

    cases = {
        "hang": (spins, "hangs"),
        "foreign": (lambda n: np.zeros(n), "from inside a dependency"),
        "silent": (lambda n: n * 2, "returned str instead of raising"),
    }
    for key, (fn, words) in cases.items():
        monkeypatch.setitem(VALID, key, lambda fn=fn: (fn, (1,), {}))
        bad = -1 if key == "foreign" else "3"
        problem = verdict(key, "n", "edge" if key != "silent" else "invalid", bad)
        assert problem is not None and words in problem, problem
