"""The shipped chapter-13 GPT (``transformer_lab/assets/gpt_book_cpu.*``, written by
``scripts/experiments/train_book_gpt.py``) is the chapter's model: its preset, recipe, seed
and tokenizer, and the held-out loss the chapter asserts. The slow test trains it again::

    TRANSFORMER_LAB_SLOW=1 nice -n 10 .venv/bin/python -m pytest -q \
        tests/pretrained/test_book_gpt.py
"""

from __future__ import annotations

import dataclasses
import os

import pytest
import torch
from script_loader import load_script

from transformer_lab.data import shakespeare
from transformer_lab.models.gpt import GPT
from transformer_lab.pretrained.book_gpt import (
    book_gpt_info,
    load_book_gpt,
    save_book_gpt,
)
from transformer_lab.training.gpt import evaluate_lm, preset


@pytest.fixture(scope="module")
def shipped():
    torch.set_num_threads(1)
    return load_book_gpt()


def test_the_checkpoint_is_the_chapters_preset_recipe_seed_and_tokenizer(shipped):
    model, tok = shipped
    info = book_gpt_info()
    chapter_tok = shakespeare.char_tokenizer()
    assert info["vocab"] == chapter_tok.itos and tok.itos == chapter_tok.itos
    config, recipe = preset("book-cpu", chapter_tok.vocab_size)
    assert model.config == config
    assert info["recipe"] == dataclasses.asdict(recipe)
    assert (info["preset"], info["seed"], info["n_ctx_trained"]) == ("book-cpu", 0, 64)
    assert not model.training


def test_the_held_out_loss_is_in_the_chapters_range(shipped):
    model, _ = shipped
    _, val_ids = shakespeare.encode_splits(shakespeare.char_tokenizer())
    val = evaluate_lm(model, val_ids, batch_size=256, n_ctx=64)  # as chapter 13's fit
    assert 1.75 < val < 1.88, val  # chapter 13 asserts this range for its GPT
    assert abs(val - book_gpt_info()["held_out_loss"]) < 1e-3, val


def test_save_and_load_give_the_same_model(shipped, tmp_path):
    model, tok = shipped
    folder = save_book_gpt(model, tok, {"held_out_loss": 1.0}, tmp_path)
    again, tok_again = load_book_gpt(directory=folder)
    ids = torch.tensor([tok.encode("O Romeo, Romeo!")])
    torch.testing.assert_close(again(ids), model(ids), rtol=0, atol=0)
    assert tok_again.itos == tok.itos and book_gpt_info(folder)["held_out_loss"] == 1.0


def test_a_tokenizer_of_another_size_is_refused(shipped, tmp_path):
    model, _ = shipped
    with pytest.raises(ValueError, match="the tokenizer has 3 characters but the model"):
        save_book_gpt(model, shakespeare.CharTokenizer("abc"), {}, tmp_path)
    with pytest.raises(ValueError, match="run scripts/experiments/train_book_gpt.py"):
        book_gpt_info(tmp_path / "nowhere")
    assert isinstance(model, GPT)


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("TRANSFORMER_LAB_SLOW") != "1", reason="set TRANSFORMER_LAB_SLOW=1"
)
def test_the_script_trains_the_shipped_model_again(shipped):
    """About a minute on one thread: the same held-out loss as the shipped record."""
    torch.set_num_threads(1)
    model, record = load_script("experiments/train_book_gpt").train()
    assert abs(record["held_out_loss"] - book_gpt_info()["held_out_loss"]) < 2e-3, record
    assert 1.75 < record["held_out_loss"] < 1.88


def _tiny_gpt():
    from transformer_lab.data.tokenizers import CharTokenizer
    from transformer_lab.models.gpt import GPTConfig

    torch.manual_seed(0)
    return GPT(GPTConfig(d_vocab=3, n_ctx=4, n_layers=1, n_heads=1, d_model=8)), CharTokenizer(
        "abc"
    )


@pytest.mark.parametrize("storage", ["as-is", "int8"])
def test_save_then_load_gives_the_model_back(tmp_path, storage):
    model, tok = _tiny_gpt()
    save_book_gpt(model, tok, {"note": 1}, tmp_path, storage=storage)
    back, back_tok = load_book_gpt(directory=tmp_path)
    assert back_tok.itos == tok.itos and back.config == model.config
    atol = 0 if storage == "as-is" else 1e-2  # int8: a 127th of each row's largest weight
    for (name, a), (_, b) in zip(
        model.state_dict().items(), back.state_dict().items(), strict=True
    ):
        torch.testing.assert_close(b, a, atol=atol, rtol=0, msg=name)


@pytest.mark.parametrize("key", ["vocab", "config", "storage"])
def test_info_may_not_replace_what_the_saver_writes(tmp_path, key):
    model, tok = _tiny_gpt()
    with pytest.raises(ValueError, match=f"info may not hold \\['{key}'\\]"):
        save_book_gpt(model, tok, {key: "x"}, tmp_path)
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_nan_in_info_is_refused_before_writing(tmp_path):
    model, tok = _tiny_gpt()
    with pytest.raises(ValueError, match="only finite numbers"):
        save_book_gpt(model, tok, {"held_out_loss": float("nan")}, tmp_path)
    assert not list(tmp_path.iterdir())


def test_damaged_folders_are_named_with_what_is_wrong(tmp_path):
    import json

    model, tok = _tiny_gpt()
    save_book_gpt(model, tok, {}, tmp_path)
    info_path, weights = tmp_path / "gpt_book_cpu.json", tmp_path / "gpt_book_cpu.safetensors"
    info = json.loads(info_path.read_text())
    info_path.write_text(json.dumps({**info, "vocab": info["vocab"][:-1]}))
    with pytest.raises(ValueError, match="lists 2 characters for a model of d_vocab=3"):
        load_book_gpt(directory=tmp_path)
    info_path.write_text(json.dumps({**info, "config": {**info["config"], "n_wings": 2}}))
    with pytest.raises(ValueError, match="holds a config GPTConfig refuses"):
        load_book_gpt(directory=tmp_path)
    info_path.write_text("{not json")
    with pytest.raises(ValueError, match="gpt_book_cpu.json is damaged"):
        load_book_gpt(directory=tmp_path)
    info_path.write_text(json.dumps({**info, "config": {**info["config"], "n_layers": 2}}))
    with pytest.raises(ValueError) as deeper:
        load_book_gpt(directory=tmp_path)
    assert (
        "gpt_book_cpu.safetensors does not hold the model its gpt_book_cpu.json describes "
        "(n_layers=2): 16 of the model's tensors are missing, e.g. ['blocks.1.attn.W_K', "
        "'blocks.1.attn.W_O']; reinstall the package" in str(deeper.value)
    )
    info_path.write_text(json.dumps(info))
    weights.write_bytes(weights.read_bytes()[:100])  # a truncated copy
    with pytest.raises(ValueError, match="gpt_book_cpu.safetensors could not be loaded"):
        load_book_gpt(directory=tmp_path)


@pytest.mark.parametrize("storage", ["as-is", "int8"])
def test_weights_of_more_layers_than_the_json_says_are_named(tmp_path, storage):
    import json

    from transformer_lab.data.tokenizers import CharTokenizer
    from transformer_lab.models.gpt import GPTConfig

    two = GPT(GPTConfig(d_vocab=3, n_ctx=4, n_layers=2, n_heads=1, d_model=8))
    save_book_gpt(two, CharTokenizer("abc"), {}, tmp_path, storage=storage)
    info_path = tmp_path / "gpt_book_cpu.json"
    info = json.loads(info_path.read_text())
    info_path.write_text(json.dumps({**info, "config": {**info["config"], "n_layers": 1}}))
    with pytest.raises(ValueError) as shallower:
        load_book_gpt(directory=tmp_path)
    assert "describes (n_layers=1): 16 tensors are not the model's, e.g. ['blocks.1." in str(
        shallower.value
    ), shallower.value
