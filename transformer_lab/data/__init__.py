"""Data sets the book trains on, all generated or read offline from installed packages."""

from . import shakespeare  # noqa: F401
