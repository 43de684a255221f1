"""The angle-and-length pictures: the explorer's precomputed states agree with the two
measures, the length menu never moves the cosine, and the static figure marks what it is
given."""

from __future__ import annotations

import math

import matplotlib
import pytest
import torch

from transformer_lab.data.tokenizers import Vocabulary
from transformer_lab.viz.chapters.similarity import (
    ANGLES,
    B_LENGTHS,
    similarity_controls,
    similarity_explorer,
    similarity_figure,
)

matplotlib.use("Agg")


def bars_of(step):
    return step.args[0]["y"][2::3]  # one [cosine, distance] per length group


def test_explorer_has_one_step_per_angle_and_one_button_per_length():
    fig = similarity_explorer()
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == [f"{a}°" for a in ANGLES]
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == [
        f"|b| = {n:g}" for n in B_LENGTHS
    ]
    assert len(fig.data) == 1 + 3 * len(B_LENGTHS)
    assert fig.layout.sliders[0].active == ANGLES.index(45)
    assert sum(bool(t.visible) for t in fig.data[1:]) == 3  # one group shown


@pytest.mark.parametrize("index", range(len(ANGLES)))
def test_each_step_holds_the_cosine_and_distance_of_its_angle(index):
    angle = ANGLES[index]
    bars = bars_of(similarity_explorer().layout.sliders[0].steps[index])
    for (cos, dist), length in zip(bars, B_LENGTHS, strict=True):
        assert cos == pytest.approx(math.cos(math.radians(angle)), abs=1e-6)
        # law of cosines with |a| = 2
        want = math.sqrt(4 + length**2 - 4 * length * math.cos(math.radians(angle)))
        assert dist == pytest.approx(want, abs=1e-5)


def test_a_menu_button_shows_only_its_group():
    fig = similarity_explorer()
    for g, button in enumerate(fig.layout.updatemenus[0].buttons):
        visible = button.args[0]["visible"]
        assert visible[0] and [i for i, v in enumerate(visible[1:]) if v] == [
            3 * g,
            3 * g + 1,
            3 * g + 2,
        ]


def test_explorer_refuses_a_start_not_on_its_grid():
    with pytest.raises(ValueError, match="must be among"):
        similarity_explorer(start_angle=50)


def test_static_figure_titles_the_measures_and_marks_the_tokens():
    a, b, c = torch.tensor([2.0, 1.0]), torch.tensor([6.0, 3.0]), torch.tensor([1.0, 2.0])
    lengths = torch.rand(200, generator=torch.Generator().manual_seed(0)) + 0.5
    fig = similarity_figure(a, b, c, lengths, {"[MASK]": 0.25, "the": 1.0})
    ax_vec, ax_len = fig.axes
    assert ax_vec.get_title() == (
        "b points like a (cos 1, distance 4.47);\nc is nearer (distance 1.41) but turned (cos 0.8)"
    )
    assert ax_len.get_title() == "Lengths of the 200 rows of MiniLM's E"
    colours = [line.get_color() for line in ax_len.lines]
    assert colours == ["tab:red", "tab:blue"]
    assert [t.get_text() for t in ax_len.texts] == [" [MASK]", " the"]
    matplotlib.pyplot.close(fig)


def test_controls_build_without_a_kernel():
    pytest.importorskip("ipywidgets")
    vocab = Vocabulary(["thanks", "for", "all", "the", "fish"])
    W_E = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    app = similarity_controls(W_E, vocab, k=2)
    assert len(app.children) == 2
    with pytest.raises(ValueError, match="4 rows but vocab has 5"):
        similarity_controls(W_E[:4], vocab)
