"""Score functions of the recurrent seq2seq models (chapter 3): how well a decoder state
matches each encoder state, as a dot product, a bilinear form or a small network, and
``attend``, which turns the scores into weights and a context vector."""

from __future__ import annotations

import torch
from torch import nn

from transformer_lab.checks import floating_tensor, instance_of, integer, one_of
from transformer_lab.nn.attention import attention_weights

__all__ = ["DotScore", "MultiplicativeScore", "AdditiveScore", "make_score", "attend"]


def _check_inputs(query, keys, d_query: int | None = None, d_key: int | None = None) -> None:
    """``query [batch, d_query]`` and ``keys [batch, key_pos, d_key]``, floating point."""
    floating_tensor(query, "query", 2, "[batch, d_query]")
    floating_tensor(keys, "keys", 3, "[batch, key_pos, d_key]")
    if query.shape[0] != keys.shape[0]:
        raise ValueError(f"query has batch={query.shape[0]} but keys have batch={keys.shape[0]}")
    if keys.shape[1] == 0:
        raise ValueError("keys are an empty sequence (key_pos=0)")
    if d_query is not None and query.shape[-1] != d_query:
        raise ValueError(f"query has {query.shape[-1]} features but the score expects {d_query}")
    if d_key is not None and keys.shape[-1] != d_key:
        raise ValueError(f"keys have {keys.shape[-1]} features but the score expects {d_key}")


class DotScore(nn.Module):
    """Dot-product score ``s_j = h_dec . h_enc_j`` (Luong et al. 2015); needs equal sizes."""

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        _check_inputs(query, keys)
        if query.shape[-1] != keys.shape[-1]:
            raise ValueError(
                "dot score needs equal sizes: "
                f"query has {query.shape[-1]}, keys have {keys.shape[-1]}"
            )
        return (keys @ query.unsqueeze(-1)).squeeze(-1)  # [batch, key_pos]


class MultiplicativeScore(nn.Module):
    """Multiplicative ("general") score ``s_j = h_dec^T W h_enc_j`` (Luong et al. 2015)."""

    def __init__(self, d_query: int, d_key: int):
        super().__init__()
        self.W = nn.Parameter(
            torch.empty(integer(d_query, "d_query", minimum=1), integer(d_key, "d_key", minimum=1))
        )
        nn.init.xavier_uniform_(self.W)

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        _check_inputs(query, keys, *self.W.shape)
        projected = query @ self.W  # [batch, d_key]
        return (keys @ projected.unsqueeze(-1)).squeeze(-1)  # [batch, key_pos]


class AdditiveScore(nn.Module):
    """Additive score ``s_j = v^T tanh(W_1 h_dec + W_2 h_enc_j)`` (Bahdanau et al. 2015)."""

    def __init__(self, d_query: int, d_key: int, d_attn: int | None = None):
        super().__init__()
        integer(d_query, "d_query", minimum=1)
        integer(d_key, "d_key", minimum=1)
        d_attn = d_key if d_attn is None else integer(d_attn, "d_attn", minimum=1)
        self.W_1 = nn.Linear(d_query, d_attn, bias=False)
        self.W_2 = nn.Linear(d_key, d_attn, bias=True)
        self.v = nn.Linear(d_attn, 1, bias=False)

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        _check_inputs(query, keys, self.W_1.in_features, self.W_2.in_features)
        hidden = torch.tanh(
            self.W_1(query).unsqueeze(-2) + self.W_2(keys)
        )  # [batch, key_pos, d_attn]
        return self.v(hidden).squeeze(-1)  # [batch, key_pos]


def make_score(kind: str, d_query: int, d_key: int) -> nn.Module:
    """Build a score module by name: ``"dot"``, ``"multiplicative"`` or ``"additive"``."""
    integer(d_query, "d_query", minimum=1)
    integer(d_key, "d_key", minimum=1)
    kinds = {
        "dot": lambda: DotScore(),
        "multiplicative": lambda: MultiplicativeScore(d_query, d_key),
        "additive": lambda: AdditiveScore(d_query, d_key),
    }
    return kinds[one_of(kind, sorted(kinds), "score kind")]()


def attend(
    score: nn.Module,
    query: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One decoder step of seq2seq attention: scores, softmax, weighted sum.

    Args:
        score: a score module (``DotScore``, ``MultiplicativeScore``, ``AdditiveScore``).
        query: decoder state ``[batch, d_query]``.
        keys: encoder states ``[batch, key_pos, d_key]``.
        values: what is averaged, ``[batch, key_pos, d_value]``; the keys when None.
        mask: bool ``[batch, key_pos]``, True for real (non-padding) source tokens.

    Returns:
        context ``[batch, d_value]`` and weights ``[batch, key_pos]`` (zeros for a row
        with no real source token).
    """
    instance_of(score, nn.Module, "score", "a score module (see make_score)")
    values = keys if values is None else values
    scores = score(query, keys)  # [batch, key_pos]
    if (
        not isinstance(values, torch.Tensor)
        or values.dim() != 3
        or values.shape[:2] != keys.shape[:2]
    ):
        got = tuple(values.shape) if isinstance(values, torch.Tensor) else type(values).__name__
        raise ValueError(
            f"values must be [batch, key_pos, d_value] with [batch, key_pos]="
            f"{tuple(keys.shape[:2])}, got {got}"
        )
    if values.dtype != scores.dtype and not torch.is_autocast_enabled(values.device.type):
        raise TypeError(f"values have dtype {values.dtype} but the scores {scores.dtype}")
    weights = attention_weights(scores, mask)  # [batch, key_pos], the mask checked there
    context = (weights.unsqueeze(-2) @ values).squeeze(-2)  # [batch, d_value]
    return context, weights
