"""Transcription with Whisper.

greedy_transcribe decodes one log-mel spectrogram greedily from the prompt of the model's
WhisperGeneration, suppressing the tokens it names, with a key/value cache for the
decoder's self-attention and the cross-attention keys and values computed once (either can
be switched off to time it); it can also return the cross-attention weights or leave the
cross-attention of some layers out. transcribe goes from audio to text. GreedyResult and
Transcript hold what they produce.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from transformer_lab.checks import floating_tensor, instance_of, integer
from transformer_lab.data.whisper_tokenizer import WhisperTokenizer
from transformer_lab.pretrained.whisper_audio import log_mel
from transformer_lab.pretrained.whisper_model import Whisper

__all__ = ["GreedyResult", "Transcript", "greedy_transcribe", "transcribe"]


@dataclass
class GreedyResult:
    """What greedy_transcribe produced: the prompt, the generated tokens
    (ending with <|endoftext|> when decoding stopped on it), why it stopped
    ("endoftext" or "max_length"), and with need_cross_weights the cross-attention
    weights [layers, heads, len(tokens), src_pos]: row t is the attention of the
    position that predicted tokens[t]. encode_seconds and decode_seconds are the times of
    the encoder and of the decoding loop: processor seconds of the process on the CPU (run
    torch on one thread to time one thread), wall-clock seconds on a GPU."""

    prompt: list[int]
    tokens: list[int]
    stopped: str
    cross_attentions: torch.Tensor | None = None
    encode_seconds: float = 0.0
    decode_seconds: float = 0.0

    @property
    def seconds_per_token(self) -> float:
        """Seconds of decoding per generated token, on decode_seconds' clock (the encoder
        excluded; the cross-attention keys and values included, however computed)."""
        return self.decode_seconds / max(len(self.tokens), 1)


@dataclass
class Transcript(GreedyResult):
    """A GreedyResult with the text of its tokens (special tokens dropped;
    Whisper's text starts with a space)."""

    text: str = field(default="")


def _clock(device: torch.device) -> float:
    """The book's clock for a device: processor seconds of this process on the CPU (one
    thread's when torch runs on one), wall-clock seconds on a GPU once its queued work is
    done."""
    if device.type == "cpu":
        return time.process_time()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


@torch.no_grad()
def greedy_transcribe(
    model: Whisper,
    mel: torch.Tensor,
    *,
    max_length: int | None = None,
    self_cache: bool = True,
    cross_cache: bool = True,
    need_cross_weights: bool = False,
    ablate_cross: str | Sequence[int] | None = None,
) -> GreedyResult:
    """Greedy decoding of one utterance's log-mel spectrogram mel [n_mels, 3000] (from
    log_mel).

    The prompt is model.generation.prompt; at each step the suppressed tokens get minus
    infinity (suppress_ids always, suppress_ids_begin at the first step) and the
    highest score wins; decoding ends at <|endoftext|> or when max_length positions
    (448 by default, the prompt included) are filled.

    self_cache=False runs the decoder on the whole sequence at every step instead of on
    the newest token with a key/value cache; cross_cache=False projects the encoder
    output into every layer's cross-attention keys and values at every step instead of once.
    Both give the same tokens, slower. need_cross_weights returns the cross-attention
    weights of every layer and head; ablate_cross ("all" or layer numbers) decodes with
    those layers' cross-attention left out, showing what the decoder says without hearing.
    """
    instance_of(model, Whisper, "model")
    gen, config = model.generation, model.config
    for value, name in (
        (self_cache, "self_cache"),
        (cross_cache, "cross_cache"),
        (need_cross_weights, "need_cross_weights"),
    ):
        instance_of(value, bool, name)
    prompt = gen.prompt
    if max_length is None:
        max_length = min(gen.max_length, config.n_text_ctx)
    max_length = integer(max_length, "max_length", minimum=len(prompt) + 1)
    if max_length > config.n_text_ctx:
        raise ValueError(
            f"max_length must be at most the decoder's {config.n_text_ctx} positions, "
            f"got {max_length}"
        )
    model.decoder.ablated_layers(ablate_cross)
    used = (*prompt, gen.eot_id, *gen.suppress_ids, *gen.suppress_ids_begin)
    if max(used) >= config.d_vocab:
        raise ValueError(
            f"model.generation names token {max(used)}, beyond the model's d_vocab={config.d_vocab}"
        )
    floating_tensor(mel, "mel", shape=f"[{config.n_mels}, {2 * config.n_audio_ctx}]")
    if tuple(mel.shape) != (config.n_mels, 2 * config.n_audio_ctx):
        raise ValueError(
            f"mel must be one utterance [{config.n_mels}, {2 * config.n_audio_ctx}] "
            f"(log_mel's output), got {tuple(mel.shape)}"
        )
    if not bool(torch.isfinite(mel).all()):
        raise ValueError("mel has NaN or infinite values")
    device = model.decoder.W_E.device
    start = _clock(device)
    memory = model.encoder(mel[None].to(device, model.decoder.W_E.dtype))
    encoded = _clock(device)
    kv = model.decoder.cross_kv(memory) if cross_cache else None
    cache = model.decoder.new_cache() if self_cache else None
    suppress = torch.tensor(gen.suppress_ids, dtype=torch.long, device=device)
    begin = torch.tensor(gen.suppress_ids_begin, dtype=torch.long, device=device)
    sequence, new, rows, stopped = list(prompt), list(prompt), [], "max_length"
    while len(sequence) < max_length:
        ids = torch.tensor([new if self_cache else sequence], device=device)
        logits, weights = model.decoder(
            ids, None if cross_cache else memory, cross_kv=kv, kv_cache=cache,
            need_cross_weights=need_cross_weights, ablate_cross=ablate_cross, last_only=True,
        )  # fmt: skip
        scores = logits[0, -1].clone()  # [d_vocab]
        scores[suppress] = float("-inf")
        if len(sequence) == len(prompt):
            scores[begin] = float("-inf")
        token = int(scores.argmax())
        if weights is not None:
            rows.append(torch.stack([w[0, :, -1] for w in weights]))  # [layers, heads, src]
        sequence.append(token)
        new = [token]
        if token == gen.eot_id:
            stopped = "endoftext"
            break
    cross = torch.stack(rows, dim=2).cpu() if rows else None  # [layers, heads, tokens, src]
    seconds = (encoded - start, _clock(device) - encoded)
    return GreedyResult(prompt, sequence[len(prompt) :], stopped, cross, *seconds)


def transcribe(
    model: Whisper,
    tokenizer: WhisperTokenizer,
    audio: torch.Tensor,
    *,
    sample_rate: int | None = None,
    max_length: int | None = None,
    self_cache: bool = True,
    cross_cache: bool = True,
    need_cross_weights: bool = False,
    ablate_cross: str | Sequence[int] | None = None,
) -> Transcript:
    """The Transcript of a mono clip audio [samples] at 16 kHz (at most 30 s, not
    silent): log_mel, then greedy_transcribe with the same options, then
    the tokenizer's text."""
    instance_of(model, Whisper, "model")
    instance_of(tokenizer, WhisperTokenizer, "tokenizer")
    mel = log_mel(audio, sample_rate=sample_rate, allow_silence=False)
    result = greedy_transcribe(
        model, mel, max_length=max_length, self_cache=self_cache,
        cross_cache=cross_cache, need_cross_weights=need_cross_weights,
        ablate_cross=ablate_cross,
    )  # fmt: skip
    fields = {f: getattr(result, f) for f in GreedyResult.__dataclass_fields__}
    return Transcript(**fields, text=tokenizer.decode(result.tokens))
