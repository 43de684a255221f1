"""Words on a map: PCA against numpy's SVD and scikit-learn, group statistics on planted
groups, and analogies on a tiny vocabulary where the answer is known."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_lab.analysis.word_vectors import (
    analogy,
    analogy_rank,
    group_separation,
    pca_2d,
)
from transformer_lab.data.tokenizers import Vocabulary
from transformer_lab.viz.word_map import word_map_controls, word_map_figure, word_map_plotly


def data(seed=0, n=40, d=12):
    g = torch.Generator().manual_seed(seed)
    scales = torch.linspace(3.0, 0.2, d)  # distinct variances, so the directions are unique
    return torch.randn(n, d, generator=g, dtype=torch.float64) * scales + 5.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pca_matches_numpy_svd(seed):
    X = data(seed)
    p = pca_2d(X)
    Xc = X.numpy() - X.numpy().mean(axis=0)
    U, S, Vt = np.linalg.svd(Xc, full_matrices=False)
    want = U[:, :2] * S[:2]
    got = p.coords.numpy()
    for j in range(2):  # the sign of each direction is free
        sign = np.sign(got[:, j] @ want[:, j])
        np.testing.assert_allclose(got[:, j], sign * want[:, j], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(p.variance_ratio.numpy(), S[:2] ** 2 / (S**2).sum(), rtol=1e-10)
    torch.testing.assert_close(p.project(X), p.coords)
    torch.testing.assert_close(p.components @ p.components.T, torch.eye(2, dtype=X.dtype))
    biggest = p.components.abs().argmax(dim=1)
    assert (p.components[[0, 1], biggest] > 0).all()  # the documented sign convention


def test_pca_matches_scikit_learn():
    decomposition = pytest.importorskip("sklearn.decomposition")
    X = data(3)
    sk = decomposition.PCA(n_components=2, svd_solver="full").fit(X.numpy())
    p = pca_2d(X)
    signs = np.sign((sk.components_ * p.components.numpy()).sum(axis=1))
    np.testing.assert_allclose(p.components.numpy(), signs[:, None] * sk.components_, atol=1e-10)
    np.testing.assert_allclose(p.variance_ratio.numpy(), sk.explained_variance_ratio_, rtol=1e-10)
    np.testing.assert_allclose(
        p.coords.numpy(), sk.transform(X.numpy()) * signs, rtol=1e-8, atol=1e-10
    )


def test_pca_keeps_all_variance_of_planar_data():
    g = torch.Generator().manual_seed(0)
    plane = torch.randn(30, 2, generator=g, dtype=torch.float64) @ torch.randn(
        2, 6, generator=g, dtype=torch.float64
    )
    assert abs(pca_2d(plane).variance_ratio.sum().item() - 1.0) < 1e-10


def test_group_separation_on_planted_groups():
    g = torch.Generator().manual_seed(0)
    centres = torch.randn(3, 16, generator=g) * 4
    X = torch.cat([c + torch.randn(5, 16, generator=g) for c in centres])
    labels = ["a"] * 5 + ["b"] * 5 + ["c"] * 5
    stats = group_separation(X, labels)
    assert stats["purity"] == 1.0 and stats["within"] > 0.8 > stats["between"]
    shuffled = [labels[i] for i in torch.randperm(15, generator=g)]
    assert group_separation(X, shuffled)["purity"] < 1.0
    # a hand-made case: two words per group, orthogonal groups
    E = torch.tensor([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0], [0.1, 1.0]])
    s = group_separation(E, ["x", "x", "y", "y"])
    assert s["purity"] == 1.0 and s["within"] > 0.99 and s["between"] < 0.2


def tiny():
    # royal/common along axis 0, male/female along axis 1, plus a noise word
    words = ["king", "queen", "man", "woman", "noise", "prince"]
    W = torch.tensor(
        [
            [2.0, 1.0, 0.0],
            [2.0, -1.0, 0.0],
            [0.0, 1.0, 0.1],
            [0.0, -1.0, 0.1],
            [0.0, 0.0, 1.0],
            [2.0, 0.9, 0.3],
        ]
    )
    return Vocabulary(words), W


def test_analogy_finds_the_planted_answer():
    vocab, W = tiny()
    top = analogy("king", "man", "woman", W, vocab, k=2)
    assert top[0][0] == "queen" and top[0][1] > 0.99
    assert {t for t, _ in top}.isdisjoint({"king", "man", "woman"})
    assert analogy_rank("king", "man", "woman", "queen", W, vocab) == 1
    # from king alone, prince is nearer than queen: the arrow is what finds queen
    assert analogy_rank("king", "man", "woman", "queen", W, vocab, query="a") == 2
    assert analogy_rank("king", "man", "woman", "noise", W, vocab) == 3


def test_word_map_plotly_hover_and_arrows():
    coords = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    fig = word_map_plotly(
        coords,
        ["man", "king", "woman", "queen"],
        ["people", "royals", "people", "royals"],
        arrows={"king - man + woman": [("man", "king"), ("woman", "queen")]},
    )
    assert [list(t.text) for t in fig.data] == [["man", "woman"], ["king", "queen"]]
    assert all("%{text}" in t.hovertemplate for t in fig.data)
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == ["no arrows", "king - man + woman"]
    notes = buttons[1].args[0]["annotations"]
    assert [(n["ax"], n["ay"], n["x"], n["y"]) for n in notes] == [(0, 0, 1, 0), (0, 1, 1, 1)]
    with pytest.raises(ValueError, match="not among the words"):
        word_map_plotly(coords, list("abcd"), list("xxyy"), arrows={"z": [("a", "q")]})


def test_on_minilm_the_arrow_finds_queen_and_capitals():
    from transformer_lab.analysis.word_vectors import minilm_token_embeddings

    vocab, W = minilm_token_embeddings()
    assert analogy("king", "man", "woman", W, vocab, k=1)[0][0] == "queen"
    # the arrow brings moscow from far down the list (madrid alone) to the top
    assert analogy_rank("madrid", "spain", "russia", "moscow", W, vocab) == 1
    assert analogy_rank("madrid", "spain", "russia", "moscow", W, vocab, query="a") > 100
    words = ["one", "two", "three", "red", "blue", "green", "dog", "cat", "horse"]
    stats = group_separation(W[vocab.encode(words)], ["n"] * 3 + ["c"] * 3 + ["a"] * 3)
    assert stats["purity"] == 1.0 and stats["within"] > 3 * stats["between"]


def test_word_map_plotly_menu_sits_under_a_wrapped_title():
    coords = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
    long_title = "56 MiniLM word vectors on a 2-D PCA map (17% of the variance kept), seen flat"
    fig = word_map_plotly(
        coords, ["a", "b"], ["x", "y"], arrows={"m": [("a", "b")]}, title=long_title
    )
    assert "<br>" in fig.layout.title.text
    menu = fig.layout.updatemenus[0]
    assert (menu.y, menu.yanchor) == (1.0, "bottom") and fig.layout.margin.t > 46


def test_word_map_figure_labels_every_word_and_draws_the_arrows():
    import matplotlib

    matplotlib.use("Agg")
    coords = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    fig = word_map_figure(
        coords,
        ["man", "king", "woman", "queen"],
        ["people", "royals", "people", "royals"],
        arrows={"king - man + woman": [("man", "king"), ("woman", "queen")]},
        variance_ratio=torch.tensor([0.1, 0.05]),
    )
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.texts]
    assert sorted(x for x in labels if x) == ["king", "man", "queen", "woman"]
    assert labels.count("") == 2  # one arrow per pair
    assert ax.get_xlabel() == "first principal direction (10% of the variance)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["people", "royals"]
    matplotlib.pyplot.close(fig)


def test_word_map_controls_need_one_group_per_point():
    pytest.importorskip("ipywidgets")
    vocab = Vocabulary(["king", "man", "woman", "queen", "cat"])
    W = torch.randn(5, 4, generator=torch.Generator().manual_seed(0))
    projection = pca_2d(W[:4].double())
    app = word_map_controls(
        projection, ["a", "a", "b", "b"], W, vocab, words="cat", question="king - man + woman"
    )
    assert [c.description for c in app.children[:2]] == ["words", "a - b + c"]
    with pytest.raises(ValueError, match="4 points on the map but 3 groups"):
        word_map_controls(projection, ["a", "a", "b"], W, vocab)
