"""One eSpeak NG synthesis in a process of its own, for transformer_lab.data.speech.

eSpeak NG keeps state between syntheses that its API cannot reset (the wave generator's
pitch flutter index, its gain control and glottal phase), so the same text spoken twice in
one process gives different samples. A fresh process starts from the same state every
time, which makes each synthesis exactly repeatable.

This file uses the standard library only, so that it starts in a few milliseconds with
python -I -S. It reads one request as JSON on standard input (the library's path, the
voice data's folder, the text, the voice, the rate in words per minute, eSpeak's word gap
in units of 10 ms and the most samples to make), drives the library through ctypes in
synchronous mode and writes one line of JSON (the sample rate, the events, or an error)
followed by the 16-bit samples.
"""

from __future__ import annotations

import ctypes
import json
import sys

AUDIO_OUTPUT_SYNCHRONOUS = 2
INITIALIZE_PHONEME_EVENTS = 0x0001
INITIALIZE_DONT_EXIT = 0x8000
POS_CHARACTER = 1
CHARS_UTF8 = 1
PARAM_RATE = 1
PARAM_WORDGAP = 7
EVENT_LIST_TERMINATED = 0
EVENT_PHONEME = 7
EVENT_MARK = 3
EVENT_PLAY = 4


class _EventId(ctypes.Union):
    _fields_ = [("number", ctypes.c_int), ("name", ctypes.c_char_p), ("string", ctypes.c_char * 8)]


class Event(ctypes.Structure):
    """The espeak_EVENT struct of speak_lib.h (API revision 7 and later)."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", _EventId),
    ]


# int SynthCallback(short *wav, int numsamples, espeak_EVENT *events)
CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(Event)
)


def synthesize(request: dict) -> tuple[dict, bytes]:
    """The header (sample rate and events, or an error) and the samples of one request."""
    lib = ctypes.CDLL(request["library"])
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.espeak_Synth.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int]
    lib.espeak_Synth.argtypes += [ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
    options = INITIALIZE_PHONEME_EVENTS | INITIALIZE_DONT_EXIT
    rate = lib.espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, request["data"].encode(), options)
    if rate <= 0:
        return {"error": "init", "detail": f"espeak_Initialize returned {rate}"}, b""
    if hasattr(lib, "espeak_ng_SetRandSeed"):
        lib.espeak_ng_SetRandSeed.argtypes = [ctypes.c_long]
        lib.espeak_ng_SetRandSeed(0)
    if lib.espeak_SetVoiceByName(request["voice"].encode()) != 0:
        return {"error": "voice"}, b""
    lib.espeak_SetParameter(PARAM_RATE, request["rate"], 0)
    lib.espeak_SetParameter(PARAM_WORDGAP, request["word_gap"], 0)

    chunks: list[bytes] = []
    events: list[list] = []
    state = {"samples": 0, "too_long": False}

    def on_audio(wav, n, event_list):
        if wav and n > 0:
            chunks.append(ctypes.string_at(wav, 2 * n))
            state["samples"] += n
        i = 0
        while event_list and event_list[i].type != EVENT_LIST_TERMINATED:
            e = event_list[i]
            name = ""
            if e.type == EVENT_PHONEME:
                name = bytes(e.id.string).split(b"\0")[0].decode("utf-8", "replace")
            elif e.type not in (EVENT_MARK, EVENT_PLAY):
                name = e.id.number
            events.append([e.type, e.text_position, e.length, e.audio_position, e.sample, name])
            i += 1
        if state["samples"] > request["max_samples"]:
            state["too_long"] = True
            return 1  # abort the synthesis
        return 0

    callback = CALLBACK(on_audio)
    lib.espeak_SetSynthCallback(callback)
    text = request["text"].encode("utf-8")
    status = lib.espeak_Synth(text, len(text) + 1, 0, POS_CHARACTER, 0, CHARS_UTF8, None, None)
    lib.espeak_Synchronize()
    if status != 0:
        return {"error": "synth", "detail": f"espeak_Synth returned {status}"}, b""
    if state["too_long"]:
        return {"error": "too_long", "samples": state["samples"]}, b""
    return {"sample_rate": rate, "events": events}, b"".join(chunks)


def main() -> None:
    header, samples = synthesize(json.loads(sys.stdin.buffer.read()))
    out = sys.stdout.buffer
    out.write(json.dumps(header).encode() + b"\n")
    out.write(samples)
    out.flush()


if __name__ == "__main__":
    main()
