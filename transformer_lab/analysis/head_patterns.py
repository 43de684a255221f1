"""What attention heads do, measured: how much of each head's attention goes to the
previous token, the next, itself, [CLS], [SEP] or the same word."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from transformer_lab.checks import integer

__all__ = [
    "PATTERN_KINDS",
    "stack_attentions",
    "head_pattern_scores",
    "bag_of_words_scores",
    "top_heads",
]

PATTERN_KINDS = ("previous token", "next token", "itself", "[CLS]", "[SEP]", "same word")


def stack_attentions(attentions, index: int = 0) -> np.ndarray:
    """``[n_layers, n_heads, pos, pos]`` float array for sequence ``index`` of a batch.

    ``attentions`` is a sequence of ``[batch, n_heads, pos, pos]`` (or ``[n_heads, pos,
    pos]``) tensors/arrays, one per layer, or an array that is already 4-d.
    """
    pick: int | None = index  # None: the layers are already one sequence's
    if isinstance(attentions, (torch.Tensor, np.ndarray)) and attentions.ndim == 4:
        layers = [attentions[i] for i in range(attentions.shape[0])]
        pick = None
    elif isinstance(attentions, (list, tuple)):
        layers = list(attentions)
    else:
        raise TypeError(
            "attentions must be a list of [batch, n_heads, pos, pos] tensors or a 4-d array, "
            f"got {type(attentions).__name__}"
        )
    out = []
    for i, a in enumerate(layers):
        a = a.detach().to("cpu").float().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
        if a.ndim == 4 and pick is not None:
            a = a[pick]
        if a.ndim != 3 or a.shape[1] != a.shape[2]:
            raise ValueError(
                f"layer {i}: expected [batch, n_heads, pos, pos] or [n_heads, pos, pos], "
                f"got shape {a.shape}"
            )
        out.append(a)
    if not out:
        raise ValueError("attentions is empty")
    if len({a.shape for a in out}) != 1:
        raise ValueError(f"layers have different shapes: {sorted({a.shape for a in out})}")
    return np.stack(out).astype(float)


def _word_ids(tokens: Sequence[str]) -> list[int]:
    """Which word each WordPiece token belongs to (``##`` pieces join the word before)."""
    ids, word = [], -1
    for t in tokens:
        if not t.startswith("##") or word < 0:
            word += 1
        ids.append(word)
    return ids


def _words(tokens: Sequence[str]) -> list[str]:
    """The lower-cased word each token belongs to (pieces glued back together)."""
    ids = _word_ids(tokens)
    text: dict[int, str] = {}
    for w, t in zip(ids, tokens, strict=True):
        text[w] = text.get(w, "") + (t[2:] if t.startswith("##") else t).lower()
    return [text[w] for w in ids]


def _attentions_and_tokens(attentions, tokens: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """The stacked attention ``[n_layers, n_heads, pos, pos]`` and its ``pos`` tokens."""
    A, tokens = stack_attentions(attentions), list(tokens)
    if len(tokens) != A.shape[-1]:
        raise ValueError(f"{len(tokens)} tokens for attention over {A.shape[-1]} positions")
    return A, tokens


def head_pattern_scores(attentions, tokens: Sequence[str]) -> dict[str, np.ndarray]:
    """Average attention mass per head on six kinds of key; each value is ``[n_layers, n_heads]``.

    With ``A[l, h, i, j]`` the weight query ``i`` gives key ``j``, and averages over the
    query positions ``i`` for which the kind is defined:

    - ``"previous token"``: ``A[i, i-1]`` over ``i >= 1``; ``"next token"``: ``A[i, i+1]``;
    - ``"itself"``: ``A[i, i]``;
    - ``"[CLS]"`` / ``"[SEP]"``: the total weight on every ``[CLS]`` / ``[SEP]`` token;
    - ``"same word"``: the total weight on the *other* positions that hold the same word
      (the other pieces of a split word, or a repeated word such as the two "the"), over
      the queries that have at least one such position.

    A kind with no eligible query (no ``[SEP]``, no repeated word) is ``nan``.
    """
    A, tokens = _attentions_and_tokens(attentions, tokens)  # [n_layers, n_heads, pos, pos]
    n = A.shape[-1]
    nan = np.full(A.shape[:2], np.nan)

    def mass(key_mask: np.ndarray, rows: np.ndarray) -> np.ndarray:
        if not rows.any():
            return nan.copy()
        return (A * key_mask).sum(-1)[..., rows].mean(-1)  # [n_layers, n_heads]

    eye = np.eye(n, dtype=bool)
    everyone = np.ones(n, dtype=bool)
    words = _words(tokens)
    specials = {"[CLS]", "[SEP]", "[PAD]"}
    same = np.array(
        [
            [i != j and words[i] == words[j] and tokens[i] not in specials for j in range(n)]
            for i in range(n)
        ]
    )
    return {
        "previous token": mass(np.eye(n, k=-1, dtype=bool), np.arange(n) >= 1),
        "next token": mass(np.eye(n, k=1, dtype=bool), np.arange(n) < n - 1),
        "itself": mass(eye, everyone),
        "[CLS]": mass(np.array([t == "[CLS]" for t in tokens])[None, :], everyone)
        if "[CLS]" in tokens
        else nan.copy(),
        "[SEP]": mass(np.array([t == "[SEP]" for t in tokens])[None, :], everyone)
        if "[SEP]" in tokens
        else nan.copy(),
        "same word": mass(same, np.any(same, axis=-1)),
    }


def bag_of_words_scores(attentions, tokens: Sequence[str]) -> np.ndarray:
    """How close each head comes to reading the sentence as a bag of words: ``[n_layers, n_heads]``.

    The sentence's tokens are the ``m`` positions that are not ``[CLS]``, ``[SEP]`` or
    ``[PAD]``. A bag-of-words query spreads its weight evenly over them, ``1/m`` each. For
    a query row ``A[i]`` the score is the weight it shares with that even spread,

        ``sum_j min(A[i, j], 1/m)`` over the sentence's tokens ``j``,

    which is ``1 - TV(A[i], uniform)`` (TV: total-variation distance): 1 for an exactly
    even spread, and lower the more weight sits on a few tokens or on ``[CLS]``/``[SEP]``
    (a head attending to one token only scores ``1/m``). The score is averaged over the
    sentence's tokens as queries. Needs at least two sentence tokens.
    """
    A, tokens = _attentions_and_tokens(attentions, tokens)  # [n_layers, n_heads, pos, pos]
    sentence = np.array([t not in ("[CLS]", "[SEP]", "[PAD]") for t in tokens])
    m = int(sentence.sum())
    if m < 2:
        raise ValueError(
            f"need at least 2 tokens besides [CLS], [SEP] and [PAD], got {m} in {tokens}"
        )
    rows = A[:, :, sentence][..., sentence]  # [n_layers, n_heads, m, m]
    return np.minimum(rows, 1.0 / m).sum(-1).mean(-1)


def top_heads(scores: np.ndarray, k: int = 3) -> list[tuple[int, int, float]]:
    """The ``k`` largest entries of a ``[n_layers, n_heads]`` array as ``(layer, head, value)``
    (NaN entries never count)."""
    integer(k, "k", minimum=1)
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 2:
        raise ValueError(f"scores must be [n_layers, n_heads], got shape {scores.shape}")
    flat = np.where(np.isnan(scores), -np.inf, scores).ravel()
    order = np.argsort(-flat, kind="stable")[:k]
    n_heads = scores.shape[1]
    return [(int(i // n_heads), int(i % n_heads), float(flat[i])) for i in order]
