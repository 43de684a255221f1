"""Chapter 2's pictures draw the numbers they are given, and the sensitivity menu gives a
verdict per number."""

from __future__ import annotations

import matplotlib
import pytest
import torch

from transformer_lab.viz.chapters.bottleneck import (
    bottleneck_figure,
    chain_time_figure,
    distance_figure,
    sensitivity_box,
    sensitivity_menu,
)

matplotlib.use("Agg")


def test_bottleneck_figure_draws_bins_at_their_centres():
    fig = bottleneck_figure(
        [3.0, 2.0, 1.0], [3.0, 2.5, 2.0], [(2, 0.9), (6, 0.5)], [1, 5, 9], [0.9, 0.5]
    )
    ax_acc = fig.axes[1]
    binned = ax_acc.lines[1]
    assert list(binned.get_xdata()) == [
        2.5,
        6.5,
    ]  # lengths 1-4 and 5-8 and list(binned.get_ydata()) == [0.9, 0.5]
    assert binned.get_label() == "bins of 4 lengths"
    matplotlib.pyplot.close(fig)


def test_distance_figure_names_the_lengths():
    curves = {"GRU": torch.linspace(1, 0.1, 60), "attention": torch.ones(60)}
    fig = distance_figure(curves, torch.linspace(1, 0.5, 22))
    assert fig.axes[0].get_title() == "Untrained layers, random inputs (60 words)"
    assert fig.axes[1].get_title() == "Trained encoder, test sources of 22 words"
    assert [line.get_label() for line in fig.axes[0].lines] == ["GRU", "attention"]
    matplotlib.pyplot.close(fig)


def test_chain_time_figure_plots_products_and_milliseconds():
    chains = {
        ("GRU", 16): (16, 200),
        ("GRU", 64): (64, 800),
        ("self-attention", 16): (4, 30),
        ("self-attention", 64): (4, 30),
    }
    times = {("GRU", 16): 0.001, ("self-attention", 16): 0.0005}
    fig = chain_time_figure(chains, times, d=128)
    gru_chain, attention_chain = fig.axes[0].lines
    assert list(gru_chain.get_ydata()) == [16, 64] and list(attention_chain.get_ydata()) == [4, 4]
    assert list(fig.axes[1].lines[0].get_ydata()) == [1.0]
    assert fig.axes[1].get_title() == "Time on this CPU, one thread, d = 128"
    matplotlib.pyplot.close(fig)


def explain(number):
    words = ["twenty", "one"] if number == 21 else ["seven"]
    translation = ["ein", "und", "zwanzig"] if number == 21 else ["acht"]
    reference = ["ein", "und", "zwanzig"] if number == 21 else ["sieben"]
    return words, torch.ones(len(words)), translation, reference


def test_sensitivity_menu_has_one_option_and_verdict_per_number():
    fig = sensitivity_menu(explain, [21, 7])
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == ["21", "7"]
    assert list(fig.data[0].x) == ["1. twenty", "2. one"]
    headings = [b.args[1]["title.text"] for b in buttons]
    assert "right" in headings[0] and "WRONG" in headings[1]


def test_sensitivity_box_builds_without_a_kernel():
    pytest.importorskip("ipywidgets")
    app = sensitivity_box(explain, value=21)
    assert app.children[0].value == 21
