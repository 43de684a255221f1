"""What the tests of every exercise checker share (imported by ``test_exercises_*.py``)."""

from __future__ import annotations

import re

import pytest


def verdict(checker, fn, **kwargs):
    """The checker's result for ``fn``, without printing it."""
    return checker(fn, verbose=False, **kwargs)


def assert_fails(result, *phrases):
    """The result is a failure whose message holds every one of ``phrases``."""
    assert not result.passed, result.message
    for phrase in phrases:
        assert phrase in result.message, f"{phrase!r} not in {result.message!r}"


def assert_passes_right_and_names_mistake(check, right, wrong, hint, capsys):
    """``right`` passes with a printed verdict; ``wrong`` fails with a message matching the
    regular expression ``hint``, and raises only with ``strict=True``; an exception in the
    reader's function is reported in words."""
    result = check(right)
    assert result.passed, result.message
    assert check.__name__ in capsys.readouterr().out  # the verdict is printed
    bad = check(wrong, verbose=False)
    assert not bad.passed
    assert re.search(hint, bad.message), bad.message
    with pytest.raises(AssertionError):
        check(wrong, strict=True, verbose=False)

    def broken(*args):
        raise RuntimeError("boom")

    assert_fails(verdict(check, broken), "RuntimeError: boom")
