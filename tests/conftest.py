"""Tests mirror the package: ``tests/nn`` tests ``transformer_lab/nn`` and so on. The helpers
every folder shares (``checker_helpers``, ``script_loader``, ``bad_input_support``) live
here, in ``tests/``, which this puts on the import path."""

import sys
from pathlib import Path

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
