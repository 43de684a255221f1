"""The toy sentences of chapters 4 to 6: their tokens, and a fixed embedding per token."""

import pytest
import torch

from transformer_lab.data import toy_sentences

ANIMAL = "The animal didn't cross the street because it was too tired"


def test_tokenize_keeps_contractions_and_splits_punctuation():
    assert toy_sentences.tokenize(ANIMAL)[:3] == ["The", "animal", "didn't"]
    assert toy_sentences.tokenize("I love dogs.") == ["I", "love", "dogs", "."]
    with pytest.raises(ValueError, match="no tokens"):
        toy_sentences.tokenize("   ")
    with pytest.raises(TypeError):
        toy_sentences.tokenize(3)


def test_every_example_sentence_fits():
    assert toy_sentences.EXAMPLE_SENTENCES[0] == ANIMAL
    for sentence in toy_sentences.EXAMPLE_SENTENCES:
        assert 0 < len(toy_sentences.tokenize(sentence)) <= toy_sentences.MAX_TOKENS


def test_a_token_has_one_fixed_embedding_whatever_its_case():
    the = toy_sentences.token_embedding("the")
    assert the.shape == (toy_sentences.D_MODEL,) and the.dtype == torch.float32
    torch.testing.assert_close(toy_sentences.token_embedding("The"), the, rtol=0, atol=0)
    assert not torch.equal(toy_sentences.token_embedding("cat"), the)
    # seeded by a hash of the text, not by the order of calls or the global generator
    torch.manual_seed(123)
    toy_sentences.token_embedding.cache_clear()
    torch.testing.assert_close(toy_sentences.token_embedding("the"), the, rtol=0, atol=0)
