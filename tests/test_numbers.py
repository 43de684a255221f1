"""The number-words translation data: tokens, splits, determinism, caching, batches."""

import itertools
import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from num2words import num2words

from transformer_lab.data import numbers

SMALL = dict(n_train=300, n_val=40, n_test=60, max_digits=6, seed=3)


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_LAB_CACHE", str(tmp_path))
    numbers._load.cache_clear()
    yield tmp_path
    numbers._load.cache_clear()


def test_german_order_flip_and_morphemes():
    assert numbers.number_to_words(21, "de") == ["ein", "und", "zwanzig"]
    assert numbers.number_to_words(21, "en") == ["twenty", "one"]
    assert numbers.number_to_words(21, "fr") == ["vingt", "et", "un"]
    assert numbers.number_to_words(17, "de") == ["sieb", "zehn"]
    assert numbers.number_to_words(16, "de") == ["sech", "zehn"]
    assert numbers.number_to_words(99, "fr") == ["quatre", "vingt", "dix", "neuf"]
    assert numbers.number_to_words(1234, "en") == (
        ["one", "thousand", "two", "hundred", "and", "thirty", "four"]
    )
    assert numbers.number_to_words(2_000_001, "de") == ["zwei", "millionen", "eins"]


def test_german_fixes_num2words_eins_before_tausend():
    # num2words writes "einhunderteinstausend"; German says "einhunderteintausend"
    assert "einstausend" in num2words(101000, lang="de")
    assert numbers.number_to_words(101000, "de") == ["ein", "hundert", "ein", "tausend"]
    assert numbers.number_to_words(101_000_000, "de")[:4] == ["ein", "hundert", "eine", "millionen"]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**15 - 1), st.sampled_from(numbers.LANGUAGES))
def test_trimmed_converter_matches_num2words(number, lang):
    assert numbers._converter(lang).to_cardinal(number) == num2words(number, lang=lang)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**12 - 1))
def test_german_morphemes_rebuild_the_word(number):
    text = num2words(number, lang="de").lower().replace(" ", "")
    expected = text.replace("einstausend", "eintausend")
    for scale in ("millionen", "milliarden"):
        expected = expected.replace("eins" + scale, "eine" + scale)
    assert "".join(numbers.number_to_words(number, "de")) == expected


def test_bad_inputs():
    with pytest.raises(ValueError, match="language"):
        numbers.number_to_words(3, "xx")
    with pytest.raises(TypeError, match="int"):
        numbers.number_to_words(3.0, "en")
    with pytest.raises(ValueError, match=r"\[0, 10\*\*16\)"):
        numbers.number_to_words(-1, "en")
    with pytest.raises(ValueError, match="cannot split"):
        numbers.split_german("katze")
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


def test_vocab_encode_decode():
    vocab = numbers.Vocab(["b", "a", "a"])
    assert vocab.itos == [*numbers.SPECIALS, "a", "b"]
    ids = vocab.encode(["a", "b", "zzz"], bos=True, eos=True)
    assert ids == [1, 4, 5, numbers.UNK_ID, 2]
    assert vocab.decode(torch.tensor(ids + [0, 0])) == ["a", "b", "<unk>"]
    assert vocab.decode([1, 4, 2, 5]) == ["a"]  # stops at <eos>
    assert vocab.decode([1, 4, 2, 5], strip=False) == ["<bos>", "a", "<eos>", "b"]
    with pytest.raises(TypeError, match="string"):
        vocab.encode("a b")
    with pytest.raises(ValueError, match="outside"):
        vocab.decode([99])


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
