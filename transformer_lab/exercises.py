"""Exercise checkers: run a reader's function against the package on random inputs.

Each ``check_*`` function calls the reader's ``fn`` on several seeded random inputs
(batch dimensions included, odd lengths, keys and queries of different lengths),
compares with the reference from this package, and when they differ tries the usual
mistakes (forgotten scaling, softmax over the wrong axis, mask the wrong way round, ...)
to say in plain words what went wrong. It prints the verdict and returns a
:class:`CheckResult`; a wrong answer never raises, so a notebook keeps running, unless
``strict=True``, which raises ``AssertionError`` with the message.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F

from .attention import scaled_dot_product_attention
from .masks import causal_mask, padding_mask

__all__ = [
    "CheckResult",
    "check_one_hot",
    "check_embedding_lookup",
    "check_cosine_similarity",
    "check_attention_weights",
    "check_attention",
    "check_masked_attention",
    "check_causal_mask",
    "check_padding_mask",
]

RTOL, ATOL = 1e-4, 1e-5  # float32 inputs; the reader may sum in another order
MASK_HINT = "in this book True means 'may attend'"


@dataclass(frozen=True)
class CheckResult:
    """The verdict of a checker: ``passed`` and a plain-words ``message``."""

    name: str
    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        return f"{'✓' if self.passed else '✗'} {self.name}: {self.message}"


class WrongAnswer(Exception):  # noqa: N818 (a verdict, not a failure of the program)
    """Raised inside a checker's body when the reader's answer is wrong; carries the message."""


def run_check(name: str, body: Callable[[], str], strict: bool, verbose: bool) -> CheckResult:
    """Run a checker's ``body`` (returns the message of a pass, raises :class:`WrongAnswer`
    with the message of a failure), print the verdict if ``verbose``, raise if ``strict``."""
    try:
        result = CheckResult(name, True, body())
    except WrongAnswer as wrong:
        result = CheckResult(name, False, str(wrong))
    if verbose:
        print(result)
    if strict and not result.passed:
        raise AssertionError(result.message)
    return result


def _shape(t) -> tuple[int, ...]:
    return tuple(t.shape)


def _call(fn, args: tuple, describe: str, batched: bool, passed_unbatched: bool):
    """Call the reader's function on clones of ``args``; report exceptions and in-place edits."""
    copies = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
    try:
        out = fn(*copies)
    except NotImplementedError:
        raise WrongAnswer(
            "your function is not written yet (it raised NotImplementedError)."
        ) from None
    except Exception as err:  # the reader's bug, reported in words
        hint = ""
        if batched and passed_unbatched:
            hint = (
                " It worked on inputs without batch dimensions, so look for something that only "
                "holds in 2-d: use k.transpose(-2, -1) (not k.T) and q.shape[-1] (not q.shape[1])."
            )
        raise WrongAnswer(
            f"your function raised {type(err).__name__}: {err} (inputs: {describe}).{hint}"
        ) from None
    for name, a, c in zip(("1st", "2nd", "3rd", "4th"), args, copies, strict=False):
        if isinstance(a, torch.Tensor) and not torch.equal(a, c):
            raise WrongAnswer(
                f"your function changed its {name} argument in place; work on a copy."
            )
    return out


def _need_tensor(out, what: str = "a tensor") -> torch.Tensor:
    if isinstance(out, tuple):
        note = ""
        if what == "the output":
            note = (
                " (the package's scaled_dot_product_attention returns (output, weights); "
                "yours should not)"
            )
        raise WrongAnswer(
            f"your function returned a tuple of {len(out)} items; it should return only "
            f"{what}{note}."
        )
    if not isinstance(out, torch.Tensor):
        raise WrongAnswer(f"your function returned {type(out).__name__}, expected {what}.")
    return out


def _close(got: torch.Tensor, want: torch.Tensor, equal_nan: bool = False) -> bool:
    if _shape(got) != _shape(want):
        return False
    got = got.detach().to(device="cpu", dtype=torch.float64)
    return torch.allclose(got, want.double(), rtol=RTOL, atol=ATOL, equal_nan=equal_nan)


def _largest_difference(got: torch.Tensor, want: torch.Tensor) -> str:
    diff = (got.detach().double() - want.double()).abs().nan_to_num(nan=math.inf)
    flat = int(diff.argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), diff.shape))
    return (
        f"largest difference {float(diff.flatten()[flat]):.3g} at index {index} "
        f"(got {float(got.flatten()[flat]):.4g}, expected {float(want.flatten()[flat]):.4g})"
    )


def _compare(out, want, describe: str, variants=(), row_sums: bool = False) -> None:
    """Raise ``WrongAnswer`` naming the first matching mistake when ``out`` is not ``want``.

    ``variants`` holds (message, what that mistake computes) pairs, or is a function that
    returns them (called only for a wrong answer, so a right one is checked quickly).
    """
    if _shape(out) != _shape(want):
        raise WrongAnswer(
            f"wrong output shape: expected {_shape(want)}, got {_shape(out)} ({describe})."
        )
    if not out.is_floating_point():
        raise WrongAnswer(f"your function returned dtype {out.dtype}; expected floating point.")
    if _close(out, want):
        return
    for message, model in variants() if callable(variants) else variants:
        if model is not None and _close(out, model, equal_nan=True):
            raise WrongAnswer(f"{message} ({describe}).")
    if not out.any() and want.any():
        raise WrongAnswer(
            f"your function returns all zeros ({describe}); is it still a placeholder?"
        )
    if torch.isnan(out).any() and not torch.isnan(want).any():
        raise WrongAnswer(f"the output contains NaN where the reference has none ({describe}).")
    message = f"values differ from the reference ({describe}): {_largest_difference(out, want)}."
    if row_sums:
        sums = out.detach().double().sum(-1)
        if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
            message += (
                f" Rows should sum to one but yours sum to between {float(sums.min()):.3g} and "
                f"{float(sums.max()):.3g}: apply softmax over the keys, dim=-1."
            )
    raise WrongAnswer(message)


# --- Random inputs ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Case:
    batch: tuple[int, ...]
    n_q: int
    n_k: int
    d_k: int
    d_v: int


def _attention_cases(gen: torch.Generator, square: bool = False) -> list[_Case]:
    """Odd, unequal sizes (so shapes tell q, k, v and weights apart), 2-d cases first."""

    def pick(choices):
        return choices[int(torch.randint(len(choices), (1,), generator=gen))]

    cases = []
    for batch in [(), (), (3,), (2, 4)]:
        n_q = pick([3, 5, 7, 9])
        n_k = n_q if square else pick([n for n in (4, 6, 7, 10, 11) if n != n_q])
        d_k = pick([4, 8, 12, 16])
        d_v = pick([d for d in (3, 5, 6, 9) if d not in (n_q, n_k)])
        cases.append(_Case(batch, n_q, n_k, d_k, d_v))
    return cases


def _qkv(case: _Case, gen: torch.Generator, dtype=torch.float32):
    q = torch.randn(*case.batch, case.n_q, case.d_k, generator=gen).to(dtype)
    k = torch.randn(*case.batch, case.n_k, case.d_k, generator=gen).to(dtype)
    v = torch.randn(*case.batch, case.n_k, case.d_v, generator=gen).to(dtype)
    return q, k, v


def _describe(**tensors) -> str:
    return ", ".join(f"{n} of shape {_shape(t)}" for n, t in tensors.items())


def _random_mask(case: _Case, gen: torch.Generator, kind: str) -> torch.Tensor:
    """A bool mask (True = may attend) in which every query may attend to at least one key."""
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


def _weights(q, k, mask=None, scale=None, dim=-1, fill=float("-inf"), mode="fill"):
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


def _weight_mistakes(q, k, v=None, mask=None) -> list[tuple[str, torch.Tensor]]:
    d_k = q.shape[-1]
    sq = f"sqrt(d_k) = sqrt({d_k}) = {math.sqrt(d_k):.3g}"
    out = [
        (f"you forgot to divide the scores by {sq}: the weights come out too peaked", 1.0),
        (f"you divided the scores by d_k = {d_k} instead of {sq}", 1 / d_k),
        (f"you multiplied the scores by {sq} instead of dividing by it", math.sqrt(d_k)),
    ]
    others = {n: i for i, n in enumerate(q.shape[:-1]) if n != d_k}
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
    mistakes = [(m, _weights(q, k, mask, scale=s)) for m, s in out]
    mistakes.append(
        (
            "softmax over the wrong axis: each query's weights (one row) must sum to one over "
            "the keys, so use softmax(dim=-1); yours sum to one down the columns",
            _weights(q, k, mask, dim=-2),
        )
    )
    if mask is not None:
        wrong_way = (
            f"the mask is applied the wrong way round: {MASK_HINT}, so fill -inf where it is "
            "False: scores.masked_fill(~mask, float('-inf'))"
        )
        mistakes += [
            (wrong_way, _weights(q, k, ~mask)),
            (wrong_way, _weights(q, k, ~mask, fill=-1e9)),
            ("the mask has no effect: blocked keys still get weight", _weights(q, k)),
            (
                "you zeroed the blocked weights after the softmax, so the rows no longer sum to "
                "one; put -inf in the blocked scores before the softmax instead",
                _weights(q, k, mask, mode="after"),
            ),
            (
                "you multiplied the scores by the mask: a blocked score becomes 0, and exp(0) "
                "still gives it weight; fill blocked scores with -inf instead",
                _weights(q, k, mask, mode="multiply"),
            ),
        ]
    for scale, what in ((1 / math.sqrt(d_k), "scaled scores"), (1.0, "raw scores q k^T")):
        scores = (q.double() @ k.double().transpose(-2, -1)) * scale
        mistakes.append((f"you skipped the softmax and returned the {what}", scores))
    return mistakes


def _attention_mistakes(q, k, v, mask=None) -> list[tuple[str, torch.Tensor]]:
    return [(m, w @ v.double()) for m, w in _weight_mistakes(q, k, v, mask)]


# --- Checkers for chapter 1 -------------------------------------------------------------


def check_one_hot(fn, *, strict: bool = False, verbose: bool = True, seed: int = 0) -> CheckResult:
    """Check ``fn(indices, vocab_size)``: one-hot vectors for integer token indices.

    ``indices`` is a LongTensor of any shape ``[...]`` with values in ``0 .. vocab_size-1``;
    ``fn`` must return a **float** tensor ``[..., vocab_size]`` with a single 1 in each
    vector, at the position given by the index (counting from 0).
    """
    gen = torch.Generator().manual_seed(seed)

    def body():
        for shape, V, ends in [((6,), 10, True), ((2, 5), 7, True), ((3, 1, 4), 13, False)]:
            idx = torch.randint(V - 2, shape, generator=gen)
            if ends:  # both ends of the vocabulary; the last case leaves out the top index
                idx.view(-1)[:2] = torch.tensor([0, V - 1])
            describe = f"indices of shape {shape}, vocab_size={V}"
            out = _need_tensor(_call(fn, (idx, V), describe, len(shape) > 1, True))
            want = F.one_hot(idx, V).float()
            if _shape(out) == (*shape, int(idx.max()) + 1) and int(idx.max()) + 1 < V:
                raise WrongAnswer(
                    f"the vectors have length max(index) + 1 = {int(idx.max()) + 1}, not "
                    f"vocab_size={V}; with F.one_hot pass num_classes=vocab_size ({describe})."
                )
            if _shape(out) == (V, *shape):
                raise WrongAnswer(
                    f"expected shape {_shape(want)}, got {_shape(out)}: one row per word, "
                    "the vocabulary along the last axis."
                )
            if _shape(out) == _shape(want) and not out.is_floating_point():
                raise WrongAnswer(
                    f"your vectors have dtype {out.dtype}; make them float (e.g. .float()) so "
                    "they can multiply the float embedding matrix E."
                )
            shifted = [
                ("the 1 sits one place too far right: indices count from 0", want.roll(1, -1)),
                ("the 1 sits one place too far left: indices count from 0", want.roll(-1, -1)),
            ]
            _compare(out, want, describe, shifted)
        return "correct on 3 random inputs (shapes (6,), (2, 5) and (3, 1, 4))."

    return run_check("check_one_hot", body, strict, verbose)


def check_embedding_lookup(
    fn, *, strict: bool = False, verbose: bool = True, seed: int = 0
) -> CheckResult:
    """Check ``fn(indices, E)``: look up the embedding of each token index.

    ``indices`` is a LongTensor ``[...]`` and ``E`` the embedding matrix ``[d_vocab, d_model]``
    (one row per word); ``fn`` must return ``[..., d_model]``, row ``indices[...]`` of ``E``.
    """
    gen = torch.Generator().manual_seed(seed)

    def body():
        for shape, V, d in [((5,), 11, 3), ((2, 7), 20, 6), ((3, 2, 3), 9, 4)]:
            idx = torch.randint(V, shape, generator=gen)
            E = torch.randn(V, d, generator=gen)
            describe = f"indices of shape {shape}, E of shape {(V, d)}"
            out = _need_tensor(_call(fn, (idx, E), describe, len(shape) > 1, True))
            want = E[idx]
            if _shape(out) == (*shape, V):
                raise WrongAnswer(
                    f"the output has length |V|={V} per token: that is the one-hot vector; "
                    "multiply it by E (or index E's rows) to get the embedding."
                )
            if _shape(out) == (d, *shape):
                raise WrongAnswer(
                    f"expected shape {_shape(want)}, got {_shape(out)}: the embeddings came out "
                    "as columns; each token's embedding is a row of E, E[indices]."
                )
            shifted = [
                ("you took the row below the right one: indices count from 0", E[(idx + 1) % V]),
                ("you took the row above the right one: indices count from 0", E[idx - 1]),
            ]
            _compare(out, want, describe, shifted)
        return "correct on 3 random inputs, batch dimensions included."

    return run_check("check_embedding_lookup", body, strict, verbose)


def check_cosine_similarity(
    fn, *, strict: bool = False, verbose: bool = True, seed: int = 0
) -> CheckResult:
    """Check ``fn(a, b)``: cosine similarity of vectors along the last axis.

    ``a`` and ``b`` have the same shape ``[..., d]``; ``fn`` must return ``[...]`` holding
    ``a.b / (|a| |b|)`` for each pair of vectors (a 0-d tensor for two plain vectors).
    """
    gen = torch.Generator().manual_seed(seed)

    def body():
        for shape in [(5,), (4, 7), (2, 3, 6)]:
            a = torch.randn(shape, generator=gen) * 3
            b = torch.randn(shape, generator=gen) * 0.5 + 0.3 * a
            describe = _describe(a=a, b=b)
            out = _need_tensor(_call(fn, (a, b), describe, len(shape) > 1, True))
            want = F.cosine_similarity(a, b, dim=-1)
            na, nb, dot = a.norm(dim=-1), b.norm(dim=-1), (a * b).sum(-1)
            cos = dot / (na * nb)
            mistakes = [
                ("that is the dot product a.b; divide it by |a| |b|", dot),
                ("you divided by only one of the two lengths; divide by |a| |b|", dot / na),
                ("you divided by only one of the two lengths; divide by |a| |b|", dot / nb),
                ("you divided by squared lengths; use |a| = sqrt(sum a_i^2)", dot / (na * nb) ** 2),
                ("that is the Euclidean distance |a - b|, not the cosine", (a - b).norm(dim=-1)),
                ("that is the cosine distance 1 - cos; return the cosine itself", 1 - cos),
                ("that is the angle in radians; return its cosine", torch.arccos(cos)),
            ]
            _compare(out, want, describe, mistakes)
        return "correct on 3 random inputs, batch dimensions included."

    return run_check("check_cosine_similarity", body, strict, verbose)


# --- Checkers for attention (chapters 4, 5, 6) -------------------------------------------


def check_attention_weights(
    fn, *, strict: bool = False, verbose: bool = True, seed: int = 0
) -> CheckResult:
    """Check ``fn(q, k)``: the attention weights ``softmax(q k^T / sqrt(d_k))``.

    ``q`` is ``[..., query_pos, d_k]`` and ``k`` is ``[..., key_pos, d_k]`` (any batch
    dimensions in front); ``fn`` must return the weights ``[..., query_pos, key_pos]``,
    each row a probability distribution over the keys.
    """
    gen = torch.Generator().manual_seed(seed)

    def body():
        cases = _attention_cases(gen)
        for i, case in enumerate(cases):
            q, k, _ = _qkv(case, gen)
            describe = _describe(q=q, k=k)
            out = _need_tensor(_call(fn, (q, k), describe, bool(case.batch), i > 0))
            want = _weights(q, k).float()
            _compare(out, want, describe, partial(_weight_mistakes, q, k), row_sums=True)
        return f"correct on {len(cases)} random inputs, batch dimensions included."

    return run_check("check_attention_weights", body, strict, verbose)


def _check_output_shape(out, q, k, v, mask, describe):
    want = scaled_dot_product_attention(q, k, v, mask)[0]
    weights = _weights(q, k, mask)
    if _shape(out) == _shape(weights) and _close(out, weights, equal_nan=True):
        raise WrongAnswer(
            f"you returned the attention weights; the output is weights @ v ({describe})."
        )
    if _shape(out) == (*q.shape[:-2], v.shape[-1], q.shape[-2]):
        raise WrongAnswer(
            f"expected shape {_shape(want)} (query_pos, d_v), got {_shape(out)}: it is transposed; "
            f"compute weights @ v ({describe})."
        )
    return want


def check_attention(
    fn, *, strict: bool = False, verbose: bool = True, seed: int = 0
) -> CheckResult:
    """Check ``fn(q, k, v)``: the output of scaled dot-product attention.

    ``q`` is ``[..., query_pos, d_k]``, ``k`` is ``[..., key_pos, d_k]`` and ``v`` is
    ``[..., key_pos, d_v]`` (any batch dimensions in front); ``fn`` must return only the
    output ``softmax(q k^T / sqrt(d_k)) v`` of shape ``[..., query_pos, d_v]``.
    """
    gen = torch.Generator().manual_seed(seed)

    def body():
        cases = _attention_cases(gen)
        for i, case in enumerate(cases):
            q, k, v = _qkv(case, gen)
            describe = _describe(q=q, k=k, v=v)
            out = _need_tensor(
                _call(fn, (q, k, v), describe, bool(case.batch), i > 0), "the output"
            )
            want = _check_output_shape(out, q, k, v, None, describe)
            _compare(out, want, describe, partial(_attention_mistakes, q, k, v))
        return f"correct on {len(cases)} random inputs, batch dimensions included."

    return run_check("check_attention", body, strict, verbose)


def check_masked_attention(
    fn,
    *,
    fully_masked_rows: bool = False,
    strict: bool = False,
    verbose: bool = True,
    seed: int = 0,
) -> CheckResult:
    """Check ``fn(q, k, v, mask)``: scaled dot-product attention with a boolean mask.

    Shapes as in :func:`check_attention`; ``mask`` is bool, **True = may attend**,
    broadcastable to ``[..., query_pos, key_pos]`` (a causal ``[query_pos, key_pos]``
    mask, a padding mask ``[batch, 1, 1, key_pos]`` or a full one). ``fn`` must return the
    output ``[..., query_pos, d_v]``. Two edge cases are probed as well: float16 inputs
    (where ``-1e9`` overflows) and a query whose keys are all masked. The package returns
    zeros for such a query; with ``fully_masked_rows=True`` that is required, otherwise
    the result only notes what your function does there.
    """
    gen = torch.Generator().manual_seed(seed)

    def body():
        cases = _attention_cases(gen)
        cases[1] = _attention_cases(gen, square=True)[1]
        kinds = ["random", "causal", "random", "padding"]
        for i, (case, kind) in enumerate(zip(cases, kinds, strict=True)):
            q, k, v = _qkv(case, gen)
            mask = _random_mask(case, gen, kind)
            describe = _describe(q=q, k=k, v=v, mask=mask)
            args = (q, k, v, mask)
            out = _need_tensor(_call(fn, args, describe, bool(case.batch), i > 0), "the output")
            want = _check_output_shape(out, q, k, v, mask, describe)
            _compare(out, want, describe, partial(_attention_mistakes, q, k, v, mask))
        _probe_float16(fn, gen)
        note = _probe_fully_masked(fn, gen, fully_masked_rows)
        return f"correct on {len(cases)} random inputs and on float16 inputs.{note}"

    return run_check("check_masked_attention", body, strict, verbose)


def _probe_float16(fn, gen) -> None:
    case = _Case((), 5, 7, 8, 3)
    q, k, v = _qkv(case, gen, torch.float16)
    mask = _random_mask(case, gen, "random")
    describe = "float16 inputs, " + _describe(q=q, k=k, v=v, mask=mask)
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
    out = _need_tensor(out, "the output")
    if out.is_floating_point() and not torch.isfinite(out).all():
        raise WrongAnswer(f"your function gives NaN or inf on {describe}.")


def _probe_fully_masked(fn, gen, required: bool) -> str:
    case = _Case((), 4, 6, 8, 3)
    q, k, v = _qkv(case, gen)
    mask = _random_mask(case, gen, "random")
    mask[2] = False  # query 2 may attend to nothing
    try:
        out = fn(q, k, v, mask)
    except Exception as err:
        out = err
    if not isinstance(out, torch.Tensor) or _shape(out) != (4, 3):
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


# --- Checkers for masks (chapter 6) ------------------------------------------------------


def _check_mask_values(out, want, describe: str, mistakes) -> None:
    if _shape(out) != _shape(want):
        raise WrongAnswer(
            f"wrong mask shape: expected {_shape(want)}, got {_shape(out)} ({describe})."
        )
    if out.dtype != torch.bool:
        additive = out.is_floating_point() and bool(out.min() < 0)
        as_bool = out == 0 if additive else out != 0
        extra = " (an additive 0 / -inf mask)" if additive else ""
        if torch.equal(as_bool, want):
            raise WrongAnswer(
                f"the pattern is right but the mask has dtype {out.dtype}{extra}; this book's "
                "masks are bool with True = may attend."
            )
        raise WrongAnswer(
            f"the mask must be bool with True = may attend, got dtype {out.dtype}{extra}."
        )
    if torch.equal(out, want):
        return
    for message, model in mistakes:
        if torch.equal(out, model):
            raise WrongAnswer(f"{message} ({describe}).")
    wrong = (out != want).nonzero()[0].tolist()
    raise WrongAnswer(
        f"the mask differs from the reference at index {tuple(wrong)} ({describe}): "
        f"got {bool(out[tuple(wrong)])}, expected {bool(want[tuple(wrong)])}."
    )


def check_causal_mask(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(n)``: the causal mask for ``n`` tokens.

    ``fn`` must return a bool tensor ``[n, n]`` in which entry ``[i, j]`` is True when
    query ``i`` may attend to key ``j``, that is when ``j <= i`` (itself and the past).
    """

    def body():
        for n in (5, 8, 1, 2):
            out = _need_tensor(_call(fn, (n,), f"n={n}", False, True), "a bool tensor")
            want = causal_mask(n)
            mistakes = [
                (
                    f"True marks the blocked (future) positions, which is PyTorch's convention "
                    f"for nn.Transformer masks; {MASK_HINT}, so use torch.tril",
                    ~want,
                ),
                ("the diagonal must be True: a token may attend to itself", want.tril(-1)),
                ("query i may see keys j >= i, the future; use tril, not triu", want.T),
                ("every token may see every other: nothing is masked", torch.ones_like(want)),
            ]
            _check_mask_values(out, want, f"n={n}", mistakes)
        return "correct for n = 5, 8, 1 and 2."

    return run_check("check_causal_mask", body, strict, verbose)


def check_padding_mask(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(lengths, max_len)``: the key padding mask of a batch.

    ``lengths`` is a LongTensor ``[batch]`` with the true length of each sequence and
    ``max_len`` the padded length. ``fn`` must return a bool tensor
    ``[batch, 1, 1, max_len]`` (broadcastable over heads and queries) that is True at key
    position ``j`` of sequence ``b`` when ``j < lengths[b]`` (a real token).
    """

    def body():
        for lengths, max_len in [([3, 5, 1], 5), ([2, 7, 7, 4], 9), ([4], 4)]:
            lengths = torch.tensor(lengths)
            describe = f"lengths={lengths.tolist()}, max_len={max_len}"
            out = _need_tensor(
                _call(fn, (lengths, max_len), describe, False, True), "a bool tensor"
            )
            want = padding_mask(lengths, max_len)
            if _shape(out) == (len(lengths), max_len) and torch.equal(out, want[:, 0, 0]):
                raise WrongAnswer(
                    f"the values are right but the shape is {_shape(out)}; add the head and query "
                    "axes, mask[:, None, None, :], so it broadcasts to [batch, n_heads, query_pos, "
                    "key_pos]."
                )
            longest = int(lengths.max())
            if _shape(out) == (len(lengths), 1, 1, longest) and max_len > longest:
                raise WrongAnswer(
                    f"the mask has the length of the longest sequence, not max_len={max_len}."
                )
            positions = torch.arange(max_len)
            mistakes = [
                (
                    f"True marks the padding, as in nn.MultiheadAttention's key_padding_mask; "
                    f"{MASK_HINT} (a real token)",
                    ~want,
                ),
                (
                    "one position too many is allowed: position j is real when j < length "
                    "(positions count from 0)",
                    (positions <= lengths[:, None])[:, None, None, :],
                ),
                (
                    "one real position is blocked: position j is real when j < length",
                    (positions < lengths[:, None] - 1)[:, None, None, :],
                ),
            ]
            _check_mask_values(out, want, describe, mistakes)
        return "correct on 3 batches of different lengths."

    return run_check("check_padding_mask", body, strict, verbose)
