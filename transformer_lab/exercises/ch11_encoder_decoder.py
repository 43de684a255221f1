"""Checkers for chapter 11, the encoder-decoder Transformer: one head of cross-attention,
the score of an output under the model (beam search compares these), the keys and values
of cross-attention that can be kept for a whole sentence, label-smoothed cross-entropy,
and the smallest paired margin of a finding over seeds."""

from __future__ import annotations

import math

import torch

from transformer_lab.exercises.runner import (
    CheckResult,
    WrongAnswer,
    as_number,
    call,
    compare,
    need_tensor,
    run_check,
)

__all__ = [
    "check_cross_attention",
    "check_sequence_score",
    "check_cross_attention_cache",
    "check_label_smoothing",
    "check_smallest_margin",
]


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
            out = need_tensor(call(fn, args, describe))
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
            compare(out, want, describe, mistakes)
        return "correct: queries from the decoder, keys and values from the encoder."

    return run_check("check_cross_attention", body, strict, verbose)


def _score(log_probs, outputs, eos_id, *, through_eos=True, stop=True, mean=False):
    picked = log_probs.double().gather(-1, outputs[..., None])[..., 0]  # [batch, n]
    is_eos = (outputs == eos_id).long()
    keep = torch.ones_like(picked, dtype=torch.bool)
    if stop:
        keep = (is_eos.cumsum(1) - is_eos) == 0  # up to and including the first <eos>
    if not through_eos:
        keep = keep & (is_eos == 0)
    total = (picked * keep).sum(1)
    return total / keep.sum(1) if mean else total


def check_sequence_score(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(log_probs, outputs, eos_id)``: the log-probability of each output under
    the model, as beam search scores it. ``log_probs [batch, n, d_vocab]`` are the decoder's
    log-softmax outputs under teacher forcing, ``outputs [batch, n]`` the output ids (no
    ``<bos>``); the score of a row is the sum of the log-probabilities of its tokens up to
    and including its first ``<eos>``; what follows it is padding. Returns ``[batch]``."""
    gen = torch.Generator().manual_seed(11)
    eos = 2

    def body():
        for batch, n, d_vocab in [(3, 6, 7), (4, 5, 9)]:
            log_probs = torch.log_softmax(torch.randn(batch, n, d_vocab, generator=gen), -1)
            outputs = torch.randint(3, d_vocab, (batch, n), generator=gen)
            outputs[0, 2] = eos  # stops early, then padding and even a second <eos>
            outputs[0, 3:] = 0
            outputs[0, 4] = eos
            outputs[1, -1] = eos  # stops at the last position; the last row never stops
            describe = f"log_probs {tuple(log_probs.shape)}, outputs {tuple(outputs.shape)}"
            out = need_tensor(call(fn, (log_probs, outputs, eos), describe), "a [batch] tensor")
            args = (log_probs, outputs, eos)
            mistakes = [
                (
                    "tokens after the first <eos> were counted: they are padding, the output "
                    "ended at its <eos>",
                    _score(*args, stop=False),
                ),
                (
                    "the <eos> itself was left out: its probability is part of the output's "
                    "(the model chose to stop there)",
                    _score(*args, through_eos=False),
                ),
                (
                    "this is the mean log-probability per token; the score is the sum "
                    "(a length penalty is a separate choice)",
                    _score(*args, mean=True),
                ),
            ]
            compare(out, _score(*args), describe, mistakes)
        return "correct: the sum of log-probabilities up to and including the first <eos>."

    return run_check("check_sequence_score", body, strict, verbose)


def _small_encoder_decoder():
    from transformer_lab.models import EncoderDecoder, TransformerConfig

    with torch.random.fork_rng(devices=[]):  # leave the reader's random state alone
        torch.manual_seed(2)
        cfg = TransformerConfig(9, 9, d_model=8, n_heads=2, d_mlp=16, n_layers_enc=2,
                                n_layers_dec=3, norm_first=True, pad_id=0)  # fmt: skip
        return EncoderDecoder(cfg).eval()


def check_cross_attention_cache(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(model, memory)``: the keys and values of cross-attention that a decoder can
    compute once per sentence. ``model`` is an ``EncoderDecoder``, ``memory [batch, src_pos,
    d_model]`` its encoder output; return a list with one ``(K, V)`` per decoder layer, each
    ``[batch, n_heads, src_pos, d_head]``: layer ``i``'s ``memory @ W_K + b_K`` (and ``W_V``,
    ``b_V``) split into heads, equal to what the hooks ``decoder.blocks.i.cross_attn.k`` and
    ``.v`` capture at every decoding step."""
    from transformer_lab.hooks import capture

    model = _small_encoder_decoder()
    src = torch.tensor([[3, 4, 5, 6], [7, 8, 0, 0]])
    n_layers = len(model.decoder.blocks)
    names = [f"decoder.blocks.{i}.cross_attn.{kv}" for i in range(n_layers) for kv in "kv"]
    with torch.no_grad():
        memory = model.encode(src)
        with capture(model, names) as c:
            model.decode(torch.tensor([[1], [1]]), memory, model.source_mask(src))
    want = [(c[names[2 * i]], c[names[2 * i + 1]]) for i in range(n_layers)]

    def heads(t, attn):
        return t.view(t.shape[0], t.shape[1], attn.n_heads, -1).transpose(1, 2)

    def body():
        describe = f"a model with {n_layers} decoder layers, memory {tuple(memory.shape)}"
        with torch.no_grad():
            out = call(fn, (model, memory), describe)
        if not isinstance(out, (list, tuple)) or len(out) != n_layers:
            got = len(out) if isinstance(out, (list, tuple)) else type(out).__name__
            raise WrongAnswer(
                f"return one (K, V) pair per decoder layer, {n_layers} here; got {got} "
                f"({describe})."
            )
        first = model.decoder.blocks[0].cross_attn
        for i, ((k_want, v_want), pair) in enumerate(zip(want, out, strict=True)):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise WrongAnswer(f"layer {i}: return a pair (K, V), got {type(pair).__name__}.")
            attn = model.decoder.blocks[i].cross_attn
            for name, got, ref, W, b in [
                ("K", pair[0], k_want, attn.W_K, attn.b_K),
                ("V", pair[1], v_want, attn.W_V, attn.b_V),
            ]:
                got = need_tensor(got, f"{name} as a tensor")
                W0, b0 = (first.W_K, first.b_K) if name == "K" else (first.W_V, first.b_V)
                mistakes = [
                    (
                        f"layer {i}'s {name} used layer 0's weights: every layer reads the same "
                        f"memory but projects it with its own W_{name}",
                        heads(memory @ W0 + b0, attn),
                    ),
                    (f"the bias b_{name} is missing", heads(memory @ W, attn)),
                    (
                        f"{name} is not split into heads: view it as [batch, src_pos, n_heads, "
                        "d_head] and move the heads before the positions",
                        memory @ W + b,
                    ),
                ]
                compare(got.detach(), ref, f"layer {i}, {name}; {describe}", mistakes)
        return (
            f"correct: {n_layers} layers, each its own W_K and W_V applied to the same memory, "
            "computed once per sentence."
        )

    return run_check("check_cross_attention_cache", body, strict, verbose)


def _smoothed(logits, targets, eps, pad_id, *, others=False, pad=True, total=False, plain=False):
    log_p = torch.log_softmax(logits.double(), dim=-1)
    nll = -log_p.gather(-1, targets.clamp(min=0)[..., None])[..., 0]
    if others:  # eps spread over the other words only
        d_vocab = logits.shape[-1]
        rest = (-log_p.sum(-1) - nll) / (d_vocab - 1)
        loss = (1 - eps) * nll + eps * rest
    elif plain:  # eps added on top, the reference term not scaled down
        loss = nll + eps * -log_p.mean(-1)
    else:
        loss = (1 - eps) * nll + eps * -log_p.mean(-1)
    keep = targets != pad_id if pad else torch.ones_like(targets, dtype=torch.bool)
    return loss[keep].sum() if total else loss[keep].mean()


def check_label_smoothing(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(logits, targets, eps, pad_id)``: label-smoothed cross-entropy as
    ``seq2seq_loss(..., label_smoothing=eps)`` computes it. ``logits [batch, pos, d_vocab]``,
    ``targets [batch, pos]`` with ``pad_id`` at padding. The target distribution is
    ``1 - eps`` on the reference plus ``eps / d_vocab`` on every word (the reference
    included); the loss is its cross-entropy with the softmax, averaged over the positions
    that are not padding. Returns a scalar."""
    gen = torch.Generator().manual_seed(12)

    def body():
        for batch, pos, d_vocab, eps in [(2, 5, 7, 0.1), (3, 4, 11, 0.3)]:
            logits = torch.randn(batch, pos, d_vocab, generator=gen) * 2
            targets = torch.randint(1, d_vocab, (batch, pos), generator=gen)
            targets[0, -2:] = 0  # padding
            args = (logits, targets, eps, 0)
            describe = f"logits {tuple(logits.shape)}, eps={eps}, pad_id=0"
            out = call(fn, args, describe)
            value = as_number(out)
            if value is None:
                raise WrongAnswer(f"return one number (a scalar tensor); got {out!r:.60}.")
            got = torch.tensor(float(value), dtype=torch.float64)
            mistakes = [
                (
                    "eps was spread over the other d_vocab - 1 words; here (as in PyTorch and "
                    "Szegedy et al.) it is spread over all d_vocab words, the reference included",
                    _smoothed(*args, others=True),
                ),
                ("padding positions were counted: average over targets != pad_id only",
                 _smoothed(*args, pad=False)),
                ("this is the sum over positions; take the mean over the real ones",
                 _smoothed(*args, total=True)),
                (
                    "the reference's term keeps weight 1: the target is (1 - eps) on the "
                    "reference plus eps spread evenly, so scale its cross-entropy by 1 - eps",
                    _smoothed(*args, plain=True),
                ),
                ("eps was ignored: this is the plain cross-entropy", _smoothed(*args[:2], 0.0, 0)),
            ]  # fmt: skip
            compare(got, _smoothed(*args), describe, mistakes)
        return "correct: (1 - eps) on the reference, eps spread over the vocabulary, padding out."

    return run_check("check_label_smoothing", body, strict, verbose)


def check_smallest_margin(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(ours, theirs)``: two lists of one number per seed (the same seeds, in the
    same order); return the smallest difference ``ours[i] - theirs[i]`` over the seeds. It
    is positive exactly when the finding "ours is higher" held in every seed, and says by how
    much at least: the form of the chapter's claims over seeds."""
    cases = [
        ([0.74, 0.82, 0.80, 0.83, 0.77], [0.65, 0.42, 0.68, 0.56, 0.52]),
        ([3.0, 1.0, 4.0], [2.5, 1.5, 0.5]),
        ([10.0, 20.0], [9.0, 12.0]),
    ]

    def body():
        for ours, theirs in cases:
            describe = f"ours={ours}, theirs={theirs}"
            value = as_number(call(fn, (list(ours), list(theirs)), describe))
            if value is None:
                raise WrongAnswer(f"return one number ({describe}).")
            diffs = [a - b for a, b in zip(ours, theirs, strict=True)]
            want = min(diffs)
            if abs(value - want) < 1e-9:
                continue
            wrong = [
                (min(ours) - max(theirs), "the seeds were not paired: compare each seed's "
                 "two numbers, ours[i] - theirs[i], then take the smallest"),
                (sum(diffs) / len(diffs), "this is the mean difference; a finding holds in "
                 "every seed only if the smallest difference is positive"),
                (max(diffs), "this is the largest difference; take the smallest"),
                (min(b - a for a, b in zip(ours, theirs, strict=True)), "the sign is reversed: "
                 "ours[i] - theirs[i]"),
                (min(ours) - min(theirs), "the seeds were not paired: compare each seed's two "
                 "numbers, ours[i] - theirs[i], then take the smallest"),
            ]  # fmt: skip
            for number, message in wrong:
                if abs(value - number) < 1e-9:
                    raise WrongAnswer(f"{message} ({describe}: you have {value:.3g}).")
            raise WrongAnswer(f"expected {want:.3g}, got {value:.3g} ({describe}).")
        return "correct: the smallest paired difference over the seeds."

    return run_check("check_smallest_margin", body, strict, verbose)
