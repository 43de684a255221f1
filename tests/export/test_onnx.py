"""The exported graphs, run by ONNX Runtime on the CPU, equal the package's models.

Tolerances (absolute, on the CPU), per way of storing the weights:

- float32 file against the package: :data:`TOL_FLOAT32`;
- float16-stored file against the package run on the same float16-rounded weight matrices
  (the graph computes in float32, so only the rounding of the weights changes):
  :data:`TOL_FLOAT32` as well;
- float16-stored file against the package's own float32 weights: :data:`TOL_FLOAT16`.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from transformer_lab.export.onnx import (
    GPTWithAttention,
    SentenceEncoderWithAttention,
    export_bert,
    export_gpt,
)
from transformer_lab.generation.sampling import generate
from transformer_lab.hooks import run_with_cache
from transformer_lab.pretrained.book_gpt import load_book_gpt
from transformer_lab.pretrained.minilm import minilm, sentence_embeddings

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

# largest absolute differences allowed: logits, attention weights, sentence vectors
TOL_FLOAT32 = {"logits": 1e-4, "attention": 1e-5, "sentence": 1e-5}
TOL_FLOAT16 = {"logits": 2e-2, "attention": 5e-3, "sentence": 1e-3}
WEIGHTS = ("float32", "float16")
SENTENCES = [
    "A man is playing a guitar.",
    "Hello, world! It's 3.14 o'clock; 42 apples cost $7.50.",
    "Café naïve résumé: ÀÉÎ!",
    "x",
    "The quick brown fox jumps over the lazy dog, again and again, 1999-2024.",
]


def session(path):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def rounded(model):
    """A copy whose weight matrices (two or more dimensions) are rounded to float16."""
    model = copy.deepcopy(model)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.copy_(p.half().float())
    return model


def max_diff(a, b) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max())


@pytest.fixture(scope="module")
def gpt():
    torch.set_num_threads(1)
    return load_book_gpt()


@pytest.fixture(scope="module")
def gpt_files(gpt, tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt")
    return {w: export_gpt(gpt[0], folder / f"gpt_{w}.onnx", weights=w) for w in WEIGHTS}


@pytest.fixture(scope="module")
def bert():
    return minilm()


@pytest.fixture(scope="module")
def bert_files(bert, tmp_path_factory):
    folder = tmp_path_factory.mktemp("minilm")
    return {w: export_bert(bert[0], folder / f"minilm_{w}.onnx", weights=w) for w in WEIGHTS}


def test_the_gpt_graph_has_the_interface(gpt, gpt_files):
    s = session(gpt_files["float32"])
    (ids,) = s.get_inputs()
    assert (ids.name, ids.type, ids.shape) == ("ids", "tensor(int64)", [1, "pos"])
    c = gpt[0].config
    shapes = {o.name: o.shape for o in s.get_outputs()}
    assert shapes == {
        "logits": [1, "pos", c.d_vocab],
        "attention": [c.n_layers, c.n_heads, "pos", "pos"],
    }


@pytest.mark.parametrize("weights", WEIGHTS)
def test_gpt_logits_and_attention_equal_the_package(gpt, gpt_files, weights):
    model, tok = gpt
    s = session(gpt_files[weights])
    reference = model if weights == "float32" else rounded(model)
    gen = torch.Generator().manual_seed(0)
    seen = {"logits": 0.0, "attention": 0.0}
    for pos in range(1, model.config.n_ctx + 1):  # every length the graph accepts
        ids = torch.randint(0, tok.vocab_size, (1, pos), generator=gen)
        logits, attention = s.run(None, {"ids": ids.numpy()})
        with torch.no_grad():
            out, cache = run_with_cache(reference, ids, names="*.attn.pattern")
            original = GPTWithAttention(model)(ids)
        patterns = torch.cat([cache[f"blocks.{i}.attn.pattern"] for i in range(len(cache))])
        assert logits.shape == (1, pos, tok.vocab_size) and attention.shape[2:] == (pos, pos)
        np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-5)  # rows are softmaxes
        assert max_diff(logits, out) <= TOL_FLOAT32["logits"], pos
        assert max_diff(attention, patterns) <= TOL_FLOAT32["attention"], pos
        seen["logits"] = max(seen["logits"], max_diff(logits, original[0]))
        seen["attention"] = max(seen["attention"], max_diff(attention, original[1]))
    for key, value in seen.items():
        assert value <= (TOL_FLOAT32 if weights == "float32" else TOL_FLOAT16)[key], (key, value)
    print(f"gpt {weights}: max |onnx - package| {seen}")


def test_the_gpt_graph_reads_a_negative_id_from_the_end_of_the_table(gpt, gpt_files):
    """Deliberate, and the reason ``live.js`` checks its ids: the graph's Gather takes id -1
    as the last token (the package's embedding refuses it), so the site never runs it."""
    model, tok = gpt
    s = session(gpt_files["float32"])
    last = np.array([[tok.vocab_size - 1]])
    wrapped, _ = s.run(None, {"ids": -np.ones((1, 1), dtype=np.int64)})
    np.testing.assert_array_equal(wrapped, s.run(None, {"ids": last})[0])
    with pytest.raises(ValueError, match=r"idx must be in \[0, "):
        model(torch.tensor([[-1]]))


def test_greedy_generation_from_the_onnx_gpt_equals_the_packages(gpt, gpt_files):
    """40 characters after a prompt of 30: the window slides past n_ctx=64 on the way."""
    model, tok = gpt
    prompt = "ROMEO:\nBut soft, what light th"
    idx = torch.tensor([tok.encode(prompt)])
    expected = tok.decode(generate(model, idx, 40, temperature=0)[0, len(prompt) :].tolist())
    n_ctx = model.config.n_ctx
    for weights in WEIGHTS:
        s, ids = session(gpt_files[weights]), tok.encode(prompt)
        for _ in range(40):
            window = np.array([ids[-n_ctx:]], dtype=np.int64)
            logits = s.run(["logits"], {"ids": window})[0]
            ids.append(int(logits[0, -1].argmax()))
        got = tok.decode(ids[len(prompt) :])
        print(f"{weights}: {got!r}")
        if weights == "float32":
            assert got == expected


def test_the_minilm_graph_has_the_interface(bert, bert_files):
    s = session(bert_files["float16"])
    (ids,) = s.get_inputs()
    assert (ids.name, ids.type, ids.shape) == ("input_ids", "tensor(int64)", [1, "pos"])
    c = bert[0].config
    shapes = {o.name: o.shape for o in s.get_outputs()}
    assert shapes == {"attention": [c.n_layers, c.n_heads, "pos", "pos"], "sentence": [1, 384]}


@pytest.mark.parametrize("weights", WEIGHTS)
def test_minilm_attention_and_sentence_vectors_equal_the_package(bert, bert_files, weights):
    model, tok = bert
    s = session(bert_files[weights])
    reference = model if weights == "float32" else rounded(model)
    seen = {"attention": 0.0, "sentence": 0.0}
    for text in SENTENCES:
        ids = torch.tensor([tok.encode(text)])
        attention, sentence = s.run(None, {"input_ids": ids.numpy()})
        with torch.no_grad():
            out = reference(ids)
        same_weights = sentence_embeddings(reference, tok, [text])
        assert max_diff(attention, torch.cat(out.attentions)) <= TOL_FLOAT32["attention"], text
        assert max_diff(sentence, same_weights) <= TOL_FLOAT32["sentence"], text
        original = sentence_embeddings(model, tok, [text])
        seen["sentence"] = max(seen["sentence"], max_diff(sentence, original))
        with torch.no_grad():
            seen["attention"] = max(
                seen["attention"], max_diff(attention, torch.cat(model(ids).attentions))
            )
        assert abs(float(np.linalg.norm(sentence)) - 1.0) < 1e-5
    for key, value in seen.items():
        assert value <= (TOL_FLOAT32 if weights == "float32" else TOL_FLOAT16)[key], (key, value)
    print(f"minilm {weights}: max |onnx - package| {seen}")


def test_float16_storage_halves_the_file_and_computes_in_float32(bert_files):
    sizes = {w: bert_files[w].stat().st_size for w in WEIGHTS}
    print(f"minilm sizes: {sizes}")
    assert 0.45 < sizes["float16"] / sizes["float32"] < 0.55, sizes
    graph = onnx.load(str(bert_files["float16"])).graph
    stored = {i.name: i for i in graph.initializer}
    half = [i for i in graph.initializer if i.data_type == onnx.TensorProto.FLOAT16]
    casts = [n for n in graph.node if n.op_type == "Cast" and n.input[0] in stored]
    assert half and len(casts) == len(half)
    assert all(len(i.dims) >= 2 for i in half)  # matrices only: biases and norms stay float32
    assert all(a.i == onnx.TensorProto.FLOAT for n in casts for a in n.attribute)


def test_exporting_leaves_the_models_mode_as_it_was(gpt, tmp_path):
    model = copy.deepcopy(gpt[0])
    for training in (True, False):
        model.train(training)
        export_gpt(model, tmp_path / "gpt.onnx")
        assert all(m.training == training for m in model.modules())


def test_the_wrappers_equal_the_models_own_outputs(gpt, bert):
    ids = torch.tensor([gpt[1].encode("To be, or not to be")])
    logits, attention = GPTWithAttention(gpt[0])(ids)
    # the same logits; capturing the pattern computes attention without the fused kernel
    torch.testing.assert_close(logits, gpt[0](ids))
    assert attention.shape == (2, 4, ids.shape[1], ids.shape[1])
    model, tok = bert
    ids = torch.tensor([tok.encode("a sentence to embed")])
    attention, sentence = SentenceEncoderWithAttention(model)(ids)
    torch.testing.assert_close(sentence, sentence_embeddings(model, tok, ["a sentence to embed"]))
    torch.testing.assert_close(attention, torch.cat(model(ids).attentions), rtol=0, atol=0)
