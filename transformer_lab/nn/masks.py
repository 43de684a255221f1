"""Attention masks.

Every mask in this package is a boolean tensor in which **True means "may attend"**
(the convention of ``torch.nn.functional.scaled_dot_product_attention``). Masks are
broadcastable to ``[batch, n_heads, query_pos, key_pos]``; a padding mask for keys has
shape ``[batch, 1, 1, key_pos]`` and a causal mask ``[query_pos, key_pos]``.

PyTorch's ``nn.MultiheadAttention`` and ``nn.Transformer`` use the opposite convention
(True = ignore); :func:`to_torch_mask` and :func:`from_torch_mask` convert at that
boundary.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from transformer_lab.checks import instance_of, integer

__all__ = [
    "causal_mask",
    "padding_mask",
    "padding_mask_from_ids",
    "combine_masks",
    "check_mask",
    "to_torch_mask",
    "from_torch_mask",
]


def causal_mask(n_query: int, n_key: int | None = None, device=None) -> torch.Tensor:
    """Lower-triangular mask ``[n_query, n_key]``: query ``i`` may attend to keys ``<= i``.

    When ``n_key > n_query`` (queries are the last ``n_query`` tokens of a longer
    sequence, as with a key/value cache) the triangle is aligned to the bottom right:
    query ``i`` sits at absolute position ``n_key - n_query + i``.
    """
    n_query = integer(n_query, "n_query", minimum=1)
    n_key = n_query if n_key is None else integer(n_key, "n_key", minimum=1)
    if n_key < n_query:
        raise ValueError(f"n_key={n_key} is smaller than n_query={n_query}")
    offset = n_key - n_query
    query_index = torch.arange(n_query, device=device)[:, None] + offset
    key_index = torch.arange(n_key, device=device)[None, :]
    return key_index <= query_index  # [query_pos, key_pos]


def _check_lengths(lengths: torch.Tensor) -> torch.Tensor:
    if lengths.dim() != 1 or lengths.numel() == 0:
        raise ValueError(
            f"lengths must be a non-empty 1-d sequence, got shape {tuple(lengths.shape)}"
        )
    if lengths.dtype.is_floating_point or lengths.dtype == torch.bool:
        raise TypeError(f"lengths must be integers, got {lengths.dtype}")
    if (lengths < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    return lengths


def padding_mask(lengths: Sequence[int] | torch.Tensor, max_len: int | None = None) -> torch.Tensor:
    """Key padding mask ``[batch, 1, 1, key_pos]`` from the true length of each sequence.

    Position ``j`` of sequence ``b`` may be attended to when ``j < lengths[b]``.
    """
    try:
        lengths = torch.as_tensor(lengths)
    except (RuntimeError, TypeError, ValueError):  # None, an object, a ragged list
        raise TypeError(f"lengths must be a 1-d sequence of ints, got {lengths!r}") from None
    lengths = _check_lengths(lengths)
    longest = int(lengths.max())
    max_len = integer(longest if max_len is None else max_len, "max_len", minimum=1)
    if max_len < longest:
        raise ValueError(f"max_len={max_len} is shorter than the longest sequence ({longest})")
    positions = torch.arange(max_len, device=lengths.device)
    return (positions[None, :] < lengths[:, None])[:, None, None, :]  # [batch, 1, 1, key_pos]


def padding_mask_from_ids(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Key padding mask ``[batch, 1, 1, key_pos]``: True where ``ids`` is not ``pad_id``."""
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"ids must be a torch.Tensor of token ids, got {type(ids).__name__}")
    if ids.dim() != 2:
        raise ValueError(f"ids must be [batch, pos], got shape {tuple(ids.shape)}")
    if ids.dtype.is_floating_point or ids.dtype == torch.bool:
        raise TypeError(f"ids must be integer token ids, got dtype {ids.dtype}")
    return (ids != pad_id)[:, None, None, :]


def combine_masks(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Logical AND of several masks (``None`` entries are skipped), broadcast together."""
    present = [m for m in masks if m is not None]
    if not present:
        return None
    out = present[0]
    for m in present:
        if instance_of(m, torch.Tensor, "masks", "bool tensors or None").dtype != torch.bool:
            raise TypeError(f"masks must be bool (True = may attend), got {m.dtype}")
    for m in present[1:]:
        try:
            out = out & m
        except RuntimeError as err:
            raise ValueError(
                f"mask shapes {tuple(out.shape)} and {tuple(m.shape)} do not broadcast together"
            ) from err
    return out


def check_mask(mask: torch.Tensor, target_shape: Sequence[int]) -> torch.Tensor:
    """Validate that ``mask`` is bool and broadcasts to ``target_shape``; return it unchanged."""
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask must be a torch.Tensor, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise TypeError(
            f"mask must be bool with True = may attend, got dtype {mask.dtype}; "
            "for a 0/1 or additive float mask use mask.bool() or (mask == 0) as appropriate"
        )
    shape, target_shape = mask.shape, tuple(target_shape)
    offset = len(target_shape) - len(shape)  # the mask's dims align with the target's last
    # a plain loop: this runs on every attention call
    ok = offset >= 0
    for i in range(len(shape) if ok else 0):
        if shape[i] != 1 and shape[i] != target_shape[offset + i]:
            ok = False
            break
    if not ok:
        raise ValueError(f"mask shape {tuple(shape)} does not broadcast to {target_shape}")
    return mask


def to_torch_mask(mask: torch.Tensor | None, *, key_padding: bool = False) -> torch.Tensor | None:
    """Convert our mask (True = may attend) to PyTorch's ``attn_mask``/``key_padding_mask``
    convention (True = ignore).

    With ``key_padding=True`` a padding mask ``[batch, 1, 1, key_pos]`` becomes the
    ``[batch, key_pos]`` that ``key_padding_mask`` arguments expect.
    """
    if mask is None:
        return None
    instance_of(mask, torch.Tensor, "mask", "a bool tensor or None")
    if key_padding:
        if mask.dim() != 4 or mask.shape[1:3] != (1, 1):
            raise ValueError(
                f"a key padding mask must be [batch, 1, 1, key_pos], got shape {tuple(mask.shape)}"
            )
        mask = mask[:, 0, 0, :]
    return ~check_mask(mask, mask.shape)


def from_torch_mask(
    torch_mask: torch.Tensor | None, *, key_padding: bool = False
) -> torch.Tensor | None:
    """Convert a PyTorch boolean mask (True = ignore) or additive float mask (``-inf`` =
    ignore, ``0`` = attend) to ours (True = may attend).

    With ``key_padding=True`` a ``key_padding_mask [batch, key_pos]`` becomes our
    ``[batch, 1, 1, key_pos]``, which broadcasts over heads and queries (as a
    ``[batch, key_pos]`` mask it would broadcast against ``[query_pos, key_pos]``).
    """
    if torch_mask is None:
        return None
    if instance_of(torch_mask, torch.Tensor, "torch_mask", "a tensor or None").dtype == torch.bool:
        mask = ~torch_mask
    elif torch_mask.is_floating_point():
        finite = torch.isfinite(torch_mask)
        if (torch_mask[finite] != 0).any() or torch.isposinf(torch_mask).any():
            raise ValueError(
                "expected an additive float mask of only 0 and -inf; one with other values "
                "(a bias) has no boolean form"
            )
        mask = ~torch.isneginf(torch_mask)
    else:
        raise TypeError(f"expected a bool or float PyTorch mask, got dtype {torch_mask.dtype}")
    if key_padding:
        if mask.dim() != 2:
            raise ValueError(
                f"a key_padding_mask must be [batch, key_pos], got shape {tuple(mask.shape)}"
            )
        mask = mask[:, None, None, :]  # [batch, 1, 1, key_pos]
    return mask
