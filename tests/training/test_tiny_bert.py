"""The shipped tiny BERT: its files, its held-out numbers, and that the script that made it
reproduces them.

The quick tests repeat the first steps of the run and compare them with the numbers that
``scripts/experiments/pretrain_tiny_bert.py`` stored beside the checkpoint: by default the
first 10 losses, with ``TRANSFORMER_LAB_SLOW=1`` all 40 stored and the held-out numbers
after them. The full
reproduction takes several minutes of processor time and runs only when asked:

    TRANSFORMER_LAB_SLOW=1 .venv/bin/python -m pytest -q tests/test_tiny_bert.py -k script
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import os
from pathlib import Path

import pytest
import torch
from disk_faults import full_disk, leftovers
from script_loader import load_script

from transformer_lab.data import shakespeare
from transformer_lab.data.wordpiece import WordPieceTokenizer
from transformer_lab.models.bert import BertForPreTraining
from transformer_lab.pretrained import tiny_bert as TB_FILES
from transformer_lab.training import bert_pretraining as TB
from transformer_lab.training.bert_reports import masked_lm_report
from transformer_lab.training.run import Run

ROOT = Path(__file__).resolve().parents[2]
FILES = (TB_FILES.WEIGHTS, TB_FILES.TOKENIZER, TB_FILES.INFO)


@pytest.fixture(scope="module")
def info():
    return TB_FILES.tiny_bert_info()


@pytest.fixture(scope="module")
def corpus():
    # called as pretrain_tiny_bert calls it, so that its cache (keyed on the arguments as
    # passed) hands the run this corpus instead of building it again
    return TB.shakespeare_corpus(TB.TinyBertRecipe().vocab_size)


def _close_reports(got: dict, want: dict, atol: float) -> None:
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=atol), (key, got[key], value)


def test_files_are_small_and_installed_with_the_package():
    sizes = {name: (TB_FILES.DATA_DIR / name).stat().st_size for name in FILES}
    assert sum(sizes.values()) < 8e6, sizes  # "a few MB"
    tomllib = pytest.importorskip("tomllib")
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["transformer_lab"]
    for name in FILES:  # every shipped file matches a package-data pattern
        assert any(fnmatch.fnmatch(f"assets/{name}", pattern) for pattern in package_data), name


def test_load_tiny_bert_gives_the_model_and_the_corpus_tokenizer(info, corpus):
    model, tok = TB_FILES.load_tiny_bert()
    assert isinstance(model, BertForPreTraining) and not model.training
    assert isinstance(tok, WordPieceTokenizer)
    assert dataclasses.asdict(model.config) == info["config"]
    assert model.config == TB.TinyBertRecipe(**info["recipe"]).config()
    # the same vocabulary with the same ids as a corpus built from scratch
    assert tok.backend.get_vocab() == corpus.tokenizer.backend.get_vocab()
    assert tok.max_length == model.config.max_pos
    batch = tok(["To be, or not to be", "a short line"])
    out = model.bert(batch.input_ids, batch.attention_mask)
    assert out.last_hidden_state.shape == (2, batch.input_ids.shape[1], model.config.d_model)
    assert out.pooler_output.shape == (2, model.config.d_model)


def test_the_held_out_play_is_not_in_the_training_text(info, corpus):
    train_plays, val_plays = shakespeare.split_plays()
    assert info["held_out_play"] == corpus.val_title == ", ".join(t for t, _ in val_plays)
    assert corpus.val_title not in {title for title, _ in train_plays}
    assert len(corpus.train_docs) == len(train_plays) and len(corpus.val_docs) == len(val_plays)
    # speaker names are dropped (capitals or not), and the held-out play is its own text
    names = {"POET:", "Poet:", "Painter:", "First Lord:", "TIMON:", "Timon:", "APEMANTUS:"}
    assert not names & {line.strip() for doc in corpus.val_docs for line in doc}
    assert not {"HAMLET:", "Hamlet:", "First Lord:", "Clown:"} & {
        line.strip() for doc in corpus.train_docs for line in doc
    }
    assert corpus.val_docs[0][0] in val_plays[0][1]


def test_shipped_weights_give_the_stored_held_out_numbers(info, corpus):
    model, _ = TB_FILES.load_tiny_bert()
    report = masked_lm_report(model, TB.held_out_batch(corpus), corpus)
    _close_reports(report, info["held_out"], atol=1e-4)


def test_shipped_model_beats_the_frequency_baselines(info):
    held = info["held_out"]
    assert held["word_accuracy"] > 3 * held["unigram_word_accuracy"], held
    assert held["word_loss"] < held["unigram_word_loss"] - 1.0, held
    assert held["accuracy"] > 2 * held["comma_accuracy"], held
    assert held["n_words"] > 4000, held


FAST_STEPS = 10


def test_the_first_few_steps_repeat_the_shipped_run(info, corpus):
    """The short form of the test below: the run's first FAST_STEPS losses are the first
    FAST_STEPS of the stored prefix (the same run stopped earlier; the learning-rate
    schedule still spans the whole run)."""
    recipe = TB.TinyBertRecipe(**info["recipe"])
    assert recipe == TB.TinyBertRecipe(), "the shipped checkpoint is the default recipe"
    _, run = TB.pretrain_tiny_bert(recipe, Run(steps=FAST_STEPS))
    want = info["prefix"]["losses"][:FAST_STEPS]
    assert run.steps == FAST_STEPS == len(want)
    torch.testing.assert_close(torch.tensor(run.losses), torch.tensor(want), rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_the_first_steps_repeat_the_shipped_run(info, corpus):
    """The script's first steps, repeated: the same losses and held-out numbers."""
    recipe = TB.TinyBertRecipe(**info["recipe"])
    assert recipe == TB.TinyBertRecipe(), "the shipped checkpoint is the default recipe"
    prefix = info["prefix"]
    model, run = TB.pretrain_tiny_bert(recipe, Run(steps=prefix["steps"]))
    assert run.steps == prefix["steps"] == len(prefix["losses"])
    torch.testing.assert_close(
        torch.tensor(run.losses), torch.tensor(prefix["losses"]), rtol=1e-4, atol=1e-4
    )
    assert run.losses[-1] < run.losses[0] - 0.2, "the loss falls in the first steps"
    report = masked_lm_report(model, TB.held_out_batch(corpus), corpus)
    _close_reports(report, prefix["held_out"], atol=1e-3)


def test_the_schedule_warms_up_and_decays_to_zero():
    r = TB.TinyBertRecipe(steps=100, warmup=10)
    assert r.lr_factor(0) == pytest.approx(0.1, abs=1e-3)
    assert r.lr_factor(9) == pytest.approx(0.5 * (1 + math.cos(math.pi * 0.09)))  # warm, decaying
    assert r.lr_factor(50) == pytest.approx(0.5)
    assert r.lr_factor(100) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("TRANSFORMER_LAB_SLOW") != "1", reason="set TRANSFORMER_LAB_SLOW=1"
)
def test_the_script_reproduces_the_checkpoint(info, tmp_path):
    """The whole run again (as long as the JSON's ``seconds`` say), into a temporary folder:

    TRANSFORMER_LAB_SLOW=1 nice -n 10 .venv/bin/python -m pytest -q \\
        tests/test_tiny_bert.py -k script
    """
    script = load_script("experiments/pretrain_tiny_bert")
    again = script.main(["--out", str(tmp_path)])
    _close_reports(again["held_out"], info["held_out"], atol=2e-3)
    assert [s for s, _ in again["evals"]] == [s for s, _ in info["evals"]]
    shipped = TB_FILES.load_tiny_bert()[0].state_dict()
    rebuilt = TB_FILES.load_tiny_bert(directory=tmp_path)[0].state_dict()
    worst = max((shipped[k] - rebuilt[k]).abs().max().item() for k in shipped)
    assert worst < 1e-2, worst


# --- saving: never into the package unless asked, all three files or none -------------------


@pytest.fixture
def small_bert(tmp_path, monkeypatch):
    """A one-block BERT and a small WordPiece tokenizer, and a cache folder of their own."""
    monkeypatch.setenv("TRANSFORMER_LAB_CACHE", str(tmp_path / "cache"))
    tok = WordPieceTokenizer.train(["the cat sat on the mat", "a dog ran"] * 20, vocab_size=60)
    config = TB.TinyBertRecipe(n_layers=1, d_model=8, n_heads=2, d_mlp=16, vocab_size=60)
    torch.manual_seed(0)
    return BertForPreTraining(config.config()), tok


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_save_writes_into_the_cache_unless_given_a_folder(small_bert, tmp_path):
    shipped = _files(TB_FILES.DATA_DIR)
    folder = TB_FILES.save_tiny_bert(*small_bert, {"note": "small"})
    assert folder == tmp_path / "cache" / "tiny_bert" and sorted(_files(folder)) == sorted(FILES)
    assert _files(TB_FILES.DATA_DIR) == shipped
    model, _ = TB_FILES.load_tiny_bert(directory=folder)
    loaded = model.state_dict()
    for name, p in small_bert[0].state_dict().items():
        assert torch.equal(p, loaded[name]), name
    assert TB_FILES.tiny_bert_info(folder)["note"] == "small"


def test_a_failed_save_leaves_the_old_files_whole(small_bert, tmp_path, monkeypatch):
    model, tok = small_bert
    folder = TB_FILES.save_tiny_bert(model, tok, {"run": 1}, tmp_path / "out")
    before = _files(folder)
    with torch.no_grad():
        next(model.parameters()).add_(1.0)  # new weights
    with pytest.raises(TypeError, match="info must hold only values JSON can write"):
        TB_FILES.save_tiny_bert(model, tok, {"path": Path("runs")}, folder)
    assert _files(folder) == before  # no new weights beside old metadata
    full_disk(monkeypatch, room=1000)  # the weights fit no more
    with pytest.raises(OSError, match=f"cannot write {folder / TB_FILES.WEIGHTS}: No space left"):
        TB_FILES.save_tiny_bert(model, tok, {"run": 2}, folder)
    assert _files(folder) == before and leftovers(folder) == []
    TB_FILES.load_tiny_bert(directory=folder)  # still loads


def test_a_damaged_copy_of_the_shipped_files_is_named_with_the_fix(tmp_path):
    import json
    import shutil

    for name in FILES:
        shutil.copy(TB_FILES.DATA_DIR / name, tmp_path / name)
    weights, info = tmp_path / TB_FILES.WEIGHTS, tmp_path / TB_FILES.INFO
    good_weights, good_info = weights.read_bytes(), json.loads(info.read_text())
    weights.write_bytes(good_weights[: len(good_weights) // 2])
    with pytest.raises(ValueError, match="tiny_bert.safetensors could not be loaded into the"):
        TB_FILES.load_tiny_bert(directory=tmp_path)
    weights.write_bytes(good_weights)
    for config, message in [
        ({"n_layers": 3}, r"\(n_layers=3\): 16 tensors are not the model's"),
        ({"n_wings": 2}, "holds a config BertConfig refuses"),
    ]:
        info.write_text(json.dumps({**good_info, "config": {**good_info["config"], **config}}))
        with pytest.raises(ValueError, match=message):
            TB_FILES.load_tiny_bert(directory=tmp_path)
    info.write_text("{")
    with pytest.raises(ValueError, match="tiny_bert.json is damaged \\(not JSON") as err:
        TB_FILES.load_tiny_bert(directory=tmp_path)
    assert "reinstall the package for the shipped files" in str(err.value)
    info.write_text(json.dumps(good_info))
    tokenizer = tmp_path / TB_FILES.TOKENIZER
    tokenizer.write_bytes(tokenizer.read_bytes()[:-20])
    with pytest.raises(ValueError, match="tiny_bert_tokenizer.json could not be read as") as err:
        TB_FILES.load_tiny_bert(directory=tmp_path)
    assert str(err.value).endswith(
        "reinstall the package for the shipped files, or save the model again with save_tiny_bert"
    )
