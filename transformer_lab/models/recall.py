"""Three sequence models of one size for the recall task: the GPT's blocks, a GRU and an LSTM.

Every model reads a position as the sum of two embeddings, its key's and its value's
(``E_key[k] + E_value[v]``; a look-up has the blank value), runs a causal body over the
positions, and reads out a distribution over the ``n_values`` values at every position::

    model = RecallLM(RecallConfig("gpt"))
    logits = model(batch.keys, batch.values)     # [batch, pos, n_values]

The bodies:

- ``"gpt"``: the book's GPT without its token table: learned positions ``W_pos``,
  ``n_layers`` pre-LN :class:`~transformer_lab.models.gpt.GPTBlock` s with a causal mask
  (hooks ``blocks.1.attn.pattern``, ``blocks.1.attn.z`` ... as in every GPT of the book), a
  final layer norm and an unembedding ``W_U [d_model, n_values]``, initialised as GPT-2;
- ``"gru"`` and ``"lstm"``: one ``torch.nn.GRU`` / ``LSTM`` layer of width ``d_model`` whose
  state carries everything the model knows of the past, then a linear read-out.

A recurrent model answers from a state of fixed size however long the dictionary was; the
GPT's last block can look back at every entry. :func:`matched_width` picks the recurrent
width whose parameter count is closest to a given one, so that the race is at equal size.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from transformer_lab.checks import check_token_range, integer, one_of
from transformer_lab.models.gpt import GPTBlock, init_blocks
from transformer_lab.nn.masks import causal_mask
from transformer_lab.nn.norms import LayerNorm
from transformer_lab.nn.positions import LearnedPositions

__all__ = ["KINDS", "RecallConfig", "RecallLM", "matched_width"]

KINDS = ("gpt", "gru", "lstm")


@dataclass(frozen=True)
class RecallConfig:
    kind: str  # the body: "gpt" (attention), "gru" or "lstm" (recurrent)
    n_keys: int = 64  # key ids 0 .. n_keys - 1
    n_values: int = 16  # value ids 0 .. n_values - 1; n_values is the blank of a look-up
    d_model: int = 64  # width of the residual stream (gpt) or of the recurrent state
    n_ctx: int = 128  # gpt: the longest sequence (learned positions); recurrent: unused
    n_layers: int = 2  # gpt: blocks; recurrent: always one layer
    n_heads: int = 4  # gpt: heads per block

    def __post_init__(self):
        one_of(self.kind, KINDS, "kind")
        integer(self.n_keys, "n_keys", minimum=2)
        integer(self.n_values, "n_values", minimum=2)
        for name in ("d_model", "n_ctx", "n_layers", "n_heads"):
            integer(getattr(self, name), name, minimum=1)
        if self.kind == "gpt" and self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")


class RecallLM(nn.Module):
    """``model(keys, values)`` -> logits over the values ``[batch, pos, n_values]``;
    position ``t`` sees positions ``0..t`` only, whatever the body."""

    mask: torch.Tensor  # a buffer of the GPT body: the causal mask [n_ctx, n_ctx]

    def __init__(self, config: RecallConfig):
        super().__init__()
        if not isinstance(config, RecallConfig):
            raise TypeError(f"config must be a RecallConfig, got {type(config).__name__}")
        self.config = c = config
        d = c.d_model
        self.E_key = nn.Embedding(c.n_keys, d)
        self.E_value = nn.Embedding(c.n_values + 1, d)  # the last row: the blank of a look-up
        if c.kind == "gpt":
            self.pos = LearnedPositions(c.n_ctx, d)
            self.blocks = nn.ModuleList(
                GPTBlock(d, c.n_heads, 4 * d, norm_first=True, activation="gelu_tanh")
                for _ in range(c.n_layers)
            )
            self.ln_final = LayerNorm(d)
            self.W_U = nn.Parameter(torch.empty(d, c.n_values))
            self.register_buffer("mask", causal_mask(c.n_ctx), persistent=False)
            self._init_gpt()
        else:
            recurrent = nn.GRU if c.kind == "gru" else nn.LSTM
            self.rnn = recurrent(d, d, num_layers=1, batch_first=True)
            self.read_out = nn.Linear(d, c.n_values)

    def _init_gpt(self, std: float = 0.02) -> None:
        """GPT-2's initialisation, as :class:`~transformer_lab.models.gpt.GPT` has it."""
        with torch.no_grad():
            for w in (self.E_key.weight, self.E_value.weight, self.pos.W_pos, self.W_U):
                nn.init.normal_(w, std=std)
        init_blocks(self.blocks, std)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        self._check(keys, values)
        x = self.E_key(keys) + self.E_value(values)  # [batch, pos, d_model]
        if self.config.kind != "gpt":
            return self.read_out(self.rnn(x)[0])  # [batch, pos, n_values]: the state's read-out
        pos = keys.shape[1]
        x = self.pos(x)  # + W_pos
        for block in self.blocks:
            x = block(x, self.mask[:pos, :pos])  # causal self-attention, then the MLP
        return self.ln_final(x) @ self.W_U  # [batch, pos, n_values]

    def _check(self, keys, values) -> None:
        c = self.config
        if not isinstance(keys, torch.Tensor) or not isinstance(values, torch.Tensor):
            raise TypeError("keys and values must be tensors of ids [batch, pos]")
        if keys.dim() != 2 or keys.shape != values.shape:
            raise ValueError(
                f"keys and values must be [batch, pos] of one shape, got "
                f"{tuple(keys.shape)} and {tuple(values.shape)}"
            )
        check_token_range(keys, c.n_keys, "keys")
        check_token_range(values, c.n_values + 1, "values")
        if c.kind == "gpt" and keys.shape[1] > c.n_ctx:
            raise ValueError(f"{keys.shape[1]} positions but the model's n_ctx={c.n_ctx}")


def matched_width(kind: str, n_params: int, **config) -> int:
    """The width ``d_model`` of a recurrent (``"gru"`` or ``"lstm"``) model whose parameter
    count is closest to ``n_params`` (the other fields of :class:`RecallConfig` from
    ``config``)."""
    one_of(kind, KINDS[1:], "kind")
    integer(n_params, "n_params", minimum=1)

    def count(d: int) -> int:
        return RecallLM(RecallConfig(kind, d_model=d, **config)).num_params()

    low, high = 1, 2
    while count(high) < n_params:
        low, high = high, 2 * high
    while high - low > 1:  # the count grows with the width: bisect
        mid = (low + high) // 2
        low, high = (mid, high) if count(mid) < n_params else (low, mid)
    return min((low, high), key=lambda d: abs(count(d) - n_params))
