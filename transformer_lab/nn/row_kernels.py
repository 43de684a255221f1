"""The package's own matrix-vector kernels for decoding: weights read in address order.

At batch 1, PyTorch's general matrix products read a decoder's small weight matrices well
below the speed a plain streaming read reaches (chapter 14's roofline). The kernels in
``row_kernels.c`` keep each matrix as rows ``[out, in]``, walk the rows in the order they
lie in memory and take each row's dot product with the few activation vectors at once,
widening bfloat16 or int8 weights to float32 in registers: activations, products and sums
stay float32.

The C files are compiled once, at first use, by the machine's C compiler into a cache folder
(``$XDG_CACHE_HOME/transformer_lab`` or ``~/.cache/transformer_lab``; ``TRANSFORMER_LAB_CACHE``
overrides it). It needs an x86-64 CPU with AVX-512 (F, BW and VL) and a compiler; where
either is missing, :func:`kernels_available` is False and the callers keep PyTorch's
products. ``TRANSFORMER_LAB_KERNELS=0`` turns the kernels off. One library holds them and
``decode_kernels.c``'s decoding step (which includes ``row_kernels.c``, so the step and the
products share their code), used by :mod:`transformer_lab.nn.decode_step`.

- ``kernels_available()``: whether the kernels run here (and why not, in ``kernels_status()``);
- ``rows_product(x, rows, scale=None)``: ``x [m, in] @ rows.T * scale``;
- ``library()``: the compiled library itself (ctypes), for the decoding step.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

import torch

__all__ = ["kernels_available", "kernels_status"]

SOURCES = (Path(__file__).with_name("row_kernels.c"), Path(__file__).with_name("decode_kernels.c"))
SOURCE = SOURCES[1]  # what is compiled: the decoding step, which includes the products
FLAGS = ["-O3", "-mavx512f", "-mavx512bw", "-mavx512vl", "-funroll-loops", "-shared", "-fPIC"]
CPU_FLAGS = ("avx512f", "avx512bw", "avx512vl")
KERNEL_DTYPES = {
    torch.float32: "rows_float32",
    torch.bfloat16: "rows_bfloat16",
    torch.int8: "rows_int8",
}


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def _cache_dir() -> Path:
    if os.environ.get("TRANSFORMER_LAB_CACHE"):
        return Path(os.environ["TRANSFORMER_LAB_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "transformer_lab"


@functools.cache
def _load() -> tuple[ctypes.CDLL | None, str]:
    """(the compiled library, "") or (None, why not)."""
    if os.environ.get("TRANSFORMER_LAB_KERNELS", "1") == "0":
        return None, "turned off by TRANSFORMER_LAB_KERNELS=0"
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None, f"the kernels are x86-64 AVX-512 code; this CPU is {platform.machine()}"
    missing = [f for f in CPU_FLAGS if f not in _cpu_flags()]
    if missing:
        return None, f"this CPU lacks {', '.join(missing)}"
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if compiler is None:
        return None, "no C compiler (cc or gcc) was found to build the kernels"
    source = b"".join(path.read_bytes() for path in SOURCES)
    key = hashlib.sha256(source + " ".join(FLAGS).encode()).hexdigest()[:16]
    shared = _cache_dir() / f"row_kernels-{key}.so"
    try:
        if not shared.exists():
            shared.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=shared.parent) as scratch:
                built = Path(scratch) / shared.name
                subprocess.run(
                    [compiler, *FLAGS, str(SOURCE), "-o", str(built), "-lm"],
                    check=True, capture_output=True, text=True, timeout=120,
                )  # fmt: skip
                os.replace(built, shared)  # whole, even with two builds at once
        lib = ctypes.CDLL(str(shared))
    except (OSError, subprocess.SubprocessError) as error:
        detail = getattr(error, "stderr", "") or str(error)
        return None, f"building the kernels failed: {detail.strip()[:300]}"
    pointer, size = ctypes.c_void_p, ctypes.c_long
    for name in KERNEL_DTYPES.values():
        fn = getattr(lib, name)
        fn.argtypes = [pointer, pointer, pointer, pointer, size, size, size]
        fn.restype = None
    groups = lib.rows_int8_groups  # as the others, then the group size
    groups.argtypes = [pointer, pointer, pointer, pointer, size, size, size, size]
    groups.restype = None
    lib.stream_sum.argtypes = [pointer, size]  # a streaming read (analysis.roofline)
    lib.stream_sum.restype = ctypes.c_float
    step = lib.decode_token  # weights, embedding, cos, sin, kv, length, capacity, work, logits
    step.argtypes = [pointer] * 5 + [size, size, pointer, pointer]
    step.restype = None
    return lib, ""


def kernels_available() -> bool:
    """True when the kernels are built (or can be) and run on this machine."""
    return _load()[0] is not None


def kernels_status() -> str:
    """ "available", or why the kernels do not run here."""
    lib, why = _load()
    return "available" if lib is not None else why


def library() -> ctypes.CDLL:
    """The compiled kernels as a ctypes library (``rows_float32``, ``rows_bfloat16``,
    ``rows_int8``, ``decode_token`` and ``stream_sum``, their argument types set); a
    RuntimeError saying why where they do not run."""
    lib, why = _load()
    if lib is None:
        raise RuntimeError(f"the row kernels do not run here: {why}")
    return lib


def rows_product(
    x: torch.Tensor,
    rows: torch.Tensor,
    scale: torch.Tensor | None = None,
    group_size: int | None = None,
):
    """``x [m, in]`` (float32, contiguous) times the rows ``rows [out, in]`` (float32,
    bfloat16 or int8, contiguous): ``y [m, out]`` float32 with ``y[b, r] = scale[r] *
    (x[b] . rows[r])`` (``scale [out]`` float32, or None for 1); with ``group_size`` (int8),
    ``scale [out, groups]`` scales each group of ``group_size`` inputs of a row. Meant for a
    handful of ``m`` (decoding); the caller checks shapes, as :class:`~transformer_lab.nn.
    stored_weights.StoredWeight` does."""
    lib = library()
    m, n_in = x.shape
    n_out = rows.shape[0]
    y = torch.empty(m, n_out)
    pointers = (x.data_ptr(), rows.data_ptr(), None if scale is None else scale.data_ptr())
    if group_size is not None:
        lib.rows_int8_groups(*pointers, y.data_ptr(), m, n_in, n_out, group_size)
    else:
        getattr(lib, KERNEL_DTYPES[rows.dtype])(*pointers, y.data_ptr(), m, n_in, n_out)
    return y
