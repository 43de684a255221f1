"""Greedy and beam-search decoding for encoder-decoder models.

Both work with any model that has the three methods of
:class:`~transformer_lab.models.EncoderDecoder`::

    memory = model.encode(src, src_mask)                 # [batch, src_pos, d_model]
    logits = model.decode(tgt, memory, src_mask)         # [batch, tgt_pos, d_vocab]
    src_mask = model.source_mask(src)                    # padding mask or None

The source is encoded once; each step runs the decoder on the prefix generated so far and
takes the distribution of the next token from its last position.

``greedy_decode`` takes the most probable token at every step. ``beam_search`` keeps the
``beam_size`` best prefixes by total log-probability, sets aside each hypothesis that ends
in ``<eos>``, and returns the best finished one; with ``length_penalty = alpha > 0`` a
hypothesis of ``L`` tokens is ranked by ``log p / L**alpha``, so longer outputs are not
penalised merely for having more factors below one. Outputs leave out the leading
``<bos>``, keep the ``<eos>`` and are padded with ``pad_id`` after it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from transformer_lab.checks import check_token_range, finite_number, integer, token_ids
from transformer_lab.device import evaluating

__all__ = ["Hypothesis", "greedy_decode", "beam_search", "beam_hypotheses", "sequence_score"]


@dataclass(frozen=True)
class Hypothesis:
    """One decoded output: its tokens (no ``<bos>``), its total log-probability and its
    score (the log-probability divided by ``len(tokens) ** length_penalty``)."""

    tokens: tuple[int, ...]
    log_prob: float
    score: float
    finished: bool  # ended with <eos> (False: stopped by max_len)


def _check_model(model, **ids) -> None:
    """An encoder-decoder, and each of ``ids`` (``bos_id=...``) a token id of its target
    vocabulary (when its config names ``d_vocab_tgt``)."""
    if not all(callable(getattr(model, name, None)) for name in ("encode", "decode")):
        raise TypeError(
            "model must be an encoder-decoder with encode(src) and decode(tgt, memory), "
            f"got {type(model).__name__}"
        )
    d_vocab = getattr(getattr(model, "config", None), "d_vocab_tgt", None)
    for name, value in ids.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int token id, got {type(value).__name__}")
        if value < 0 or (isinstance(d_vocab, int) and value >= d_vocab):
            raise ValueError(f"{name}={value} is not a token id of the model's {d_vocab} targets")


def _check(src: torch.Tensor, max_len: int, beam_size: int = 1, length_penalty: float = 0.0):
    if not isinstance(src, torch.Tensor) or src.dim() != 2 or src.shape[1] == 0:
        shape = tuple(src.shape) if isinstance(src, torch.Tensor) else type(src).__name__
        raise ValueError(f"src must be a non-empty [batch, src_pos] tensor of ids, got {shape}")
    if src.dtype.is_floating_point:
        raise TypeError(f"src must hold integer token ids, got {src.dtype}")
    integer(max_len, "max_len", minimum=1)
    integer(beam_size, "beam_size", minimum=1)
    finite_number(length_penalty, "length_penalty", at_least=0)


def _next_log_probs(model, tokens, memory, src_mask) -> torch.Tensor:
    """Log-probabilities of the next token after each prefix, ``[batch, d_vocab]``."""
    logits = model.decode(tokens, memory, src_mask)  # [batch, tgt_pos, d_vocab]
    return F.log_softmax(logits[:, -1].float(), dim=-1)


def _encode(model, src):
    src_mask = model.source_mask(src) if hasattr(model, "source_mask") else None
    return model.encode(src, src_mask), src_mask


@torch.no_grad()
def greedy_decode(
    model, src: torch.Tensor, *, bos_id: int, eos_id: int, max_len: int = 50, pad_id: int = 0
) -> torch.Tensor:
    """Decode every source in ``src [batch, src_pos]`` by taking the most probable token at
    each step. Returns ``[batch, n]`` ids (``n <= max_len``): no ``<bos>``, decoding of a
    row stops at its ``<eos>`` and the rest of the row is ``pad_id``. Stops early once every
    row has produced ``<eos>``."""
    _check(src, max_len)
    _check_model(model, bos_id=bos_id, eos_id=eos_id)
    with evaluating(model):
        memory, src_mask = _encode(model, src)
        batch = src.shape[0]
        tokens = torch.full((batch, 1), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(batch, dtype=torch.bool, device=src.device)
        for _ in range(max_len):
            next_token = _next_log_probs(model, tokens, memory, src_mask).argmax(-1)  # [batch]
            next_token = next_token.masked_fill(done, pad_id)
            tokens = torch.cat([tokens, next_token[:, None]], dim=1)
            done |= next_token == eos_id
            if bool(done.all()):
                break
    return tokens[:, 1:]


def _normalise(log_prob: float, length: int, alpha: float) -> float:
    return log_prob / (length**alpha) if alpha else log_prob


def _bound(log_prob: float, max_len: int, alpha: float) -> float:
    """The best score any continuation of a prefix with this log-probability can reach:
    log-probabilities only fall as tokens are added, and with ``alpha > 0`` the divisor
    grows too, so the best case is the current log-probability at the longest length."""
    return log_prob / (max_len**alpha) if alpha else log_prob


@torch.no_grad()
def beam_hypotheses(
    model,
    src: torch.Tensor,
    *,
    bos_id: int,
    eos_id: int,
    beam_size: int = 4,
    max_len: int = 50,
    length_penalty: float = 0.0,
) -> list[list[Hypothesis]]:
    """For each source row, the hypotheses beam search finished, best first (the n-best
    list; at ``max_len`` the unfinished beams are added). See :func:`beam_search`.

    All rows and beams go through the decoder together, as a batch of
    ``batch * beam_size`` prefixes, and a row leaves the batch once its search is over; the
    bookkeeping of each row is done in Python."""
    _check(src, max_len, beam_size, length_penalty)
    _check_model(model, bos_id=bos_id, eos_id=eos_id)
    k, alpha = beam_size, length_penalty
    with evaluating(model):
        memory, src_mask = _encode(model, src)
        batch = src.shape[0]
        memory = memory.repeat_interleave(k, dim=0)  # [batch * k, src_pos, d_model]
        if src_mask is not None:
            src_mask = src_mask.repeat_interleave(k, dim=0)
        device = src.device
        live = list(range(batch))  # rows still searching; the tensors hold only their beams
        tokens = torch.full((batch * k, 1), bos_id, dtype=torch.long, device=device)
        log_p = torch.full((batch, k), -math.inf, device=device)
        log_p[:, 0] = 0.0  # one live beam per row at the start; the copies are placeholders
        finished: list[list[Hypothesis]] = [[] for _ in range(batch)]
        for step in range(1, max_len + 1):
            next_lp = _next_log_probs(model, tokens, memory, src_mask)  # [live * k, V]
            vocab = next_lp.shape[1]
            candidates = (log_p.reshape(-1, 1) + next_lp).reshape(len(live), k * vocab)
            best_lp, best_index = candidates.topk(2 * k, dim=1)  # [live, 2k], best first
            prefixes, top_lp, top_index = (
                tokens[:, 1:].tolist(),
                best_lp.tolist(),
                best_index.tolist(),
            )
            still, rows, new_tokens, new_lp = [], [], [], []
            for i, b in enumerate(live):
                extend, kept = [], 0  # (prefix row, token, log-probability) of the new beams
                for rank, (lp, index) in enumerate(zip(top_lp[i], top_index[i], strict=True)):
                    if lp == -math.inf:
                        break
                    beam, token = divmod(index, vocab)
                    if token == eos_id:
                        if rank < k:  # an <eos> only counts when it is among the best k
                            ids = (*prefixes[i * k + beam], eos_id)
                            finished[b].append(
                                Hypothesis(ids, lp, _normalise(lp, step, alpha), True)
                            )
                    elif kept < k:
                        extend.append((i * k + beam, token, lp))
                        kept += 1
                if kept == 0:
                    continue
                best = max(h.score for h in finished[b]) if finished[b] else -math.inf
                if _bound(extend[0][2], max_len, alpha) <= best:
                    continue  # no continuation can beat the best finished hypothesis
                extend += [(i * k, eos_id, -math.inf)] * (k - kept)  # placeholders
                still.append(b)
                rows += [r for r, _, _ in extend]
                new_tokens += [t for _, t, _ in extend]
                new_lp.append([lp for _, _, lp in extend])
            if not still:
                live = []
                break
            if len(still) < len(live):  # drop the finished rows from the batch
                keep = torch.tensor([live.index(b) for b in still], device=device)
                beams = (keep[:, None] * k + torch.arange(k, device=device)).reshape(-1)
                memory = memory[beams]
                src_mask = None if src_mask is None else src_mask[beams]
            index = torch.tensor(rows, device=device)
            tokens = torch.cat([tokens[index], torch.tensor(new_tokens, device=device)[:, None]], 1)
            log_p = torch.tensor(new_lp, device=device)
            live = still
        # at max_len, the unfinished beams of rows still searching become candidates
        prefixes = tokens[:, 1:].tolist()
        for i, b in enumerate(live):
            for j, lp in enumerate(log_p[i].tolist()):
                if lp > -math.inf:
                    ids = tuple(prefixes[i * k + j])
                    finished[b].append(Hypothesis(ids, lp, _normalise(lp, len(ids), alpha), False))
        return [sorted(hyps, key=lambda h: h.score, reverse=True) for hyps in finished]


def beam_search(
    model,
    src: torch.Tensor,
    *,
    bos_id: int,
    eos_id: int,
    beam_size: int = 4,
    max_len: int = 50,
    length_penalty: float = 0.0,
    pad_id: int = 0,
    return_scores: bool = False,
):
    """Beam search for every source in ``src [batch, src_pos]``.

    Keeps the ``beam_size`` most probable unfinished prefixes at each step; a prefix that
    ends in ``eos_id`` and is among the ``beam_size`` best candidates of its step is set
    aside as a finished hypothesis. Search stops when no unfinished
    prefix can still beat the best finished one (or at ``max_len``, where unfinished prefixes
    join the candidates). Hypotheses are ranked by ``log p / len**length_penalty``.

    Returns ``[batch, n]`` ids padded with ``pad_id`` (no ``<bos>``); with
    ``return_scores=True`` also the ``[batch]`` scores of the chosen hypotheses.
    With ``beam_size=1`` and ``length_penalty=0`` the result is greedy decoding's.
    """
    best = [
        hyps[0]
        for hyps in beam_hypotheses(
            model,
            src,
            bos_id=bos_id,
            eos_id=eos_id,
            beam_size=beam_size,
            max_len=max_len,
            length_penalty=length_penalty,
        )
    ]
    width = max(len(h.tokens) for h in best)
    tokens = torch.full((len(best), width), pad_id, dtype=torch.long, device=src.device)
    for b, h in enumerate(best):
        tokens[b, : len(h.tokens)] = torch.tensor(h.tokens, dtype=torch.long)
    if return_scores:
        return tokens, torch.tensor([h.score for h in best])
    return tokens


@torch.no_grad()
def sequence_score(
    model,
    src: torch.Tensor,
    outputs: torch.Tensor,
    *,
    bos_id: int,
    eos_id: int,
    length_penalty: float = 0.0,
) -> torch.Tensor:
    """Score of given outputs under the model with teacher forcing: the total
    log-probability of each row of ``outputs [batch, n]`` (ids without ``<bos>``, counted up
    to and including the first ``<eos>``), divided by ``length ** length_penalty``.
    Returns ``[batch]``."""
    if token_ids(outputs, "outputs").dim() != 2 or outputs.shape[1] == 0:
        raise ValueError(
            f"outputs must be [batch, n] with n >= 1 tokens to score, got {tuple(outputs.shape)}"
        )
    _check(src, outputs.shape[1], 1, length_penalty)
    if outputs.shape[0] != src.shape[0]:
        raise ValueError(f"outputs has batch={outputs.shape[0]} but src has batch={src.shape[0]}")
    outputs = outputs.long()
    _check_model(model)
    with evaluating(model):
        memory, src_mask = _encode(model, src)
        bos = torch.full((outputs.shape[0], 1), bos_id, dtype=torch.long, device=outputs.device)
        tgt_in = torch.cat([bos, outputs[:, :-1]], dim=1)
        log_probs = F.log_softmax(model.decode(tgt_in, memory, src_mask).float(), dim=-1)
    check_token_range(outputs, log_probs.shape[-1], "outputs")
    picked = log_probs.gather(-1, outputs[..., None])[..., 0]  # [batch, n]
    is_eos = (outputs == eos_id).long()
    after_eos = (is_eos.cumsum(1) - is_eos) > 0  # positions after the first <eos>
    total = picked.masked_fill(after_eos, 0.0).sum(1)
    lengths = (~after_eos).sum(1).float()
    return total / lengths**length_penalty if length_penalty else total
