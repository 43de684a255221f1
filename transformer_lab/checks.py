"""Argument checks shared by the package: each is one line at the call site.

Every check raises a ``ValueError`` or ``TypeError`` whose message names the argument,
what was expected and what came ("d_model must be a positive int, got 0"), and returns
the value it checked, so a call site can read ``n = integer(n, "n", minimum=1)``. ``bool`` is
never an int here: ``True`` is refused wherever an int or a number is asked for.

NumPy's scalars count as the numbers they hold: ``np.int64(3)`` is an int and
``np.float32(0.5)`` a number (any ``numbers.Integral`` / ``numbers.Real``), and the checks
return them as a Python ``int`` / ``float``. A 0-d array or tensor is refused: it is an
array (mutable, with a device and a dtype of its own); ``.item()`` gives its number.

Two things every stage shares live here too: :data:`IGNORE_INDEX`, the label of a position
that no loss counts, and :func:`require`, the import of an optional package that says how to
install it when it is missing.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Collection, Iterable, Sequence
from numbers import Integral, Real  # numpy's scalars count too; bool is refused by hand

import torch

__all__ = [
    "IGNORE_INDEX",
    "is_int",
    "integer",
    "seed_int",
    "finite_number",
    "fraction",
    "one_of",
    "instance_of",
    "torch_tensor",
    "torch_module",
    "floating_tensor",
    "layer_input",
    "weights_dtype",
    "token_ids",
    "token_batch",
    "check_labels",
    "check_token_batch",
    "check_token_range",
]


_INT_LIMIT = 2**63  # sizes and counts beyond int64 fit no tensor

# the label (target) of a position that no loss counts: F.cross_entropy's default ignore_index
IGNORE_INDEX = -100


def is_int(value) -> bool:
    """An integer that is not a ``bool``: a Python ``int`` or a NumPy integer scalar."""
    return isinstance(value, Integral) and not isinstance(value, bool)


def _plain(value):
    """A NumPy scalar as the Python ``int`` or ``float`` it holds; Python numbers as they are."""
    if type(value) in (int, float):
        return value
    return int(value) if isinstance(value, Integral) else float(value)


def integer(value, name: str, *, minimum: int | None = None) -> int:
    """``value`` if it is an int of at most 63 bits (at least ``minimum`` when given): a
    TypeError "``name`` must be an int, got float" for another type, a ValueError
    "``name`` must be a positive int, got 0" (``minimum=1``), "... a non-negative int,
    got -1" (``minimum=0``) or "... an int >= 2, got 1" for one too small."""
    if not is_int(value):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        want = {1: "a positive int", 0: "a non-negative int"}.get(minimum, f"an int >= {minimum}")
        raise ValueError(f"{name} must be {want}, got {value}")
    if abs(value) >= _INT_LIMIT:
        raise ValueError(f"{name} must be an int of at most 63 bits, got {value}")
    return _plain(value)


def seed_int(value, name: str = "seed") -> int:
    """``value`` if it is an int that seeds a torch generator, in ``[-2**63, 2**64)``, else a
    TypeError "seed must be an int, got float" or a ValueError that gives the range."""
    if not is_int(value):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not -(2**63) <= value < 2**64:
        raise ValueError(f"{name} must be an int in [-2**63, 2**64), got {value}")
    return _plain(value)


def _is_number(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _finite(value) -> bool:
    """A finite number that a float can hold: an int beyond the float range is not."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def finite_number(
    value, name: str, *, above: float | None = None, at_least: float | None = None
) -> float:
    """``value`` if it is a finite int or float (``> above``, ``>= at_least`` when given): a
    TypeError "``name`` must be a number, got str" for another type, else a ValueError
    "``name`` must be a positive finite number, got 0" (``above=0``), "... a non-negative
    finite number, got -1" (``at_least=0``), "... a finite number > 1, got nan" or "... a
    finite number, got inf"."""
    if not _is_number(value):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    low_ok = (above is None or value > above) and (at_least is None or value >= at_least)
    if not (low_ok and _finite(value)):
        if above == 0:
            want = "a positive finite number"
        elif at_least == 0:
            want = "a non-negative finite number"
        else:
            want = "a finite number" + (f" > {above}" if above is not None else "")
            want += f" >= {at_least}" if at_least is not None else ""
        raise ValueError(f"{name} must be {want}, got {value!r}")
    return _plain(value)


def fraction(value, name: str, *, closed: bool = True) -> float:
    """``value`` if it is a number in [0, 1] (``closed=False``: in [0, 1))."""
    ok = _is_number(value) and 0 <= value <= 1 and (closed or value < 1)
    if not ok:
        interval = "[0, 1]" if closed else "[0, 1)"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return _plain(value)


def one_of(value, choices: Collection, name: str):
    """``value`` if it is one of ``choices``, else "``name`` must be one of ('a', 'b'), got
    'c'" (a list of choices is shown as a list: pass ``sorted(table)`` for sorted names)."""
    if value not in choices:
        shown = choices if isinstance(choices, (list, tuple)) else tuple(choices)
        raise ValueError(f"{name} must be one of {shown}, got {value!r}")
    return value


def instance_of(value, types: type | tuple[type, ...], name: str, what: str = ""):
    """``value`` if it is an instance of ``types``, else a TypeError "``name`` must be a
    Scene, got str" (``what`` replaces "a Scene", e.g. "an nn.Module")."""
    if not isinstance(value, types):
        names = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
        what = what or ("an " if names[0].lower() in "aeiou" else "a ") + names
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")
    return value


def torch_module(value, cls: type[torch.nn.Module]):
    """``value`` if it is a ``cls``, a PyTorch layer whose weights the package copies, else a
    TypeError "expected nn.LayerNorm, got Linear"."""
    if not isinstance(value, cls):
        raise TypeError(f"expected nn.{cls.__name__}, got {type(value).__name__}")
    return value


def torch_tensor(value, name: str) -> torch.Tensor:
    """``value`` if it is a tensor, else a TypeError "``name`` must be a torch.Tensor, got list"."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def floating_tensor(value, name: str, dim: int | None = None, shape: str = "") -> torch.Tensor:
    """``value`` if it is a floating-point tensor (with ``dim`` dimensions when given);
    ``shape`` names the dimensions in the messages: "x must be a floating-point tensor
    [batch, pos, d_model], got torch.int64", "x must be [batch, pos, d_model], got (2, 3)"."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        got = getattr(value, "dtype", type(value).__name__)
        expected = f"a floating-point tensor {shape}" if shape else "a floating-point tensor"
        raise TypeError(f"{name} must be {expected}, got {got}")
    if dim is not None and value.dim() != dim:
        raise ValueError(f"{name} must be {shape or f'{dim}-d'}, got {tuple(value.shape)}")
    return value


def token_ids(value, name: str = "idx") -> torch.Tensor:
    """``value`` if it is a tensor of token ids (int64 or int32, what ``nn.Embedding``
    takes), else a TypeError "idx must be an integer tensor of token ids, got float32"."""
    if not isinstance(value, torch.Tensor) or value.dtype not in (torch.long, torch.int):
        got = getattr(value, "dtype", type(value).__name__)
        raise TypeError(f"{name} must be an integer tensor of token ids, got {got}")
    return value


def token_batch(value, name: str = "idx") -> torch.Tensor:
    """``value`` if it is a :func:`token_ids` tensor ``[batch, pos]`` with ``pos >= 1``."""
    if token_ids(value, name).dim() != 2 or value.shape[1] == 0:
        raise ValueError(
            f"{name} must be [batch, pos] with pos >= 1, got shape {tuple(value.shape)}"
        )
    return value


def check_labels(labels: torch.Tensor, n_classes: int, ignore_index: int | None = None) -> None:
    """Raise a ValueError unless every label is in ``[0, n_classes)`` or ``ignore_index``
    (one min/max; ``F.cross_entropy`` would give an IndexError or a device assert)."""
    if not isinstance(labels, torch.Tensor) or labels.dtype not in (torch.long, torch.int):
        got = getattr(labels, "dtype", type(labels).__name__)
        raise TypeError(f"labels must be a tensor of integer class ids, got {got}")
    if labels.numel() == 0:
        return
    if ignore_index is not None:
        labels = labels.masked_fill(labels == ignore_index, 0)
    low, high = (int(t) for t in torch.aminmax(labels))
    if low < 0 or high >= n_classes:
        extra = f" (or ignore_index={ignore_index})" if ignore_index is not None else ""
        raise ValueError(
            f"labels must be in [0, {n_classes}){extra}, got values from {low} to {high}"
        )


def check_token_batch(idx, n_ctx: int, d_vocab: int, offset: int = 0, hint: str = "") -> None:
    """Check a decoder's input: an integer tensor ``[batch, pos]``, ``pos >= 1``, that fits
    the context after ``offset`` cached positions, with ids in ``[0, d_vocab)``. ``hint`` is
    appended to the context-length message."""
    token_batch(idx, "idx")
    if offset + idx.shape[1] > n_ctx:
        raise ValueError(
            f"{offset + idx.shape[1]} positions exceed the context length n_ctx={n_ctx}{hint}"
        )
    check_token_range(idx, d_vocab, "idx")


def check_token_range(ids: torch.Tensor, d_vocab: int, name: str = "token ids") -> None:
    """Raise a ValueError unless every id is in ``[0, d_vocab)`` (one min/max: negative
    ids would silently index from the end of ``W_E``)."""
    if token_ids(ids, name).numel() == 0:
        return
    low_high = torch.aminmax(ids)
    low, high = int(low_high.min), int(low_high.max)
    if low < 0 or high >= d_vocab:
        raise ValueError(f"{name} must be in [0, {d_vocab}), got values from {low} to {high}")


def token_id_list(ids, vocab_size: int | None = None, name: str = "ids") -> list[int]:
    """``ids`` (a sequence or a 1-d tensor of integers) as a list of Python ints, the input
    of a tokenizer's ``decode``: a TypeError "ids must be integer token ids, got True
    (bool)" for a bool, a float or another non-integer, and, with ``vocab_size``, a
    ValueError "ids must be in [0, 3), got [999999]" for ids outside the vocabulary."""
    if isinstance(ids, torch.Tensor):
        if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex() or ids.dim() != 1:
            raise TypeError(
                f"{name} must be a 1-d tensor of integer ids, got {ids.dtype} {tuple(ids.shape)}"
            )
        ids = ids.tolist()
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        raise TypeError(f"{name} must be a sequence of integer token ids, got {type(ids).__name__}")
    out = []
    for i in ids:
        if not is_int(i):  # NumPy's integers count; bool and numpy.bool_ do not
            raise TypeError(f"{name} must be integer token ids, got {i!r} ({type(i).__name__})")
        out.append(int(i))
    if vocab_size is not None:
        bad = [i for i in out if not 0 <= i < vocab_size]
        if bad:
            raise ValueError(f"{name} must be in [0, {vocab_size}), got {bad[:5]}")
    return out


def index_in(value, size: int, name: str, what: str = "") -> int:
    """``value`` if it is an int in ``[0, size)``, else "``name``=5 is not in 0..2", or
    with ``what`` (e.g. "a slider index"): "``name``=5 is not a slider index (0..2)"."""
    if not is_int(value) or not 0 <= value < size:
        span = f"0..{size - 1}"
        raise ValueError(f"{name}={value} is not " + (f"{what} ({span})" if what else f"in {span}"))
    return _plain(value)


def string(value, name: str) -> str:
    """``value`` if it is a ``str``, else a TypeError "``name`` must be a str, got int"."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value


def string_list(value, name: str) -> list[str]:
    """``value`` as a list if it is a non-empty sequence (list, tuple) of ``str``, else a
    TypeError "``name`` must be a non-empty list of strings, got ..." (one string is refused
    too)."""
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise TypeError(f"{name} must be a non-empty list of strings, got {value!r:.60}")
    return [string(v, f"{name}[{i}]") for i, v in enumerate(value)]


def check_tokenizer(tokenizer) -> None:
    """A TypeError unless ``tokenizer`` has callable ``encode`` and ``decode`` methods."""
    if not callable(getattr(tokenizer, "encode", None)) or not callable(
        getattr(tokenizer, "decode", None)
    ):
        raise TypeError(f"tokenizer must have encode and decode, got {type(tokenizer).__name__}")


def autocast_on(t: torch.Tensor) -> bool:
    """Whether autocast is on for ``t``'s device (dtypes then legitimately differ)."""
    try:
        return torch.is_autocast_enabled(t.device.type)
    except TypeError:  # torch < 2.4 takes no device type
        return torch.is_autocast_enabled() or torch.is_autocast_cpu_enabled()


def layer_input(x, d_model: int, layer: str) -> torch.Tensor:
    """``x`` if it is a floating-point tensor ``[..., d_model]``, the input of a layer that
    works on each position's vector; the message names the ``layer``."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
        raise TypeError(f"{layer} expects a floating-point tensor, got {got}")
    if x.dim() == 0 or x.shape[-1] != d_model:
        raise ValueError(f"{layer} expects d_model={d_model}, got shape {tuple(x.shape)}")
    return x


def weights_dtype(x: torch.Tensor, weight: torch.Tensor, name: str = "input") -> torch.Tensor:
    """``x`` if its dtype is the ``weight``'s (or autocast is on, which casts on the fly)."""
    if x.dtype != weight.dtype and not autocast_on(x):
        raise TypeError(f"{name} has dtype {x.dtype} but the weights {weight.dtype}")
    return x


def require(module: str, pip_name: str):
    """Import ``module`` or raise an ImportError that names the install command."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"this needs the '{pip_name}' package: pip install {pip_name}  "
            f"(or reinstall the book's environment: pip install -e .)"
        ) from err
