"""Checkers for chapter 13, GPT.

The chapter's exercise on masked attention uses chapter 6's
:func:`~.ch06_masking.check_masked_attention`, re-exported here so the chapter's checkers
can be imported from its own module. New checkers for this chapter go here, built on
:mod:`.runner` (and :mod:`.attention_mistakes` for attention).
"""

from __future__ import annotations

from .ch06_masking import check_masked_attention

__all__ = ["check_masked_attention"]
