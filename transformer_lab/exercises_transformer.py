"""Exercise checkers for the Transformer chapters (7-11): positions, heads, layer norm,
the feed-forward network and the block, cross-attention.

Like :mod:`transformer_lab.exercises`, each ``check_*`` calls the reader's ``fn`` on seeded
inputs, compares it with the package, names the usual mistake when it recognises one,
prints the verdict and returns a :class:`~transformer_lab.exercises.CheckResult` (raising
``AssertionError`` only with ``strict=True``).
"""

from __future__ import annotations

import math

import torch

from .exercises import CheckResult
from .exercises import WrongAnswer as _WrongAnswerError
from .exercises import run_check as _run
from .positional import sinusoidal_encoding

__all__ = [
    "check_sinusoidal_encoding",
    "shift_matrix",
    "check_shift_matrix",
    "check_split_heads",
    "check_multi_head_attention",
    "check_layer_norm",
    "check_feed_forward",
    "check_pre_ln_block",
    "check_cross_attention",
]

RTOL, ATOL = 1e-4, 1e-5  # float32; the reader may compute in another order


def _call(fn, args: tuple, describe: str):
    copies = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
    try:
        out = fn(*copies)
    except Exception as err:  # the reader's bug, reported in words
        raise _WrongAnswerError(
            f"your function raised {type(err).__name__}: {err} ({describe})."
        ) from None
    for a, c in zip(args, copies, strict=True):
        if isinstance(a, torch.Tensor) and not torch.equal(a, c):
            raise _WrongAnswerError(
                f"your function changed an argument in place ({describe}); work on a copy."
            )
    if isinstance(out, tuple):
        raise _WrongAnswerError(
            f"your function returned a tuple of {len(out)} items; return one tensor."
        )
    if not isinstance(out, torch.Tensor):
        raise _WrongAnswerError(f"your function returned {type(out).__name__}, expected a tensor.")
    return out


def _close(got: torch.Tensor, want: torch.Tensor) -> bool:
    if tuple(got.shape) != tuple(want.shape) or not got.is_floating_point():
        return False
    return torch.allclose(got.detach().cpu().double(), want.double(), rtol=RTOL, atol=ATOL)


def _compare(out: torch.Tensor, want: torch.Tensor, describe: str, mistakes=()) -> None:
    if tuple(out.shape) != tuple(want.shape):
        for message, model in mistakes:
            if tuple(out.shape) == tuple(model.shape) and _close(out, model):
                raise _WrongAnswerError(f"{message} ({describe})")
        raise _WrongAnswerError(
            f"wrong shape: expected {tuple(want.shape)}, got {tuple(out.shape)} ({describe})."
        )
    if not out.is_floating_point():
        raise _WrongAnswerError(
            f"your function returned dtype {out.dtype}; expected floating point."
        )
    if _close(out, want):
        return
    for message, model in mistakes:
        if _close(out, model):
            raise _WrongAnswerError(f"{message} ({describe})")
    diff = (out.detach().cpu().double() - want.double()).abs().nan_to_num(nan=math.inf)
    index = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
    raise _WrongAnswerError(
        f"values differ from the reference ({describe}): largest difference "
        f"{float(diff[index]):.3g} at index {index} (got {float(out[index]):.4g}, expected "
        f"{float(want[index]):.4g})."
    )


# --- Chapter 7: positional encoding ---------------------------------------------------------


def _sinusoid_variant(n, d, exponent="2i", swap=False, base=10000.0):
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    j = torch.arange(d, dtype=torch.float64)
    two_i = j - j % 2 if exponent == "2i" else j  # "j": every dimension its own frequency
    angle = pos / base ** (two_i / d)
    even = (j % 2 == 0)[None, :]
    first, second = (torch.cos, torch.sin) if swap else (torch.sin, torch.cos)
    return torch.where(even, first(angle), second(angle))


def check_sinusoidal_encoding(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(n_positions, d_model)``: the sinusoidal encoding ``[n_positions, d_model]``
    with ``PE[pos, 2i] = sin(pos / 10000^(2i/d))`` and ``PE[pos, 2i+1] = cos(...)``."""

    def body():
        for n, d in [(6, 4), (50, 16), (13, 10)]:
            describe = f"n_positions={n}, d_model={d}"
            out = _call(fn, (n, d), describe)
            want = sinusoidal_encoding(n, d)
            mistakes = [
                (
                    "sines and cosines are swapped: even dimensions 2i take the sine, odd ones "
                    "2i+1 the cosine",
                    _sinusoid_variant(n, d, swap=True),
                ),
                (
                    "each dimension got its own frequency: dimensions 2i and 2i+1 share one, "
                    "with exponent 2i/d where 2i is the even dimension of the pair",
                    _sinusoid_variant(n, d, exponent="j"),
                ),
                (
                    "the array is transposed: rows are positions, columns are dimensions",
                    want.T,
                ),
            ]
            _compare(out, want, describe, mistakes)
        return "correct for (n_positions, d_model) = (6, 4), (50, 16) and (13, 10)."

    return _run("check_sinusoidal_encoding", body, strict, verbose)


def shift_matrix(k: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The ``[d_model, d_model]`` matrix ``M_k`` with ``PE[pos + k] = PE[pos] @ M_k`` for
    every position (``d_model`` even): a 2x2 rotation by ``k * omega_i`` per pair of
    dimensions."""
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    omega = 1.0 / base ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    c, s = torch.cos(k * omega), torch.sin(k * omega)
    blocks = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)  # [d/2, 2, 2]
    return torch.block_diag(*blocks).float()


def check_shift_matrix(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(k, d_model)``: a ``[d_model, d_model]`` matrix ``M`` such that
    ``sinusoidal_encoding(n, d_model)[pos + k] == sinusoidal_encoding(n, d_model)[pos] @ M``
    for every position ``pos``."""

    def body():
        for k, d in [(1, 4), (5, 16), (-3, 8), (0, 6)]:
            describe = f"k={k}, d_model={d}"
            out = _call(fn, (k, d), describe)
            want = shift_matrix(k, d)
            mistakes = [
                (
                    "the rotation turns the wrong way: your matrix moves a position back by "
                    "k, not forward; transpose each 2x2 block",
                    shift_matrix(-k, d),
                ),
                ("the matrix is the identity: it does not move the position at all", torch.eye(d)),
            ]
            if k != 0:
                _compare(out, want, describe, mistakes)
            else:
                _compare(out, want, describe)
            pe = sinusoidal_encoding(40, d)
            lo, hi = max(0, -k), 40 - max(0, k)
            if not torch.allclose(pe[lo:hi] @ out.detach().float(), pe[lo + k : hi + k], atol=1e-4):
                raise _WrongAnswerError(f"PE[pos] @ M does not give PE[pos + k] ({describe}).")
        return "correct for k = 1, 5, -3 and 0: PE[pos] @ M_k = PE[pos + k] at every position."

    return _run("check_shift_matrix", body, strict, verbose)


# --- Chapter 8: multi-head attention ---------------------------------------------------------


def _mha_reference(
    x, W_Q, W_K, W_V, W_O, n_heads, *, scale_by=None, transpose=True, merge=True, project=True
):
    """Multi-head self-attention in float64, with switches that reproduce common mistakes."""
    batch, pos, d = x.shape
    d_head = d // n_heads

    def split(t):
        if transpose:
            return t.view(batch, pos, n_heads, d_head).transpose(1, 2)
        return t.reshape(batch, n_heads, pos, d_head)  # mixes positions and features

    x = x.double()
    q, k, v = (split(x @ W.double()) for W in (W_Q, W_K, W_V))  # [batch, n_heads, pos, d_head]
    scores = q @ k.transpose(-2, -1) / math.sqrt(scale_by or d_head)
    z = torch.softmax(scores, dim=-1) @ v  # [batch, n_heads, pos, d_head]
    z = z.transpose(1, 2).reshape(batch, pos, d) if merge else z.reshape(batch, pos, d)
    return z @ W_O.double() if project else z


def check_split_heads(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(x, n_heads)``: ``x [batch, pos, d_model]`` reshaped to
    ``[batch, n_heads, pos, d_head]``, head ``h`` holding features
    ``h * d_head .. (h + 1) * d_head - 1`` of every position."""
    gen = torch.Generator().manual_seed(0)

    def body():
        for batch, pos, d, h in [(2, 5, 12, 3), (1, 7, 8, 2), (3, 4, 16, 8)]:
            x = torch.randn(batch, pos, d, generator=gen)
            describe = f"x of shape {(batch, pos, d)}, n_heads={h}"
            out = _call(fn, (x, h), describe)
            want = x.view(batch, pos, h, d // h).transpose(1, 2)
            mistakes = [
                (
                    "you reshaped straight to [batch, n_heads, pos, d_head], which cuts the "
                    "sequence into pieces instead of the features of each token; view as "
                    "[batch, pos, n_heads, d_head] first, then transpose(1, 2)",
                    x.reshape(batch, h, pos, d // h),
                ),
                (
                    "the head axis must come before the position axis: transpose(1, 2) after "
                    "the view",
                    x.view(batch, pos, h, d // h),
                ),
            ]
            _compare(out, want, describe, mistakes)
        return "correct on 3 shapes: each head holds its own slice of every token's features."

    return _run("check_split_heads", body, strict, verbose)


def check_multi_head_attention(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(x, W_Q, W_K, W_V, W_O, n_heads)``: multi-head self-attention without
    biases or masks. ``x`` is ``[batch, pos, d_model]``, each weight ``[d_model, d_model]``
    (used as ``x @ W``); the result is ``[batch, pos, d_model]``."""
    gen = torch.Generator().manual_seed(1)

    def body():
        for batch, pos, d, h in [(2, 5, 12, 3), (1, 6, 16, 4), (3, 3, 8, 1)]:
            x = torch.randn(batch, pos, d, generator=gen)
            W = [torch.randn(d, d, generator=gen) / math.sqrt(d) for _ in range(4)]
            describe = f"x of shape {(batch, pos, d)}, n_heads={h}"
            out = _call(fn, (x, *W, h), describe)
            want = _mha_reference(x, *W, h)
            mistakes = [
                (
                    f"you divided the scores by sqrt(d_model) = sqrt({d}); each head compares "
                    f"vectors of d_head = d_model / n_heads = {d // h} features, so divide by "
                    f"sqrt({d // h})",
                    _mha_reference(x, *W, h, scale_by=d),
                ),
                (
                    "the heads were cut out of the sequence, not out of the features: view as "
                    "[batch, pos, n_heads, d_head] and transpose(1, 2)",
                    _mha_reference(x, *W, h, transpose=False),
                ),
                (
                    "the heads were put back together without moving the head axis back: "
                    "transpose(1, 2) before reshaping to [batch, pos, d_model]",
                    _mha_reference(x, *W, h, merge=False),
                ),
                (
                    "the output projection W_O is missing: multiply the concatenated heads by W_O",
                    _mha_reference(x, *W, h, project=False),
                ),
            ]
            _compare(out, want, describe, mistakes)
        return "correct with 3, 4 and 1 heads."

    return _run("check_multi_head_attention", body, strict, verbose)


# --- Chapter 9: layer norm -------------------------------------------------------------------


def _layer_norm_variant(
    x, gain, bias, eps, *, dim=-1, unbiased=False, eps_outside=False, affine=True
):
    x = x.double()
    mu = x.mean(dim=dim, keepdim=True)
    var = x.var(dim=dim, keepdim=True, unbiased=unbiased)
    sigma = var.sqrt() + eps if eps_outside else (var + eps).sqrt()
    z = (x - mu) / sigma
    return z * gain.double() + bias.double() if affine else z


def check_layer_norm(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(x, gain, bias, eps)``: layer norm over the last axis of ``x [..., d_model]``,
    ``gain * (x - mean) / sqrt(var + eps) + bias`` with the biased variance (divide by
    ``d_model``), as ``nn.LayerNorm`` computes it."""
    gen = torch.Generator().manual_seed(2)

    def body():
        for shape, scale in [((4, 6), 3.0), ((2, 5, 8), 1.0), ((3, 7, 4), 1e-3)]:
            d = shape[-1]
            x = (torch.randn(*shape, generator=gen) + 2.0) * scale
            gain, bias = torch.randn(d, generator=gen), torch.randn(d, generator=gen)
            eps = 1e-5
            describe = f"x of shape {shape} with features of size about {scale:g}, eps={eps}"
            out = _call(fn, (x, gain, bias, eps), describe)
            want = _layer_norm_variant(x, gain, bias, eps)
            mistakes = [
                (
                    "you used the unbiased variance (dividing by d_model - 1); layer norm divides "
                    "by d_model: x.var(dim=-1, unbiased=False)",
                    _layer_norm_variant(x, gain, bias, eps, unbiased=True),
                ),
                (
                    "eps belongs inside the square root, sqrt(var + eps); adding it to the "
                    "standard deviation changes the result when the features are tiny",
                    _layer_norm_variant(x, gain, bias, eps, eps_outside=True),
                ),
                (
                    "the statistics were taken over the wrong axis: each token is normalized "
                    "over its own d_model features, the last axis (dim=-1)",
                    _layer_norm_variant(x, gain, bias, eps, dim=0),
                ),
                (
                    "the statistics were taken over the wrong axis: each token is normalized "
                    "over its own d_model features, the last axis (dim=-1)",
                    _layer_norm_variant(x, gain, bias, eps, dim=-2),
                ),
                (
                    "the gain and bias are missing: multiply the z-scores by gain, then add bias",
                    _layer_norm_variant(x, gain, bias, eps, affine=False),
                ),
                (
                    "gain and bias are swapped: the result is gain * z + bias",
                    _layer_norm_variant(x, bias, gain, eps),
                ),
            ]
            _compare(out, want, describe, mistakes)
        return "correct on 3 inputs, including tiny features where eps matters."

    return _run("check_layer_norm", body, strict, verbose)


# --- Chapter 10: the feed-forward network and the block --------------------------------------


def check_feed_forward(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(h, W_1, b_1, W_2, b_2)``: the position-wise network
    ``relu(h @ W_1 + b_1) @ W_2 + b_2`` for ``h [..., d_model]``, ``W_1 [d_model, d_mlp]``,
    ``b_1 [d_mlp]``, ``W_2 [d_mlp, d_model]``, ``b_2 [d_model]``."""
    gen = torch.Generator().manual_seed(3)

    def body():
        for shape, d_mlp in [((5, 6), 10), ((2, 4, 8), 12), ((3, 1, 4), 16)]:
            d = shape[-1]
            h = torch.randn(*shape, generator=gen)
            W_1, b_1 = torch.randn(d, d_mlp, generator=gen), torch.randn(d_mlp, generator=gen)
            W_2, b_2 = torch.randn(d_mlp, d, generator=gen), torch.randn(d, generator=gen)
            describe = f"h of shape {shape}, d_mlp={d_mlp}"
            out = _call(fn, (h, W_1, b_1, W_2, b_2), describe)
            hd, W1, b1, W2, b2 = (t.double() for t in (h, W_1, b_1, W_2, b_2))
            want = torch.relu(hd @ W1 + b1) @ W2 + b2
            mistakes = [
                (
                    "the ReLU is missing: without it the two layers collapse into one linear map",
                    (hd @ W1 + b1) @ W2 + b2,
                ),
                (
                    "the ReLU belongs between the two layers only, not after W_2",
                    torch.relu(torch.relu(hd @ W1 + b1) @ W2 + b2),
                ),
                ("b_1 is missing: add it before the ReLU", torch.relu(hd @ W1) @ W2 + b2),
                ("b_2 is missing", torch.relu(hd @ W1 + b1) @ W2),
            ]
            _compare(out, want, describe, mistakes)
        return "correct on 3 inputs, each position transformed on its own."

    return _run("check_feed_forward", body, strict, verbose)


def _block_variants(x, attn, mlp, ln1, ln2):
    def pre(x):
        h = x + attn(ln1(x))
        return h + mlp(ln2(h))

    def post(x):
        h = ln1(x + attn(x))
        return ln2(h + mlp(h))

    def no_residual(x):
        return mlp(ln2(attn(ln1(x))))

    def normalized_residual(x):
        a = ln1(x)
        h = a + attn(a)
        b = ln2(h)
        return b + mlp(b)

    def parallel(x):
        return x + attn(ln1(x)) + mlp(ln2(x))

    return pre(x), [
        (
            "this is post-LN, LN(x + sublayer(x)); the pre-LN block normalizes the sublayer's "
            "input and adds its output to the un-normalized stream: x + sublayer(LN(x))",
            post(x),
        ),
        (
            "the residual connections are missing: add each sublayer's output to its input",
            no_residual(x),
        ),
        (
            "the residual adds the normalized vector; add to the stream itself: "
            "h = x + attn(LN1(x)), not LN1(x) + attn(LN1(x))",
            normalized_residual(x),
        ),
        (
            "both sublayers read the block's input; the feed-forward network must read the "
            "stream after attention has been added: h = x + attn(LN1(x)), then h + mlp(LN2(h))",
            parallel(x),
        ),
    ]


def check_pre_ln_block(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(x, attn, mlp, ln1, ln2)``: one pre-LN block given its parts as functions
    of ``[batch, pos, d_model]`` tensors (``attn`` is self-attention returning only its
    output). Expected: ``h = x + attn(ln1(x))`` then ``h + mlp(ln2(h))``."""
    from .layers import FeedForward, LayerNorm, MultiHeadAttention

    d = 8
    with torch.random.fork_rng(devices=[]):  # leave the reader's random state alone
        torch.manual_seed(4)
        attention, network = MultiHeadAttention(d, 2), FeedForward(d, 16)
        norms = [LayerNorm(d), LayerNorm(d)]
        with torch.no_grad():
            for ln in norms:
                ln.gain.uniform_(0.5, 1.5)
                ln.bias.normal_(0, 0.3)

    def attn(h):
        return attention(h)[0]

    def body():
        gen = torch.Generator().manual_seed(5)
        for shape in [(2, 5, d), (1, 3, d)]:
            x = torch.randn(*shape, generator=gen) * 2
            describe = f"x of shape {shape}"
            with torch.no_grad():
                out = _call(fn, (x, attn, network, *norms), describe)
                want, mistakes = _block_variants(x, attn, network, *norms)
            _compare(out, want, describe, mistakes)
        return "correct: attention then the feed-forward network, each added into the stream."

    return _run("check_pre_ln_block", body, strict, verbose)


# --- Chapter 11: cross-attention -------------------------------------------------------------


def _cross(
    x, memory, W_Q, W_K, W_V, src_mask, *, swap=False, causal=False, scale=True, use_mask=True
):
    x, memory = x.double(), memory.double()
    if swap:
        x, memory = memory, x
    q, k, v = x @ W_Q.double(), memory @ W_K.double(), memory @ W_V.double()
    scores = q @ k.transpose(-2, -1)
    if scale:
        scores = scores / math.sqrt(q.shape[-1])
    allowed = torch.ones(scores.shape[-2:], dtype=torch.bool)
    if causal:
        allowed = torch.ones_like(allowed).tril()
    if use_mask and not swap:
        allowed = allowed & src_mask[:, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def check_cross_attention(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(x, memory, W_Q, W_K, W_V, src_mask)``: one head of cross-attention.

    ``x [batch, tgt_pos, d_model]`` is the decoder stream, ``memory [batch, src_pos,
    d_model]`` the encoder output, the weights are ``[d_model, d_k]`` (used as ``x @ W``)
    and ``src_mask [batch, src_pos]`` is True at real source tokens. Queries come from the
    decoder, keys and values from the encoder:
    ``softmax((x W_Q)(memory W_K)^T / sqrt(d_k))`` over the real source tokens, times
    ``memory W_V``; the result is ``[batch, tgt_pos, d_k]``."""
    gen = torch.Generator().manual_seed(6)

    def body():
        for batch, tgt, src, d, d_k in [(2, 3, 5, 8, 4), (3, 6, 4, 12, 6)]:
            x = torch.randn(batch, tgt, d, generator=gen)
            memory = torch.randn(batch, src, d, generator=gen)
            W = [torch.randn(d, d_k, generator=gen) / math.sqrt(d) for _ in range(3)]
            src_mask = torch.ones(batch, src, dtype=torch.bool)
            src_mask[0, -2:] = False  # the first source is padded
            args = (x, memory, *W, src_mask)
            describe = f"x {tuple(x.shape)}, memory {tuple(memory.shape)}, d_k={d_k}"
            out = _call(fn, args, describe)
            want = _cross(*args)
            mistakes = [
                (
                    "the queries came from the encoder output and the keys and values from the "
                    "decoder; in cross-attention Q = x W_Q (decoder), K = memory W_K and "
                    "V = memory W_V (encoder)",
                    _cross(*args, swap=True),
                ),
                (
                    "a causal mask has no place in cross-attention: every target position may "
                    "read the whole source, which is known in full before decoding starts",
                    _cross(*args, causal=True),
                ),
                (
                    "the source padding is attended to: fill the scores of keys where src_mask "
                    "is False with -inf",
                    _cross(*args, use_mask=False),
                ),
                (
                    f"the scores were not divided by sqrt(d_k) = sqrt({d_k})",
                    _cross(*args, scale=False),
                ),
            ]
            _compare(out, want, describe, mistakes)
        return "correct: queries from the decoder, keys and values from the encoder."

    return _run("check_cross_attention", body, strict, verbose)
