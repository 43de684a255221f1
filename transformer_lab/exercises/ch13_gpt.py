"""Checkers for chapter 13, GPT.

- :func:`check_next_token_loss`: ``fn(logits, ids)``, the loss a GPT is trained with: the
  mean cross-entropy of predicting each next token of ``ids`` from the logits of the
  position before it;
- :func:`check_nucleus`: the top-p exercise, computed by hand, against the package's sampler.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from transformer_lab.exercises.runner import (
    CheckResult,
    WrongAnswer,
    as_number,
    call,
    need_tensor,
    run_check,
)
from transformer_lab.generation.sampling import next_token_probs

__all__ = ["check_next_token_loss", "check_nucleus"]

NUCLEUS_PROBS = (0.5, 0.3, 0.15, 0.05)  # the exercise's four tokens, most likely first
NUCLEUS_PS = (0.4, 0.7, 0.9)  # the values of p it asks about (no cumulative sum lands on one)


def _loss_mistakes(logits: torch.Tensor, ids: torch.Tensor):
    """``(message, the loss that mistake computes)`` for ``logits [batch, pos, vocab]``."""
    flat = logits.flatten(0, 1)
    yield (
        "you scored each position's logits against its own token: the logits at position t "
        "predict the token at t + 1, so pair logits[:, :-1] with ids[:, 1:]",
        F.cross_entropy(flat, ids.flatten()),
    )
    yield (
        "the shift goes the wrong way: logits[:, 1:] against ids[:, :-1] asks each position to "
        "predict the token before it; pair logits[:, :-1] with ids[:, 1:]",
        F.cross_entropy(logits[:, 1:].flatten(0, 1), ids[:, :-1].flatten()),
    )
    yield (
        "you summed the losses of the positions; take their mean, so the loss does not grow "
        "with the batch or the context",
        F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten(), reduction="sum"),
    )
    probs = logits[:, :-1].softmax(-1).gather(-1, ids[:, 1:, None])
    yield (
        "you averaged the probabilities of the right tokens; the loss is the mean of their "
        "negative logarithms, -log p(next token)",
        -probs.mean(),
    )
    yield (
        "you took the log of the probability without the minus sign; the loss is "
        "-log p(next token), a positive number that training makes smaller",
        probs.log().mean(),
    )


def check_next_token_loss(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(logits, ids)`` -> the mean next-token cross-entropy (a number): ``logits``
    ``[batch, pos, vocab]`` are a model's outputs for ``ids`` ``[batch, pos]``, and the logits
    at position ``t`` are scored against the token at ``t + 1`` (the last position has no
    target). Compared with ``F.cross_entropy`` on shifted inputs; the usual slips are named."""

    def body():
        gen = torch.Generator().manual_seed(13)
        for batch, pos, vocab in [(1, 2, 3), (2, 7, 11), (3, 16, 65)]:
            logits = 2 * torch.randn(batch, pos, vocab, generator=gen)
            ids = torch.randint(vocab, (batch, pos), generator=gen)
            describe = f"logits [{batch}, {pos}, {vocab}], ids [{batch}, {pos}]"
            out = call(fn, (logits, ids), describe)
            got = as_number(out)
            if got is None:
                shape = tuple(need_tensor(out, "a single number").shape)
                raise WrongAnswer(
                    f"your function returned a tensor of shape {shape} ({describe}); the loss "
                    "is one number, the mean over every predicted token."
                )
            want = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten()).item()
            if math.isclose(got, want, rel_tol=1e-4, abs_tol=1e-5):
                continue
            for message, wrong in _loss_mistakes(logits, ids):
                if math.isclose(got, wrong.item(), rel_tol=1e-4, abs_tol=1e-5):
                    raise WrongAnswer(f"{message} ({describe}).")
            raise WrongAnswer(
                f"the loss should be {want:.4f}, got {got:.4f} ({describe}). Take log_softmax "
                "over the vocabulary, pick the log-probability of each next token, and average "
                "their negatives."
            )
        return "the mean cross-entropy of each next token: right for 3 shapes."

    return run_check("check_next_token_loss", body, strict, verbose)


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
