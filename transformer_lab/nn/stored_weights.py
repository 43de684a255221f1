"""Weight matrices kept for decoding: in float32 rows, bfloat16, or int8 with one scale per row.

At batch 1, a decoder reads every weight once per token, and the CPU spends its time
waiting for memory, not multiplying (chapter 14's roofline). Two things bring decoding
closer to that limit: reading each matrix in the order it lies in memory, and storing a
weight in two bytes (bfloat16) or one (int8) instead of four, which cuts what each token
must read.

A :class:`StoredWeight` stands in for a float32 matrix ``W [in, out]`` wherever a model
computes ``x @ W``: ``x @ stored`` gives ``[..., out]`` in ``x``'s dtype. Inside, the matrix
is kept as rows ``[out, in]`` (one row per output): ``"float32-rows"`` as is, ``"bfloat16"``
rounded to bfloat16, ``"int8"`` rounded to 255 levels of one float32 scale per row (the
row's largest magnitude over 127). For a few activation vectors (decoding), the package's
row kernels (:mod:`transformer_lab.nn.row_kernels`) read the rows in address order and
widen each weight to float32 in registers; for more (a prompt), the rows are widened to a
float32 matrix and multiplied by PyTorch. Activations, products and sums stay float32, so
the two give the same numbers up to the order of the sums, and the storage's rounding of
the weights is the only approximation. Stored weights are inference only: a stored weight
is no parameter, it has no gradient, and a model that holds one stays on the CPU.

Where the rows lie matters too. A streaming read on 4 KiB memory pages restarts the
processor's prefetchers at every page and misses the address-translation cache every 4 KiB;
on 2 MiB pages it runs on (measured on one thread here: 18-23 GB/s against 32 GB/s for the
same read). :func:`pack_rows` moves the rows of a model's stored matrices, in the order a
token reads them, into one buffer that the operating system is asked to back with 2 MiB
pages (:func:`huge_page_buffer`; Linux's transparent huge pages, where they can be had).

- ``StoredWeight(weight, storage)``: one matrix;
- ``store_matrices(module, names, storage)``: replace named parameters of a module;
- ``storage_supported(storage)``: whether this machine runs the row kernels;
- ``pack_rows(weights)``: the rows of several stored matrices in one huge-page buffer;
- ``huge_page_buffer(n_bytes)``: such a buffer.
"""

from __future__ import annotations

import contextlib
import mmap
from collections.abc import Sequence

import torch
from torch import nn

from transformer_lab.checks import floating_tensor, instance_of, integer, one_of
from transformer_lab.nn.row_kernels import kernels_available, kernels_status, rows_product

__all__ = [
    "STORAGES",
    "StoredWeight",
    "store_matrices",
    "storage_supported",
    "pack_rows",
    "huge_page_buffer",
]

STORAGES = ("float32-rows", "bfloat16", "int8")
KERNEL_ROWS = 8  # at most this many activation vectors go through the row kernels
HUGE_PAGE = 2 << 20  # bytes in a huge page (x86-64)
ALIGN = 64  # every matrix in a packed buffer starts on a cache line


def storage_supported(storage: str) -> bool:
    """True when this machine runs the package's row kernels (an x86-64 CPU with AVX-512
    and a C compiler to build them once), which every storage decodes with."""
    one_of(storage, STORAGES, "storage")
    return kernels_available()


class StoredWeight:
    """A float32 matrix ``W [in, out]`` stored as ``storage`` ("float32-rows", "bfloat16"
    or "int8"), used as ``x @ stored`` (``x [..., in]`` float32 or bfloat16 -> ``[..., out]``
    in ``x``'s dtype). ``shape`` is ``(in, out)``; ``rows`` holds the stored ``[out, in]``
    numbers and ``scale`` the int8 rows' scales (None otherwise); ``dequantized()`` gives
    back the float32 matrix the products use (equal to ``W`` up to the storage's rounding);
    ``nbytes`` is what one product reads.

    ``group_size`` (int8 only; a power of two from 16, default None: one scale per row) gives
    every ``group_size`` inputs of a row their own scale, ``scale [out, groups]``: a row's
    large weights then coarsen the rounding of their own group only, at 4 bytes per group."""

    def __init__(self, weight: torch.Tensor, storage: str, group_size: int | None = None):
        w = floating_tensor(weight, "weight", 2, "[in, out]").detach()
        self.storage = one_of(storage, STORAGES, "storage")
        if group_size is not None:
            group_size = integer(group_size, "group_size", minimum=16)
            if storage != "int8" or group_size & (group_size - 1):
                raise ValueError(
                    f"group_size is for int8 storage, a power of two from 16; got {group_size} "
                    f"with {storage}"
                )
        self.group_size = group_size
        if w.device.type != "cpu":
            raise ValueError(f"stored weights run on the CPU only, got a weight on {w.device}")
        if not storage_supported(storage):
            raise RuntimeError(
                f"{storage} storage decodes with the package's row kernels, which do not run "
                f"here ({kernels_status()}): keep the float32 weights"
            )
        if w.numel() == 0:
            raise ValueError(f"weight must hold at least one number, got shape {tuple(w.shape)}")
        if not bool(torch.isfinite(w).all()):
            raise ValueError("weight has NaN or infinite values")
        self.shape = tuple(w.shape)
        rows = w.float().T.contiguous()  # [out, in]: one output per row
        self.scale = None
        if storage == "int8" and group_size is not None:
            n_out, n_in = rows.shape
            groups = -(-n_in // group_size)
            padded = torch.zeros(n_out, groups * group_size)
            padded[:, :n_in] = rows
            padded = padded.view(n_out, groups, group_size)
            self.scale = (padded.abs().amax(dim=2) / 127).clamp_min(1e-12)  # [out, groups]
            q = (padded / self.scale[:, :, None]).round().clamp(-127, 127).to(torch.int8)
            self.rows = q.view(n_out, -1)[:, :n_in].contiguous()
        elif storage == "int8":
            self.scale = (rows.abs().amax(dim=1) / 127).clamp_min(1e-12)  # [out]
            self.rows = (rows / self.scale[:, None]).round().clamp(-127, 127).to(torch.int8)
        else:
            self.rows = rows.to(torch.bfloat16) if storage == "bfloat16" else rows
        self.nbytes = self.rows.numel() * self.rows.element_size()
        self.nbytes += 0 if self.scale is None else 4 * self.scale.numel()

    def dequantized(self) -> torch.Tensor:
        """The float32 ``[in, out]`` matrix that the products use."""
        return self._float_rows().T.contiguous()

    def _float_rows(self) -> torch.Tensor:
        rows = self.rows.float()
        if self.scale is None:
            return rows
        if self.group_size is None:
            return rows * self.scale[:, None]
        per_input = self.scale.repeat_interleave(self.group_size, dim=1)  # [out, >= in]
        return rows * per_input[:, : rows.shape[1]]

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """``x @ stored`` reaches :meth:`__rmatmul__` directly: without this, the tensor's
        own ``@`` first fails on a non-tensor and Python falls back, which costs twice the
        time of a small product's dispatch at every matrix of every token."""
        if func in (torch.Tensor.__matmul__, torch.matmul) and len(args) == 2 and not kwargs:
            return args[1].__rmatmul__(args[0])
        return NotImplemented

    def __rmatmul__(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor) or x.dtype not in (torch.float32, torch.bfloat16):
            got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
            raise TypeError(f"x @ StoredWeight needs a float32 or bfloat16 tensor, got {got}")
        if x.dim() == 0 or x.shape[-1] != self.shape[0]:
            raise ValueError(f"x must be [..., {self.shape[0]}], got {tuple(x.shape)}")
        lead = x.shape[:-1]
        flat = x.reshape(-1, self.shape[0]).float().contiguous()
        if flat.shape[0] <= KERNEL_ROWS:  # decoding: read in address order
            y = rows_product(flat, self.rows, self.scale, self.group_size)
        else:
            y = flat @ self._float_rows().T  # a prompt: widen once, PyTorch multiplies
        return y.to(x.dtype).view(*lead, self.shape[1])

    def __repr__(self) -> str:
        groups = "" if self.group_size is None else f", group_size={self.group_size}"
        return f"StoredWeight({self.storage}, in={self.shape[0]}, out={self.shape[1]}{groups})"


def store_matrices(
    module: nn.Module, names: Sequence[str], storage: str, group_size: int | None = None
) -> int:
    """Replace the float32 parameters ``names`` (each ``[in, out]``, used as ``x @ W``) of
    ``module`` by :class:`StoredWeight` objects of ``storage`` (and ``group_size``); returns
    the bytes the stored matrices read per product. The parameters leave
    ``module.parameters()``."""
    instance_of(module, nn.Module, "module")
    one_of(storage, STORAGES, "storage")
    total = 0
    for name in names:
        weight = module._parameters.get(name)
        if weight is None:
            raise ValueError(f"{type(module).__name__} has no parameter {name!r} to store")
        stored = StoredWeight(weight, storage, group_size)
        del module._parameters[name]
        setattr(module, name, stored)
        total += stored.nbytes
    return total


def huge_page_buffer(n_bytes: int) -> torch.Tensor:
    """``n_bytes`` of zeros (a ``uint8`` tensor) in fresh memory that starts on a 2 MiB
    boundary and that Linux is asked to back with 2 MiB pages (``madvise(MADV_HUGEPAGE)``);
    elsewhere, or where the system has none free, the same memory on ordinary pages."""
    n_bytes = integer(n_bytes, "n_bytes", minimum=1)
    length = -(-n_bytes // HUGE_PAGE) * HUGE_PAGE  # whole huge pages
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
    try:
        memory = mmap.mmap(-1, length + HUGE_PAGE, **({"flags": flags} if flags else {}))
    except (OSError, OverflowError) as error:  # more than the system can give
        raise ValueError(f"cannot map {n_bytes} bytes: {error}") from None
    whole = torch.frombuffer(memory, dtype=torch.uint8)  # keeps the mapping alive
    start = -whole.data_ptr() % HUGE_PAGE
    if hasattr(mmap, "MADV_HUGEPAGE"):  # a kernel without huge pages refuses: ordinary ones
        with contextlib.suppress(OSError):
            memory.madvise(mmap.MADV_HUGEPAGE, start, length)
    return whole[start : start + n_bytes]


def pack_rows(weights: Sequence[StoredWeight]) -> torch.Tensor:
    """Move the rows of ``weights`` (in this order, each followed by its int8 scales, each
    on a 64-byte boundary) into one :func:`huge_page_buffer`, and return it: each
    ``StoredWeight.rows`` (and ``scale``) becomes a view of it with the same numbers, and its
    old memory is freed one matrix at a time. What the products compute does not change; a
    token that reads the matrices in this order then streams through one run of memory."""
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence) or not weights:
        raise TypeError(f"weights must be a non-empty list of StoredWeight, got {weights!r:.80}")
    for w in weights:
        instance_of(w, StoredWeight, "each of weights")
    if len({id(w) for w in weights}) != len(weights):
        raise ValueError("weights names one StoredWeight twice")
    parts = [
        (w, name) for w in weights for name in ("rows", "scale") if getattr(w, name) is not None
    ]
    sizes = [getattr(w, name).numel() * getattr(w, name).element_size() for w, name in parts]
    starts = [0]
    for size in sizes:
        starts.append(starts[-1] + -(-size // ALIGN) * ALIGN)
    buffer = huge_page_buffer(starts[-1])
    for (w, name), start, size in zip(parts, starts, sizes, strict=False):
        old = getattr(w, name)
        view = buffer[start : start + size].view(old.dtype).view(old.shape)
        view.copy_(old)
        setattr(w, name, view)
    return buffer
