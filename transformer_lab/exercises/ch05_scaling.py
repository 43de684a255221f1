"""Checkers for chapter 5, why attention divides by sqrt(d_k).

The chapter's exercise checks a reader's attention with chapter 4's
:func:`~.ch04_self_attention.check_attention`, which names the scaling mistakes (no
division, division by ``d_k``, by the wrong dimension); it is re-exported here so the
chapter's checkers can be imported from its own module. New checkers for this chapter go
here, built on :mod:`.runner` and :mod:`.attention_mistakes`.
"""

from __future__ import annotations

from .ch04_self_attention import check_attention

__all__ = ["check_attention"]
