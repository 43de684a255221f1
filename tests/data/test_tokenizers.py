"""Tokenizers: the chapter-1 Vocabulary, the seq2seq Vocab with its special tokens, the
character tokenizer and byte-level BPE, each encoding and decoding back."""

import pytest
import torch

from transformer_lab.data.tokenizers import (
    SPECIALS,
    UNK_ID,
    BPETokenizer,
    CharTokenizer,
    Vocab,
    Vocabulary,
)


def test_vocabulary_round_trip_and_errors():
    vocab = Vocabulary(["[PAD]", "thanks", "for", "all", "the"])
    ids = vocab.encode(["thanks", "for", "all", "the"])
    assert ids.tolist() == [1, 2, 3, 4] and ids.dtype == torch.long
    assert vocab.decode(ids) == ["thanks", "for", "all", "the"]
    assert len(vocab) == 5 and "the" in vocab and "fish" not in vocab
    with pytest.raises(KeyError, match="fish"):
        vocab.encode(["fish"])
    with pytest.raises(IndexError, match="outside"):
        vocab.decode([5])
    with pytest.raises(ValueError, match="twice"):
        Vocabulary(["a", "b", "a"])


def test_vocab_encode_decode():
    vocab = Vocab(["b", "a", "a"])
    assert vocab.itos == [*SPECIALS, "a", "b"]
    ids = vocab.encode(["a", "b", "zzz"], bos=True, eos=True)
    assert ids == [1, 4, 5, UNK_ID, 2]
    assert vocab.decode(torch.tensor(ids + [0, 0])) == ["a", "b", "<unk>"]
    assert vocab.decode([1, 4, 2, 5]) == ["a"]  # stops at <eos>
    assert vocab.decode([1, 4, 2, 5], strip=False) == ["<bos>", "a", "<eos>", "b"]
    with pytest.raises(TypeError, match="string"):
        vocab.encode("a b")
    with pytest.raises(ValueError, match="outside"):
        vocab.decode([99])


def test_char_tokenizer_round_trip():
    tok = CharTokenizer("to be or not")
    assert tok.itos == sorted(set("to be or not")) and tok.vocab_size == 7
    ids = tok.encode("not to be")
    assert tok.decode(ids) == "not to be" and torch.equal(
        tok.encode_tensor("be"), torch.tensor(ids[-2:])
    )
    with pytest.raises(ValueError, match="'z' is not in the vocabulary"):
        tok.encode("zoo")
    with pytest.raises(ValueError, match=r"ids must be in \[0, 7\)"):
        tok.decode([7])


def test_bpe_trained_on_a_small_text_encodes_any_text():
    text = "\n\n".join(["to be, or not to be: that is the question"] * 20)
    tok = BPETokenizer.train(text, 280)
    assert isinstance(tok, BPETokenizer) and tok.vocab_size == 280 and tok.cache_path is None
    ids = tok.encode("to be or not")
    assert tok.decode(ids) == "to be or not" and len(ids) < len("to be or not")
    unseen = "Zebra \u00e9t\u00e9"  # bytes never seen in training still encode
    assert tok.decode(tok.encode(unseen)) == unseen
    assert tok.encode_tensor(text).tolist() == tok.encode(text)
