"""Speech from eSpeak NG: the word times are the truth, checked against the audio itself.

eSpeak's silence is exact digital zero at its 22,050 Hz, so the checks at that rate are
exact: the sound of each word starts on the sample of its first phoneme event and stops on
the sample of the pause phoneme after it. At 16 kHz they are checked by energy: the
silence between words is near zero and the words are not."""

from __future__ import annotations

import re
import threading
from itertools import pairwise

import numpy as np
import pytest
import torch

from transformer_lab.data import speech as S

SENTENCE = "The animal didn't cross the street because it was too tired"
WORDS = SENTENCE.split()
RATE = S.ESPEAK_RATE


@pytest.fixture(scope="module")
def natural():
    return S.speak(SENTENCE)


@pytest.fixture(scope="module")
def paused():
    return S.speak(SENTENCE, pause_ms=200)


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x.astype(np.float64) ** 2))) if x.size else 0.0


def _cut(u: S.Utterance, start: float, end: float) -> np.ndarray:
    return u.audio.numpy()[round(start * u.sample_rate) : round(end * u.sample_rate)]


def _events_by_word(text: str, word_gap: int):
    """(samples, entries, sound spans, phoneme events inside each word's stretch)."""
    samples, events = S._synthesize(text, 150, "en-us", word_gap)
    entries = S._entries(text, events)
    spans = S._sound_spans(samples, entries)
    marks = [at for _, at in entries] + [len(samples)]
    phonemes = [[e for e in events if e[0] == 7 and a <= e[4] < b] for a, b in pairwise(marks)]
    return samples, entries, spans, phonemes


def test_an_utterance_is_16khz_float_audio_with_one_entry_per_word(natural):
    assert natural.sample_rate == 16_000 and natural.text == SENTENCE
    assert natural.audio.dtype == torch.float32 and natural.audio.dim() == 1
    assert float(natural.audio.abs().max()) <= 1.0
    assert [w for w, _, _ in natural.words] == WORDS
    times = [t for _, start, end in natural.words for t in (start, end)]
    assert times == sorted(times) and times[0] >= 0.0 and times[-1] <= natural.duration_s
    assert all(end - start > 0.05 for _, start, end in natural.words)
    assert 3.0 < natural.duration_s < 4.5  # eleven words at 150 words per minute


def test_with_pauses_the_silence_lies_exactly_between_the_words(paused):
    """pause_ms=200: each gap between words is 200 ms of silence, each word loud. The
    resampling filter reaches 4.2 ms either side of a sound: past that a gap is exactly
    zero, and all of it is more than 50 dB below the loudest word."""
    loudness = [_rms(_cut(paused, start, end)) for _, start, end in paused.words]
    assert min(loudness) > 0.03
    reach = S._low_pass().size // 2 / (RATE * 320)
    assert 0.004 < reach < 0.005
    for (_, _, end), (_, start, _) in pairwise(paused.words):
        assert start - end == pytest.approx(0.2, abs=1 / RATE)
        assert not _cut(paused, end + reach + 1e-4, start - reach - 1e-4).any()
        assert _rms(_cut(paused, end, start)) < 10 ** (-50 / 20) * max(loudness)
    # the first 10 ms inside each word already carry sound (the times are not padded)
    assert min(_rms(_cut(paused, s, s + 0.01)) for _, s, _ in paused.words) > 1e-3
    assert min(_rms(_cut(paused, e - 0.01, e)) for _, _, e in paused.words) > 1e-3


def test_at_espeaks_rate_the_sound_starts_and_stops_on_its_events():
    """The trimmed stretch of each word starts on its first phoneme event and ends on the
    pause phoneme that follows (within one sample: a zero crossing)."""
    samples, entries, spans, phonemes = _events_by_word(SENTENCE, word_gap=1)
    assert [w for w, _ in entries] == WORDS
    for (start, end), inside in zip(spans, phonemes, strict=True):
        sounds = [e[4] for e in inside if not e[5].startswith("_")]
        pauses = [e[4] for e in inside if e[5].startswith("_") and e[4] > sounds[0]]
        assert start == sounds[0]
        assert abs(end - pauses[0]) <= 1
        assert not samples[end : pauses[-1]].any()  # nothing sounds after the pause begins


def test_word_by_word_and_sentence_events_agree():
    """Each word spoken alone has the phonemes that the events put inside its stretch of the
    sentence, and all its sound lies within its event times; the last word, sentence-final
    both ways, is the same length to a millisecond."""
    _, _, spans, phonemes = _events_by_word(SENTENCE, word_gap=1)
    in_sentence = [[e[5] for e in p if not e[5].startswith("_") and e[5] != ";"] for p in phonemes]
    for word, sentence_phonemes in zip(WORDS, in_sentence, strict=True):
        samples, entries, (span,), (alone,) = _events_by_word(word, word_gap=0)
        names = [e[5] for e in alone if not e[5].startswith("_")]
        nonzero = np.flatnonzero(samples)
        assert span == (nonzero[0], nonzero[-1] + 1)  # nothing of the word outside its span
        assert span[0] == [e[4] for e in alone if e[5] == names[0]][0]
        if word != "The":  # "the" before a vowel is "thee" in the sentence
            strip = re.compile(r"[',%=]")
            assert [strip.sub("", n) for n in names] == [
                strip.sub("", n) for n in sentence_phonemes
            ], word
    alone = S._sound_spans(*_last_word("tired"))[0]
    assert abs((alone[1] - alone[0]) - (spans[-1][1] - spans[-1][0])) <= RATE // 1000


def _last_word(word):
    samples, events = S._synthesize(word, 150, "en-us", 0)
    return samples, S._entries(word, events)


def test_pause_ms_changes_only_the_silence(paused):
    """The words' sounds do not change with the pause; the audio grows by the pauses."""
    longer = S.speak(SENTENCE, pause_ms=300)
    gaps = len(WORDS) - 1
    assert longer.duration_s - paused.duration_s == pytest.approx(0.1 * gaps, abs=2 / RATE)
    for (w, a, b), (w2, a2, b2) in zip(paused.words, longer.words, strict=True):
        assert w == w2 and (b2 - a2) == pytest.approx(b - a, abs=1e-9)


def test_the_same_call_gives_the_same_samples_also_from_threads(natural):
    assert torch.equal(S.speak(SENTENCE).audio, natural.audio)
    results = [None] * 3

    def run(i):
        results[i] = S.speak(SENTENCE)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert all(torch.equal(r.audio, natural.audio) and r.words == natural.words for r in results)


def test_words_spoken_as_one_come_as_one_entry():
    """eSpeak reads "for a" and "in the" as one word (no boundary inside), "such as" and
    "it is" as two; a number is one entry, punctuation alone none."""
    u = S.speak("We went for a walk in the park, such as it is. It costs 3.5 dollars - yes.")
    assert [w for w, _, _ in u.words] == [
        "We", "went", "for a", "walk", "in the", "park", "such", "as", "it", "is", "It",
        "costs", "3.5", "dollars", "yes",
    ]  # fmt: skip


def test_faster_speech_is_shorter(natural):
    fast = S.speak(SENTENCE, words_per_minute=300)
    assert fast.duration_s < 0.7 * natural.duration_s
    assert [w for w, _, _ in fast.words] == WORDS


def _tone(hz: float) -> np.ndarray:
    return S._to_16k((8000 * np.sin(2 * np.pi * hz * np.arange(RATE) / RATE)).astype(np.int16))


def test_the_resampler_keeps_the_band_and_removes_what_would_alias():
    """A 1 kHz tone passes at full strength and in time; tones above 16 kHz's Nyquist
    frequency of 8 kHz are removed (80 dB down) instead of folding back below it."""
    low = _tone(1000).numpy()
    assert low.shape == (16_000,)
    middle = slice(1000, 15_000)
    expected = 8000 / 32768 * np.sin(2 * np.pi * 1000 * np.arange(16_000) / 16_000)
    assert np.abs(low[middle] - expected[middle]).max() < 1e-3
    assert _rms(_tone(7000).numpy()[middle]) == pytest.approx(_rms(low[middle]), rel=1e-3)
    for hz in (8200, 9000, 10_000):
        assert _rms(_tone(hz).numpy()[middle]) < 1e-4 * _rms(low[middle]), hz


def test_limits_give_clear_errors():
    with pytest.raises(ValueError, match="more than Whisper's 30 s window"):
        S.speak(SENTENCE, pause_ms=3000)
    with pytest.raises(ValueError, match="more than Whisper's 30 s window"):
        S.speak(" ".join([SENTENCE] * 12))  # 43 s
    with pytest.raises(ValueError, match="more than Whisper's 30 s window"):
        S.speak(" ".join([SENTENCE] * 40))  # eSpeak stops at 60 s
    with pytest.raises(ValueError, match="no voice 'xx-nowhere'"):
        S.speak("hello", voice="xx-nowhere")
    with pytest.raises(ValueError, match="no word that eSpeak NG speaks"):
        S.speak("...")
