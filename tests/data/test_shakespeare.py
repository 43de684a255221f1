"""The Shakespeare data: Markdown conversion, the fixed order, the split, both tokenizers."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest
import torch
from disk_faults import full_disk, read_only

from transformer_lab.data import shakespeare as sh


def test_markdown_to_text_speakers_directions_and_continuations():
    markdown = (
        "# Macbeth\n\n## ACT I\n\n### SCENE II. A camp.\n\n"
        "_Alarum within. Enter DUNCAN, meeting a bleeding\nSergeant_\n\n"
        "**DUNCAN**  \nWhat bloody man is that?  \nHe can report.\n\n"
        "**Sergeant**  \n__\\[Aside]_  \nDoubtful it stood--  \nAs two spent swimmers\u2014\n\n"
        "_Exit Sergeant_\n\nWho comes here?\n\n"
        "*Enter at one door Derby,\nwith a Drum.*\n\n"
        "**First Witch**  \nNo, no; he'll __\\[ ]_  \nSeem to break loose.\n"
    )
    assert sh.markdown_to_text(markdown) == (
        "DUNCAN:\nWhat bloody man is that?\nHe can report.\n\n"
        "Sergeant:\nDoubtful it stood--\nAs two spent swimmers--\nWho comes here?\n\n"
        "First Witch:\nNo, no; he'll\nSeem to break loose.\n"
    )


def test_scene_heading_continuations_and_names_split_over_two_paragraphs():
    markdown = (
        "### SCENE VII. A tent in the French camp. LEAR on a bed asleep,\n\n"
        "soft music playing; Gentleman, and others attending.\n\n"
        "COUNTESS\n\n**OF AUVERGNE**  \nIs this the man?\n\n"
        "### Prologue\n\nI come no more to make you laugh.\n"
    )
    assert sh.markdown_to_text(markdown) == (
        "COUNTESS OF AUVERGNE:\nIs this the man?\n\nI come no more to make you laugh.\n"
    )


def test_a_new_scene_does_not_continue_the_last_speech():
    markdown = (
        "**ROSS**  \nGod save the king!\n\n### SCENE III. A room.\n\n_Enter TIMON_\n\n"
        "A line with no speaker.\n"
    )
    assert sh.markdown_to_text(markdown) == "ROSS:\nGod save the king!\n\nA line with no speaker.\n"


def test_load_plays_fixed_order_titles_and_no_markup():
    plays = sh.load_plays()
    assert len(plays) == len(sh.PLAYS) == 38
    titles = [t for t, _ in plays]
    assert titles[0] == "A Midsummer Night's Dream"
    assert titles[-1] == "Timon of Athens"
    assert "Measure for Measure" in titles  # the one file without a title heading
    assert plays == sh.load_plays()  # deterministic and returned as a fresh list
    macbeth = dict(plays)["Macbeth"]
    assert macbeth.startswith("First Witch:\nWhen shall we three meet again\n")
    speeches = 0
    with_speaker = 0
    for _, text in plays:
        assert not set("#*_[]\\\u2014") & set(text)
        assert "\n\n\n" not in text and not text.startswith("\n") and text.endswith("\n")
        for speech in text.split("\n\n"):
            speeches += 1
            with_speaker += speech.split("\n")[0].endswith(":")
    # a few speeches are printed without a speaker (prologues, songs); nearly all have one
    assert speeches > 30_000 and speeches - with_speaker < 10


def test_split_holds_out_the_last_plays_and_at_least_100k_chars():
    plays = sh.load_plays()
    train, val = sh.split_plays()
    assert train + val == plays
    assert sum(len(t) for _, t in val) >= 100_000
    assert sum(len(t) for _, t in val[1:]) < 100_000  # the fewest plays that suffice
    assert not {t for t, _ in train} & {t for t, _ in val}
    train_text, val_text = sh.train_val_text()
    assert len(val_text) >= 100_000 and val_text not in train_text
    # asking for more held-out text takes more plays from the end
    _, val_more = sh.split_plays(min_val_chars=250_000)
    assert val_more[-len(val) :] == val and len(val_more) > len(val)


def test_char_tokenizer_round_trip_and_unknown_characters():
    tok = sh.char_tokenizer()
    _, val_text = sh.train_val_text()
    ids = tok.encode(val_text[:5000])
    assert tok.decode(ids) == val_text[:5000]
    assert max(ids) < tok.vocab_size and tok.vocab_size < 100
    assert torch.equal(tok.encode_tensor("Hamlet:\n"), torch.tensor(tok.encode("Hamlet:\n")))
    try:
        tok.encode("caf\u00e9")
    except ValueError as err:
        assert "'\u00e9'" in str(err)
    else:
        raise AssertionError("an unknown character must raise")


def test_bpe_is_trained_on_training_text_deterministically_and_cached(tmp_path, monkeypatch):
    plays = sh.load_plays()
    small_train, small_val = plays[0][1], plays[1][1]  # a small stand-in keeps this fast
    monkeypatch.setattr(sh, "train_val_text", lambda *a, **k: (small_train, small_val))
    monkeypatch.setenv("TRANSFORMER_LAB_CACHE", str(tmp_path))
    sh.bpe_tokenizer.cache_clear()
    try:
        a = sh.bpe_tokenizer(300)
        files = sorted(p.name for p in tmp_path.iterdir())
        assert len(files) == 1 and files[0].startswith("shakespeare_bpe_300_")
        first = (tmp_path / files[0]).read_bytes()
        sh.bpe_tokenizer.cache_clear()
        assert sh.bpe_tokenizer(300).encode(small_val[:500]) == a.encode(small_val[:500])
        (tmp_path / files[0]).unlink()
        sh.bpe_tokenizer.cache_clear()
        b = sh.bpe_tokenizer(300)  # trained again from scratch: byte-identical
        assert (tmp_path / files[0]).read_bytes() == first
        assert a.vocab_size == b.vocab_size == 300
        text = "KING LEAR:\nBlow, winds, and crack your cheeks! rage! blow!\n\n"
        ids = a.encode(text)
        assert a.decode(ids) == text and len(ids) < len(text)
        assert a.encode_tensor(text + text).tolist() == a.encode(text + text)
        assert a.chars_per_token(text) == len(text) / len(ids)
        train_ids, val_ids = sh._encode_splits(a)
        assert a.decode(val_ids.tolist()) == small_val
        assert (tmp_path / files[0]).with_suffix(".ids.pt").is_file()
    finally:
        sh.bpe_tokenizer.cache_clear()
        sh._encode_splits.cache_clear()


def test_get_batch_targets_are_inputs_shifted():
    data = torch.arange(100)
    g = torch.Generator().manual_seed(0)
    x, y = sh.get_batch(data, 4, 8, generator=g)
    assert x.shape == y.shape == (4, 8)
    assert torch.equal(y[:, :-1], x[:, 1:]) and torch.equal(y[:, -1], x[:, -1] + 1)
    g2 = torch.Generator().manual_seed(0)
    assert torch.equal(sh.get_batch(data, 4, 8, generator=g2)[0], x)


def test_damaged_cache_files_are_rebuilt(tmp_path, monkeypatch):
    plays = sh.load_plays()
    small_train, small_val = plays[0][1], plays[1][1]
    monkeypatch.setattr(sh, "train_val_text", lambda *a, **k: (small_train, small_val))
    monkeypatch.setenv("TRANSFORMER_LAB_CACHE", str(tmp_path))
    sh.bpe_tokenizer.cache_clear()
    sh._encode_splits.cache_clear()
    try:
        tok = sh.bpe_tokenizer(300)
        want = sh._encode_splits(tok)
        json_path = tok.cache_path
        ids_path = json_path.with_suffix(".ids.pt")
        good_json = json_path.read_bytes()
        damaged_ids = [
            b"not a pickle",  # garbage
            b"",  # empty
            ids_path.read_bytes()[:100],  # truncated
        ]
        torch.save({"train": torch.tensor([1, 2]), "val": torch.tensor([999])}, tmp_path / "x")
        damaged_ids.append((tmp_path / "x").read_bytes())  # ids out of the vocabulary
        torch.save([1, 2, 3], tmp_path / "x")
        damaged_ids.append((tmp_path / "x").read_bytes())  # not the expected dict
        for damaged in damaged_ids:
            ids_path.write_bytes(damaged)
            sh._encode_splits.cache_clear()
            with pytest.warns(UserWarning, match=re.escape(f"cache file {ids_path} was damaged")):
                got = sh._encode_splits(tok)
            assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
            assert torch.load(ids_path, weights_only=True)["val"].equal(want[1])  # rewritten
        for damaged in (b"{broken", b"", good_json[: len(good_json) // 2], b'{"model": 1}'):
            json_path.write_bytes(damaged)
            sh.bpe_tokenizer.cache_clear()
            with pytest.warns(UserWarning, match=re.escape(f"cache file {json_path} was damaged")):
                again = sh.bpe_tokenizer(300)
            assert json_path.read_bytes() == good_json  # retrained, byte-identical
            assert again.encode(small_val[:300]) == tok.encode(small_val[:300])
    finally:
        sh.bpe_tokenizer.cache_clear()
        sh._encode_splits.cache_clear()


def test_every_torch_load_is_weights_only():
    root = Path(sh.__file__).resolve().parents[1]
    for path in root.rglob("*.py"):
        for call in re.findall(r"torch\.load\([^)]*\)", path.read_text()):
            assert "weights_only=True" in call, f"{path.name}: {call}"


def test_spoken_lines_leave_out_speaker_names():
    text = (
        "HAMLET:\nTo be, or not to be,\nthat is the question.\n\n"
        "A song with no speaker.\n\nFirst Lord:\nMy lord.\n"
    )
    assert sh.spoken_lines(text) == [
        "To be, or not to be,",
        "that is the question.",
        "A song with no speaker.",
        "My lord.",
    ]
    macbeth = dict(sh.load_plays())["Macbeth"]
    assert sh.spoken_lines(macbeth)[0] == "When shall we three meet again"
    with pytest.raises(TypeError, match="text must be a str, got NoneType"):
        sh.spoken_lines(None)


@pytest.fixture
def small_bpe_cache(tmp_path, monkeypatch):
    """A cache folder of its own and a small training text, for BPE tokenizers built fast."""
    plays = sh.load_plays()
    monkeypatch.setattr(sh, "train_val_text", lambda *a, **k: (plays[0][1], plays[1][1]))
    monkeypatch.setenv("TRANSFORMER_LAB_CACHE", str(tmp_path))
    sh.bpe_tokenizer.cache_clear()
    sh._encode_splits.cache_clear()
    yield tmp_path
    sh.bpe_tokenizer.cache_clear()
    sh._encode_splits.cache_clear()


def test_a_read_only_cache_is_named_with_its_cause(small_bpe_cache, monkeypatch):
    read_only(small_bpe_cache, monkeypatch)
    with pytest.raises(PermissionError) as info:
        sh.bpe_tokenizer(300)
    message = str(info.value)
    assert f"cannot write {small_bpe_cache}{os.sep}shakespeare_bpe_300_" in message
    assert "Permission denied" in message and "set TRANSFORMER_LAB_CACHE" in message
    small_bpe_cache.chmod(0o755)
    assert list(small_bpe_cache.iterdir()) == []


def test_a_full_disk_leaves_no_partial_cache_file(small_bpe_cache, monkeypatch):
    tok = sh.bpe_tokenizer(300)  # built and cached while there is room
    ids_path = tok.cache_path.with_suffix(".ids.pt")
    full_disk(monkeypatch, room=100)
    with pytest.raises(OSError, match=re.escape(f"cannot write {ids_path}: No space left")):
        sh.encode_splits(tok)
    assert [p.name for p in small_bpe_cache.iterdir()] == [tok.cache_path.name]
    tok.cache_path.unlink()
    sh.bpe_tokenizer.cache_clear()
    with pytest.raises(OSError) as info:
        sh.bpe_tokenizer(300)
    assert info.value.errno == errno.ENOSPC
    assert f"cannot write {tok.cache_path}: No space left on device (the disk is full)" in str(
        info.value
    )
    assert list(small_bpe_cache.iterdir()) == []
