"""The pictures of chapter 2, the RNN bottleneck.

- :func:`bottleneck_figure`: training loss, and exact match against the source length.
- :func:`distance_figure`: how strongly the last state depends on the word ``d`` back.
- :func:`chain_time_figure`: the longest chain of dependent products, and the time.
- :func:`sensitivity_menu` (kernel-free) and :func:`sensitivity_box` (ipywidgets, needs a
  kernel): bars of ``||d h_n / d x_j||`` per source word of a number, with the model's
  translation and a verdict.

Each takes the numbers the chapter computed and only draws them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch

from transformer_lab.checks import instance_of, string
from transformer_lab.viz.bar_labels import label_bars

__all__ = [
    "bottleneck_figure",
    "distance_figure",
    "chain_time_figure",
    "sensitivity_menu",
    "sensitivity_box",
]

BLUE, TEAL, PURPLE, ORANGE = "#31688e", "#21918c", "#440154", "#e08a00"
SENSITIVITY = r"$\|\partial h_n / \partial x_j\|$"


def _series(values, name: str) -> list[float]:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise TypeError(f"{name} must be a non-empty sequence of numbers, got {values!r}")
    return [float(v) for v in values]


def bottleneck_figure(
    losses: Sequence[float],
    smoothed: Sequence[float],
    per_length: Sequence[tuple[int, float]],
    bins: Sequence[int],
    binned: Sequence[float],
    *,
    title: str = "Test accuracy without attention",
):
    """Left: the training loss at every step and ``smoothed`` (a mean of 20 steps), on a log
    scale. Right: exact match per source length (``per_length``: ``(length, accuracy)``
    points) and per bin of lengths (``bins`` are the edges, ``binned`` one accuracy per
    bin, drawn at the bin's centre). Returns the Matplotlib figure."""
    import matplotlib.pyplot as plt

    losses, smoothed = _series(losses, "losses"), _series(smoothed, "smoothed")
    binned, bins = _series(binned, "binned"), list(bins)
    if len(bins) != len(binned) + 1:
        raise ValueError(f"{len(bins)} bin edges for {len(binned)} bins; give one edge more")
    if not per_length or not all(len(p) == 2 for p in per_length):
        raise ValueError(f"per_length must be (length, accuracy) pairs, got {per_length!r}")
    string(title, "title")
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    ax_loss.plot(losses, color="#bbbbbb", lw=0.8, label="every step")
    ax_loss.plot(smoothed, color=BLUE, label="mean of 20 steps")
    ax_loss.set(xlabel="training step", ylabel="cross-entropy", title="Training loss", yscale="log")
    ax_loss.legend()
    ax_acc.plot(
        *zip(*per_length, strict=True), "o", color=BLUE, alpha=0.5, label="one source length"
    )
    centres = [(lo + hi - 1) / 2 for lo, hi in zip(bins[:-1], bins[1:], strict=True)]
    label = f"bins of {bins[1] - bins[0]} lengths"  # the last bin may be shorter
    ax_acc.plot(centres, binned, "-", color=BLUE, lw=2, label=label)
    ax_acc.set(
        xlabel="source length (words)", ylabel="exact match", ylim=(-0.03, 1.03), title=title
    )
    ax_acc.legend(loc="lower left")
    return fig


def distance_figure(curves: Mapping[str, Sequence[float]], trained: Sequence[float]):
    """Left: ``curves[name][k]``, the sensitivity of an untrained layer's last state to the
    input ``k`` positions back, one line per layer. Right: the same for the trained encoder
    (``trained``). Both on a log scale. Returns the Matplotlib figure."""
    import matplotlib.pyplot as plt

    instance_of(curves, Mapping, "curves", "a dict {layer name: sensitivity by distance}")
    if not curves:
        raise ValueError("curves is empty; give one curve per layer")
    curves = {string(name, "a curve's name"): _series(c, name) for name, c in curves.items()}
    trained = _series(trained, "trained")
    palette = [PURPLE, TEAL, ORANGE, BLUE]
    fig, (ax_init, ax_trained) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for k, (name, curve) in enumerate(curves.items()):
        ax_init.semilogy(curve, color=palette[k % len(palette)], label=name)
    n = len(next(iter(curves.values())))
    ax_init.set(
        xlabel="distance n - j from the last word",
        ylabel=SENSITIVITY,
        title=f"Untrained layers, random inputs ({n} words)",
    )
    ax_init.legend()
    ax_trained.semilogy(trained, "o-", color=TEAL, label="trained GRU encoder")
    ax_trained.set(
        xlabel="distance n - j from the last word",
        ylim=(1e-2, 10),
        title=f"Trained encoder, test sources of {len(trained)} words",
    )
    ax_trained.legend()
    return fig


def chain_time_figure(
    chains: Mapping[tuple[str, int], tuple[int, int]],
    times: Mapping[tuple[str, int], float],
    *,
    d: int,
):
    """Left: ``chains[layer, n][0]``, the matrix products on the longest chain of dependent
    operations, against ``n``. Right: ``times[layer, n]`` in seconds, drawn in ms. Layers
    "GRU" and "self-attention"; log-log. Returns the Matplotlib figure."""
    import matplotlib.pyplot as plt

    instance_of(chains, Mapping, "chains", "a dict {(layer, n): (products, operations)}")
    instance_of(times, Mapping, "times", "a dict {(layer, n): seconds}")
    colors = {"GRU": TEAL, "self-attention": ORANGE}
    for what, table in (("chains", chains), ("times", times)):
        layers = {key[0] for key in table}
        if not layers or not layers <= set(colors):
            raise ValueError(f"{what} must have keys (layer, n) with layer in {sorted(colors)}")
    fig, (ax_chain, ax_time) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for kind, color in colors.items():
        chain_n = sorted(n for k, n in chains if k == kind)
        time_n = sorted(n for k, n in times if k == kind)
        ax_chain.loglog(
            chain_n, [chains[kind, n][0] for n in chain_n], "o-", color=color, label=kind
        )
        ax_time.loglog(
            time_n, [1e3 * times[kind, n] for n in time_n], "o-", color=color, label=kind
        )
    ax_chain.set(
        xlabel="sequence length n",
        ylabel="matrix products one after another",
        title="Longest chain of dependent products",
    )
    ax_time.set(
        xlabel="sequence length n",
        ylabel="processor time per sequence (ms)",
        title=f"Time on this CPU, one thread, d = {d}",
    )
    ax_chain.legend()
    ax_time.legend()
    return fig


Explain = Callable[[int], tuple[list[str], torch.Tensor, list[str], list[str]]]


def _verdict(translation, reference, wrong: str) -> str:
    return "right" if list(translation) == list(reference) else wrong


def sensitivity_menu(explain: Explain, numbers: Sequence[int]):
    """Kernel-free: a menu of ``numbers``; for each, bars of ``explain(number)``'s weights
    (one per source word) under a heading with the translation, the verdict and the
    reference. ``explain`` returns ``(words, weights, translation, reference)``. Returns
    the Plotly figure for :func:`~transformer_lab.viz.show`."""
    from transformer_lab.viz.bars import dropdown_bars

    if not callable(explain):
        raise TypeError(f"explain must be a function of a number, got {explain!r}")
    if isinstance(numbers, (str, bytes)) or not isinstance(numbers, Sequence) or not numbers:
        raise TypeError(f"numbers must be a non-empty sequence of ints, got {numbers!r}")
    wrong = "<span style='color:#c0392b'><b>WRONG</b></span>"
    bars, headings = {}, {}
    for number in numbers:
        words, weights, translation, reference = explain(number)
        key = f"{number:,}"
        bars[key] = ([f"{j + 1}. {w}" for j, w in enumerate(words)], _series(weights, "weights"))
        headings[key] = (
            f"<b>{number:,}</b>: the translation is {_verdict(translation, reference, wrong)}<br>"
            f"model: {' '.join(translation)}<br>reference: {' '.join(reference)}"
        )
    return dropdown_bars(
        bars, headings=headings, dropdown_label="number", y_title="||∂h_n / ∂x_j||", fmt=".2g"
    )


def sensitivity_box(explain: Explain, *, value: int = 4_000_021, largest: int = 999_999_999_999):
    """Kernel-only: a number box; each number typed redraws the bars of ``explain(number)``
    with the model's translation and a verdict in the title. Returns the ipywidgets app."""
    import ipywidgets
    import matplotlib.pyplot as plt

    if not callable(explain):
        raise TypeError(f"explain must be a function of a number, got {explain!r}")
    box = ipywidgets.BoundedIntText(value=value, min=0, max=largest, description="number:")
    out = ipywidgets.Output()

    def redraw(change=None):
        with out:
            out.clear_output(wait=True)
            words, weights, translation, reference = explain(box.value)
            size = (min(12, 1 + 0.45 * len(words)), 2.8)
            fig, ax = plt.subplots(figsize=size, layout="constrained")
            ax.bar(range(len(words)), _series(weights, "weights"), color=TEAL)
            label_bars(ax, ".2g", fontsize=7)
            ax.set_xticks(range(len(words)), words, rotation=45, ha="right")
            ax.set_ylabel(SENSITIVITY)
            verdict = _verdict(translation, reference, "WRONG")
            ax.set_title(f"model: {' '.join(translation)}  ({verdict})", fontsize=9)
            plt.show()

    box.observe(redraw, names="value")
    redraw()
    return ipywidgets.VBox([box, out])
