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
