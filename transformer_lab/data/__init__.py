"""Data sets the book trains on, all generated or read offline from installed packages,
and what they share: every tokenizer of the package (text to token ids and back:
``tokenizers``, with BERT's ``wordpiece`` and SmolLM2's ``gguf_tokenizer`` beside it) and
``cache`` (the folder where what takes time to build is kept)."""

from transformer_lab.data import numbers, shakespeare  # noqa: F401
