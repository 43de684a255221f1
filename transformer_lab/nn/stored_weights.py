"""Weight matrices kept in fewer bytes for decoding: bfloat16, or int8 with one scale per row.

At batch 1, a decoder reads every weight once per token, and the CPU spends its time
waiting for memory, not multiplying (chapter 14's roofline). Storing a weight in two bytes
(bfloat16) or one (int8) instead of four cuts what each token must read.

A :class:`StoredWeight` stands in for a float32 matrix ``W [in, out]`` wherever a model
computes ``x @ W``: ``x @ stored`` gives ``[..., out]`` in ``x``'s dtype. Inside, the
activations are rounded to bfloat16 and the product is accumulated in float32 by oneDNN's
kernels: for ``"bfloat16"`` a weight prepacked for batch 1 in bfloat16, for ``"int8"``
PyTorch's weight-only int8 matrix product with one float scale per output column, the
largest magnitude of that column over 127. Both are inference only: a stored weight is no
parameter, it has no gradient, and a model that holds one stays on the CPU.

- ``StoredWeight(weight, storage)``: one matrix;
- ``store_matrices(module, names, storage)``: replace named parameters of a module;
- ``storage_supported(storage)``: whether this CPU runs a storage's kernels.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from transformer_lab.checks import floating_tensor, instance_of, one_of

__all__ = ["STORAGES", "StoredWeight", "store_matrices", "storage_supported"]

STORAGES = ("bfloat16", "int8")


def storage_supported(storage: str) -> bool:
    """True when this machine's CPU kernels for ``storage`` exist: oneDNN with bfloat16
    support (AVX512-BF16, AMX or similar) for both storages, and PyTorch's weight-only
    int8 product for ``"int8"``."""
    one_of(storage, STORAGES, "storage")
    if not (torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()):
        return False
    return storage != "int8" or hasattr(torch, "_weight_int8pack_mm")


class StoredWeight:
    """A float32 matrix ``W [in, out]`` stored as ``storage`` ("bfloat16" or "int8"), used
    as ``x @ stored`` (``x [..., in]`` float32 or bfloat16 -> ``[..., out]`` in ``x``'s
    dtype). ``shape`` is ``(in, out)``; ``dequantized()`` gives back the float32 matrix
    the products use (equal to ``W`` up to the storage's rounding); ``nbytes`` is what one
    product reads."""

    def __init__(self, weight: torch.Tensor, storage: str):
        w = floating_tensor(weight, "weight", 2, "[in, out]").detach()
        self.storage = one_of(storage, STORAGES, "storage")
        if w.device.type != "cpu":
            raise ValueError(f"stored weights run on the CPU only, got a weight on {w.device}")
        if not storage_supported(storage):
            raise RuntimeError(
                f"{storage} storage needs oneDNN's bfloat16 kernels (a CPU with AVX512-BF16 or "
                "AMX); this machine has none: keep the float32 weights"
            )
        if w.numel() == 0:
            raise ValueError(f"weight must hold at least one number, got shape {tuple(w.shape)}")
        if not bool(torch.isfinite(w).all()):
            raise ValueError("weight has NaN or infinite values")
        self.shape = tuple(w.shape)
        columns = w.float().T.contiguous()  # [out, in]: the kernels read one output per row
        if storage == "int8":
            self.scale = (columns.abs().amax(dim=1) / 127).clamp_min(1e-12)  # [out]
            self.q = (columns / self.scale[:, None]).round().clamp(-127, 127).to(torch.int8)
            self._scale = self.scale.to(torch.bfloat16)
            self.nbytes = self.q.numel() + 2 * self.scale.numel()
        else:
            self.rows = columns.to(torch.bfloat16)
            self.packed = torch.ops.mkldnn._reorder_linear_weight(self.rows, 1)
            self.nbytes = 2 * self.rows.numel()

    def dequantized(self) -> torch.Tensor:
        """The float32 ``[in, out]`` matrix that the products use."""
        if self.storage == "int8":
            cols = self.q.float() * self.scale.to(torch.bfloat16).float()[:, None]
        else:
            cols = self.rows.float()
        return cols.T.contiguous()

    def __rmatmul__(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.dtype not in (torch.float32, torch.bfloat16):
            got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
            raise TypeError(f"x @ StoredWeight needs a float32 or bfloat16 tensor, got {got}")
        if x.dim() == 0 or x.shape[-1] != self.shape[0]:
            raise ValueError(f"x must be [..., {self.shape[0]}], got {tuple(x.shape)}")
        lead = x.shape[:-1]
        flat = x.reshape(-1, self.shape[0]).to(torch.bfloat16)
        if self.storage == "int8":
            y = torch._weight_int8pack_mm(flat, self.q, self._scale)
        else:
            y = torch.ops.mkldnn._linear_pointwise(flat, self.packed, None, "none", [], "")
        return y.to(x.dtype).view(*lead, self.shape[1])

    def __repr__(self) -> str:
        return f"StoredWeight({self.storage}, in={self.shape[0]}, out={self.shape[1]})"


def store_matrices(module: nn.Module, names: Sequence[str], storage: str) -> int:
    """Replace the float32 parameters ``names`` (each ``[in, out]``, used as ``x @ W``) of
    ``module`` by :class:`StoredWeight` objects of ``storage``; returns the bytes the stored
    matrices read per product. The parameters leave ``module.parameters()``."""
    instance_of(module, nn.Module, "module")
    one_of(storage, STORAGES, "storage")
    total = 0
    for name in names:
        weight = module._parameters.get(name)
        if weight is None:
            raise ValueError(f"{type(module).__name__} has no parameter {name!r} to store")
        stored = StoredWeight(weight, storage)
        del module._parameters[name]
        setattr(module, name, stored)
        total += stored.nbytes
    return total
