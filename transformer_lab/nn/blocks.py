"""Encoder and decoder blocks: attention and a feed-forward network, each added into the
residual stream, with layer norm after the addition (post-LN, Vaswani et al. 2017) or
before the sublayer (pre-LN, as in GPT-2 and most models since).

Post-LN: ``x = LN(x + sublayer(x))``.  Pre-LN: ``x = x + sublayer(LN(x))``.

Hooks, named as the residual stream is read: ``resid_pre`` (block input), ``attn_out``,
``resid_mid`` (after self-attention), ``cross_out`` and ``resid_cross`` (decoder only,
after cross-attention), ``mlp_out`` and ``resid_post`` (block output).
"""

from __future__ import annotations

import torch
from torch import nn

from transformer_lab.checks import torch_tensor
from transformer_lab.hooks import Hook
from transformer_lab.nn.feed_forward import FeedForward
from transformer_lab.nn.multi_head import MultiHeadAttention
from transformer_lab.nn.norms import LayerNorm

__all__ = ["EncoderBlock", "DecoderBlock"]


def check_memory(memory) -> None:
    """Cross-attention needs the encoder output, a floating-point tensor
    ``[batch, src_pos, d_model]`` (``None`` would make it silently attend to the target)."""
    torch_tensor(memory, "memory (the encoder output [batch, src_pos, d_model])")
    if memory.dim() != 3:
        raise ValueError(
            f"memory must be [batch, src_pos, d_model], got shape {tuple(memory.shape)}"
        )


class _Block(nn.Module):
    resid_pre: Hook
    attn_out: Hook
    resid_mid: Hook
    mlp_out: Hook
    resid_post: Hook

    def __init__(self, d_model, n_heads, d_mlp, dropout, norm_first, activation, eps):
        super().__init__()
        self.norm_first = norm_first
        self.attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.mlp = FeedForward(d_model, d_mlp, activation=activation, dropout=dropout)
        self.ln1 = LayerNorm(d_model, eps)
        self.ln2 = LayerNorm(d_model, eps)
        self.drop = nn.Dropout(dropout) if dropout else nn.Identity()  # no call when p = 0
        for name in ("resid_pre", "attn_out", "resid_mid", "mlp_out", "resid_post"):
            setattr(self, name, Hook())

    def _sublayer(self, x, ln, fn, hook):
        """Add ``fn`` into the residual stream ``x`` with the block's layer-norm placement."""
        if self.norm_first:
            return x + self.drop(hook(fn(ln(x))))
        return ln(x + self.drop(hook(fn(x))))

    def _self_attn(self, h, mask):
        return self.attn(h, mask=mask, need_weights=False)[0]


class EncoderBlock(_Block):
    """Self-attention then a feed-forward network, each with a residual connection.

    With a causal mask this is also the block of a decoder-only model such as GPT.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_mlp: int,
        *,
        dropout: float = 0.0,
        norm_first: bool = False,
        activation: str = "relu",
        eps: float = 1e-5,
    ):
        super().__init__(d_model, n_heads, d_mlp, dropout, norm_first, activation, eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``x [batch, pos, d_model]``; ``mask`` bool, True = may attend."""
        x = self.resid_pre(x)
        x = self.resid_mid(
            self._sublayer(x, self.ln1, lambda h: self._self_attn(h, mask), self.attn_out)
        )
        return self.resid_post(self._sublayer(x, self.ln2, self.mlp, self.mlp_out))

    @classmethod
    def from_torch(cls, m: nn.TransformerEncoderLayer) -> EncoderBlock:
        if not isinstance(m, nn.TransformerEncoderLayer):
            raise TypeError(f"expected nn.TransformerEncoderLayer, got {type(m).__name__}")
        ours = cls(
            m.linear1.in_features,
            m.self_attn.num_heads,
            m.linear1.out_features,
            dropout=m.dropout.p,
            norm_first=m.norm_first,
            activation=_torch_activation(m),
            eps=m.norm1.eps,
        )
        ours.attn = MultiHeadAttention.from_torch(m.self_attn)
        ours.mlp.load_linear(m.linear1, m.linear2)
        ours.ln1 = LayerNorm.from_torch(m.norm1)
        ours.ln2 = LayerNorm.from_torch(m.norm2)
        return ours


class DecoderBlock(_Block):
    """Masked self-attention, cross-attention to the encoder output, then a feed-forward
    network; each with a residual connection."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_mlp: int,
        *,
        dropout: float = 0.0,
        norm_first: bool = False,
        activation: str = "relu",
        eps: float = 1e-5,
    ):
        super().__init__(d_model, n_heads, d_mlp, dropout, norm_first, activation, eps)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.ln3 = LayerNorm(d_model, eps)
        self.cross_out = Hook()
        self.resid_cross = Hook()

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``x [batch, tgt_pos, d_model]`` decoder stream; ``memory [batch, src_pos, d_model]``
        the encoder output, the keys and values of cross-attention; ``self_mask`` (usually
        causal) and ``memory_mask`` (source padding) are bool, True = may attend."""
        check_memory(memory)
        x = self.resid_pre(x)
        x = self.resid_mid(
            self._sublayer(x, self.ln1, lambda h: self._self_attn(h, self_mask), self.attn_out)
        )
        x = self.resid_cross(
            self._sublayer(
                x, self.ln2, lambda h: self._cross_attn(h, memory, memory_mask), self.cross_out
            )
        )
        return self.resid_post(self._sublayer(x, self.ln3, self.mlp, self.mlp_out))

    def _cross_attn(self, h, memory, mask):
        return self.cross_attn(h, memory, memory, mask=mask, need_weights=False)[0]

    @classmethod
    def from_torch(cls, m: nn.TransformerDecoderLayer) -> DecoderBlock:
        if not isinstance(m, nn.TransformerDecoderLayer):
            raise TypeError(f"expected nn.TransformerDecoderLayer, got {type(m).__name__}")
        ours = cls(
            m.linear1.in_features,
            m.self_attn.num_heads,
            m.linear1.out_features,
            dropout=m.dropout.p,
            norm_first=m.norm_first,
            activation=_torch_activation(m),
            eps=m.norm1.eps,
        )
        ours.attn = MultiHeadAttention.from_torch(m.self_attn)
        ours.cross_attn = MultiHeadAttention.from_torch(m.multihead_attn)
        ours.mlp.load_linear(m.linear1, m.linear2)
        ours.ln1 = LayerNorm.from_torch(m.norm1)
        ours.ln2 = LayerNorm.from_torch(m.norm2)
        ours.ln3 = LayerNorm.from_torch(m.norm3)
        return ours


def _torch_activation(m) -> str:
    """Our activation name for a PyTorch layer's ``activation`` (a function or a module)."""
    act = m.activation
    if isinstance(act, nn.GELU):
        return "gelu_tanh" if act.approximate == "tanh" else "gelu"
    if isinstance(act, nn.ReLU) or act is torch.nn.functional.relu:
        return "relu"
    if act is torch.nn.functional.gelu:
        return "gelu"
    raise ValueError(f"unsupported activation {act!r}; expected relu or gelu")
