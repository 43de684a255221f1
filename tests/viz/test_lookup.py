"""The one-hot lookup figure draws the three matrices and outlines the selected rows."""

from __future__ import annotations

import matplotlib
import pytest
import torch

from transformer_lab.analysis.word_vectors import one_hot
from transformer_lab.viz.chapters.lookup import one_hot_lookup_figure

matplotlib.use("Agg")


def test_outlines_the_rows_the_indices_name():
    tokens = ["<pad>", "thanks", "so", "for", "long"]
    w = torch.tensor([1, 3])
    E = torch.arange(15.0).view(5, 3)
    fig = one_hot_lookup_figure(one_hot(w, 5), E, tokens, ["thanks", "for"])
    left, middle, right = fig.axes[:3]
    assert [ax.get_title() for ax in (left, middle, right)] == [
        "one-hot O  (N x |V|)",
        "E  (|V| x d)",
        "O E = rows of E",
    ]
    outlined = [p.get_xy()[1] + 0.5 for p in middle.patches if not p.get_fill()]
    assert outlined == [1.0, 3.0]
    matplotlib.pyplot.close(fig)


def test_refuses_rows_that_are_not_one_hot():
    with pytest.raises(ValueError, match="one-hot rows"):
        one_hot_lookup_figure(torch.ones(2, 3), torch.ones(3, 2), ["a", "b", "c"], ["a", "b"])
