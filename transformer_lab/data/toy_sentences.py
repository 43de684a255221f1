"""The toy sentences of chapters 4 to 6: example sentences, their tokens and a fixed random
embedding for every token.

Nothing here is trained. :func:`tokenize` splits a sentence into words (apostrophes kept:
``didn't``) and punctuation marks, and :func:`token_embedding` gives each token a fixed
pseudo-random vector of :data:`D_MODEL` entries, seeded by a hash of its lower-cased text,
so "The" and "the" share one and a token gets the same vector in every chapter and run.
The chapters' own attention code and their attention explorer read their inputs from here;
:data:`PAD` is the token a sentence is padded with, as the shorter sentence of a batch
would be.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

import torch

from transformer_lab.checks import string

__all__ = ["EXAMPLE_SENTENCES", "D_MODEL", "PAD", "MAX_TOKENS", "tokenize", "token_embedding"]

EXAMPLE_SENTENCES = (
    "The animal didn't cross the street because it was too tired",
    "I love dogs",
    "thanks for all the",
    "The quick brown fox jumps over the lazy dog while the cat sleeps on the mat",
    "the cat sat on the mat",
)
D_MODEL = 64  # size of the token embeddings x_i
PAD = "<pad>"
MAX_TOKENS = 40


def tokenize(sentence: str) -> list[str]:
    """Split into words (apostrophes kept: ``didn't``) and punctuation marks."""
    string(sentence, "sentence")
    tokens = re.findall(r"[\w']+|[^\w\s]", sentence)
    if not tokens:
        raise ValueError("the sentence has no tokens; type at least one word")
    if len(tokens) > MAX_TOKENS:
        raise ValueError(f"the sentence has {len(tokens)} tokens; at most {MAX_TOKENS} fit")
    return tokens


@lru_cache(maxsize=4096)
def token_embedding(token: str) -> torch.Tensor:
    """A fixed random embedding ``[D_MODEL]`` for a token, seeded by its lower-cased text."""
    string(token, "token")
    digest = hashlib.blake2b(token.lower().encode("utf-8"), digest_size=8).digest()
    generator = torch.Generator().manual_seed(int.from_bytes(digest, "little") % 2**63)
    return torch.randn(D_MODEL, generator=generator)
