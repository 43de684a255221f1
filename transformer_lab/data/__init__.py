"""Data sets the book trains on, all generated or read offline from installed packages."""

from transformer_lab.data import numbers, shakespeare  # noqa: F401
