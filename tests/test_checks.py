"""The shared argument checks: each returns what it checked and refuses bad input with a
message that names the argument, what was expected and what came."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from transformer_lab import checks
from transformer_lab.checks import (
    finite_number,
    floating_tensor,
    instance_of,
    integer,
    one_of,
    token_batch,
    token_ids,
    torch_module,
    torch_tensor,
)


def test_integer():
    assert integer(3, "n") == 3 and integer(0, "n", minimum=0) == 0
    with pytest.raises(TypeError, match="n must be an int, got float"):
        integer(3.0, "n")
    with pytest.raises(TypeError, match="n must be an int, got bool"):
        integer(True, "n")
    with pytest.raises(ValueError, match="n must be a positive int, got 0"):
        integer(0, "n", minimum=1)
    with pytest.raises(ValueError, match="k must be a non-negative int, got -1"):
        integer(-1, "k", minimum=0)
    with pytest.raises(ValueError, match="n must be an int >= 2, got 1"):
        integer(1, "n", minimum=2)
    with pytest.raises(TypeError, match="n must be an int, got str"):
        integer("3", "n", minimum=1)  # a wrong type is a TypeError, whatever the bound


@pytest.mark.parametrize(
    "value, kwargs, error, message",
    [
        ("1", {}, TypeError, "x must be a number, got str"),
        (True, {}, TypeError, "x must be a number, got bool"),
        (math.inf, {}, ValueError, "x must be a finite number, got inf"),
        (0, {"above": 0}, ValueError, "x must be a positive finite number, got 0"),
        (math.nan, {"above": 0}, ValueError, "x must be a positive finite number, got nan"),
        (1.0, {"above": 1}, ValueError, "x must be a finite number > 1, got 1.0"),
        (-0.5, {"at_least": 0}, ValueError, "x must be a non-negative finite number, got -0.5"),
        (0.5, {"at_least": 1}, ValueError, "x must be a finite number >= 1, got 0.5"),
        ("1", {"above": 0}, TypeError, "x must be a number, got str"),
    ],
)
def test_finite_number_refuses(value, kwargs, error, message):
    with pytest.raises(error) as info:
        finite_number(value, "x", **kwargs)
    assert str(info.value) == message


def test_finite_number_returns_what_it_checked():
    assert finite_number(0, "x", at_least=0) == 0 and finite_number(2.5, "x", above=1) == 2.5


def test_one_of_shows_the_choices_as_given():
    assert one_of("b", ("a", "b"), "kind") == "b"
    with pytest.raises(ValueError, match=r"kind must be one of \('a', 'b'\), got 'c'"):
        one_of("c", ("a", "b"), "kind")
    with pytest.raises(ValueError, match=r"kind must be one of \['a', 'b'\], got 'c'"):
        one_of("c", sorted({"b": 1, "a": 2}), "kind")
    with pytest.raises(ValueError, match=r"kind must be one of \('b', 'a'\), got 'c'"):
        one_of("c", {"b": 1, "a": 2}, "kind")


def test_instance_of_and_torch_types():
    assert instance_of(3, int, "n") == 3
    with pytest.raises(TypeError, match="n must be an int or float, got str"):
        instance_of("3", (int, float), "n")
    with pytest.raises(TypeError, match="model must be an nn.Module, got NoneType"):
        instance_of(None, nn.Module, "model", "an nn.Module")
    t = torch.zeros(2)
    assert torch_tensor(t, "t") is t
    with pytest.raises(TypeError, match="t must be a torch.Tensor, got list"):
        torch_tensor([0.0], "t")
    norm = nn.LayerNorm(4)
    assert torch_module(norm, nn.LayerNorm) is norm
    with pytest.raises(TypeError, match="expected nn.LayerNorm, got Linear"):
        torch_module(nn.Linear(2, 2), nn.LayerNorm)


def test_floating_tensor_names_the_shape():
    x = torch.zeros(2, 3)
    assert floating_tensor(x, "x", 2, "[batch, d]") is x
    with pytest.raises(TypeError, match=r"^x must be a floating-point tensor, got torch.int64$"):
        floating_tensor(x.long(), "x")
    with pytest.raises(
        TypeError, match=r"x must be a floating-point tensor \[batch, d\], got list"
    ):
        floating_tensor([1.0], "x", 2, "[batch, d]")
    with pytest.raises(ValueError, match=r"x must be \[batch, pos, d\], got \(2, 3\)"):
        floating_tensor(x, "x", 3, "[batch, pos, d]")


def test_token_ids_and_batches():
    ids = torch.tensor([[1, 2]])
    assert token_ids(ids) is ids and token_batch(ids.int()) is not None
    with pytest.raises(
        TypeError, match="idx must be an integer tensor of token ids, got torch.float32"
    ):
        token_ids(ids.float())
    with pytest.raises(TypeError, match="ids must be an integer tensor of token ids, got list"):
        token_ids([[1, 2]], "ids")
    with pytest.raises(
        ValueError, match=r"idx must be \[batch, pos\] with pos >= 1, got shape \(1, 0\)"
    ):
        token_batch(ids[:, :0])


@pytest.mark.parametrize(
    "ids, error, message",
    [
        ([True, False], TypeError, "ids must be integer token ids, got True (bool)"),
        ([np.bool_(True)], TypeError, "ids must be integer token ids, got "),  # repr: NumPy's
        ([1.0], TypeError, "ids must be integer token ids, got 1.0 (float)"),
        ([999999, 1, -1], ValueError, "ids must be in [0, 3), got [999999, -1]"),
        (None, TypeError, "ids must be a sequence of integer token ids, got NoneType"),
        ("12", TypeError, "ids must be a sequence of integer token ids, got str"),
        (torch.tensor([[1]]), TypeError, "a 1-d tensor of integer ids, got torch.int64 (1, 1)"),
        (torch.tensor([True]), TypeError, "a 1-d tensor of integer ids, got torch.bool (1,)"),
    ],
)
def test_token_id_list_refuses_bools_floats_and_ids_outside_the_vocabulary(ids, error, message):
    with pytest.raises(error) as info:
        checks.token_id_list(ids, 3)
    assert message in str(info.value)


def test_token_id_list_gives_python_ints():
    back = checks.token_id_list(torch.tensor([2, 0]), 3) + checks.token_id_list((np.int64(1),))
    assert back == [2, 0, 1] and all(type(i) is int for i in back)
    assert checks.token_id_list([7]) == [7]  # no vocabulary: types only


NUMPY_INTS = [np.int8(3), np.int32(3), np.int64(3), np.uint16(3)]
NUMPY_FLOATS = [np.float16(0.5), np.float32(0.5), np.float64(0.5)]


@pytest.mark.parametrize("value", NUMPY_INTS)
def test_numpy_integers_are_ints_and_come_back_as_python_ints(value):
    assert checks.is_int(value)
    for minimum in (None, 0, 1):
        out = checks.integer(value, "n", minimum=minimum)
        assert out == 3 and type(out) is int
    assert type(checks.integer(value, "n", minimum=2)) is int
    assert type(checks.index_in(value, 4, "i")) is int
    assert type(checks.finite_number(value, "x", above=0)) is int


@pytest.mark.parametrize("value", NUMPY_FLOATS)
def test_numpy_floats_are_numbers_and_come_back_as_python_floats(value):
    for bound in ({}, {"above": 0}, {"at_least": 0}):
        out = checks.finite_number(value, "x", **bound)
        assert out == 0.5 and type(out) is float
    assert type(checks.fraction(value, "p", closed=False)) is float
    with pytest.raises(TypeError, match="n must be an int, got float"):
        checks.integer(value, "n", minimum=1)  # a float is no int, whoever made it


@pytest.mark.parametrize(
    "value", [np.bool_(True), True, np.array(3), torch.tensor(3), np.float32("nan")]
)
def test_bools_arrays_and_numpy_nan_are_refused(value):
    assert not checks.is_int(value)
    with pytest.raises(TypeError, match="n must be an int, got "):
        checks.integer(value, "n", minimum=1)
    with pytest.raises((TypeError, ValueError), match="x must be"):
        checks.finite_number(value, "x")
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\]"):
        checks.fraction(value, "p")


@pytest.mark.parametrize("minimum", [None, 0, 1])
def test_ints_beyond_63_bits_are_refused(minimum):
    assert checks.integer(2**63 - 1, "n", minimum=minimum) == 2**63 - 1
    with pytest.raises(ValueError, match="n must be an int of at most 63 bits"):
        checks.integer(2**63, "n", minimum=minimum)


def test_string_list_and_check_tokenizer():
    assert checks.string_list(("a", "b"), "texts") == ["a", "b"]
    for bad in ("ab", [], None, 3):
        with pytest.raises(TypeError, match="texts must be a non-empty list of strings"):
            checks.string_list(bad, "texts")
    with pytest.raises(TypeError, match=r"texts\[1\] must be a str, got int"):
        checks.string_list(["a", 1], "texts")

    class Tok:
        def encode(self, text):
            return []

        def decode(self, ids):
            return ""

    checks.check_tokenizer(Tok())
    with pytest.raises(TypeError, match="tokenizer must have encode and decode, got str"):
        checks.check_tokenizer("abc")
