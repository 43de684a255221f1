"""Invariants beyond "a bad input raises" (``test_bad_inputs_property.py`` checks those):

- a padded batch sliced by rows (``AnswerBatch[rows]``, ``ClassificationBatch[rows]``) keeps
  every real token of the rows it takes, with its target or label, whichever side the rows
  are padded on, and drops only columns that are padding in all of them;
- a merged LoRA computes what the unmerged one does (tiny random GPT, BERT and Llama, random
  adapters), and so do the model after unmerging, after ``remove_lora`` and with the adapters
  copied into a fresh model by ``lora_state_dict``/``load_lora_state_dict``;
- save-then-load is the identity for every saver of the package, in ``tmp_path``:
  ``save_book_gpt``/``load_book_gpt`` (int8 storage: within half a step of each row's scale,
  and a fixed point), ``save_tiny_bert``/``load_tiny_bert``, ``save_checkpoint``/
  ``load_checkpoint`` (model, optimizer, schedule, curves, generators, settings),
  ``write_ctranslate2``/``read_ctranslate2`` (every data type it stores), the site's live
  models, ``write_live_models`` (its JSON records and ONNX graphs, on tiny models), and
  ``write_atomically`` under them all.
"""

from __future__ import annotations

import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_lab.checks import IGNORE_INDEX
from transformer_lab.data.cache import write_atomically
from transformer_lab.data.tokenizers import CharTokenizer
from transformer_lab.data.wordpiece import WordPieceTokenizer
from transformer_lab.models.bert import BertConfig, BertForPreTraining, BertModel
from transformer_lab.models.gpt import GPT, GPTConfig
from transformer_lab.models.llama import Llama, LlamaConfig
from transformer_lab.nn import lora as LORA
from transformer_lab.pretrained import book_gpt as BOOK_GPT
from transformer_lab.pretrained import ctranslate2_format as CT2
from transformer_lab.pretrained import tiny_bert as TINY_BERT
from transformer_lab.training import checkpoint as CKPT
from transformer_lab.training.finetune import ClassificationBatch
from transformer_lab.training.lora import AnswerBatch

PROPERTY = settings(max_examples=60, deadline=None, database=None)
TEXTS = ["the cat sat on the mat", "a dog ran in the park", "the dog sat"]


# ---- sliced batches keep their real tokens ----------------------------------------------------


@st.composite
def padded_batches(draw):
    """``(ids, mask, side)``: rows of 0 to 5 real tokens (ids 1..9), padded with id 0 on one
    side, and a selection of rows (a slice, a list or a tensor of indices)."""
    lengths = draw(st.lists(st.integers(0, 5), min_size=1, max_size=5))
    width, side = max(max(lengths), 1), draw(st.sampled_from(["left", "right"]))
    ids = torch.zeros(len(lengths), width, dtype=torch.long)
    mask = torch.zeros(len(lengths), width, dtype=torch.long)
    for row, n in enumerate(lengths):
        cols = slice(width - n, width) if side == "left" else slice(0, n)
        ids[row, cols] = torch.tensor(draw(st.lists(st.integers(1, 9), min_size=n, max_size=n)))
        mask[row, cols] = 1
    n = len(lengths)
    picked = st.lists(st.integers(0, n - 1), min_size=1, max_size=n)
    rows = draw(
        st.one_of(
            st.builds(slice, st.integers(0, n - 1), st.integers(1, n)).filter(
                lambda s: s.start < s.stop
            ),
            picked,
            picked.map(torch.tensor),
        )
    )
    return ids, mask, rows


def row_indices(rows, n: int) -> list[int]:
    if isinstance(rows, slice):
        return list(range(n))[rows]
    return [int(r) for r in rows]


def check_real_tokens_kept(ids, mask, rows, sliced_ids, sliced_mask) -> list[int]:
    """Assert that each taken row keeps its real tokens in order; return the taken rows."""
    taken = row_indices(rows, len(ids))
    assert len(sliced_ids) == len(taken)
    for i, row in enumerate(taken):
        before = ids[row][mask[row].bool()].tolist()
        after = sliced_ids[i][sliced_mask[i].bool()].tolist()
        assert after == before, (row, before, after)
    longest = max(int(mask[r].sum()) for r in taken)
    assert sliced_ids.shape[1] == max(longest, 1)  # only all-padding columns were dropped
    return taken


@PROPERTY
@given(padded_batches())
def test_a_sliced_answer_batch_keeps_its_real_tokens(batch):
    ids, mask, rows = batch
    targets = torch.where(mask.bool() & (ids > 4), ids, IGNORE_INDEX)  # some tokens answer
    sliced = AnswerBatch(ids, mask, targets)[rows]
    taken = check_real_tokens_kept(ids, mask, rows, sliced.input_ids, sliced.attention_mask)
    for i, row in enumerate(taken):
        real = sliced.attention_mask[i].bool()
        assert sliced.targets[i][real].tolist() == targets[row][mask[row].bool()].tolist()
        assert (sliced.targets[i][~real] == IGNORE_INDEX).all()


@PROPERTY
@given(padded_batches())
def test_a_sliced_classification_batch_keeps_its_real_tokens(batch):
    ids, mask, rows = batch
    labels = torch.arange(len(ids))
    sliced = ClassificationBatch(ids, mask, labels)[rows]
    taken = check_real_tokens_kept(ids, mask, rows, sliced.input_ids, sliced.attention_mask)
    assert sliced.labels.tolist() == taken


# ---- a merged LoRA computes what the unmerged one does --------------------------------------


def tiny_gpt(seed=0):
    torch.manual_seed(seed)
    config = GPTConfig(d_vocab=11, n_ctx=8, n_layers=2, n_heads=2, d_model=8, init_std=0.3)
    return GPT(config).eval()


def tiny_bert_encoder(seed=0):
    torch.manual_seed(seed)
    config = BertConfig(
        d_vocab=20, d_model=8, n_heads=2, d_mlp=16, n_layers=2, max_pos=16, init_std=0.3
    )
    return BertModel(config).eval()


def tiny_llama(seed=0):
    torch.manual_seed(seed)
    config = LlamaConfig(
        d_vocab=11,
        n_ctx=16,
        n_layers=2,
        n_heads=4,
        n_kv_heads=2,
        d_model=16,
        d_mlp=24,
        init_std=0.3,
    )
    return Llama(config).eval()


MODELS = {  # name -> (a tiny random model, the matrices LoRA may adapt, its output on ids)
    "gpt": (tiny_gpt, ["W_Q", "W_K", "W_V", "W_O", "W_1", "W_2", "W_E"], lambda m, x: m(x)),
    "bert": (
        tiny_bert_encoder,
        ["W_Q", "W_K", "W_V", "W_O", "W_1", "W_2"],
        lambda m, x: m(x).last_hidden_state,
    ),
    "llama": (
        tiny_llama,
        ["W_Q", "W_K", "W_V", "W_O", "W_gate", "W_up", "W_down"],
        lambda m, x: m(x),
    ),
}


@settings(max_examples=16, deadline=None, database=None)
@given(
    name=st.sampled_from(sorted(MODELS)),
    seed=st.integers(0, 2**16),
    rank=st.integers(1, 4),
    alpha=st.sampled_from([0.5, 1.0, 8.0, 16.0]),
    data=st.data(),
)
def test_a_merged_lora_equals_the_unmerged_forward(name, seed, rank, alpha, data):
    build, names, forward = MODELS[name]
    targets = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
    model = build(seed)
    LORA.add_lora(model, targets, rank=rank, alpha=alpha, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # B starts at zero: give every adapter a change to merge
        for _, lora in LORA.lora_modules(model):
            lora.B.copy_(torch.randn(lora.B.shape, generator=gen) * 0.3)
    x = torch.randint(0, 11, (2, 6), generator=gen)
    with torch.no_grad():
        base = forward(build(seed), x)
        unmerged = forward(model, x)
        saved = LORA.lora_state_dict(model)
        with LORA.merged(model):
            merged = forward(model, x)
        again = forward(model, x)
        copied = build(seed)
        LORA.add_lora(copied, targets, rank=rank, alpha=alpha, seed=seed + 1)
        LORA.load_lora_state_dict(copied, saved)
        loaded = forward(copied, x)
        removed = forward(LORA.remove_lora(model, merge=True), x)
    assert (unmerged - base).abs().max() > 1e-3  # the adapters change what the model computes
    for other in (merged, again, loaded, removed):
        torch.testing.assert_close(other, unmerged, atol=1e-5, rtol=0)


# ---- save, then load: the same model ----------------------------------------------------------


def assert_same_state(a: torch.nn.Module, b: torch.nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for key in sa:
        assert sa[key].dtype == sb[key].dtype and torch.equal(sa[key], sb[key]), key


def test_save_book_gpt_then_load_book_gpt_is_the_identity(tmp_path):
    model = tiny_gpt(1)
    tok = CharTokenizer("abcdefghij ")
    info = {"recipe": {"lr": 0.001, "steps": 3}, "seed": 1, "held_out_loss": 2.25, "note": "é"}
    BOOK_GPT.save_book_gpt(model, tok, info, tmp_path)
    loaded, loaded_tok = BOOK_GPT.load_book_gpt(directory=tmp_path)
    assert_same_state(model, loaded)
    assert loaded.config == model.config and not loaded.training
    assert loaded_tok.itos == tok.itos and loaded_tok.encode("a cab") == tok.encode("a cab")
    x = torch.tensor([tok.encode("bad face")])
    with torch.no_grad():
        assert torch.equal(loaded(x), model(x))
    record = BOOK_GPT.book_gpt_info(tmp_path)
    assert {k: record[k] for k in info} == info and record["vocab"] == tok.itos


def test_save_book_gpt_in_int8_loads_within_half_a_step_and_is_a_fixed_point(tmp_path):
    model, tok = tiny_gpt(2), CharTokenizer("abcdefghij ")
    BOOK_GPT.save_book_gpt(model, tok, {}, tmp_path / "once", storage="int8")
    once, _ = BOOK_GPT.load_book_gpt(directory=tmp_path / "once")
    for (key, w), v in zip(model.state_dict().items(), once.state_dict().values(), strict=True):
        if w.dim() == 2:
            step = w.abs().amax(1, keepdim=True) / 127
            assert ((w - v).abs() <= step / 2 + 1e-7).all(), key
        else:  # vectors are stored in float16
            assert torch.equal(v, w.half().float()), key
    BOOK_GPT.save_book_gpt(once, tok, {}, tmp_path / "twice", storage="int8")
    twice, _ = BOOK_GPT.load_book_gpt(directory=tmp_path / "twice")
    for (key, a), b in zip(once.state_dict().items(), twice.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6, msg=key)


@pytest.fixture(scope="module")
def wordpiece():
    return WordPieceTokenizer.train(TEXTS * 10, vocab_size=60, max_length=16, min_frequency=1)


def test_save_tiny_bert_then_load_tiny_bert_is_the_identity(tmp_path, wordpiece):
    torch.manual_seed(3)
    config = BertConfig(
        d_vocab=wordpiece.vocab_size, d_model=8, n_heads=2, d_mlp=16, n_layers=2, max_pos=16
    )
    model = BertForPreTraining(config).eval()
    info = {"recipe": {"steps": 5}, "held_out": {"accuracy": 0.5}}
    TINY_BERT.save_tiny_bert(model, wordpiece, info, tmp_path)
    loaded, loaded_tok = TINY_BERT.load_tiny_bert(directory=tmp_path)
    assert_same_state(model, loaded)
    assert loaded.config == model.config and not loaded.training
    assert loaded_tok.backend.to_str() == wordpiece.backend.to_str()
    b = wordpiece(TEXTS)
    with torch.no_grad():
        want = model.bert(b.input_ids, attention_mask=b.attention_mask).last_hidden_state
        got = loaded.bert(b.input_ids, attention_mask=b.attention_mask).last_hidden_state
    assert torch.equal(got, want)
    assert {k: v for k, v in TINY_BERT.tiny_bert_info(tmp_path).items() if k in info} == info


def test_save_checkpoint_then_load_checkpoint_is_the_identity(tmp_path):
    model = tiny_gpt(4).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 / (1 + step))

    def step(m, opt, sched):
        x = torch.arange(8).remainder(11).view(1, 8)
        opt.zero_grad()
        m(x).logsumexp(-1).mean().backward()
        opt.step()
        sched.step()

    for _ in range(2):
        step(model, optimizer, scheduler)
    settings_ = {"lr": 0.01, "preset": "tiny", "shape": [1, 8]}
    extra = {"data": "digits", "n": 3, "weights": torch.ones(2)}
    before = CKPT.rng_state()
    path = CKPT.save_checkpoint(
        tmp_path / "run.pt", model=model, optimizer=optimizer, step=2, scheduler=scheduler,
        losses=[2.5, 2.25], evals=[(1, 2.0)], extra=extra, config=settings_,
    )  # fmt: skip
    draw = torch.rand(3)
    state = CKPT.load_checkpoint(path)
    fresh = tiny_gpt(5).train()
    fresh.load_state_dict(state["model"])
    assert_same_state(model, fresh)
    fresh_opt = torch.optim.AdamW(fresh.parameters(), lr=1e-2)
    fresh_sched = torch.optim.lr_scheduler.LambdaLR(fresh_opt, lambda step: 1 / (1 + step))
    fresh_opt.load_state_dict(state["optimizer"])
    fresh_sched.load_state_dict(state["scheduler"])
    assert (state["step"], state["losses"], state["evals"]) == (2, [2.5, 2.25], [(1, 2.0)])
    assert state["config"] == settings_ and state["extra"].keys() == extra.keys()
    assert torch.equal(state["extra"]["weights"], extra["weights"])
    CKPT.set_rng_state(state["rng"][0])
    assert torch.equal(torch.rand(3), draw)  # the generators as they were at the save
    assert state["rng"][0]["python"] == before["python"]
    step(model, optimizer, scheduler)  # and both runs go on alike
    step(fresh, fresh_opt, fresh_sched)
    assert_same_state(model, fresh)


def test_write_ctranslate2_then_read_ctranslate2_is_the_identity(tmp_path):
    gen = torch.Generator().manual_seed(6)
    variables = {}
    for type_id, (name, _, dtype) in CT2.DTYPES.items():
        shape = [(), (5,), (2, 3), (2, 1, 3)][type_id % 4]
        values = torch.randn(shape, generator=gen) * 50
        variables[f"v/{name}"] = values.to(dtype)
    variables["empty"] = torch.zeros(0, 4)
    aliases = {"tied/float32": "v/float32", "again": "v/int8"}
    path = CT2.write_ctranslate2(tmp_path, variables, spec="TinySpec", revision=9, aliases=aliases)
    read = CT2.read_ctranslate2(path)
    assert (read.spec, read.revision, read.binary_version) == ("TinySpec", 9, 6)
    assert list(read.variables) == list(variables) and read.aliases == aliases
    for key, value in variables.items():
        got = read.variables[key]
        assert got.dtype == value.dtype and got.shape == value.shape, key
        assert torch.equal(got, value), key


def test_write_atomically_then_reading_gives_the_bytes_back(tmp_path):
    data = bytes(range(256)) * 3
    path = write_atomically(tmp_path / "sub" / "file.bin", lambda file: file.write(data))
    assert path.read_bytes() == data and [p.name for p in path.parent.iterdir()] == ["file.bin"]
    write_atomically(path, lambda file: file.write(data[:5]))  # a second write replaces it
    assert path.read_bytes() == data[:5]


def test_write_live_models_writes_records_and_graphs_that_load_back(tmp_path, monkeypatch):
    """The site's files of two tiny models: the JSON records read back as the functions
    that build them return them, and the graphs compute what the models compute."""
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from transformer_lab.export import live as LIVE
    from transformer_lab.pretrained import minilm as MINILM

    gpt, tok = tiny_gpt(7), CharTokenizer("abcdefghij ")
    BOOK_GPT.save_book_gpt(gpt, tok, {"held_out_loss": 2.0, "recipe": {"steps": 1}}, tmp_path)
    torch.manual_seed(8)
    words = WordPieceTokenizer.train(TEXTS * 10, vocab_size=40, max_length=16, min_frequency=1)
    bert = BertModel(BertConfig(d_vocab=words.vocab_size, d_model=8, n_heads=2, d_mlp=16,
                                n_layers=1, max_pos=16)).eval()  # fmt: skip
    info = BOOK_GPT.book_gpt_info(tmp_path)
    # write_live_models reads the shipped GPT and MiniLM: these tiny ones stand in for them
    monkeypatch.setattr(BOOK_GPT, "load_book_gpt", lambda: (gpt, tok))
    monkeypatch.setattr(BOOK_GPT, "book_gpt_info", lambda: info)
    monkeypatch.setattr(MINILM, "minilm", lambda: (bert, words))
    # (the character classes probe every code point, seconds; their test is the browser's)
    monkeypatch.setattr(LIVE, "wordpiece_char_classes", lambda tokenizer: {"removed": [[0, 8]]})
    written = LIVE.write_live_models(tmp_path / "live", minilm_weights="float32")  # exact
    assert sorted(written) == sorted(LIVE.LIVE_FILES)
    gpt_json = json.loads(written["gpt.json"].read_text(encoding="utf-8"))
    assert gpt_json == LIVE.gpt_live_json(info)
    assert gpt_json["vocab"] == tok.itos and gpt_json["n_ctx"] == gpt.config.n_ctx
    minilm_json = json.loads(written["minilm.json"].read_text(encoding="utf-8"))
    assert minilm_json == LIVE.minilm_live_json(bert.config, words)
    assert [words.token_to_id(t) for t in minilm_json["vocab"]] == list(range(words.vocab_size))
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    run = {
        name: ort.InferenceSession(str(written[name]), options, providers=["CPUExecutionProvider"])
        for name in ("gpt.onnx", "minilm.onnx")
    }
    x = torch.tensor([tok.encode("bad cab")])  # n_ctx = 8
    logits, _ = run["gpt.onnx"].run(None, {"ids": x.numpy()})
    with torch.no_grad():
        torch.testing.assert_close(torch.from_numpy(logits), gpt(x), atol=1e-5, rtol=0)
    ids = torch.tensor([words.encode(TEXTS[0])])
    attention, sentence = run["minilm.onnx"].run(None, {"input_ids": ids.numpy()})
    with torch.no_grad():
        out = bert(ids, output_attentions=True)
        want = torch.nn.functional.normalize(out.last_hidden_state.mean(1), dim=-1)
    torch.testing.assert_close(torch.from_numpy(sentence), want, atol=1e-5, rtol=0)
    torch.testing.assert_close(torch.from_numpy(attention), torch.cat(out.attentions), atol=1e-5,
                               rtol=0)  # fmt: skip


def test_every_saver_of_the_package_is_checked_here():
    """A new ``save_*``, ``write_*`` or ``*_state_dict`` in a module's ``__all__`` needs its
    round trip above."""
    import importlib
    import pkgutil

    import transformer_lab

    checked = {
        "transformer_lab.pretrained.book_gpt.save_book_gpt",
        "transformer_lab.pretrained.tiny_bert.save_tiny_bert",
        "transformer_lab.training.checkpoint.save_checkpoint",
        "transformer_lab.pretrained.ctranslate2_format.write_ctranslate2",
        "transformer_lab.export.live.write_live_models",
        "transformer_lab.nn.lora.lora_state_dict",
        "transformer_lab.data.cache.write_atomically",
    }
    found = set()
    for info in pkgutil.walk_packages(transformer_lab.__path__, "transformer_lab."):
        last = info.name.rpartition(".")[2]
        if info.name.startswith(("transformer_lab.exercises", "transformer_lab.viz")) or (
            last.startswith("_")
        ):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            if name.startswith(("save_", "write_")) or (
                name.endswith("_state_dict") and not name.startswith("load_")
            ):
                found.add(f"{info.name}.{name}")
    assert found == checked, sorted(found ^ checked)
