"""Tests mirror the package: ``tests/nn`` tests ``transformer_lab/nn`` and so on. The helpers
every folder shares (``checker_helpers``, ``script_loader``, ``bad_input_support``) live
here, in ``tests/``, which this puts on the import path."""

import sys
from pathlib import Path

import pytest

from transformer_lab.device import num_threads

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)


@pytest.fixture(scope="module")
def one_thread():
    """One intra-op thread for a module (``pytestmark = pytest.mark.usefixtures("one_thread")``):
    on a 2-core machine shared with other work, two threads wait on each other (a 20-token
    SmolLM2 generation measured 8x slower)."""
    with num_threads(1):
        yield
