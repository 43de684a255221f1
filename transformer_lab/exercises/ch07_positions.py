"""Checkers for chapter 7, positional encoding: the sinusoidal encoding and the matrix
that shifts it by ``k`` positions."""

from __future__ import annotations

import torch

from transformer_lab.exercises.runner import (
    CheckResult,
    WrongAnswer,
    call,
    compare,
    need_tensor,
    run_check,
)
from transformer_lab.nn.positions import sinusoidal_encoding

__all__ = ["check_sinusoidal_encoding", "shift_matrix", "check_shift_matrix"]


def _sinusoid_variant(n, d, exponent="2i", swap=False, base=10000.0):
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    j = torch.arange(d, dtype=torch.float64)
    two_i = j - j % 2 if exponent == "2i" else j  # "j": every dimension its own frequency
    angle = pos / base ** (two_i / d)
    even = (j % 2 == 0)[None, :]
    first, second = (torch.cos, torch.sin) if swap else (torch.sin, torch.cos)
    return torch.where(even, first(angle), second(angle))


def check_sinusoidal_encoding(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(n_positions, d_model)``: the sinusoidal encoding ``[n_positions, d_model]``
    with ``PE[pos, 2i] = sin(pos / 10000^(2i/d))`` and ``PE[pos, 2i+1] = cos(...)``."""

    def body():
        for n, d in [(6, 4), (50, 16), (13, 10)]:
            describe = f"n_positions={n}, d_model={d}"
            out = need_tensor(call(fn, (n, d), describe))
            want = sinusoidal_encoding(n, d)
            mistakes = [
                (
                    "sines and cosines are swapped: even dimensions 2i take the sine, odd ones "
                    "2i+1 the cosine",
                    _sinusoid_variant(n, d, swap=True),
                ),
                (
                    "each dimension got its own frequency: dimensions 2i and 2i+1 share one, "
                    "with exponent 2i/d where 2i is the even dimension of the pair",
                    _sinusoid_variant(n, d, exponent="j"),
                ),
                (
                    "the array is transposed: rows are positions, columns are dimensions",
                    want.T,
                ),
            ]
            compare(out, want, describe, mistakes)
        return "correct for (n_positions, d_model) = (6, 4), (50, 16) and (13, 10)."

    return run_check("check_sinusoidal_encoding", body, strict, verbose)


def shift_matrix(k: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The ``[d_model, d_model]`` matrix ``M_k`` with ``PE[pos + k] = PE[pos] @ M_k`` for
    every position (``d_model`` even): a 2x2 rotation by ``k * omega_i`` per pair of
    dimensions."""
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    omega = 1.0 / base ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    c, s = torch.cos(k * omega), torch.sin(k * omega)
    blocks = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)  # [d/2, 2, 2]
    return torch.block_diag(*blocks).float()


def check_shift_matrix(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(k, d_model)``: a ``[d_model, d_model]`` matrix ``M`` such that
    ``sinusoidal_encoding(n, d_model)[pos + k] == sinusoidal_encoding(n, d_model)[pos] @ M``
    for every position ``pos``."""

    def body():
        for k, d in [(1, 4), (5, 16), (-3, 8), (0, 6)]:
            describe = f"k={k}, d_model={d}"
            out = need_tensor(call(fn, (k, d), describe))
            want = shift_matrix(k, d)
            mistakes = [
                (
                    "the rotation turns the wrong way: your matrix moves a position back by "
                    "k, not forward; transpose each 2x2 block",
                    shift_matrix(-k, d),
                ),
                ("the matrix is the identity: it does not move the position at all", torch.eye(d)),
            ]
            compare(out, want, describe, mistakes if k != 0 else ())
            pe = sinusoidal_encoding(40, d)
            lo, hi = max(0, -k), 40 - max(0, k)
            if not torch.allclose(pe[lo:hi] @ out.detach().float(), pe[lo + k : hi + k], atol=1e-4):
                raise WrongAnswer(f"PE[pos] @ M does not give PE[pos + k] ({describe}).")
        return "correct for k = 1, 5, -3 and 0: PE[pos] @ M_k = PE[pos + k] at every position."

    return run_check("check_shift_matrix", body, strict, verbose)
