"""One-hot vectors, similarity measures and the MiniLM token embeddings."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_lab.analysis.word_vectors import (
    cosine_similarity,
    euclidean_distance,
    minilm_token_embeddings,
    nearest,
    one_hot,
)
from transformer_lab.data.tokenizers import Vocabulary

# float32 tolerances for sums over a few hundred products
TOL = {"rtol": 1e-5, "atol": 1e-6}


@settings(max_examples=25, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    vocab_size=st.integers(1, 30),
    d_model=st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
def test_one_hot_times_embedding_matrix_selects_rows(shape, vocab_size, d_model, seed):
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(vocab_size, shape, generator=gen)
    W_E = torch.randn(vocab_size, d_model, generator=gen)
    x = one_hot(ids, vocab_size)
    assert x.dtype == torch.float32 and x.shape == (*shape, vocab_size)
    assert torch.equal(x.sum(-1), torch.ones(shape))
    torch.testing.assert_close(x, F.one_hot(ids, vocab_size).float())
    # each output is a sum with a single non-zero term, so the product is exact
    torch.testing.assert_close(x @ W_E, W_E[ids], rtol=0, atol=0)
    embedding = torch.nn.Embedding.from_pretrained(W_E)
    torch.testing.assert_close(embedding(ids), W_E[ids], rtol=0, atol=0)


def test_one_hot_rejects_bad_indices():
    with pytest.raises(ValueError, match="0..4"):
        one_hot(torch.tensor([0, 5]), 5)
    with pytest.raises(TypeError, match="integers"):
        one_hot(torch.tensor([0.0, 1.0]), 5)


@settings(max_examples=25, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=2),
    d=st.integers(2, 9),
    seed=st.integers(0, 2**16),
)
def test_similarity_parity_and_unit_vector_identity(shape, d, seed):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(*shape, d, generator=gen, dtype=torch.float64)
    b = torch.randn(*shape, d, generator=gen, dtype=torch.float64)
    torch.testing.assert_close(cosine_similarity(a, b), F.cosine_similarity(a, b, dim=-1))
    torch.testing.assert_close(euclidean_distance(a, b), torch.linalg.vector_norm(a - b, dim=-1))
    # scaling either vector leaves the cosine alone but moves the distance
    torch.testing.assert_close(cosine_similarity(3.0 * a, b), cosine_similarity(a, b))
    # for unit vectors |a - b|^2 = 2 - 2 cos, so both measures rank neighbours alike
    ua, ub = F.normalize(a, dim=-1), F.normalize(b, dim=-1)
    torch.testing.assert_close(euclidean_distance(ua, ub) ** 2, 2 - 2 * cosine_similarity(ua, ub))


def test_cosine_of_zero_vector_is_zero_not_nan():
    assert cosine_similarity(torch.zeros(3), torch.ones(3)).item() == 0.0


def test_nearest_on_a_toy_vocabulary():
    vocab = Vocabulary(["a", "b", "c", "d"])
    W_E = torch.tensor([[1.0, 0.0], [10.0, 0.5], [0.9, 0.9], [0.0, 1.0]])
    assert [t for t, _ in nearest("a", W_E, vocab, k=2, metric="cosine")] == ["b", "c"]
    assert [t for t, _ in nearest("a", W_E, vocab, k=2, metric="euclidean")] == ["c", "d"]
    with pytest.raises(ValueError, match="metric"):
        nearest("a", W_E, vocab, metric="manhattan")


def test_minilm_token_embeddings():
    vocab, W_E = minilm_token_embeddings()
    assert W_E.shape == (30522, 384) and len(vocab) == 30522
    assert vocab.encode(["thanks", "for", "all", "the"]).tolist() == [4283, 2005, 2035, 1996]
    assert vocab[0] == "[PAD]" and vocab[103] == "[MASK]"
    king = [t for t, _ in nearest("king", W_E, vocab, k=5)]
    assert "queen" in king, king


def test_analogy_and_nearest_refuse_a_nan_row_instead_of_ranking_it_first():
    from transformer_lab.analysis.word_vectors import analogy

    W_E = torch.randn(6, 4, generator=torch.Generator().manual_seed(0))
    vocab = Vocabulary(list("abcdef"))
    np = pytest.importorskip("numpy")
    assert len(analogy("a", "b", "c", W_E, vocab, k=np.int64(2))) == 2
    assert len(nearest("a", W_E, vocab, k=np.int32(3))) == 3
    W_E[5] = float("nan")
    with pytest.raises(ValueError, match=r"e.g. \['f'\]"):
        analogy("a", "b", "c", W_E, vocab, k=2)
    with pytest.raises(ValueError, match="must be finite"):
        nearest("a", W_E, vocab)
