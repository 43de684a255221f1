"""Data sets the book trains on, all generated or read offline from installed packages,
and what they share: ``tokenizers`` (text to token ids and back) and ``cache`` (the folder
where what takes time to build is kept)."""

from transformer_lab.data import numbers, shakespeare  # noqa: F401
