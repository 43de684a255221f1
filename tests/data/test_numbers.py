"""The number-words translation data: tokens, splits, determinism, caching, batches."""

import errno
import itertools
import json
import os

import pytest
import torch
from disk_faults import full_disk, read_only

from transformer_lab.data import numbers

SMALL = dict(n_train=300, n_val=40, n_test=60, max_digits=6, seed=3)


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_LAB_CACHE", str(tmp_path))
    numbers._load.cache_clear()
    yield tmp_path
    numbers._load.cache_clear()


def test_bad_inputs():
    with pytest.raises(ValueError, match="both"):
        numbers.NumbersConfig(src_lang="de", tgt_lang="de")
    with pytest.raises(ValueError, match="min_digits"):
        numbers.NumbersConfig(min_digits=5, max_digits=3)
    with pytest.raises(ValueError, match="distinct numbers"):
        numbers.NumbersConfig(n_train=200, n_val=0, n_test=0, max_digits=2)
    with pytest.raises(TypeError, match="not both"):
        numbers.load(numbers.NumbersConfig(), n_train=5)


def test_splits_are_disjoint_deterministic_and_balanced(tmp_cache):
    data = numbers.load(use_cache_file=False, **SMALL)
    assert (len(data.train), len(data.val), len(data.test)) == (300, 40, 60)
    sets = [{p.number for p in s} for s in (data.train, data.val, data.test)]
    assert not (sets[0] & sets[1] or sets[0] & sets[2] or sets[1] & sets[2])
    digits = [len(str(p.number)) for p in data.train + data.val + data.test]
    counts = [digits.count(d) for d in range(1, 7)]
    assert counts[0] == 10 and max(counts[1:]) - min(counts[1:]) <= 1, counts
    numbers._load.cache_clear()
    again = numbers.load(use_cache_file=False, **SMALL)
    assert again.train == data.train and again.test == data.test
    other = numbers.load(use_cache_file=False, **{**SMALL, "seed": 4})
    assert other.train != data.train


def test_cache_file_round_trip(tmp_cache):
    data = numbers.load(**SMALL)
    files = list(tmp_cache.glob("numbers_en_de_*.json"))
    assert len(files) == 1
    assert json.loads(files[0].read_text())["test"][0][0] == data.test[0].number
    assert numbers.load(**SMALL) is data  # in-memory cache
    numbers._load.cache_clear()
    from_file = numbers.load(**SMALL)
    assert from_file is not data and from_file.train == data.train
    files[0].write_text("{broken")  # a damaged file is rebuilt
    numbers._load.cache_clear()
    assert numbers.load(**SMALL).test == data.test
    for damaged in (
        '{"test": [[1, 2, 3]]}',
        '{"test": 5}',
        "[]",
        "\x00\xff",
    ):  # valid JSON, wrong form
        files[0].write_text(damaged)
        numbers._load.cache_clear()
        assert numbers.load(**SMALL).test == data.test
        assert json.loads(files[0].read_text())["test"][0][0] == data.test[0].number


def test_max_src_len_and_french(tmp_cache):
    data = numbers.load(use_cache_file=False, **{**SMALL, "max_src_len": 6, "tgt_lang": "fr"})
    assert all(len(p.src) <= 6 for p in data.train + data.val + data.test)
    assert len(data.train) < SMALL["n_train"]
    assert "vingt" in data.tgt_vocab


def test_batches_shapes_padding_and_order(tmp_cache):
    data = numbers.load(use_cache_file=False, **SMALL)
    batch = data.batch("test", [0, 1, 2])
    for i in range(3):
        pair = data.test[i]
        n = len(pair.src)
        assert data.src_vocab.decode(batch.src[i]) == list(pair.src)
        assert batch.src_lengths[i] == n and bool((batch.src[i, n:] == 0).all())
        assert batch.tgt[i, 0] == numbers.BOS_ID
        assert batch.tgt[i, len(pair.tgt) + 1] == numbers.EOS_ID
        assert data.tgt_vocab.decode(batch.tgt_out[i]) == list(pair.tgt)
    assert batch.src.shape[1] == int(batch.src_lengths.max())  # trimmed
    assert torch.equal(batch.tgt_in, batch.tgt[:, :-1])
    assert torch.equal(batch.src_mask, batch.src != 0)

    first = [b.index.tolist() for b in itertools.islice(data.batches("train", 64, seed=1), 7)]
    second = [b.index.tolist() for b in itertools.islice(data.batches("train", 64, seed=1), 7)]
    assert first == second
    epoch = [i for b in first[:5] for i in b]  # 300 = 4 * 64 + 44
    assert sorted(epoch) == list(range(300)) and len(first[4]) == 44
    assert first[5] != first[0]  # reshuffled
    finite = list(data.batches("val", 16, shuffle=False, epochs=1))
    assert [len(b) for b in finite] == [16, 16, 8]
    with pytest.raises(ValueError, match="batch_size"):
        next(data.batches("train", 0))
    with pytest.raises(ValueError, match="split"):
        data.batch("dev", [0])
    with pytest.raises(IndexError, match="out of range"):
        data.batch("test", [60])


def test_predict_exact_match_and_accuracy_by_length(tmp_cache):
    data = numbers.load(use_cache_file=False, **SMALL)

    def oracle(src):  # translates perfectly by looking the pairs up
        by_src = {p.src: p.tgt for p in data.test}
        rows = [
            data.tgt_vocab.encode(by_src[tuple(data.src_vocab.decode(r))], eos=True) for r in src
        ]
        return numbers._pad(rows)

    predictions = numbers.predict(oracle, data, "test", batch_size=25)
    correct = numbers.exact_match(predictions, [p.tgt for p in data.test])
    assert bool(correct.all())
    lengths = data.src_lengths("test")
    table = numbers.accuracy_by_length(correct, lengths, [1, 5, 100])
    assert [t[0] for t in table] == ["1-4", "5-99"]
    assert sum(t[2] for t in table) == 60 and all(t[1] == 1.0 for t in table if t[2])
    half = torch.tensor([True, False, True, False])
    ((label, acc, n),) = numbers.accuracy_by_length(half, torch.tensor([3, 3, 3, 3]), [3, 4])
    assert (label, acc, n) == ("3", 0.5, 4)
    with pytest.raises(ValueError, match="increasing"):
        numbers.accuracy_by_length(half, torch.tensor([3, 3, 3, 3]), [4, 3])
    with pytest.raises(ValueError, match="predictions"):
        numbers.exact_match([["a"]], [])


def test_a_full_disk_or_a_read_only_cache_is_named_and_leaves_no_partial_file(
    tmp_cache, monkeypatch
):
    full_disk(monkeypatch, room=500)
    with pytest.raises(OSError) as info:
        numbers.load(**SMALL)
    assert info.value.errno == errno.ENOSPC
    assert f"cannot write {tmp_cache}{os.sep}numbers_en_de_" in str(info.value)
    assert "No space left on device (the disk is full)" in str(info.value)
    assert list(tmp_cache.iterdir()) == []
    monkeypatch.undo()
    monkeypatch.setenv("TRANSFORMER_LAB_CACHE", str(tmp_cache))
    numbers._load.cache_clear()
    read_only(tmp_cache, monkeypatch)
    with pytest.raises(PermissionError, match="Permission denied .*TRANSFORMER_LAB_CACHE"):
        numbers.load(**SMALL)
    assert len(numbers.load(use_cache_file=False, **SMALL).train) > 0  # no file: no error
    tmp_cache.chmod(0o755)
    assert list(tmp_cache.iterdir()) == []


def test_joined_sentences_and_a_joint_vocabulary(tmp_cache):
    single = numbers.load(use_cache_file=False, **SMALL)
    joined = numbers.load(use_cache_file=False, **{**SMALL, "join": 2})
    assert len(joined.train) == len(single.train)
    for pair in joined.train[:50]:
        first = numbers.number_to_words(pair.number, "en")
        assert pair.src[: len(first)] == tuple(first) and pair.src[len(first)] == "and"
        rest = pair.src[len(first) + 1 :]
        german = tuple(numbers.number_to_words(pair.number, "de"))
        assert pair.tgt[: len(german)] == german and pair.tgt[len(german)] == "und"
        assert len(rest) > 0 and len(pair.tgt) > len(german) + 1
    assert (
        joined.src_lengths("train").float().mean()
        > 1.8 * single.src_lengths("train").float().mean()
    )
    joint = numbers.load(use_cache_file=False, **{**SMALL, "joint_vocab": True})
    assert joint.src_vocab is joint.tgt_vocab
    assert {"twenty", "zwanzig", "thousand", "tausend"} <= set(joint.src_vocab.itos)
    assert joint.train == single.train  # the same pairs, only the ids differ
    batch = joint.batch("train", [0, 1])
    assert joint.tgt_vocab.decode(batch.tgt[0, 1:]) == list(single.train[0].tgt)
    with pytest.raises(ValueError, match="join must be a positive int, got 0"):
        numbers.NumbersConfig(join=0)
    with pytest.raises(TypeError, match="joint_vocab must be a bool, got int"):
        numbers.NumbersConfig(joint_vocab=1)


def test_the_default_cache_file_keeps_its_name(tmp_cache):
    """join and joint_vocab at their defaults leave the cache key as it was before them."""
    from dataclasses import asdict
    from importlib.metadata import version

    config = numbers.NumbersConfig(**SMALL)
    old = {k: v for k, v in asdict(config).items() if k not in ("join", "joint_vocab")}
    key = json.dumps({**old, "num2words": version("num2words"), "v": 1}, sort_keys=True)
    import hashlib

    assert numbers._cache_file(config).name.endswith(
        hashlib.sha256(key.encode()).hexdigest()[:16] + ".json"
    )
    joint = numbers.NumbersConfig(**SMALL, joint_vocab=True)
    assert numbers._cache_file(joint) == numbers._cache_file(config)  # same pairs, same file
    assert numbers._cache_file(numbers.NumbersConfig(**SMALL, join=2)) != numbers._cache_file(
        config
    )
