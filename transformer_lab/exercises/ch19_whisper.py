"""Checkers for chapter 19, a real encoder-decoder: Whisper.

:func:`check_frames_per_second` checks how many encoder frames the front end makes from a
second of audio; :func:`check_cache_numbers` checks how many numbers a decoder's two caches
hold after some tokens, which tells the cache that grows with each token from the one that
does not.
"""

from __future__ import annotations

import math

from transformer_lab.exercises.runner import CheckResult, WrongAnswer, as_number, call, run_check

__all__ = ["check_frames_per_second", "check_cache_numbers"]

_FRONT_ENDS = ((16000, 160, 2), (16000, 320, 1), (8000, 80, 2), (22050, 256, 3), (48000, 480, 4))


def check_frames_per_second(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(sample_rate, hop, stride)``: encoder frames per second of audio, when the
    spectrogram moves ``hop`` samples per frame and the front end's convolutions shrink the
    frames by ``stride`` in all: ``sample_rate / hop / stride``."""

    def body():
        for rate, hop, stride in _FRONT_ENDS:
            describe = f"sample_rate={rate}, hop={hop}, stride={stride}"
            out = call(fn, (rate, hop, stride), describe)
            got = as_number(out)
            if got is None:
                raise WrongAnswer(
                    f"return a number of frames per second, got {type(out).__name__}."
                )
            want = rate / hop / stride
            if math.isclose(got, want, rel_tol=1e-9):
                continue
            wrong = [
                (rate / hop, "the convolutions' stride shrinks the frames too: divide by it"),
                (rate / hop * stride, "a stride keeps one frame in stride: divide, not multiply"),
                (rate / stride, "the spectrogram makes one frame per hop samples, not per sample"),
                (hop / rate / stride, "that is seconds per frame; invert it"),
            ]  # fmt: skip
            for value, message in wrong:
                if math.isclose(got, value, rel_tol=1e-9):
                    raise WrongAnswer(f"{message} ({describe}).")
            raise WrongAnswer(
                f"expected {want:g} frames per second, got {got} ({describe}): the spectrogram "
                "makes sample_rate / hop frames a second, and the stride divides them again."
            )
        return "correct on 5 front ends: sample_rate / hop / stride frames a second."

    return run_check("check_frames_per_second", body, strict, verbose)


_DECODERS = ((4, 384, 1500, 10), (4, 384, 1500, 11), (2, 64, 100, 1), (6, 512, 750, 30))


def check_cache_numbers(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(n_layers, d_model, n_frames, n_tokens)``: the numbers held by a decoder's
    self-attention cache and by its cross-attention cache, as a pair ``(self_attention,
    cross_attention)``, after ``n_tokens`` tokens over ``n_frames`` encoder frames. Each
    layer keeps a key and a value of ``d_model`` numbers (all heads together) per position
    it attends to."""

    def body():
        for layers, d, frames, tokens in _DECODERS:
            describe = f"n_layers={layers}, d_model={d}, n_frames={frames}, n_tokens={tokens}"
            out = call(fn, (layers, d, frames, tokens), describe)
            if not isinstance(out, tuple | list) or len(out) != 2:
                raise WrongAnswer(
                    "return a pair (self-attention numbers, cross-attention numbers), got "
                    f"{type(out).__name__}."
                )
            got = tuple(as_number(x) for x in out)
            if None in got:
                raise WrongAnswer("both numbers of the pair must be numbers.")
            want = (2 * layers * tokens * d, 2 * layers * frames * d)
            if got == want:
                continue
            if got == want[::-1]:
                raise WrongAnswer(
                    f"the pair is swapped ({describe}): self-attention caches one key and value "
                    "per token written, cross-attention one per encoder frame."
                )
            for i, name in enumerate(("self-attention", "cross-attention")):
                if got[i] == want[i] // 2:
                    raise WrongAnswer(
                        f"the {name} cache keeps keys and values: twice that ({describe})."
                    )
                if got[i] == want[i] // layers and layers > 1:
                    raise WrongAnswer(
                        f"every layer has its own {name} cache: times n_layers ({describe})."
                    )
            raise WrongAnswer(
                f"expected {want}, got {got} ({describe}): 2 x n_layers x positions x d_model, "
                "with the tokens written so far for self-attention and the frames for "
                "cross-attention."
            )
        return (
            "correct on 4 decoders: the self-attention cache grows by 2 x n_layers x d_model "
            "numbers with each token; the cross-attention cache is fixed by the audio."
        )

    return run_check("check_cache_numbers", body, strict, verbose)
