"""How much of a layer's work must happen one step after another, and how long it takes.

Chapter 2 compares a recurrent layer with a self-attention layer in two ways:

- ``longest_chain(output)`` walks the autograd graph that produced ``output`` and returns
  the number of operations on its longest path: operations that had to run one after
  another because each needs the result of the one before. With ``count=is_matrix_product``
  only the matrix products on that path are counted. Exact and the same on every machine::

      h = torch.nn.GRU(64, 64, batch_first=True)(torch.randn(1, n, 64))[0]
      longest_chain(h, count=is_matrix_product)  # n: one product per step

- ``multiply_adds(fn)`` counts the multiply-adds of the matrix products that ``fn`` runs
  (with ``torch.utils.flop_counter``), and ``interleaved_medians(fns)`` times several
  functions in turn, round after round, and returns the median time of each, so that a
  change on the machine during the measurement touches them all alike.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping

import torch
from torch.utils.flop_counter import FlopCounterMode

from transformer_lab.checks import finite_number, integer, torch_tensor

__all__ = [
    "MATRIX_PRODUCTS",
    "interleaved_medians",
    "is_matrix_product",
    "longest_chain",
    "multiply_adds",
]

# Autograd node names (without the version suffix "0", "1", ...) of matrix products.
MATRIX_PRODUCTS = frozenset(
    {
        "MmBackward",
        "AddmmBackward",
        "BmmBackward",
        "BaddbmmBackward",
        "MvBackward",
        "AddmvBackward",
        "DotBackward",
        "VdotBackward",
        "AddbmmBackward",
        "LinearBackward",
    }
)


def _name(node) -> str:
    return type(node).__name__.rstrip("0123456789")


def is_matrix_product(node) -> bool:
    """True for an autograd node that records a matrix product (mm, addmm, bmm, ...)."""
    return _name(node) in MATRIX_PRODUCTS


def _is_operation(node) -> bool:
    """Every recorded operation; ``AccumulateGrad`` only marks a leaf (a parameter)."""
    return _name(node) != "AccumulateGrad"


def longest_chain(output: torch.Tensor, count: Callable[[object], bool] | None = None) -> int:
    """The number of operations on the longest path of the autograd graph ending at ``output``.

    Each edge of the graph says "this operation used that one's result", so the longest
    path is the longest chain of operations that had to run one after another, however
    many processors were available. ``count`` picks which nodes count (default: every
    operation; ``is_matrix_product`` counts only matrix products). Parameters and inputs
    are leaves and count nothing. Run the layer with gradients enabled (not under
    ``torch.no_grad()``), otherwise there is no graph to walk.
    """
    root = torch_tensor(output, "output").grad_fn
    if root is None:
        raise ValueError(
            "output has no autograd graph (grad_fn is None): run the layer with parameters "
            "that require gradients, outside torch.no_grad()"
        )
    count = _is_operation if count is None else count
    # Iterative post-order walk (graphs of long recurrences are thousands of nodes deep).
    depth: dict[object, int] = {}
    stack = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if node in depth:
            continue
        children = [child for child, _ in node.next_functions if child is not None]
        if children_done:
            below = max((depth[child] for child in children), default=0)
            depth[node] = below + (1 if count(node) else 0)
        else:
            stack.append((node, True))
            stack.extend((child, False) for child in children if child not in depth)
    return depth[root]


def multiply_adds(fn: Callable[..., object], *args, **kwargs) -> int:
    """Multiply-adds of the matrix products run by ``fn(*args, **kwargs)`` (half its FLOPs
    as counted by ``torch.utils.flop_counter.FlopCounterMode``). Elementwise work (gates,
    softmax) is not counted. Fused kernels without a FLOP formula count zero, so count
    attention with its explicit path (``need_weights=True``)."""
    with FlopCounterMode(display=False) as counter:
        fn(*args, **kwargs)
    return counter.get_total_flops() // 2


def interleaved_medians(
    fns: Mapping[str, Callable[[], object]],
    repeats: int = 5,
    warmup: int = 1,
    min_time: float = 0.0,
    sync: Callable[[], object] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Median time in seconds of one call of each function in ``fns``, timed in turn.

    Each round runs every function, in the order given, so that a change in machine load
    during the measurement touches every function alike; ``warmup`` untimed rounds come
    first. A timed sample runs a function as many times in a row as it takes to last at
    least ``min_time`` seconds (judged from the warmup), and is divided by that number. On
    a busy machine, where other programs take the processor for some milliseconds at a
    time, samples much shorter than that are either untouched or slowed several-fold;
    longer samples are all slowed alike, so ratios of times hold. ``sync`` (for example
    ``torch.cuda.synchronize``) is called before each clock reading, for devices that run
    asynchronously. ``clock`` reads the time: wall-clock time by default; ``time.thread_time``
    counts only the processor time of the calling thread, which other programs cannot
    inflate (with one intra-op thread, ``torch.set_num_threads(1)``, the calling thread does
    all of a CPU layer's work).
    """
    if not fns:
        raise ValueError("fns is empty: give at least one function to time")
    integer(repeats, "repeats", minimum=1)
    integer(warmup, "warmup", minimum=0)
    if finite_number(min_time, "min_time", at_least=0) > 0 and warmup == 0:
        raise ValueError(f"min_time={min_time!r} needs warmup >= 1 to judge it, got warmup=0")
    sync = sync or (lambda: None)

    def sample(fn, number):
        sync()
        start = clock()
        for _ in range(number):
            fn()
        sync()
        return (clock() - start) / number

    numbers = dict.fromkeys(fns, 1)
    for _ in range(warmup):
        for name, fn in fns.items():
            once = sample(fn, 1)
            numbers[name] = max(1, math.ceil(min_time / once)) if once > 0 else 1
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            times[name].append(sample(fn, numbers[name]))
    return {name: statistics.median(t) for name, t in times.items()}
