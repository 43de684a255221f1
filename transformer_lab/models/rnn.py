"""Recurrent sequence-to-sequence models, with and without attention.

An encoder RNN reads the source; a decoder RNN starts from the encoder's final state and
writes the target one token at a time. Without attention (``attention=None``) the
decoder sees the source only through that final state: the bottleneck. With attention,
at every step t the decoder state ``s_t`` scores every encoder state ``h_j``, and

    e_t = [score(s_t, h_1), ..., score(s_t, h_n)]     # scores        [batch, src_pos]
    alpha_t = softmax(e_t)                             # weights       [batch, src_pos]
    a_t = sum_j alpha_t,j h_j                          # context       [batch, d_hidden]
    o_t = tanh(W_c [a_t; s_t])                         # combined      [batch, d_hidden]
    logits_t = W_U o_t                                 # next token    [batch, d_vocab_tgt]

(the equations of Luong et al. 2015 without input feeding; the score is dot,
multiplicative or additive from :mod:`transformer_lab.attention`). Without attention the
context is the encoder's final state at every step, ``a_t = h_n`` (as in the RNN
encoder-decoder of Cho et al. 2014), so the two models differ only in how ``a_t`` is made.

Because ``s_t`` does not depend on ``a_{t-1}``, teacher forcing runs the decoder RNN over
the whole target at once and scores all steps with one matrix product
(:meth:`Seq2Seq.all_scores`); :meth:`Seq2Seq.decode_step` does one step with
:func:`transformer_lab.attention.attend` (greedy decoding), and tests check they agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..attention import (
    AdditiveScore,
    DotScore,
    MultiplicativeScore,
    attend,
    attention_weights,
    make_score,
)
from ..exercises import WrongAnswer as _WrongAnswerError
from ..exercises import run_check as _verdict
from ..hooks import Hook

__all__ = ["Seq2SeqConfig", "Memory", "Seq2Seq", "check_rnn", "check_attention_step"]

_CELLS = {"gru": nn.GRU, "lstm": nn.LSTM}
_SCORES = (None, "dot", "multiplicative", "additive")


@dataclass(frozen=True)
class Seq2SeqConfig:
    d_vocab_src: int  # source vocabulary size
    d_vocab_tgt: int  # target vocabulary size
    d_embed: int = 64  # size of the token embeddings
    d_hidden: int = 128  # size of the RNN states (encoder and decoder)
    cell: str = "gru"  # "gru" or "lstm"
    attention: str | None = None  # None (bottleneck), "dot", "multiplicative", "additive"
    pad_id: int = 0  # padding id in both vocabularies (masked out of attention)
    bos_id: int = 1  # the decoder's first input
    eos_id: int = 2  # greedy decoding stops after this token
    max_len: int = 64  # longest output of greedy decoding

    def __post_init__(self):
        for name in ("d_vocab_src", "d_vocab_tgt", "d_embed", "d_hidden", "max_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.cell not in _CELLS:
            raise ValueError(f"cell must be one of {sorted(_CELLS)}, got {self.cell!r}")
        if self.attention not in _SCORES:
            raise ValueError(f"attention must be one of {_SCORES}, got {self.attention!r}")
        for name in ("pad_id", "bos_id", "eos_id"):
            value = getattr(self, name)
            if not 0 <= value < min(self.d_vocab_src, self.d_vocab_tgt):
                raise ValueError(f"{name}={value} is outside the vocabularies")


@dataclass
class Memory:
    """What the encoder hands the decoder."""

    states: torch.Tensor  # every encoder state h_j, zeros at padding [batch, src_pos, d_hidden]
    final: torch.Tensor | tuple[torch.Tensor, torch.Tensor]  # last real state [1, batch, d_hidden]
    mask: torch.Tensor  # True at real source tokens [batch, src_pos]


class Seq2Seq(nn.Module):
    """Encoder-decoder RNN; ``model(src, tgt_in)`` returns logits ``[batch, tgt_pos, d_vocab_tgt]``.

    ``src`` is right-padded with ``pad_id``; ``tgt_in`` starts with ``bos_id``. The hook
    ``pattern`` holds the attention weights ``[batch, tgt_pos, src_pos]`` of a forward
    pass (``run_with_cache(model, src, tgt_in)``).
    """

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        self.cfg = cfg
        rnn = _CELLS[cfg.cell]
        self.W_E_src = nn.Embedding(cfg.d_vocab_src, cfg.d_embed, padding_idx=cfg.pad_id)
        self.W_E_tgt = nn.Embedding(cfg.d_vocab_tgt, cfg.d_embed, padding_idx=cfg.pad_id)
        self.encoder = rnn(cfg.d_embed, cfg.d_hidden, batch_first=True)
        self.decoder = rnn(cfg.d_embed, cfg.d_hidden, batch_first=True)
        self.score = (
            None if cfg.attention is None else make_score(cfg.attention, cfg.d_hidden, cfg.d_hidden)
        )
        self.W_c = nn.Linear(2 * cfg.d_hidden, cfg.d_hidden)
        self.W_U = nn.Linear(cfg.d_hidden, cfg.d_vocab_tgt)
        self.pattern = Hook()

    # --- checks ---------------------------------------------------------------------------
    def _check_ids(self, ids: torch.Tensor, name: str, d_vocab: int) -> None:
        if not isinstance(ids, torch.Tensor):
            raise TypeError(f"{name} must be a tensor of token ids, got {type(ids).__name__}")
        if ids.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"{name} must hold int64 or int32 token ids, got {ids.dtype}")
        if ids.dim() != 2 or ids.shape[0] == 0 or ids.shape[1] == 0:
            raise ValueError(
                f"{name} must be a non-empty [batch, pos] tensor, got {tuple(ids.shape)}"
            )
        if int(ids.min()) < 0 or int(ids.max()) >= d_vocab:
            raise ValueError(
                f"{name} has ids in [{int(ids.min())}, {int(ids.max())}] but the vocabulary "
                f"has {d_vocab} tokens"
            )

    # --- encoder ----------------------------------------------------------------------------
    def encode(self, src: torch.Tensor, embedded: torch.Tensor | None = None) -> Memory:
        """Run the encoder over ``src [batch, src_pos]``.

        ``embedded [batch, src_pos, d_embed]``, when given, replaces ``W_E_src(src)`` (to
        take gradients with respect to the source embeddings); ``src`` still gives the
        lengths. The final state is the state after each sequence's last real token.
        """
        self._check_ids(src, "src", self.cfg.d_vocab_src)
        mask = src != self.cfg.pad_id  # [batch, src_pos]
        lengths = mask.sum(dim=1)
        if bool((lengths == 0).any()):
            raise ValueError("every source needs at least one token that is not padding")
        if bool((mask[:, 1:] & ~mask[:, :-1]).any()):
            raise ValueError("src must be right-padded: a real token follows padding")
        x = self.W_E_src(src) if embedded is None else embedded  # [batch, src_pos, d_embed]
        if x.shape != (*src.shape, self.cfg.d_embed):
            raise ValueError(
                f"embedded has shape {tuple(x.shape)}, expected {(*src.shape, self.cfg.d_embed)}"
            )
        if self.cfg.cell == "gru":
            # a left-to-right RNN's states before the padding do not depend on it, so run
            # over the padded batch and pick each row's state after its last real token
            states, _ = self.encoder(x)  # [batch, src_pos, d_hidden]
            rows = torch.arange(src.shape[0], device=src.device)
            final = states[rows, lengths - 1].unsqueeze(0)  # [1, batch, d_hidden]
            states = states * mask.unsqueeze(-1)
        else:  # the LSTM's memory cell is not among its outputs: pack the batch
            packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
            out, final = self.encoder(packed)
            states, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        return Memory(states, final, mask)  # states: [batch, src_pos, d_hidden]

    # --- decoder ----------------------------------------------------------------------------
    def _combine(self, s: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """``logits = W_U tanh(W_c [a; s])``."""
        return self.W_U(torch.tanh(self.W_c(torch.cat([context, s], dim=-1))))

    @staticmethod
    def _final_h(memory: Memory) -> torch.Tensor:
        """The encoder's last hidden state ``[batch, d_hidden]`` (for an LSTM, its h)."""
        final = memory.final[0] if isinstance(memory.final, tuple) else memory.final
        return final[0]

    def all_scores(self, s: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """Scores of every decoder step against every encoder state at once:
        ``s [batch, tgt_pos, d_hidden]``, ``keys [batch, src_pos, d_hidden]`` ->
        ``[batch, tgt_pos, src_pos]``. The same numbers as calling ``self.score`` step by
        step (a test checks it), as matrix products instead of one step at a time."""
        score = self.score
        if isinstance(score, DotScore):
            return s @ keys.transpose(1, 2)
        if isinstance(score, MultiplicativeScore):
            return (s @ score.W) @ keys.transpose(1, 2)
        if isinstance(score, AdditiveScore):
            hidden = torch.tanh(score.W_1(s).unsqueeze(2) + score.W_2(keys).unsqueeze(1))
            return score.v(hidden).squeeze(-1)  # hidden: [batch, tgt_pos, src_pos, d_attn]
        raise TypeError(f"no batched form for score {type(score).__name__}")

    def decode_step(self, prev: torch.Tensor, state, memory: Memory):
        """One decoder step: previous tokens ``prev [batch]`` and RNN ``state`` ->
        ``(logits [batch, d_vocab_tgt], new state, weights [batch, src_pos] or None)``."""
        x = self.W_E_tgt(prev).unsqueeze(1)  # [batch, 1, d_embed]
        out, state = self.decoder(x, state)
        s = out[:, 0]  # [batch, d_hidden]
        if self.score is None:
            return self._combine(s, self._final_h(memory)), state, None
        context, weights = attend(self.score, s, memory.states, mask=memory.mask)
        return self._combine(s, context), state, weights

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: logits ``[batch, tgt_pos, d_vocab_tgt]`` for every position of
        ``tgt_in [batch, tgt_pos]`` (the target shifted right, starting with ``<bos>``)."""
        self._check_ids(src, "src", self.cfg.d_vocab_src)
        self._check_ids(tgt_in, "tgt_in", self.cfg.d_vocab_tgt)
        if tgt_in.shape[0] != src.shape[0]:
            raise ValueError(f"src has batch {src.shape[0]} but tgt_in has batch {tgt_in.shape[0]}")
        memory = self.encode(src)
        s, _ = self.decoder(self.W_E_tgt(tgt_in), memory.final)  # [batch, tgt_pos, d_hidden]
        if self.score is None:  # the same context, the final encoder state, at every step
            context = self._final_h(memory).unsqueeze(1).expand_as(s)
            return self._combine(s, context)  # [batch, tgt_pos, d_vocab_tgt]
        scores = self.all_scores(s, memory.states)  # [batch, tgt_pos, src_pos]
        weights = self.pattern(attention_weights(scores, memory.mask.unsqueeze(1)))
        context = weights @ memory.states  # [batch, tgt_pos, d_hidden]
        return self._combine(s, context)  # [batch, tgt_pos, d_vocab_tgt]

    @torch.no_grad()
    def greedy_decode(self, src: torch.Tensor, max_len: int | None = None):
        """Greedy decoding: feed back the most likely token until ``<eos>`` or ``max_len``.

        Returns ``(ids, weights)``: ``ids [batch, out_pos]`` without ``<bos>``, each row
        ending with ``<eos>`` (when produced in time) then padding; ``weights [batch,
        out_pos, src_pos]`` of attention (zeros after a row's ``<eos>``), or None.
        """
        max_len = self.cfg.max_len if max_len is None else max_len
        if not isinstance(max_len, int) or max_len <= 0:
            raise ValueError(f"max_len must be a positive int, got {max_len!r}")
        memory = self.encode(src)
        batch = src.shape[0]
        prev = torch.full((batch,), self.cfg.bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(batch, dtype=torch.bool, device=src.device)
        state, ids, all_weights = memory.final, [], []
        for _ in range(max_len):
            logits, state, weights = self.decode_step(prev, state, memory)
            prev = logits.argmax(dim=-1).masked_fill(done, self.cfg.pad_id)  # [batch]
            ids.append(prev)
            if weights is not None:
                all_weights.append(weights.masked_fill(done[:, None], 0.0))
            done = done | (prev == self.cfg.eos_id)
            if bool(done.all()):
                break
        weights = torch.stack(all_weights, dim=1) if all_weights else None
        return torch.stack(ids, dim=1), weights

    def greedy_ids(self, src: torch.Tensor) -> torch.Tensor:
        """Only the ids of :meth:`greedy_decode` (for ``numbers.predict``)."""
        return self.greedy_decode(src)[0]


# --- Exercise checkers (chapters 2 and 3) -----------------------------------------------------
# Each runs the reader's function on seeded random inputs, compares with a reference, names
# the usual mistake when they differ, prints the verdict and returns a CheckResult.


def _call_reader(fn, *args):
    try:
        return fn(*(a.clone() if isinstance(a, torch.Tensor) else a for a in args))
    except NotImplementedError:
        raise _WrongAnswerError(
            "your function is not written yet (it raised NotImplementedError)."
        ) from None
    except Exception as err:  # the reader's bug, reported in words
        raise _WrongAnswerError(f"your function raised {type(err).__name__}: {err}") from None


def _first_match(got, want, mistakes, describe):
    if not isinstance(got, torch.Tensor):
        raise _WrongAnswerError(
            f"your function returned {type(got).__name__}, expected a tensor ({describe})."
        )
    if got.shape != want.shape:
        for message, value in mistakes:
            if value.shape == got.shape and torch.allclose(got, value, atol=1e-5):
                raise _WrongAnswerError(f"{message} ({describe})")
        raise _WrongAnswerError(
            f"expected shape {tuple(want.shape)}, got {tuple(got.shape)} ({describe})."
        )
    if torch.allclose(got, want, atol=1e-5, rtol=1e-4):
        return
    for message, value in mistakes:
        if value.shape == got.shape and torch.allclose(got, value, atol=1e-5, rtol=1e-4):
            raise _WrongAnswerError(f"{message} ({describe})")
    diff = (got - want).abs().max().item()
    raise _WrongAnswerError(f"values differ from the reference by up to {diff:.3g} ({describe}).")


def check_rnn(fn, *, strict: bool = False, verbose: bool = True, seed: int = 0):
    """Check ``fn(x, h0, W, U, b)`` -> all states ``[batch, pos, d_hidden]`` of the simple
    RNN ``h_t = tanh(W h_{t-1} + U x_t + b)`` for ``x [batch, pos, d_in]``, ``h0 [batch,
    d_hidden]``, against ``torch.nn.RNN`` with the same weights."""

    def body():
        gen = torch.Generator().manual_seed(seed)
        for batch, pos, d_in, d_hidden in [(2, 5, 3, 4), (1, 1, 4, 4), (3, 7, 2, 6)]:
            x = torch.randn(batch, pos, d_in, generator=gen)
            h0 = torch.randn(batch, d_hidden, generator=gen)
            W = torch.randn(d_hidden, d_hidden, generator=gen) / d_hidden**0.5
            U = torch.randn(d_hidden, d_in, generator=gen)
            b = torch.randn(d_hidden, generator=gen)
            reference = nn.RNN(d_in, d_hidden, batch_first=True)
            with torch.no_grad():
                reference.weight_hh_l0.copy_(W)
                reference.weight_ih_l0.copy_(U)
                reference.bias_ih_l0.copy_(b)
                reference.bias_hh_l0.zero_()
                want, _ = reference(x, h0[None])
            describe = f"x {tuple(x.shape)}, h0 {tuple(h0.shape)}"
            got = _call_reader(fn, x, h0, W, U, b)
            linear, fixed_h, states = [], [], [h0]
            for t in range(pos):
                linear.append(states[-1] @ W.T + x[:, t] @ U.T + b)
                states.append(torch.tanh(linear[-1]))
                fixed_h.append(torch.tanh(h0 @ W.T + x[:, t] @ U.T + b))
            mistakes = [
                (
                    "you returned only the last state; return the state after every step",
                    want[:, -1],
                ),
                (
                    "the states include h0 as the first position; return h_1 .. h_n only",
                    torch.stack(states[:-1], 1),
                ),
                ("the tanh is missing (or applied in the wrong place)", torch.stack(linear, 1)),
                (
                    "every step starts from h0: feed each new state back in as h_{t-1}",
                    torch.stack(fixed_h, 1),
                ),
            ]
            _first_match(got, want, mistakes, describe)
        return "your RNN matches torch.nn.RNN on 3 random inputs."

    return _verdict("check_rnn", body, strict, verbose)


def check_attention_step(fn, *, strict: bool = False, verbose: bool = True, seed: int = 0):
    """Check ``fn(s, H, mask)`` -> ``(context [batch, d], weights [batch, src_pos])``: one
    step of dot-product attention of decoder states ``s [batch, d]`` over encoder states
    ``H [batch, src_pos, d]``, with ``mask [batch, src_pos]`` True at real tokens, against
    :func:`transformer_lab.attention.attend`."""
    from ..attention import DotScore

    def body():
        gen = torch.Generator().manual_seed(seed)
        for batch, src_pos, d in [(2, 5, 4), (3, 1, 6), (4, 7, 3)]:
            s = torch.randn(batch, d, generator=gen)
            H = torch.randn(batch, src_pos, d, generator=gen)
            lengths = torch.randint(1, src_pos + 1, (batch,), generator=gen)
            lengths[0] = src_pos
            mask = torch.arange(src_pos)[None] < lengths[:, None]
            context, weights = attend(DotScore(), s, H, mask=mask)
            describe = f"s {tuple(s.shape)}, H {tuple(H.shape)}, source lengths {lengths.tolist()}"
            got = _call_reader(fn, s, H, mask)
            if not isinstance(got, tuple) or len(got) != 2:
                raise _WrongAnswerError("return a pair (context, weights).")
            scores = (H @ s[:, :, None])[..., 0]
            unmasked = torch.softmax(scores, -1)
            mean = (H * mask[..., None]).sum(1) / lengths[:, None]
            weight_mistakes = [
                (
                    "the padding is not masked: set scores of padded positions to -inf before the "
                    "softmax",
                    unmasked,
                ),
                (
                    "the mask is the wrong way round: True means a real token, one that may be "
                    "attended to",
                    torch.softmax(scores.masked_fill(mask, float("-inf")), -1).nan_to_num(0.0),
                ),
                (
                    "these are the scores, not the weights: apply a softmax over the source "
                    "positions",
                    scores.masked_fill(~mask, 0.0),
                ),
            ]
            _first_match(got[1], weights, weight_mistakes, describe + "; weights")
            context_mistakes = [
                (
                    "the context is the plain mean of the encoder states (mean pooling); weight "
                    "each state by its attention weight",
                    mean,
                ),
                (
                    "the context sums the encoder states weighted by the scores, not by the "
                    "weights",
                    (scores.masked_fill(~mask, 0.0)[..., None] * H).sum(1),
                ),
            ]
            _first_match(got[0], context, context_mistakes, describe + "; context")
        return "your attention step matches transformer_lab.attention.attend on 3 random inputs."

    return _verdict("check_attention_step", body, strict, verbose)
