"""English speech made offline by eSpeak NG, with each word's true start and end.

A chapter on Whisper needs audio whose words are known to the millisecond. speak(text)
has eSpeak NG (the library and voice data of the installed espeakng-loader package, no
download) read the text, and returns an Utterance: the audio at 16,000 Hz, the rate
Whisper hears, and one (word, start_s, end_s) entry per written word.

Where the times come from. eSpeak reports its progress as events, each stamped with the
exact sample it was reached at: a WORD event where a word begins, a PHONEME event where
each sound begins, pause phonemes (names starting with "_") where silence begins. The
WORD events cut the audio into one stretch per word, and a word's time is the sounding
part of its stretch: eSpeak's silence is exact digital zero, so the stretch is trimmed of
its zero samples at both ends (the silent closure before a "k" or "t", the pause after a
clause).

How exact. At eSpeak's 22,050 Hz the events and the audio agree to the sample, measured on
the sentences of the tests. With pause_ms > 0 every word's sound ends on the sample of the
pause phoneme after it (or one sample before, where the wave crosses zero) and starts on
the sample of its first phoneme event. With pause_ms = 0 most words run straight into the
next, and a word's sound ends on the sample of the next word's WORD event; there the one
exception seen is a vowel right after an "r", "l" or nasal, whose phoneme event eSpeak
posts inside the vowel (29 ms late in "or an hour") while the sound begins on the WORD
event, which is the time given. The 16 kHz audio keeps these times: the resampling filter
reaches 4.2 ms either side of a sound, beyond which the silence between words is exactly
zero, and a 200 ms pause holds less energy than the loudest word by more than 50 dB (57 dB
measured).

pause_ms > 0 has eSpeak pause after every word (its word gap), and then sets each pause,
from the end of one word's sound to the start of the next one's, to exactly pause_ms of
silence. pause_ms = 0 keeps eSpeak's own timing, in which most words touch the next.

Words eSpeak speaks as one. A few common pairs ("of the", "in the", "for a") are one
word in eSpeak's dictionary, spoken with no boundary inside, so no event tells where one
ends and the other begins: such a pair comes as one entry ("of the", start, end), which
is the truth at the resolution eSpeak gives. Pairs that the dictionary marks with a
boundary ("such as", "it is") come as two entries. A number such as "3.5" is one entry
however many words it is read as. Tokens of punctuation alone ("-") are not words.

Each call runs eSpeak in a fresh process (transformer_lab.data._espeak_worker): eSpeak
keeps state between syntheses that its API cannot reset, so in one process the same text
comes out a few samples different each time (the lengths of four calls: 80342, 80340,
80350 and 80580 samples). A fresh process makes every call return the same samples, keeps
concurrent calls from different threads apart (there is no shared state to guard) and
puts a time limit on each synthesis. A call takes about 50 to 100 ms (the first one in a
process about a second more, to import the resampler).
"""

from __future__ import annotations

import bisect
import functools
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from transformer_lab.checks import integer, string

__all__ = ["Utterance", "speak"]

SAMPLE_RATE = 16_000
ESPEAK_RATE = 22_050  # the sample rate of eSpeak NG's voices
MAX_SECONDS = 30.0  # Whisper's window
MIN_WPM, MAX_WPM = 80, 450  # espeakRATE_MINIMUM and espeakRATE_MAXIMUM of speak_lib.h
MAX_PAUSE_MS = 30_000
MAX_CHARS = 20_000
TIMEOUT_S = 60.0
_WORKER = Path(__file__).with_name("_espeak_worker.py")
_EVENT_WORD = 1  # espeakEVENT_WORD


@dataclass(frozen=True, eq=False)
class Utterance:
    """Speech and where its words are.

    audio is a 1-D float32 tensor in [-1, 1] at sample_rate (16,000) Hz; text is what was
    spoken; words holds one (word, start_s, end_s) per spoken word, in order, with the
    seconds from the start of audio where the word's sound begins and ends. A word is the
    written word with the punctuation around it removed ("tired." gives "tired"); two
    written words that eSpeak speaks as one ("of the") share one entry."""

    audio: torch.Tensor
    sample_rate: int
    text: str
    words: tuple[tuple[str, float, float], ...]

    @property
    def duration_s(self) -> float:
        """The length of audio in seconds."""
        return self.audio.numel() / self.sample_rate


def speak(
    text: str, *, words_per_minute: int = 150, voice: str = "en-us", pause_ms: int = 0
) -> Utterance:
    """The text read aloud by eSpeak NG, with each word's start and end.

    words_per_minute is eSpeak's rate (80 to 450); voice an eSpeak NG voice name ("en-us",
    "en", "en-us+f3" ...); pause_ms > 0 puts exactly that many milliseconds of silence
    between one word's sound and the next one's. The same call always returns the same
    samples. The speech must fit in 30 s, Whisper's window."""
    text = _check_text(text)
    rate = integer(words_per_minute, "words_per_minute")
    if not MIN_WPM <= rate <= MAX_WPM:
        raise ValueError(
            f"words_per_minute must be in eSpeak NG's range {MIN_WPM}..{MAX_WPM}, got {rate}"
        )
    voice = _check_voice(voice)
    pause = integer(pause_ms, "pause_ms", minimum=0)
    if pause > MAX_PAUSE_MS:
        raise ValueError(f"pause_ms must be at most {MAX_PAUSE_MS} (30 s), got {pause}")

    samples, events = _synthesize(text, rate, voice, word_gap=1 if pause else 0)
    entries = _entries(text, events)
    if not entries:
        raise ValueError(f"text has no word that eSpeak NG speaks, got {text!r}")
    spans = _sound_spans(samples, entries)
    if pause:
        samples, spans = _set_pauses(samples, spans, round(pause * ESPEAK_RATE / 1000))
    seconds = len(samples) / ESPEAK_RATE
    if seconds > MAX_SECONDS:
        raise ValueError(
            f"the speech is {seconds:.1f} s long, more than Whisper's {MAX_SECONDS:.0f} s "
            "window: shorten the text, raise words_per_minute or lower pause_ms"
        )
    words = tuple(
        (word, start / ESPEAK_RATE, end / ESPEAK_RATE)
        for (word, _), (start, end) in zip(entries, spans, strict=True)
    )
    return Utterance(_to_16k(samples), SAMPLE_RATE, text, words)


def _check_text(text) -> str:
    string(text, "text")
    if not text.strip():
        raise ValueError(f"text must have something to say, got {text!r}")
    if "\0" in text:
        raise ValueError("text must not contain a NUL character (eSpeak NG stops there)")
    if len(text) > MAX_CHARS:
        raise ValueError(
            f"text must be at most {MAX_CHARS} characters (30 s of speech hold far fewer), "
            f"got {len(text)}"
        )
    return text


def _check_voice(voice) -> str:
    string(voice, "voice")
    if not voice or "\0" in voice or voice != voice.strip():
        raise ValueError(f"voice must be an eSpeak NG voice name such as 'en-us', got {voice!r}")
    return voice


def _synthesize(
    text: str, rate: int, voice: str, word_gap: int = 0
) -> tuple[np.ndarray, list[list]]:
    """eSpeak NG's int16 samples at 22,050 Hz and its events, each [type, text position,
    length, ms, sample, phoneme name or number], from a fresh process."""
    import espeakng_loader

    request = {
        "library": espeakng_loader.get_library_path(),
        "data": espeakng_loader.get_data_path(),
        "text": text,
        "voice": voice,
        "rate": rate,
        "word_gap": word_gap,
        "max_samples": int(2 * MAX_SECONDS * ESPEAK_RATE),
    }
    command = [sys.executable, "-I", "-S", str(_WORKER)]
    try:
        done = subprocess.run(
            command, input=json.dumps(request).encode(), capture_output=True, timeout=TIMEOUT_S
        )
    except subprocess.TimeoutExpired as err:
        raise RuntimeError(f"eSpeak NG did not finish within {TIMEOUT_S:.0f} s") from err
    head, _, pcm = done.stdout.partition(b"\n")
    if done.returncode != 0 or not head:
        detail = done.stderr.decode(errors="replace").strip()[-500:]
        raise RuntimeError(f"eSpeak NG failed (exit status {done.returncode}): {detail}")
    header = json.loads(head)
    error = header.get("error")
    if error == "voice":
        raise ValueError(
            f"voice must be an eSpeak NG voice name such as 'en-us', 'en' or 'en-us+f3'; "
            f"eSpeak NG has no voice {voice!r}"
        )
    if error == "too_long":
        raise ValueError(
            f"the speech is more than {2 * MAX_SECONDS:.0f} s long, more than Whisper's "
            f"{MAX_SECONDS:.0f} s window: shorten the text or raise words_per_minute"
        )
    if error:
        raise RuntimeError(f"eSpeak NG failed: {header}")
    if header["sample_rate"] != ESPEAK_RATE:
        raise RuntimeError(f"eSpeak NG spoke at {header['sample_rate']} Hz, not {ESPEAK_RATE}")
    events = header["events"]
    # speak_lib.h calls an event's sample field internal; eSpeak NG 1.52 fills it with the
    # sample count that its audio_position (whole ms) is rounded down from. Times rest on it.
    if any(abs(e[4] * 1000 // ESPEAK_RATE - e[3]) > 1 for e in events):
        raise RuntimeError("eSpeak NG's events give samples that disagree with their ms")
    return np.frombuffer(pcm, dtype="<i2").copy(), events


def _display(token: str) -> str:
    stripped = token.strip("\"'()[]{}<>.,;:!?-\u2013\u2014\u2018\u2019\u201c\u201d\u2026")
    return stripped or token


def _entries(text: str, events: list[list]) -> list[tuple[str, int]]:
    """(word, sample where eSpeak's WORD event for it came) for each spoken word.

    WORD events name the character where their word starts; each goes to the written token
    (a run of non-space characters) holding that character. A token that gets no event of
    its own was spoken inside the word before it: it joins that word's entry, unless that
    word's token got one extra event per such token at its start plus one, which is how
    eSpeak marks a boundary inside a dictionary entry of several words ("such as")."""
    found = list(re.finditer(r"\S+", text))
    starts = [m.start() for m in found]
    owned: dict[int, list[list]] = {}
    last = 0
    for e in (e for e in events if e[0] == _EVENT_WORD):
        char = e[1] - 1
        k = bisect.bisect_right(starts, char) - 1
        if k < 0 or char >= found[k].end():
            k += 1
        k = max(min(k, len(found) - 1), last)
        owned.setdefault(k, []).append(e)
        last = k
    speakable = [k for k, m in enumerate(found) if k in owned or re.search(r"[^\W_]", m.group())]
    order = [k for k in speakable if k in owned]
    entries: list[tuple[str, int]] = []
    pending = [j for j in speakable if order and j < order[0]]  # join the first word
    for i, k in enumerate(order):
        following = order[i + 1] if i + 1 < len(order) else len(found)
        silent = [j for j in speakable if k < j < following]
        mine = owned[k]
        pos = mine[0][1]
        bounds = mine[1:]
        if silent and len(bounds) == len(silent) and all(e[1] == pos + 1 for e in bounds):
            entries.append((_join(found, pending + [k]), mine[0][4]))
            entries += [(_join(found, [j]), e[4]) for j, e in zip(silent, bounds, strict=True)]
        else:
            entries.append((_join(found, pending + [k] + silent), mine[0][4]))
        pending = []
    return entries


def _join(found: list[re.Match], tokens: list[int]) -> str:
    """The entry's written words; a token of punctuation alone shows only if nothing else does."""
    texts = [found[j].group() for j in tokens]
    wordy = [t for t in texts if re.search(r"[^\W_]", t)] or texts
    return " ".join(_display(t) for t in wordy)


def _sound_spans(samples: np.ndarray, entries: list[tuple[str, int]]) -> list[tuple[int, int]]:
    """For each entry, the first and one past the last non-zero sample between its WORD
    event and the next entry's (the end of the audio for the last)."""
    marks = [sample for _, sample in entries] + [len(samples)]
    spans = []
    for a, b in zip(marks[:-1], marks[1:], strict=True):
        sound = np.flatnonzero(samples[a:b])
        spans.append((a + int(sound[0]), a + int(sound[-1]) + 1) if sound.size else (a, a))
    return spans


def _set_pauses(
    samples: np.ndarray, spans: list[tuple[int, int]], gap: int
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The samples with the silence between each word's sound and the next set to gap
    samples (the silence before the first word and after the last kept), and the new spans.
    Only zero samples are removed: everything outside the spans is eSpeak's silence."""
    pieces = [samples[: spans[0][0]]]
    new_spans = []
    at = spans[0][0]
    for i, (start, end) in enumerate(spans):
        if i:
            pieces.append(np.zeros(gap, dtype=samples.dtype))
            at += gap
        pieces.append(samples[start:end])
        new_spans.append((at, at + end - start))
        at += end - start
    pieces.append(samples[spans[-1][1] :])
    return np.concatenate(pieces), new_spans


@functools.cache
def _low_pass() -> np.ndarray:
    """The resampler's filter at 22,050 x 320 Hz: flat to 7.4 kHz, at least 80 dB down from
    8 kHz (half of 16 kHz) on, so nothing above 8 kHz folds back into the band."""
    from scipy.signal import firwin, kaiserord

    rate = ESPEAK_RATE * 320
    taps, beta = kaiserord(80, (8000 - 7400) / (rate / 2))
    return firwin(taps | 1, 7700, window=("kaiser", beta), fs=rate)


def _to_16k(samples: np.ndarray) -> torch.Tensor:
    """22,050 Hz int16 samples as float32 at 16,000 Hz (up 320, down 441), through a
    polyphase filter that removes what lies above 8 kHz before the rate drops; the filter is
    symmetric and centred, so a sound keeps its time."""
    from scipy.signal import resample_poly

    audio = resample_poly(samples.astype(np.float64) / 32768.0, 320, 441, window=_low_pass())
    return torch.from_numpy(np.clip(audio, -1.0, 1.0).astype(np.float32))
