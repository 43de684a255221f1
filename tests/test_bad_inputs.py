"""Every public callable refuses bad input with a clear message.

The cases live beside each stage's tests (``tests/nn/bad_inputs_nn.py``, ...,
``tests/bad_inputs_core.py``); this file loads them all, runs each, and checks that every
callable in a package module's ``__all__`` has a case (or needs none)."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from pathlib import Path

import numpy as np
import pytest
import torch
from bad_input_support import CASES, NN_ATTENTION, NO_INPUT, PREDICATES, RECORDS, f, gpt, ids

import transformer_lab

TESTS = Path(__file__).resolve().parent
AREAS = sorted(TESTS.glob("bad_inputs_*.py")) + sorted(TESTS.glob("*/bad_inputs_*.py"))
for path in AREAS:  # each registers its cases in CASES
    spec = importlib.util.spec_from_file_location(path.stem, path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


def _name(target) -> str:
    return getattr(target, "__qualname__", repr(target))


@pytest.mark.parametrize(
    "target, label, thunk, error, fragment",
    CASES,
    ids=[f"{_name(c[0])}-{i}" for i, c in enumerate(CASES)],
)
def test_bad_input_gives_a_clear_error(target, label, thunk, error, fragment):
    assert issubclass(error, (ValueError, TypeError))
    with pytest.raises(error) as info:
        thunk()
    assert fragment in str(info.value), f"message {str(info.value)!r} lacks {fragment!r}"


def public_callables() -> dict[int, tuple[object, str]]:
    """Every callable named in the ``__all__`` of a package module (exercises excepted)."""
    found: dict[int, tuple[object, str]] = {}
    modules = [transformer_lab] + [
        importlib.import_module(m.name)
        for m in pkgutil.walk_packages(transformer_lab.__path__, "transformer_lab.")
        if not m.name.startswith("transformer_lab.exercises")
    ]
    for module in modules:
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if callable(obj):
                found.setdefault(id(obj), (obj, f"{module.__name__}.{name}"))
    return found


def test_every_public_callable_has_bad_inputs_in_the_table():
    covered = {id(c[0]) for c in CASES} | {id(o) for o in RECORDS | PREDICATES | NO_INPUT}
    missing = sorted(name for key, (_, name) in public_callables().items() if key not in covered)
    assert not missing, f"add bad inputs for these public callables to CASES: {missing}"


def test_no_public_callable_returns_nan_for_a_documented_edge():
    """A fully masked row and a padded batch give zeros or finite values, never NaN."""
    q = k = v = f(1, 2, 3, 4)
    mask = torch.zeros(3, 3, dtype=torch.bool)
    for need_weights in (True, False):
        out, _ = NN_ATTENTION.scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights)
        assert torch.equal(out, torch.zeros_like(out))
    assert np.isfinite(gpt()(ids([1, 2, 3])).detach().numpy()).all()
