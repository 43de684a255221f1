"""Data sets the book trains on, all generated or read offline from installed packages."""

from . import numbers, shakespeare  # noqa: F401
