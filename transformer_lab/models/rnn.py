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

(the equations of Luong et al. 2015; the score is dot, multiplicative or additive from
:mod:`transformer_lab.nn.scores`). Without attention the context is the encoder's final
state at every step, ``a_t = h_n`` (as in the RNN encoder-decoder of Cho et al. 2014), so
the two models differ only in how ``a_t`` is made.

By default ``s_t`` does not depend on ``a_{t-1}``, so teacher forcing runs the decoder RNN
over the whole target at once and scores all steps with one matrix product
(:meth:`Seq2Seq.all_scores`); :meth:`Seq2Seq.decode_step` does one step with
:func:`transformer_lab.nn.scores.attend` (greedy decoding), and tests check they agree.

With ``input_feeding=True`` (Luong et al. 2015, section 3.3) the decoder's input at step t
is ``[W_E y_{t-1}; o_{t-1}]``, the previous word's embedding and the previous step's
attentional vector (``o_0 = 0``), so each query knows what the decoder read before. The
decoder's first layer is then ``d_hidden`` wider, its state carries ``o_{t-1}`` beside the
RNN's state (:meth:`Seq2Seq.initial_state`), and teacher forcing has to run one step at a
time, through the same step as greedy decoding.

The image captioner of :mod:`transformer_lab.models.captioner` decodes the same way and
shares this module's read-out, batched scores and greedy loop: both subclass
:class:`RecurrentDecoder`, which stays outside ``__all__`` (a base class, not a model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from transformer_lab.checks import index_in, instance_of, integer, one_of
from transformer_lab.hooks import Hook
from transformer_lab.nn.attention import attention_weights
from transformer_lab.nn.scores import (
    AdditiveScore,
    DotScore,
    MultiplicativeScore,
    attend,
    make_score,
)

__all__ = ["Seq2SeqConfig", "Memory", "Seq2Seq"]

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
    input_feeding: bool = False  # feed o_{t-1} into the decoder at step t (needs attention)

    def __post_init__(self):
        for name in ("d_vocab_src", "d_vocab_tgt", "d_embed", "d_hidden", "max_len"):
            integer(getattr(self, name), name, minimum=1)
        one_of(self.cell, sorted(_CELLS), "cell")
        one_of(self.attention, _SCORES, "attention")
        instance_of(self.input_feeding, bool, "input_feeding")
        if self.input_feeding and self.attention is None:
            raise ValueError(
                "input_feeding needs attention (it feeds the previous step's attentional "
                "vector o_{t-1} = tanh(W_c [a_{t-1}; s_{t-1}])); got attention=None"
            )
        shared = min(self.d_vocab_src, self.d_vocab_tgt)  # the ids both vocabularies have
        for name in ("pad_id", "bos_id", "eos_id"):
            index_in(getattr(self, name), shared, name, "a token of both vocabularies")


@dataclass
class Memory:
    """What the encoder hands the decoder."""

    states: torch.Tensor  # every encoder state h_j, zeros at padding [batch, src_pos, d_hidden]
    final: torch.Tensor | tuple[torch.Tensor, torch.Tensor]  # last real state [1, batch, d_hidden]
    mask: torch.Tensor  # True at real source tokens [batch, src_pos]


class _DecoderConfig(Protocol):
    """What the greedy loop reads of a recurrent decoder's config."""

    @property
    def bos_id(self) -> int: ...
    @property
    def eos_id(self) -> int: ...
    @property
    def pad_id(self) -> int: ...


class RecurrentDecoder(nn.Module):
    """What the recurrent decoders with attention share (:class:`Seq2Seq` and the
    captioner): the read-out ``logits = W_U tanh(W_c [a; s])``, the scores of all steps at
    once, the check of token ids and the greedy loop. A subclass has a ``config`` with
    ``bos_id``, ``eos_id``, ``pad_id`` and ``max_len``, and a ``decode_step(prev, state,
    memory) -> (logits, state, weights or None)``."""

    config: _DecoderConfig

    def decode_step(self, prev: torch.Tensor, state: Any, memory: Any) -> tuple[Any, Any, Any]:
        raise NotImplementedError  # each subclass has its own step

    def _init_read_out(self, score: str | None, d_state: int, d_vocab: int) -> None:
        """The score module (None without attention), ``W_c`` and ``W_U``, made last in
        ``__init__`` (their initial values then follow from the seed as before)."""
        self.score = None if score is None else make_score(score, d_state, d_state)
        self.W_c = nn.Linear(2 * d_state, d_state)
        self.W_U = nn.Linear(d_state, d_vocab)

    def _attentional(self, s: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """The attentional vector ``o = tanh(W_c [a; s])``."""
        return torch.tanh(self.W_c(torch.cat([context, s], dim=-1)))

    def _combine(self, s: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """``logits = W_U tanh(W_c [a; s])``."""
        return self.W_U(self._attentional(s, context))

    def all_scores(self, s: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """Scores of every decoder step against every key at once:
        ``s [batch, tgt_pos, d]``, ``keys [batch, key_pos, d]`` -> ``[batch, tgt_pos,
        key_pos]``. The same numbers as calling ``self.score`` step by step (a test checks
        it), as matrix products instead of one step at a time."""
        score = self.score
        if isinstance(score, DotScore):
            return s @ keys.transpose(1, 2)
        if isinstance(score, MultiplicativeScore):
            return (s @ score.W) @ keys.transpose(1, 2)
        if isinstance(score, AdditiveScore):
            hidden = torch.tanh(score.W_1(s).unsqueeze(2) + score.W_2(keys).unsqueeze(1))
            return score.v(hidden).squeeze(-1)  # hidden: [batch, tgt_pos, key_pos, d_attn]
        raise TypeError(f"no batched form for score {type(score).__name__}")

    @staticmethod
    def _check_ids(ids, name: str, d_vocab: int, unit: str = "tokens") -> None:
        """``ids`` must be a non-empty ``[batch, pos]`` tensor of ids in ``[0, d_vocab)``."""
        if not isinstance(ids, torch.Tensor) or ids.dtype not in (torch.int64, torch.int32):
            got = getattr(ids, "dtype", type(ids).__name__)
            raise TypeError(f"{name} must be a tensor of int64 or int32 token ids, got {got}")
        if ids.dim() != 2 or 0 in ids.shape:
            raise ValueError(
                f"{name} must be a non-empty [batch, pos] tensor, got {tuple(ids.shape)}"
            )
        low, high = (int(t) for t in torch.aminmax(ids))
        if low < 0 or high >= d_vocab:
            raise ValueError(
                f"{name} has ids in [{low}, {high}] but the vocabulary has {d_vocab} {unit}"
            )

    def _greedy(self, state, memory, batch: int, device, max_len: int):
        """Greedy decoding from the decoder's first ``state``: feed back the most likely
        token until every row has produced ``<eos>`` or ``max_len`` steps have run.

        Returns ``(ids, weights)``: ``ids [batch, out_pos]`` without ``<bos>``, each row
        ending with ``<eos>`` (when produced in time) then padding; ``weights [batch,
        out_pos, key_pos]`` (zeros after a row's ``<eos>``), or None when the steps give none.
        """
        config = self.config
        prev = torch.full((batch,), config.bos_id, dtype=torch.long, device=device)
        done = torch.zeros(batch, dtype=torch.bool, device=device)
        ids, all_weights = [], []
        for _ in range(max_len):
            logits, state, weights = self.decode_step(prev, state, memory)
            prev = logits.argmax(dim=-1).masked_fill(done, config.pad_id)  # [batch]
            ids.append(prev)
            if weights is not None:
                all_weights.append(weights.masked_fill(done[:, None], 0.0))
            done = done | (prev == config.eos_id)
            if bool(done.all()):
                break
        weights = torch.stack(all_weights, dim=1) if all_weights else None
        return torch.stack(ids, dim=1), weights


class Seq2Seq(RecurrentDecoder):
    """Encoder-decoder RNN; ``model(src, tgt_in)`` returns logits ``[batch, tgt_pos, d_vocab_tgt]``.

    ``src`` is right-padded with ``pad_id``; ``tgt_in`` starts with ``bos_id``. The hook
    ``pattern`` holds the attention weights ``[batch, tgt_pos, src_pos]`` of a forward
    pass (``run_with_cache(model, src, tgt_in)``).
    """

    config: Seq2SeqConfig

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        self.config = instance_of(cfg, Seq2SeqConfig, "cfg")
        rnn = _CELLS[cfg.cell]
        self.W_E_src = nn.Embedding(cfg.d_vocab_src, cfg.d_embed, padding_idx=cfg.pad_id)
        self.W_E_tgt = nn.Embedding(cfg.d_vocab_tgt, cfg.d_embed, padding_idx=cfg.pad_id)
        self.encoder = rnn(cfg.d_embed, cfg.d_hidden, batch_first=True)
        d_fed = cfg.d_hidden if cfg.input_feeding else 0  # o_{t-1} joins the input
        self.decoder = rnn(cfg.d_embed + d_fed, cfg.d_hidden, batch_first=True)
        self._init_read_out(cfg.attention, cfg.d_hidden, cfg.d_vocab_tgt)  # score, W_c, W_U
        self.pattern = Hook()

    # --- encoder ----------------------------------------------------------------------------
    def encode(self, src: torch.Tensor, embedded: torch.Tensor | None = None) -> Memory:
        """Run the encoder over ``src [batch, src_pos]``.

        ``embedded [batch, src_pos, d_embed]``, when given, replaces ``W_E_src(src)`` (to
        take gradients with respect to the source embeddings); ``src`` still gives the
        lengths. The final state is the state after each sequence's last real token.
        """
        config = self.config
        self._check_ids(src, "src", config.d_vocab_src)
        mask = src != config.pad_id  # [batch, src_pos]
        lengths = mask.sum(dim=1)
        if bool((lengths == 0).any()):
            raise ValueError("every source needs at least one token that is not padding")
        if bool((mask[:, 1:] & ~mask[:, :-1]).any()):
            raise ValueError("src must be right-padded: a real token follows padding")
        x = self.W_E_src(src) if embedded is None else embedded  # [batch, src_pos, d_embed]
        if x.shape != (*src.shape, config.d_embed):
            raise ValueError(
                f"embedded has shape {tuple(x.shape)}, expected {(*src.shape, config.d_embed)}"
            )
        if config.cell == "gru":
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
    @staticmethod
    def _final_h(memory: Memory) -> torch.Tensor:
        """The encoder's last hidden state ``[batch, d_hidden]`` (for an LSTM, its h)."""
        final = memory.final[0] if isinstance(memory.final, tuple) else memory.final
        return final[0]

    def initial_state(self, memory: Memory):
        """The decoder's state before its first step: the encoder's final state, and with
        input feeding the pair ``(that state, o_0 = zeros [batch, d_hidden])``."""
        if not self.config.input_feeding:
            return memory.final
        return memory.final, memory.states.new_zeros(memory.states.shape[::2])

    def decode_step(self, prev: torch.Tensor, state, memory: Memory):
        """One decoder step: previous tokens ``prev [batch]`` and ``state`` ->
        ``(logits [batch, d_vocab_tgt], new state, weights [batch, src_pos] or None)``.
        The first ``state`` is :meth:`initial_state` (the encoder's final state by default)."""
        self._check_step(prev, state, memory.states.shape[0])
        return self._step(self.W_E_tgt(prev), state, memory)

    def _step(self, x: torch.Tensor, state, memory: Memory):
        """One decoder step from the embedded previous tokens ``x [batch, d_embed]``: the
        RNN step gives ``s_t``, which attends over the encoder states (``a_t``, weights), and
        ``logits = W_U o_t`` with ``o_t = tanh(W_c [a_t; s_t])``. Without input feeding
        ``state`` is the RNN's; with it, the pair (RNN state, ``o_{t-1}``)."""
        if self.config.input_feeding:  # the previous attentional vector joins the input
            state, o_prev = state
            x = torch.cat([x, o_prev], dim=-1)  # [batch, d_embed + d_hidden]
        out, state = self.decoder(x.unsqueeze(1), state)
        s = out[:, 0]  # [batch, d_hidden]
        if self.score is None:
            return self._combine(s, self._final_h(memory)), state, None
        context, weights = attend(self.score, s, memory.states, mask=memory.mask)
        o = self._attentional(s, context)  # [batch, d_hidden]
        if self.config.input_feeding:  # kept for the next step's input
            state = (state, o)
        return self.W_U(o), state, weights

    def _check_step(self, prev, state, batch: int) -> None:
        """``prev [batch]`` target ids, and ``state`` as the decoder returns it: a tensor
        ``[1, batch, d_hidden]`` (GRU) or a pair of them ``(h, c)`` (LSTM); with input
        feeding, the pair ``(that, o_prev [batch, d_hidden])``."""
        if torch.is_tensor(prev) and prev.dim() != 1:
            raise ValueError(f"prev must be [batch], one token per row, got {tuple(prev.shape)}")
        self._check_ids(
            prev[:, None] if torch.is_tensor(prev) else prev, "prev", self.config.d_vocab_tgt
        )
        config = self.config
        want = (1, batch, config.d_hidden)
        lstm, feeding = config.cell == "lstm", config.input_feeding
        rnn_state, fed = state, []
        if feeding:
            pair = isinstance(state, tuple) and len(state) == 2
            rnn_state, fed = state if pair else (state, [])
            fed = [fed] if pair else []
        rnn_parts = rnn_state if lstm and isinstance(rnn_state, tuple) else (rnn_state,)
        parts, wants = (
            [*rnn_parts, *fed],
            [want] * (1 + lstm) + [(batch, config.d_hidden)] * feeding,
        )
        shapes = [tuple(t.shape) if torch.is_tensor(t) else type(t).__name__ for t in parts]
        if shapes != wants or len(prev) != batch:
            kind = "a pair (h, c) of tensors" if lstm else "a tensor"
            kind = f"{kind} of shape {list(want)}"
            if feeding:
                kind = (
                    f"a pair (RNN state, o_prev) with o_prev of shape [{batch}, {config.d_hidden}] "
                    f"(input feeding; see initial_state) and the RNN state {kind}"
                )
            raise ValueError(
                f"for a memory of batch {batch}, prev must be [{batch}] and state {kind}; "
                f"got prev {tuple(prev.shape)} and state {shapes}"
            )

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: logits ``[batch, tgt_pos, d_vocab_tgt]`` for every position of
        ``tgt_in [batch, tgt_pos]`` (the target shifted right, starting with ``<bos>``)."""
        memory = self.encode(src)  # checks src
        self._check_ids(tgt_in, "tgt_in", self.config.d_vocab_tgt)
        if tgt_in.shape[0] != src.shape[0]:
            raise ValueError(f"src has batch {src.shape[0]} but tgt_in has batch {tgt_in.shape[0]}")
        if self.config.input_feeding:  # step t needs o_{t-1}: one step at a time
            return self._forward_fed(self.W_E_tgt(tgt_in), memory)
        s, _ = self.decoder(self.W_E_tgt(tgt_in), memory.final)  # [batch, tgt_pos, d_hidden]
        if self.score is None:  # the same context, the final encoder state, at every step
            context = self._final_h(memory).unsqueeze(1).expand_as(s)
            return self._combine(s, context)  # [batch, tgt_pos, d_vocab_tgt]
        scores = self.all_scores(s, memory.states)  # [batch, tgt_pos, src_pos]
        weights = self.pattern(attention_weights(scores, memory.mask.unsqueeze(1)))
        context = weights @ memory.states  # [batch, tgt_pos, d_hidden]
        return self._combine(s, context)  # [batch, tgt_pos, d_vocab_tgt]

    def _forward_fed(self, x: torch.Tensor, memory: Memory) -> torch.Tensor:
        """Teacher forcing with input feeding: :meth:`_step` over the embedded target
        ``x [batch, tgt_pos, d_embed]``, the steps greedy decoding takes."""
        state, all_logits, all_weights = self.initial_state(memory), [], []
        for t in range(x.shape[1]):
            logits, state, weights = self._step(x[:, t], state, memory)
            all_logits.append(logits)
            all_weights.append(weights)
        self.pattern(torch.stack(all_weights, dim=1))  # [batch, tgt_pos, src_pos]
        return torch.stack(all_logits, dim=1)  # [batch, tgt_pos, d_vocab_tgt]

    @torch.no_grad()
    def greedy_decode(self, src: torch.Tensor, max_len: int | None = None):
        """Greedy decoding: feed back the most likely token until ``<eos>`` or ``max_len``
        (default ``config.max_len``).

        Returns ``(ids, weights)``: ``ids [batch, out_pos]`` without ``<bos>``, each row
        ending with ``<eos>`` (when produced in time) then padding; ``weights [batch,
        out_pos, src_pos]`` of attention (zeros after a row's ``<eos>``), or None.
        """
        max_len = self.config.max_len if max_len is None else integer(max_len, "max_len", minimum=1)
        memory = self.encode(src)
        state = self.initial_state(memory)
        return self._greedy(state, memory, src.shape[0], src.device, max_len)

    def greedy_ids(self, src: torch.Tensor) -> torch.Tensor:
        """Only the ids of :meth:`greedy_decode` (for ``numbers.predict``)."""
        return self.greedy_decode(src)[0]
