"""Random attention inputs and the usual mistakes in attention, for the checkers of
chapters 4, 5, 6 and 13.

:func:`attention_cases` draws odd, unequal sizes (so that shapes tell ``q``, ``k``, ``v``
and the weights apart), :func:`random_qkv` and :func:`random_mask` fill them in.
:func:`reference_weights` computes attention weights in float64 with switches that
reproduce a mistake; :func:`weight_mistakes` and :func:`attention_mistakes` list the
``(message, what that mistake computes)`` pairs that :func:`~.runner.compare` tries.
:func:`probe_float16` and :func:`probe_fully_masked` probe two edge cases of masked
attention.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from transformer_lab.exercises.runner import ATOL, WrongAnswer, close, describe_shapes, need_tensor
from transformer_lab.nn.attention import scaled_dot_product_attention
from transformer_lab.nn.masks import causal_mask, padding_mask

__all__ = [
    "MASK_HINT",
    "OUTPUT_TUPLE_NOTE",
    "AttentionCase",
    "attention_cases",
    "random_qkv",
    "random_mask",
    "reference_weights",
    "weight_mistakes",
    "attention_mistakes",
    "expect_attention_output",
    "probe_float16",
    "probe_fully_masked",
]

MASK_HINT = "in this book True means 'may attend'"
OUTPUT_TUPLE_NOTE = (
    " (the package's scaled_dot_product_attention returns (output, weights); yours should not)"
)


# --- Random inputs ----------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionCase:
    """The sizes of one random attention input."""

    batch: tuple[int, ...]  # batch dimensions in front, () for plain matrices
    n_q: int  # number of queries
    n_k: int  # number of keys (and values)
    d_k: int  # size of queries and keys
    d_v: int  # size of values


def attention_cases(gen: torch.Generator, square: bool = False) -> list[AttentionCase]:
    """Four cases with odd, unequal sizes, the two without batch dimensions first."""

    def pick(choices):
        return choices[int(torch.randint(len(choices), (1,), generator=gen))]

    cases = []
    for batch in [(), (), (3,), (2, 4)]:
        n_q = pick([3, 5, 7, 9])
        n_k = n_q if square else pick([n for n in (4, 6, 7, 10, 11) if n != n_q])
        d_k = pick([4, 8, 12, 16])
        d_v = pick([d for d in (3, 5, 6, 9) if d not in (n_q, n_k)])
        cases.append(AttentionCase(batch, n_q, n_k, d_k, d_v))
    return cases


def random_qkv(case: AttentionCase, gen: torch.Generator, dtype=torch.float32):
    """Standard normal ``q [*batch, n_q, d_k]``, ``k [*batch, n_k, d_k]`` and
    ``v [*batch, n_k, d_v]``."""
    q = torch.randn(*case.batch, case.n_q, case.d_k, generator=gen).to(dtype)
    k = torch.randn(*case.batch, case.n_k, case.d_k, generator=gen).to(dtype)
    v = torch.randn(*case.batch, case.n_k, case.d_v, generator=gen).to(dtype)
    return q, k, v


def random_mask(case: AttentionCase, gen: torch.Generator, kind: str) -> torch.Tensor:
    """A bool mask (True = may attend) of ``kind`` "causal", "padding" or "random", in
    which every query may attend to at least one key."""
    if kind == "causal":
        return causal_mask(case.n_q, case.n_k)
    if kind == "padding":  # [batch, 1, 1, key_pos] for 4-d inputs
        lengths = torch.randint(1, case.n_k + 1, case.batch[:1], generator=gen)
        lengths[0] = case.n_k - 1
        return padding_mask(lengths, case.n_k)
    mask = torch.rand(*case.batch[:1], case.n_q, case.n_k, generator=gen) < 0.6
    mask[..., 0] = True  # nobody is left with nothing to attend to
    return mask


# --- Mistakes in attention, as functions of q, k (and mask) -------------------------------


def reference_weights(q, k, mask=None, scale=None, dim=-1, fill=float("-inf"), mode="fill"):
    """Attention weights in float64. The defaults give the right answer; ``scale``, the
    softmax ``dim``, the ``fill`` value and ``mode`` ("fill" blocked scores, "multiply" the
    scores by the mask, or zero blocked weights "after" the softmax) reproduce mistakes."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q.double() @ k.double().transpose(-2, -1)) * scale
    if mask is not None and mode == "fill":
        scores = scores.masked_fill(~mask, fill)
    elif mask is not None and mode == "multiply":
        scores = scores * mask
    weights = torch.softmax(scores, dim=dim)
    if mask is not None and mode == "after":
        weights = weights * mask
    return weights


def weight_mistakes(q, k, v=None, mask=None) -> list[tuple[str, torch.Tensor]]:
    """The usual mistakes in computing attention weights, with what each computes."""
    d_k = q.shape[-1]
    sq = f"sqrt(d_k) = sqrt({d_k}) = {math.sqrt(d_k):.3g}"
    out = [
        (f"you forgot to divide the scores by {sq}: the weights come out too peaked", 1.0),
        (f"you divided the scores by d_k = {d_k} instead of {sq}", 1 / d_k),
        (f"you multiplied the scores by {sq} instead of dividing by it", math.sqrt(d_k)),
    ]
    others: dict[int, int | str] = {n: i for i, n in enumerate(q.shape[:-1]) if n != d_k}
    if v is not None and v.shape[-1] != d_k:
        others.setdefault(v.shape[-1], "value")
    for n, where in others.items():
        size = "v.shape[-1]" if where == "value" else f"dimension {where} of q"
        out.append(
            (
                f"you divided the scores by sqrt({n}), the size of {size}; d_k is the last "
                "dimension of q and k: use q.shape[-1]",
                1 / math.sqrt(n),
            )
        )
    mistakes = [(m, reference_weights(q, k, mask, scale=s)) for m, s in out]
    mistakes.append(
        (
            "softmax over the wrong axis: each query's weights (one row) must sum to one over "
            "the keys, so use softmax(dim=-1); yours sum to one down the columns",
            reference_weights(q, k, mask, dim=-2),
        )
    )
    if mask is not None:
        wrong_way = (
            f"the mask is applied the wrong way round: {MASK_HINT}, so fill -inf where it is "
            "False: scores.masked_fill(~mask, float('-inf'))"
        )
        mistakes += [
            (wrong_way, reference_weights(q, k, ~mask)),
            (wrong_way, reference_weights(q, k, ~mask, fill=-1e9)),
            ("the mask has no effect: blocked keys still get weight", reference_weights(q, k)),
            (
                "you zeroed the blocked weights after the softmax, so the rows no longer sum to "
                "one; put -inf in the blocked scores before the softmax instead",
                reference_weights(q, k, mask, mode="after"),
            ),
            (
                "you multiplied the scores by the mask: a blocked score becomes 0, and exp(0) "
                "still gives it weight; fill blocked scores with -inf instead",
                reference_weights(q, k, mask, mode="multiply"),
            ),
        ]
    for scale, what in ((1 / math.sqrt(d_k), "scaled scores"), (1.0, "raw scores q k^T")):
        scores = (q.double() @ k.double().transpose(-2, -1)) * scale
        mistakes.append((f"you skipped the softmax and returned the {what}", scores))
    return mistakes


def attention_mistakes(q, k, v, mask=None) -> list[tuple[str, torch.Tensor]]:
    """The mistakes of :func:`weight_mistakes`, carried through to the output ``weights @ v``."""
    return [(m, w @ v.double()) for m, w in weight_mistakes(q, k, v, mask)]


def expect_attention_output(out, q, k, v, mask, describe: str) -> torch.Tensor:
    """The package's output for ``(q, k, v, mask)``; raises :class:`~.runner.WrongAnswer`
    when ``out`` is the attention weights or the output transposed."""
    want = scaled_dot_product_attention(q, k, v, mask)[0]
    if close(out, reference_weights(q, k, mask), equal_nan=True):
        raise WrongAnswer(
            f"you returned the attention weights; the output is weights @ v ({describe})."
        )
    if tuple(out.shape) == (*q.shape[:-2], v.shape[-1], q.shape[-2]):
        raise WrongAnswer(
            f"expected shape {tuple(want.shape)} (query_pos, d_v), got {tuple(out.shape)}: it is "
            f"transposed; compute weights @ v ({describe})."
        )
    return want


# --- Two edge cases of masked attention ---------------------------------------------------


def probe_float16(fn, gen: torch.Generator) -> None:
    """Raise :class:`~.runner.WrongAnswer` if ``fn(q, k, v, mask)`` overflows or gives NaN
    on float16 inputs (as a fill of ``-1e9`` does)."""
    case = AttentionCase((), 5, 7, 8, 3)
    q, k, v = random_qkv(case, gen, torch.float16)
    mask = random_mask(case, gen, "random")
    describe = "float16 inputs, " + describe_shapes(q=q, k=k, v=v, mask=mask)
    try:
        out = fn(q, k, v, mask)
    except Exception as err:
        if "overflow" in str(err):
            raise WrongAnswer(
                "your function fails on float16 inputs because a large finite fill such as -1e9 "
                "does not fit in float16 (its largest magnitude is 65504); fill with "
                f"float('-inf') instead. The error was: {err}"
            ) from None
        return  # other float16 limitations (old CPU kernels) are not the reader's mistake
    out = need_tensor(out, "the output", OUTPUT_TUPLE_NOTE)
    if out.is_floating_point() and not torch.isfinite(out).all():
        raise WrongAnswer(f"your function gives NaN or inf on {describe}.")


def probe_fully_masked(fn, gen: torch.Generator, required: bool) -> str:
    """What ``fn(q, k, v, mask)`` returns for a query whose keys are all masked, as a note
    to add to a passing verdict; with ``required``, anything but zeros is a wrong answer."""
    case = AttentionCase((), 4, 6, 8, 3)
    q, k, v = random_qkv(case, gen)
    mask = random_mask(case, gen, "random")
    mask[2] = False  # query 2 may attend to nothing
    try:
        out = fn(q, k, v, mask)
    except Exception as err:
        out = err
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (4, 3):
        what = f"raised {type(out).__name__}: {out}" if isinstance(out, Exception) else "failed"
        message = f"for a query whose keys are all masked your function {what}."
        if required:
            raise WrongAnswer(message)
        return " Note: " + message
    row = out[2].detach().double()
    if torch.allclose(row, torch.zeros(3, dtype=torch.float64), atol=ATOL):
        return " A query whose keys are all masked gets zeros, as in the package."
    if torch.isnan(row).all():
        what = "NaN (the softmax of a row that is all -inf is 0/0)"
    elif torch.allclose(row, v.double().mean(-2), atol=1e-4):
        what = (
            "the plain average of the values: with a finite fill such as -1e9 every score in that "
            "row is equal, so the softmax is uniform"
        )
    else:
        what = f"{row.tolist()}"
    message = (
        f"for a query whose keys are all masked your function returns {what}. The package "
        "returns zeros there (see attention_weights)."
    )
    if required:
        raise WrongAnswer(message[0].upper() + message[1:])
    return " Note: " + message
