"""Tokenizers: the chapter-1 Vocabulary, the seq2seq Vocab with its special tokens, the
vocabulary of whole words, the character tokenizer and byte-level BPE, each encoding and
decoding back; BERT's special tokens, defined once, in the order every BERT vocabulary
numbers them; a WordPiece vocabulary renumbered by count."""

import pytest
import torch

from transformer_lab.data.tokenizers import (
    BERT_SPECIALS,
    SPECIALS,
    UNK_ID,
    BPETokenizer,
    CharTokenizer,
    Vocab,
    Vocabulary,
    WordVocabulary,
)
from transformer_lab.data.wordpiece import WordPieceTokenizer


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


def test_word_vocabulary_reads_whole_lower_cased_words():
    assert WordVocabulary.words("O, 'tis Timon! O'er the hill -- 2 men") == [
        "o", "tis", "timon", "o'er", "the", "hill", "men",
    ]  # fmt: skip
    vocab = WordVocabulary.from_texts(["the cat and the dog", "the end and"], 8)
    assert vocab.tokens[:5] == list(BERT_SPECIALS)
    assert vocab.tokens[5:] == ["the", "and", "cat"]  # by count, ties by spelling
    assert vocab.vocab_size == len(vocab) == 8
    assert vocab.special_ids == [0, 1, 2, 3, 4] and vocab.mask_id == 4 and vocab.unk_id == 1
    assert vocab.encode("The dog, the cat!") == [5, 1, 5, 7]
    assert vocab.convert_ids_to_tokens([2, 5, 1]) == ["[CLS]", "the", "[UNK]"]
    assert vocab.token_to_id("and") == 6 and vocab.token_to_id("zebra") == vocab.unk_id


def test_bert_special_tokens_are_named_once_and_numbered_alike():
    assert BERT_SPECIALS == ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    assert (BERT_SPECIALS.pad, BERT_SPECIALS.cls, BERT_SPECIALS.mask) == (
        "[PAD]",
        "[CLS]",
        "[MASK]",
    )
    words = WordVocabulary(["thou", "art"])
    pieces = WordPieceTokenizer.train(["thou art more lovely"] * 5, vocab_size=40, min_frequency=1)
    for tok in (words, pieces):
        assert list(tok.special_ids) == [0, 1, 2, 3, 4]
        assert tok.convert_ids_to_tokens(tok.special_ids) == list(BERT_SPECIALS)
        ids = (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id)
        assert tok.convert_ids_to_tokens(list(ids)) == list(BERT_SPECIALS)


def test_wordpiece_renumbered_puts_the_special_tokens_first_then_the_frequent_ones():
    tok = WordPieceTokenizer.train(["the cat sat on the mat", "a dog"] * 10, 50, min_frequency=1)
    rng = torch.Generator().manual_seed(0)
    counts = torch.randint(0, 4, (tok.vocab_size,), generator=rng)  # many ties
    again = tok.renumbered(counts)
    old, new = tok.backend.get_vocab(), again.backend.get_vocab()
    assert set(new) == set(old) and sorted(new.values()) == list(range(len(old)))
    order = sorted(new, key=new.get)
    assert order[:5] == list(BERT_SPECIALS)
    rest = [(-int(counts[old[t]]), t) for t in order[5:]]
    assert rest == sorted(rest), "by falling count, ties by spelling"
    text = "the cat sat on a dog"
    assert again.tokenize(text) == tok.tokenize(text)
    batch = again(text, "the mat")
    assert batch.tokens[0][0] == BERT_SPECIALS.cls and batch.tokens[0][-1] == BERT_SPECIALS.sep
    assert batch.segment_ids[0, -1] == 1 and again.max_length == tok.max_length
    assert again.renumbered(torch.zeros(tok.vocab_size, dtype=torch.long)).backend.get_vocab() == {
        t: i for i, t in enumerate(list(BERT_SPECIALS) + sorted(set(old) - set(BERT_SPECIALS)))
    }
