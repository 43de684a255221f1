"""One-hot rows times an embedding matrix, drawn as three heatmaps (chapter 1)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from transformer_lab.checks import floating_tensor

__all__ = ["one_hot_lookup_figure"]


def one_hot_lookup_figure(
    O: torch.Tensor,
    E: torch.Tensor,
    tokens: Sequence[str],
    words: Sequence[str],
):
    """Three heatmaps with their numbers: the one-hot matrix ``O [N, |V|]`` (columns named by
    the vocabulary ``tokens``, rows by the sentence's ``words``), the embedding matrix
    ``E [|V|, d]`` with the rows that ``O`` selects outlined, and the product ``O E``.
    Returns the Matplotlib figure."""
    import matplotlib.pyplot as plt

    from transformer_lab.viz.heatmaps import heatmap

    floating_tensor(O, "O", dim=2, shape="[N, d_vocab]")
    floating_tensor(E, "E", dim=2, shape="[d_vocab, d]")
    tokens, words = list(tokens), list(words)
    if not O.shape[1] == E.shape[0] == len(tokens) or O.shape[0] != len(words):
        raise ValueError(
            f"O {tuple(O.shape)} and E {tuple(E.shape)} need O [N, |V|] and E [|V|, d] with "
            f"|V| = {len(tokens)} tokens and N = {len(words)} words"
        )
    ones = (O == 1).sum(dim=1)
    if not (((O == 0) | (O == 1)).all() and (ones == 1).all()):
        raise ValueError("O must hold one-hot rows: a single 1 per row, zeros elsewhere")
    d = E.shape[1]
    dims = [f"dim {j}" for j in range(d)]
    fig, axes = plt.subplots(
        1,
        3,
        figsize=(10, 3.4),
        layout="constrained",
        gridspec_kw={"width_ratios": [len(tokens), d, d]},
    )
    panels = [
        (O, tokens, words, ".0f", "Greys", "one-hot O  (N x |V|)"),
        (E, dims, tokens, ".1f", "coolwarm", "E  (|V| x d)"),
        (O @ E, dims, words, ".1f", "coolwarm", "O E = rows of E"),
    ]
    for ax, (matrix, x_labels, y_labels, fmt, cmap, title) in zip(axes, panels, strict=True):
        heatmap(
            matrix,
            x_labels=x_labels,
            y_labels=y_labels,
            ax=ax,
            fmt=fmt,
            cmap=cmap,
            colorbar=False,
            title=title,
        )
    for index in O.argmax(dim=1).tolist():  # outline the selected rows of E
        axes[1].add_patch(plt.Rectangle((-0.5, index - 0.5), d, 1, fill=False, lw=3, ec="gold"))
    fig.suptitle("A one-hot matrix times E copies the rows of E named by the indices")
    return fig
