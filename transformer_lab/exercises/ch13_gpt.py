"""Checkers for chapter 13, GPT.

The chapter's exercise on masked attention uses chapter 6's
:func:`~.ch06_masking.check_masked_attention`, re-exported here so the chapter's checkers
can be imported from its own module. :func:`check_nucleus` checks the top-p exercise,
computed by hand, against the package's sampler.
"""

from __future__ import annotations

import math

import torch

from transformer_lab.exercises.ch06_masking import check_masked_attention
from transformer_lab.exercises.runner import CheckResult, WrongAnswer, run_check
from transformer_lab.generation.sampling import next_token_probs

__all__ = ["check_masked_attention", "check_nucleus"]

NUCLEUS_PROBS = (0.5, 0.3, 0.15, 0.05)  # the exercise's four tokens, most likely first
NUCLEUS_PS = (0.4, 0.7, 0.9)  # the values of p it asks about (no cumulative sum lands on one)


def _kept(n: int) -> list[float]:
    """The distribution that keeps the ``n`` most likely tokens, renormalised."""
    total = sum(NUCLEUS_PROBS[:n])
    return [q / total if i < n else 0.0 for i, q in enumerate(NUCLEUS_PROBS)]


def _nucleus_mistakes(p: float, n_right: int):
    """``(message, what that mistake gives)`` for one value of ``p``."""
    unnormalised = [q if i < n_right else 0.0 for i, q in enumerate(NUCLEUS_PROBS)]
    yield (
        f"for p = {p} you kept the right tokens but did not renormalise: divide each kept "
        f"probability by their sum ({sum(unnormalised):.2f}) so that they add up to one",
        unnormalised,
    )
    if n_right > 1:
        yield (
            f"for p = {p} you stopped one token early: the nucleus is the smallest set whose "
            "probabilities add up to *at least* p, so it includes the token that crosses p",
            _kept(n_right - 1),
        )
    if n_right < len(NUCLEUS_PROBS):
        yield (
            f"for p = {p} you kept one token too many: once the kept probabilities reach p, "
            "stop; the next token is already outside the nucleus",
            _kept(n_right + 1),
        )
    if n_right < len(NUCLEUS_PROBS):
        yield (
            f"for p = {p} you kept every token: top-p drops the tokens outside the nucleus "
            "(probability zero)",
            list(NUCLEUS_PROBS),
        )


def check_nucleus(answer, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``answer``, a dict ``{p: [four probabilities]}`` for ``p`` in 0.4, 0.7 and 0.9:
    the distribution top-p sampling draws from when four tokens have probabilities
    ``(0.5, 0.3, 0.15, 0.05)``, compared with
    :func:`~transformer_lab.generation.sampling.next_token_probs`."""

    def body():
        if not isinstance(answer, dict):
            raise WrongAnswer(
                f"give a dict {{p: [four probabilities]}} for p in {NUCLEUS_PS}; got "
                f"{type(answer).__name__}."
            )
        missing = [p for p in NUCLEUS_PS if p not in answer]
        if missing:
            raise WrongAnswer(f"the dict has no entry for p = {missing}; give one for each p.")
        logits = torch.tensor(NUCLEUS_PROBS).log()
        for p in NUCLEUS_PS:
            try:
                got = [float(x) for x in answer[p]]
            except (TypeError, ValueError):
                raise WrongAnswer(f"for p = {p}, give four numbers.") from None
            if len(got) != len(NUCLEUS_PROBS):
                raise WrongAnswer(
                    f"for p = {p}, give one probability per token, four numbers; got {len(got)}."
                )
            want = next_token_probs(logits, top_p=p).tolist()
            if all(math.isclose(g, w, abs_tol=2e-3) for g, w in zip(got, want, strict=True)):
                continue
            if not any(got):
                raise WrongAnswer(
                    f"for p = {p} all four numbers are 0; is it still the placeholder?"
                )
            n_right = sum(w > 0 for w in want)
            for message, wrong in _nucleus_mistakes(p, n_right):
                if all(math.isclose(g, w, abs_tol=2e-3) for g, w in zip(got, wrong, strict=True)):
                    raise WrongAnswer(f"{message}.")
            if not math.isclose(sum(got), 1.0, abs_tol=2e-3):
                raise WrongAnswer(
                    f"for p = {p} your probabilities add up to {sum(got):.3f}; the sampler draws "
                    "from a distribution, so they should add up to one."
                )
            raise WrongAnswer(
                f"not yet for p = {p}: you have {[round(g, 3) for g in got]}. Sort the tokens by "
                "probability, add them up until the sum reaches p, drop the rest, renormalise."
            )
        return (
            "correct: p = 0.4 keeps the first token alone, p = 0.7 the first two "
            "(0.625, 0.375), p = 0.9 the first three (renormalised by 0.95)."
        )

    return run_check("check_nucleus", body, strict, verbose)
