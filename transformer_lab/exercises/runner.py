"""The verdict runner every checker shares, and the helpers a checker's body is made of.

A checker builds a ``body`` that calls the reader's function on seeded inputs
(:func:`call`), insists on a tensor (:func:`need_tensor`), compares it with the package's
answer (:func:`compare`) and raises :class:`WrongAnswer` with a plain-words message when
they differ, naming the usual mistake when one of the ``mistakes`` it was given matches.
:func:`run_check` turns that into a printed :class:`CheckResult`: a wrong answer never
raises, so a notebook keeps running, unless ``strict=True``, which raises
``AssertionError`` with the message.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import torch

__all__ = [
    "RTOL",
    "ATOL",
    "CheckResult",
    "WrongAnswer",
    "run_check",
    "call",
    "need_tensor",
    "as_number",
    "compare",
    "close",
    "largest_difference",
    "describe_shapes",
]

RTOL, ATOL = 1e-4, 1e-5  # float32 inputs; the reader may sum in another order

Mistakes = Iterable[tuple[str, torch.Tensor | None]]


@dataclass(frozen=True)
class CheckResult:
    """The verdict of a checker: ``passed`` and a plain-words ``message``."""

    name: str
    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return f"{'✓' if self.passed else '✗'} {self.name}: {self.message}"

    def _ipython_display_(self) -> None:
        """In a notebook the verdict is printed once, by the checker: a checker call as the
        last line of a cell shows no second copy (the trailing-semicolon idiom does not
        hold when a cell runs with ``store_history=False``, as under nbval). Asked for
        later, in another cell, the verdict is printed again."""
        from IPython import get_ipython

        shell = get_ipython()
        count = getattr(shell, "execution_count", None)
        if shell is None or _printed_at.get(id(self)) != (count, _cell_id(shell)):
            print(self)


_printed_at: dict[int, tuple] = {}


def _cell_id(shell):
    """An identity of the cell being run (its parent message), or None outside a kernel."""
    kernel = getattr(shell, "kernel", None)
    header = getattr(kernel, "get_parent", lambda *a: {})() if kernel is not None else {}
    return (header or {}).get("header", {}).get("msg_id")


class WrongAnswer(Exception):  # noqa: N818 (a verdict, not a failure of the program)
    """Raised inside a checker's body when the reader's answer is wrong; carries the message."""


def run_check(name: str, body: Callable[[], str], strict: bool, verbose: bool) -> CheckResult:
    """Run a checker's ``body`` (returns the message of a pass, raises :class:`WrongAnswer`
    with the message of a failure), print the verdict if ``verbose``, raise if ``strict``."""
    try:
        result = CheckResult(name, True, body())
    except WrongAnswer as wrong:
        result = CheckResult(name, False, str(wrong))
    if verbose:
        print(result)
        try:
            from IPython import get_ipython

            shell = get_ipython()
        except ImportError:
            shell = None
        if shell is not None:
            _printed_at.clear()  # only the latest verdict can be the one just printed
            _printed_at[id(result)] = (getattr(shell, "execution_count", None), _cell_id(shell))
    if strict and not result.passed:
        raise AssertionError(result.message)
    return result


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def call(fn: Callable, args: tuple, describe: str, batch_hint: bool = False):
    """Call the reader's ``fn`` on copies of ``args`` and return what it returns.

    A ``NotImplementedError`` reads "not written yet"; any other exception is reported in
    words with ``describe`` (the inputs), plus, with ``batch_hint``, a hint for code that
    only holds in 2-d (set it when the unbatched inputs already passed). An argument the
    function changed in place is reported too.
    """
    copies = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
    try:
        out = fn(*copies)
    except NotImplementedError:
        raise WrongAnswer(
            "your function is not written yet (it raised NotImplementedError)."
        ) from None
    except Exception as err:  # the reader's bug, reported in words
        hint = ""
        if batch_hint:
            hint = (
                " It worked on inputs without batch dimensions, so look for something that only "
                "holds in 2-d: use k.transpose(-2, -1) (not k.T) and q.shape[-1] (not q.shape[1])."
            )
        raise WrongAnswer(
            f"your function raised {type(err).__name__}: {err} (inputs: {describe}).{hint}"
        ) from None
    for i, (a, c) in enumerate(zip(args, copies, strict=True), start=1):
        if isinstance(a, torch.Tensor) and not torch.equal(a, c):
            raise WrongAnswer(
                f"your function changed its {_ordinal(i)} argument in place ({describe}); "
                "work on a copy."
            )
    return out


def need_tensor(out, what: str = "a tensor", tuple_note: str = "") -> torch.Tensor:
    """``out`` if it is a tensor; otherwise :class:`WrongAnswer` saying it should be ``what``
    (``tuple_note`` is added when a tuple came back)."""
    if isinstance(out, tuple):
        raise WrongAnswer(
            f"your function returned a tuple of {len(out)} items; it should return only "
            f"{what}{tuple_note}."
        )
    if not isinstance(out, torch.Tensor):
        raise WrongAnswer(f"your function returned {type(out).__name__}, expected {what}.")
    return out


def as_number(value) -> int | float | None:
    """``value`` as a Python ``int`` or ``float`` if it is one number: a Python or NumPy
    scalar (``np.int64``, ``np.float32``), or a tensor or NumPy array holding one element;
    else None. A ``bool`` is not a number here."""
    if isinstance(value, torch.Tensor | np.ndarray):
        if math.prod(value.shape) != 1:
            return None
        value = value.item()
    if isinstance(value, bool | np.bool_) or not isinstance(value, Real):
        return None
    return int(value) if isinstance(value, Integral) else float(value)


def close(got: torch.Tensor, want: torch.Tensor, equal_nan: bool = False) -> bool:
    """Same shape and equal within ``RTOL``/``ATOL``, compared in float64 on the CPU."""
    if tuple(got.shape) != tuple(want.shape):
        return False
    got = got.detach().to(device="cpu", dtype=torch.float64)
    want = want.detach().to(device="cpu", dtype=torch.float64)
    return torch.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=equal_nan)


def largest_difference(got: torch.Tensor, want: torch.Tensor) -> str:
    """Where ``got`` and ``want`` (same shape) differ most, in words."""
    got = got.detach().to(device="cpu", dtype=torch.float64)
    want = want.detach().to(device="cpu", dtype=torch.float64)
    diff = (got - want).abs().nan_to_num(nan=math.inf)
    flat = int(diff.argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), diff.shape))
    return (
        f"largest difference {float(diff.flatten()[flat]):.3g} at index {index} "
        f"(got {float(got.flatten()[flat]):.4g}, expected {float(want.flatten()[flat]):.4g})"
    )


def _first_mistake(out: torch.Tensor, mistakes: Mistakes, describe: str) -> None:
    for message, model in mistakes:
        if model is not None and close(out, model, equal_nan=True):
            raise WrongAnswer(f"{message} ({describe}).")


def compare(
    out: torch.Tensor,
    want: torch.Tensor,
    describe: str,
    mistakes: Mistakes | Callable[[], Mistakes] = (),
    row_sums: bool = False,
) -> None:
    """Return if ``out`` equals ``want``; else raise :class:`WrongAnswer` naming the mistake.

    ``mistakes`` holds ``(message, what that mistake computes)`` pairs, or is a function
    that returns them (called only for a wrong answer, so a right one is checked quickly).
    They are tried even when the shape is wrong (a transposed answer, say). Otherwise the
    message says what is off: the shape, the dtype, all zeros, NaN, the largest difference,
    and with ``row_sums`` whether the rows of a matrix of weights sum to one.
    """
    same_shape = tuple(out.shape) == tuple(want.shape)
    if same_shape and out.is_floating_point() and close(out, want):
        return
    mistakes = mistakes() if callable(mistakes) else mistakes
    if not same_shape:
        _first_mistake(out, mistakes, describe)
        raise WrongAnswer(
            f"wrong output shape: expected {tuple(want.shape)}, got {tuple(out.shape)} "
            f"({describe})."
        )
    if not out.is_floating_point():
        raise WrongAnswer(f"your function returned dtype {out.dtype}; expected floating point.")
    _first_mistake(out, mistakes, describe)
    if not out.any() and want.any():
        raise WrongAnswer(
            f"your function returns all zeros ({describe}); is it still a placeholder?"
        )
    if torch.isnan(out).any() and not torch.isnan(want).any():
        raise WrongAnswer(f"the output contains NaN where the reference has none ({describe}).")
    message = f"values differ from the reference ({describe}): {largest_difference(out, want)}."
    if row_sums:
        sums = out.detach().double().sum(-1)
        if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
            message += (
                f" Rows should sum to one but yours sum to between {float(sums.min()):.3g} and "
                f"{float(sums.max()):.3g}: apply softmax over the keys, dim=-1."
            )
    raise WrongAnswer(message)


def describe_shapes(**tensors: torch.Tensor) -> str:
    """``describe_shapes(q=q, k=k)`` -> ``"q of shape (5, 8), k of shape (7, 8)"``."""
    return ", ".join(f"{n} of shape {tuple(t.shape)}" for n, t in tensors.items())
