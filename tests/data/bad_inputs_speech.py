"""Bad inputs to transformer_lab.data.speech and transformer_lab.analysis.speech_metrics
(run by tests/test_bad_inputs.py)."""

from bad_input_support import RECORDS, case

from transformer_lab.analysis import speech_metrics as SM
from transformer_lab.data import speech as SP

RECORDS.add(SP.Utterance)

case(SP.speak, lambda: SP.speak(b"hello"), TypeError, "text must be a str, got bytes")
case(SP.speak, lambda: SP.speak(""), ValueError, "text must have something to say, got ''")
case(SP.speak, lambda: SP.speak(" \n\t"), ValueError, "text must have something to say")
case(SP.speak, lambda: SP.speak("a\0b"), ValueError, "text must not contain a NUL character")
case(SP.speak, lambda: SP.speak("a " * 20_000), ValueError,
     "text must be at most 20000 characters")  # fmt: skip
case(SP.speak, lambda: SP.speak("?!"), ValueError, "text has no word that eSpeak NG speaks")
case(SP.speak, lambda: SP.speak("hi", words_per_minute=79), ValueError,
     "words_per_minute must be in eSpeak NG's range 80..450, got 79")  # fmt: skip
case(SP.speak, lambda: SP.speak("hi", words_per_minute=451), ValueError,
     "words_per_minute must be in eSpeak NG's range 80..450, got 451")  # fmt: skip
case(SP.speak, lambda: SP.speak("hi", words_per_minute=150.0), TypeError,
     "words_per_minute must be an int, got float")  # fmt: skip
case(SP.speak, lambda: SP.speak("hi", voice="xx-nowhere"), ValueError,
     "eSpeak NG has no voice 'xx-nowhere'")  # fmt: skip
case(SP.speak, lambda: SP.speak("hi", voice=""), ValueError,
     "voice must be an eSpeak NG voice name such as 'en-us', got ''")  # fmt: skip
case(SP.speak, lambda: SP.speak("hi", voice=None), TypeError, "voice must be a str, got NoneType")
case(
    SP.speak,
    lambda: SP.speak("hi", pause_ms=-1),
    ValueError,
    "pause_ms must be a non-negative int, got -1",
)
case(SP.speak, lambda: SP.speak("hi", pause_ms=0.5), TypeError, "pause_ms must be an int")
case(SP.speak, lambda: SP.speak("hi", pause_ms=30_001), ValueError,
     "pause_ms must be at most 30000 (30 s), got 30001")  # fmt: skip
case(SP.speak, lambda: SP.speak("one two three", pause_ms=20_000), ValueError,
     "more than Whisper's 30 s window")  # fmt: skip
case(SP.speak, lambda: SP.speak("hi", 150), TypeError, "positional argument")

case(SM.words_in, lambda: SM.words_in(["a", "b"]), TypeError, "text must be a str, got list")
case(SM.word_error_rate, lambda: SM.word_error_rate(None, "a"), TypeError,
     "reference must be a str, got NoneType")  # fmt: skip
case(SM.word_error_rate, lambda: SM.word_error_rate("a", 3), TypeError,
     "hypothesis must be a str, got int")  # fmt: skip
case(SM.word_error_rate, lambda: SM.word_error_rate("", "a"), ValueError,
     "reference must hold at least one word, got ''")  # fmt: skip
case(SM.word_error_rate, lambda: SM.word_error_rate("?!", "a"), ValueError,
     "reference must hold at least one word, got '?!'")  # fmt: skip
