"""Words on a map: PCA against numpy's SVD and scikit-learn, group statistics on planted
groups, and analogies on a tiny vocabulary where the answer is known."""

from __future__ import annotations

import math

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
from transformer_lab.viz.chapters.word_map import (
    word_map_controls,
    word_map_figure,
    word_map_plotly,
)


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
    points = [t for t in fig.data if t.mode == "markers"]
    assert [list(t.text) for t in points] == [["man", "woman"], ["king", "queen"]]
    assert all("%{text}" in t.hovertemplate for t in points)
    # each group's labels are a trace of its own, hidden with the group from the legend,
    # and carry no hover text: the markers' text is each word once
    labels = [t for t in fig.data if t.mode == "lines+text"]
    assert [t.legendgroup for t in labels] == [t.legendgroup for t in points]
    assert [[w for w in t.customdata if w] for t in labels] == [["man", "woman"], ["king", "queen"]]
    assert all(not t.text and not t.showlegend and t.hoverinfo == "skip" for t in labels)
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


def _crowd(n=24, seed=0):
    """``n`` words in a tight cluster and a few far away: labels written at their points
    would pile up."""
    g = torch.Generator().manual_seed(seed)
    coords = torch.cat([torch.randn(n, 2, generator=g) * 0.05, torch.tensor([[3.0, 2.0]] * 2)])
    coords[-1] += 0.01
    words = [f"word{i}" for i in range(n)] + ["far", "farther"]
    return coords, words, ["a", "b"] * (n // 2) + ["c", "c"]


def _overlaps(boxes):
    """The pairs of boxes (x0, y0, x1, y1) that overlap by more than a pixel each way."""
    return [
        (i, j)
        for i, a in enumerate(boxes)
        for j, b in enumerate(boxes[:i])
        if min(a[2], b[2]) - max(a[0], b[0]) > 1 and min(a[3], b[3]) - max(a[1], b[1]) > 1
    ]


def test_word_map_figure_labels_do_not_overlap():
    import matplotlib
    from matplotlib.text import Text

    matplotlib.use("Agg")
    coords, words, groups = _crowd()
    fig = word_map_figure(coords, words, groups, arrows={"far": [("far", "word0")]})
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    ax = fig.axes[0]
    texts = [t for t in ax.texts if t.get_text()]
    # the text's own box (an Annotation's window extent takes in its line as well)
    boxes = [tuple(Text.get_window_extent(t, renderer).extents) for t in texts]
    assert sorted(t.get_text() for t in texts) == sorted(words)
    assert not _overlaps(boxes)
    inside = ax.bbox.extents
    assert all(b[0] >= inside[0] - 1 and b[2] <= inside[2] + 1 for b in boxes)
    legend = ax.get_legend().get_window_extent(renderer).extents
    assert not [pair for pair in _overlaps([legend, *boxes]) if 0 in pair]
    # a label that stands off from its point is joined to it by a line
    for text, (x0, y0, x1, y1) in zip(texts, boxes, strict=True):
        px, py = ax.transData.transform(text.xy)
        off = math.hypot(max(x0 - px, 0, px - x1), max(y0 - py, 0, py - y1))
        assert off < 12 or text.arrow_patch is not None, text.get_text()
    matplotlib.pyplot.close(fig)


def test_word_map_plotly_labels_do_not_overlap():
    from transformer_lab.viz.layout import NARROWEST_PX

    coords, words, groups = _crowd()
    fig = word_map_plotly(coords, words, groups, arrows={"far": [("far", "word0")]})
    layout = fig.layout
    size = (
        NARROWEST_PX - layout.margin.l - layout.margin.r,
        layout.height - layout.margin.t - layout.margin.b,
    )  # the plot the labels were placed for; a wider one only spreads them
    (x0, x1), (y0, y1) = layout.xaxis.range, layout.yaxis.range
    boxes, shown = [], []
    for trace in fig.data:
        if trace.mode != "lines+text":
            continue
        for x, y, word in zip(trace.x, trace.y, trace.customdata, strict=True):
            if not word:
                continue
            px, py = (x - x0) / (x1 - x0) * size[0], (y - y0) / (y1 - y0) * size[1]
            w, h = 0.6 * trace.textfont.size * len(word), trace.textfont.size
            boxes.append((px - w / 2, py - h / 2, px + w / 2, py + h / 2))
            shown.append(word)
    assert sorted(shown) == sorted(words)
    assert not _overlaps(boxes)
    assert all(
        b[0] >= -1 and b[1] >= -1 and b[2] <= size[0] + 1 and b[3] <= size[1] + 1 for b in boxes
    )


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
