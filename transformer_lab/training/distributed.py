"""Data parallelism: one model replica per process, gradients averaged across processes.

``torchrun --nproc_per_node=N script.py`` starts N copies of a script and tells each its
place through environment variables (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``MASTER_ADDR``, ``MASTER_PORT``). :func:`setup` reads them and joins the process group:
NCCL between GPUs, gloo between CPU processes. Each process (a *rank*) then trains a full
copy of the model on its own shard of every global batch; after ``backward`` PyTorch's
``DistributedDataParallel`` averages the gradients over the ranks (an *all-reduce*), so every
replica takes the same optimizer step and the replicas stay equal::

    global batch = per-rank batch x world size

Run without torchrun, :func:`setup` joins nothing and returns a one-process
:class:`DistInfo`, and the training loop behaves exactly as on one device.

A launch is all or nothing: some of the five variables without the others is an error
naming the missing ones (a process that trained alone as "rank 0 of 1" while its
partners wait would overwrite their checkpoint), and so is a ``RANK`` outside
``0 .. WORLD_SIZE - 1``, which would otherwise wait forever for partners that never come.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from transformer_lab.checks import integer
from transformer_lab.device import check_device

__all__ = [
    "DistInfo",
    "launched",
    "setup",
    "info",
    "teardown",
    "shard",
    "ring_all_reduce",
]

_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


@dataclass(frozen=True)
class DistInfo:
    """Where this process stands among the processes of a run."""

    rank: int = 0  # this process's number, 0 .. world_size - 1
    world_size: int = 1  # how many processes train together
    local_rank: int = 0  # this process's number on its own machine (picks its GPU)
    backend: str | None = None  # "nccl" or "gloo"; None when training in one process
    device: torch.device = torch.device("cpu")  # where this process's replica lives

    @property
    def is_main(self) -> bool:
        """True on rank 0, the process that reports progress, evaluates and saves."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        """True when several processes train together."""
        return self.world_size > 1


def launched() -> bool:
    """True when torchrun (or another launcher) has set all the process group's variables
    (:func:`setup` refuses a partial set)."""
    return all(name in os.environ for name in _ENV)


def _launch_place() -> tuple[int, int, int] | None:
    """``(rank, world_size, local_rank)`` from the launcher's variables, None when none is
    set; a partial or inconsistent set is a ``ValueError`` that says what is wrong."""
    present = [name for name in _ENV if name in os.environ]
    if not present:
        return None
    missing = [name for name in _ENV if name not in os.environ]
    if missing:
        raise ValueError(
            f"a launch across processes needs all of {', '.join(_ENV)}; "
            f"{', '.join(present)} {'is' if len(present) == 1 else 'are'} set but "
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing: start "
            f"with torchrun, or unset {', '.join(present)} to train in one process"
        )
    rank, world, local = (_env_int(n) for n in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    port = _env_int("MASTER_PORT")
    if world < 1:
        raise ValueError(f"WORLD_SIZE must be at least 1, got {world}")
    if not 0 <= rank < world:
        raise ValueError(
            f"RANK={rank} is outside the world of WORLD_SIZE={world} processes "
            f"(need 0 <= RANK < {world}); it would wait forever for its partners"
        )
    if not 0 <= local <= rank:
        raise ValueError(f"LOCAL_RANK must be in 0..RANK={rank}, got {local}")
    if not 0 < port < 65536:
        raise ValueError(f"MASTER_PORT must be a port number in 1..65535, got {port}")
    if not os.environ["MASTER_ADDR"].strip():
        raise ValueError("MASTER_ADDR is empty; it must name the host of rank 0")
    return rank, world, local


def _env_int(name: str) -> int:
    value = os.environ[name]
    try:
        return int(value)
    except ValueError as err:
        raise ValueError(f"environment variable {name} must be an integer, got {value!r}") from err


def setup(device: torch.device | str | None = None, backend: str | None = None) -> DistInfo:
    """Join the process group when launched by torchrun; return this process's :class:`DistInfo`.

    ``device``: "cuda" gives each process the GPU numbered by its ``LOCAL_RANK``; "cpu"
    (or None on a machine without CUDA) keeps every process on the CPU. ``backend``: None
    picks NCCL for CUDA and gloo for the CPU. Without torchrun nothing is joined and the
    result describes one process on ``device``. Calling it again returns the same answer.
    Some of the launcher's variables without the others, or a ``RANK`` outside the world,
    is a ``ValueError`` (never a silent run alone, never a wait).
    """
    if device is not None:
        device = check_device(device)
    elif torch.cuda.is_available():
        device = torch.device("cuda")
    else:
        device = torch.device("cpu")
    if backend is not None and backend not in ("nccl", "gloo"):
        raise ValueError(f"backend must be 'nccl', 'gloo' or None, got {backend!r}")
    launch = _launch_place()
    if launch is None:
        if backend == "nccl" and device.type != "cuda":
            raise ValueError(f"the nccl backend needs CUDA devices, got device {device}")
        return DistInfo(device=device)
    rank, world, local = launch
    if device.type == "cuda":
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
    if backend is None:
        backend = "nccl" if device.type == "cuda" else "gloo"
    if backend == "nccl" and device.type != "cuda":
        raise ValueError(f"the nccl backend needs CUDA devices, got device {device}")
    if not dist.is_initialized():
        dist.init_process_group(backend=backend, rank=rank, world_size=world)
    return DistInfo(rank, world, local, dist.get_backend(), device)


def info() -> DistInfo:
    """This process's place in the current process group (one process if none is joined)."""
    if not (dist.is_available() and dist.is_initialized()):
        return DistInfo()
    backend = dist.get_backend()
    local = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local) if backend == "nccl" else torch.device("cpu")
    return DistInfo(dist.get_rank(), dist.get_world_size(), local, backend, device)


def teardown() -> None:
    """Leave the process group (a no-op when none was joined)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def shard(batch, rank: int, world_size: int):
    """This rank's equal share of a global batch: rows ``rank*b : (rank+1)*b`` of every
    tensor in ``batch`` (a tensor, or a tuple, list or dict of them), ``b = len / world_size``.

    The shards of ranks ``0 .. world_size-1`` put back in order are the global batch, so a
    run on N processes sees the same examples in the same order as a run on one.
    """
    integer(rank, "rank")
    integer(world_size, "world_size")
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"need 0 <= rank < world_size, got rank={rank}, world_size={world_size}")
    if isinstance(batch, torch.Tensor):
        if batch.dim() == 0:
            raise ValueError("cannot shard a 0-d tensor: a batch needs a leading batch dimension")
        n = batch.shape[0]
        if n % world_size:
            raise ValueError(
                f"a global batch of {n} rows does not split evenly over {world_size} processes"
            )
        size = n // world_size
        return batch[rank * size : (rank + 1) * size]
    if isinstance(batch, (tuple, list)):
        return type(batch)(shard(item, rank, world_size) for item in batch)
    if isinstance(batch, dict):
        return {key: shard(item, rank, world_size) for key, item in batch.items()}
    raise TypeError(
        f"batch must be a tensor or a tuple, list or dict of tensors, got {type(batch).__name__}"
    )


def ring_all_reduce(tensors: list[torch.Tensor]) -> tuple[list[torch.Tensor], list[int]]:
    """Simulate the ring all-reduce that sums one tensor per rank (NCCL's and gloo's usual
    algorithm for large tensors), in one process: ``tensors[r]`` is rank ``r``'s tensor.

    Each rank splits its tensor into ``N`` chunks and talks only to its right-hand
    neighbour. In ``N - 1`` steps of *reduce-scatter*, rank ``r`` passes chunk
    ``(r - s) mod N`` on and adds what arrives from the left, so afterwards rank ``r`` holds
    the complete sum of chunk ``(r + 1) mod N``; in ``N - 1`` steps of *all-gather* the
    complete chunks travel once around the ring. Every rank sends ``2 (N - 1)`` chunks,
    ``2 (N - 1) / N`` times the tensor's size, however many ranks there are.

    Returns every rank's result (each equal to the sum) and the number of elements each
    rank sent. The inputs are not changed.
    """
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise ValueError("tensors must be a non-empty list of tensors, one per rank")
    if not all(isinstance(t, torch.Tensor) for t in tensors):
        raise TypeError("tensors must all be torch.Tensor")
    shape = tensors[0].shape
    if any(t.shape != shape for t in tensors):
        shapes = sorted({tuple(t.shape) for t in tensors})
        raise ValueError(f"every rank's tensor must have the same shape, got {shapes}")
    n = len(tensors)
    # chunk c of rank r; chunks may differ in size by one element when N does not divide
    chunks = [list(t.flatten().clone().tensor_split(n)) for t in tensors]
    sent = [0] * n
    for s in range(n - 1):  # reduce-scatter
        outgoing = [chunks[r][(r - s) % n].clone() for r in range(n)]
        for r in range(n):
            c = (r - s) % n
            sent[r] += outgoing[r].numel()
            right = (r + 1) % n
            chunks[right][c] += outgoing[r]
    for s in range(n - 1):  # all-gather: pass on the completed chunks
        outgoing = [chunks[r][(r + 1 - s) % n].clone() for r in range(n)]
        for r in range(n):
            c = (r + 1 - s) % n
            sent[r] += outgoing[r].numel()
            chunks[(r + 1) % n][c] = outgoing[r]
    return [torch.cat(parts).reshape(shape) for parts in chunks], sent
