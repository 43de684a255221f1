"""Words on a map: a 2-D projection of word vectors, group statistics and analogies.

- :func:`pca_2d` centres the vectors and projects them on their two directions of largest
  variance (principal component analysis by singular value decomposition); the result
  also says what share of the variance the two directions keep and can place new vectors
  on the same map.
- :func:`group_separation` compares the mean cosine similarity of words within a group
  with that between groups, and counts how often a word's nearest neighbour (by cosine,
  in the full space) is in its own group.
- :func:`analogy` ranks a vocabulary by cosine similarity to ``a - b + c`` (the arithmetic
  of "king - man + woman"); :func:`analogy_rank` gives the rank of the expected answer,
  also for the two baselines that use ``a`` or ``c`` alone.
- :func:`word_map_plotly` draws a projection as a Plotly scatter (hover shows the word)
  with a menu of analogy arrows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F

from .embeddings import Vocabulary

__all__ = ["pca_2d", "group_separation", "analogy", "analogy_rank", "word_map_plotly"]


class Projection(NamedTuple):
    """What :func:`pca_2d` returns."""

    coords: torch.Tensor  # [n, 2] the projected points
    mean: torch.Tensor  # [d] the mean that was subtracted
    components: torch.Tensor  # [2, d] unit directions of largest variance, orthogonal
    variance_ratio: torch.Tensor  # [2] share of the total variance along each direction

    def project(self, x: torch.Tensor) -> torch.Tensor:
        """Place vectors ``x [..., d]`` on the same map: ``(x - mean) @ components.T``."""
        if not isinstance(x, torch.Tensor) or x.shape[-1:] != self.mean.shape:
            got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"x must be [..., {self.mean.shape[0]}], got {got}")
        return (x.to(self.mean.dtype) - self.mean) @ self.components.T


def pca_2d(X: torch.Tensor) -> Projection:
    """Project the rows of ``X [n, d]`` on their two principal directions.

    The rows are centred, ``X - mean = U S V^T``, and the map is ``(X - mean) V[:, :2]``,
    which equals ``U[:, :2] S[:2]``. Each direction's sign is fixed so that its entry of
    largest size is positive (SVD leaves the sign free). ``variance_ratio[i]`` is
    ``S[i]^2 / sum(S^2)``, the share of the total variance the direction keeps.
    """
    if not isinstance(X, torch.Tensor) or not X.is_floating_point():
        got = X.dtype if isinstance(X, torch.Tensor) else type(X).__name__
        raise TypeError(f"X must be a floating-point tensor [n, d], got {got}")
    if X.dim() != 2 or X.shape[0] < 3 or X.shape[1] < 2:
        raise ValueError(f"X must be [n, d] with n >= 3 rows and d >= 2, got {tuple(X.shape)}")
    mean = X.mean(dim=0)
    _, S, Vh = torch.linalg.svd(X - mean, full_matrices=False)
    components = Vh[:2]  # [2, d]
    biggest = components.abs().argmax(dim=1)
    signs = components.gather(1, biggest[:, None]).sign()
    components = components * signs
    total = (S**2).sum()
    ratio = (S[:2] ** 2) / total if total > 0 else torch.zeros(2, dtype=X.dtype)
    return Projection((X - mean) @ components.T, mean, components, ratio)


def group_separation(X: torch.Tensor, labels: Sequence) -> dict[str, float]:
    """Cosine statistics of rows ``X [n, d]`` that carry group ``labels`` (length n).

    Returns ``within`` (mean cosine over pairs of distinct words in the same group),
    ``between`` (mean cosine over pairs in different groups) and ``purity`` (the share
    of words whose nearest other word, by cosine, has the same label).
    """
    if not isinstance(X, torch.Tensor) or not X.is_floating_point() or X.dim() != 2:
        got = tuple(X.shape) if isinstance(X, torch.Tensor) else type(X).__name__
        raise ValueError(f"X must be a float [n, d] tensor, got {got}")
    if isinstance(labels, str) or not isinstance(labels, Sequence):
        raise TypeError(f"labels must be a sequence (one per row), got {type(labels).__name__}")
    if len(labels) != X.shape[0]:
        raise ValueError(f"{len(labels)} labels for {X.shape[0]} rows")
    codes = {label: i for i, label in enumerate(dict.fromkeys(labels))}
    if len(codes) < 2 or len(codes) == len(labels):
        raise ValueError(
            f"need at least 2 groups and a group with 2 words, got {len(codes)} groups "
            f"for {len(labels)} words"
        )
    lab = torch.tensor([codes[label] for label in labels])
    U = F.normalize(X, dim=1)
    S = U @ U.T  # [n, n]
    same = lab[:, None] == lab[None, :]
    other = ~torch.eye(len(lab), dtype=torch.bool)
    nearest = S.masked_fill(~other, -torch.inf).argmax(dim=1)
    return {
        "within": S[same & other].mean().item(),
        "between": S[~same].mean().item(),
        "purity": (lab[nearest] == lab).float().mean().item(),
    }


def _query(words: Sequence[str], W_E, vocab, what: str):
    if not isinstance(vocab, Vocabulary):
        raise TypeError(f"vocab must be a Vocabulary, got {type(vocab).__name__}")
    if not isinstance(W_E, torch.Tensor) or W_E.dim() != 2 or not W_E.is_floating_point():
        got = tuple(W_E.shape) if isinstance(W_E, torch.Tensor) else type(W_E).__name__
        raise ValueError(f"W_E must be a float [d_vocab, d_model] tensor, got {got}")
    if len(vocab) != W_E.shape[0]:
        raise ValueError(f"W_E has {W_E.shape[0]} rows but the vocabulary {len(vocab)} tokens")
    bad = [w for w in words if not isinstance(w, str)]
    if bad:
        raise TypeError(f"{what} must be tokens (str), got {bad!r}")
    missing = [w for w in words if w not in vocab]
    if missing:
        raise ValueError(f"not single tokens of the vocabulary: {missing}")
    return [vocab.index[w] for w in words]


def _scores(a, b, c, W_E, vocab, query: str) -> torch.Tensor:
    ia, ib, ic = _query([a, b, c], W_E, vocab, "a, b and c")
    vectors = {"a-b+c": W_E[ia] - W_E[ib] + W_E[ic], "a": W_E[ia], "c": W_E[ic]}
    if query not in vectors:
        raise ValueError(f"query must be one of {sorted(vectors)}, got {query!r}")
    v = vectors[query]
    # cosine without a normalised copy of the whole table: one product, one pass of norms
    sims = (W_E @ v) / (W_E.norm(dim=1) * v.norm()).clamp_min(1e-12)  # [d_vocab]
    sims[[ia, ib, ic]] = -torch.inf  # the question's words are not answers
    return sims


def analogy(
    a: str, b: str, c: str, W_E: torch.Tensor, vocab: Vocabulary, k: int = 5
) -> list[tuple[str, float]]:
    """The ``k`` tokens most cosine-similar to ``W_E[a] - W_E[b] + W_E[c]``, with their
    similarities, leaving out ``a``, ``b`` and ``c`` themselves ("a is to b as ? is to c":
    king - man + woman)."""
    sims = _scores(a, b, c, W_E, vocab, "a-b+c")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= len(vocab) - 3:
        raise ValueError(f"k must be an int in [1, {len(vocab) - 3}], got {k!r}")
    top = sims.topk(k)
    return [(vocab[int(i)], float(v)) for v, i in zip(top.values, top.indices, strict=True)]


def analogy_rank(
    a: str,
    b: str,
    c: str,
    expected: str,
    W_E: torch.Tensor,
    vocab: Vocabulary,
    *,
    query: str = "a-b+c",
) -> int:
    """The rank (1 = first) of ``expected`` among all tokens except ``a, b, c``, ordered by
    cosine similarity to ``query``: ``"a-b+c"`` (the analogy), or the baselines ``"a"``
    and ``"c"`` (one word alone, no arrow)."""
    (ie,) = _query([expected], W_E, vocab, "expected")
    if expected in (a, b, c):
        raise ValueError(f"expected={expected!r} is one of the question's words {a, b, c}")
    sims = _scores(a, b, c, W_E, vocab, query)
    return int((sims > sims[ie]).sum().item()) + 1


def word_map_plotly(
    coords: torch.Tensor,
    words: Sequence[str],
    groups: Sequence[str],
    *,
    arrows: dict[str, list[tuple[str, str]]] | None = None,
    title: str = "Words on a map",
):
    """A Plotly scatter of ``coords [n, 2]``, one colour per group, the word shown on hover
    and as a label. ``arrows`` maps a menu label to pairs ``(from_word, to_word)`` of
    words in ``words``; a dropdown shows one set of arrows at a time ("none" first)."""
    import plotly.express as px
    import plotly.graph_objects as go

    if not isinstance(coords, torch.Tensor) or coords.dim() != 2 or coords.shape[1] != 2:
        got = tuple(coords.shape) if isinstance(coords, torch.Tensor) else type(coords).__name__
        raise ValueError(f"coords must be an [n, 2] tensor, got {got}")
    words, groups = list(words), list(groups)
    if not len(words) == len(groups) == coords.shape[0]:
        raise ValueError(
            f"{coords.shape[0]} points, {len(words)} words and {len(groups)} groups; "
            "give one word and one group per point"
        )
    arrows = arrows or {}
    where = {w: coords[i].tolist() for i, w in enumerate(words)}
    unknown = [w for pairs in arrows.values() for p in pairs for w in p if w not in where]
    if unknown:
        raise ValueError(f"arrow ends not among the words on the map: {unknown}")
    fig = go.Figure()
    palette = px.colors.qualitative.D3
    for g, group in enumerate(dict.fromkeys(groups)):
        idx = [i for i, gr in enumerate(groups) if gr == group]
        fig.add_scatter(
            x=[where[words[i]][0] for i in idx],
            y=[where[words[i]][1] for i in idx],
            mode="markers+text",
            text=[words[i] for i in idx],
            textposition="top center",
            marker={"size": 9, "color": palette[g % len(palette)]},
            name=group,
            hovertemplate=f"<b>%{{text}}</b> ({group})<br>(%{{x:.2f}}, %{{y:.2f}})<extra></extra>",
        )
    buttons = [
        {"method": "relayout", "label": "no arrows", "args": [{"annotations": []}]},
    ]
    for label, pairs in arrows.items():
        notes = [
            {
                "x": where[end][0],
                "y": where[end][1],
                "ax": where[start][0],
                "ay": where[start][1],
                "xref": "x",
                "yref": "y",
                "axref": "x",
                "ayref": "y",
                "showarrow": True,
                "arrowhead": 3,
                "arrowwidth": 2,
                "arrowcolor": "black" if k % 2 == 0 else "crimson",
                "text": "",
            }
            for k, (start, end) in enumerate(pairs)
        ]
        buttons.append({"method": "relayout", "label": label, "args": [{"annotations": notes}]})
    layout = {
        "title": {"text": title},
        "height": 560,
        "xaxis": {"title": "first principal direction"},
        "yaxis": {"title": "second principal direction"},
    }
    if arrows:
        layout["updatemenus"] = [
            {"buttons": buttons, "active": 0, "x": 0.0, "xanchor": "left", "y": 1.12}
        ]
        layout["margin"] = {"t": 110}
    fig.update_layout(**layout)
    return fig
