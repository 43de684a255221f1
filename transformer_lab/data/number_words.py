"""Numbers written as words, as lists of tokens: ``21`` is ``twenty one`` in English,
``ein und zwanzig`` in German, ``vingt et un`` in French.

The words come from ``num2words``. Hyphens and commas split words and are dropped, and
German compounds are split into number morphemes (``ein``, ``und``, ``zwanzig``,
``hundert``, ``tausend``, ...), so the order flip of German (one-and-twenty) is visible
token by token; :mod:`.numbers` turns such pairs into a translation data set.
"""

from __future__ import annotations

import copy
import functools
import re
from collections import OrderedDict

from transformer_lab.checks import integer, one_of, string

__all__ = ["LANGUAGES", "number_to_words", "tokenize", "split_german"]

LANGUAGES = ("en", "de", "fr")
_LIMIT = 10**16  # numbers must be below this (at most 16 digits)

# German number morphemes; a compound is split by longest match from the left.
# "sech"/"sieb" are the short stems of sechzehn/siebzehn.
_GERMAN_MORPHEMES = sorted(
    [
        *("null", "eins", "ein", "eine", "zwei", "drei", "vier", "fünf", "sechs", "sech"),
        *("sieben", "sieb", "acht", "neun", "zehn", "elf", "zwölf", "zwanzig", "dreißig"),
        *("vierzig", "fünfzig", "sechzig", "siebzig", "achtzig", "neunzig", "hundert"),
        *("tausend", "und", "million", "millionen", "milliarde", "milliarden"),
        *("billion", "billionen"),
    ],
    key=len,
    reverse=True,
)


@functools.cache
def _converter(lang: str):
    """num2words' converter for ``lang`` with its table of number words cut to the
    powers of ten below 10**16: ``splitnum`` scans that whole table on every call, and
    entries larger than the number are skipped anyway, so the words are unchanged
    (a test compares with ``num2words``) and a call is several times faster."""
    try:
        from num2words import CONVERTER_CLASSES
    except ImportError as err:  # pragma: no cover - the package is a dependency
        raise ImportError(
            "the numbers data set needs num2words: pip install 'num2words>=0.5.13,<0.6'"
        ) from err
    converter = copy.deepcopy(CONVERTER_CLASSES[lang])
    converter.cards = OrderedDict((k, v) for k, v in converter.cards.items() if k < _LIMIT)
    return converter


def split_german(word: str) -> list[str]:
    """Split one German number word into morphemes: ``"einundzwanzig"`` ->
    ``["ein", "und", "zwanzig"]``. Raises ValueError on a word that is not a number."""
    return _morphemes(string(word, "word").lower())


def _morphemes(word: str) -> list[str]:
    out, i = [], 0
    while i < len(word):
        for m in _GERMAN_MORPHEMES:
            if word.startswith(m, i):
                out.append(m)
                i += len(m)
                break
        else:
            raise ValueError(f"cannot split {word!r} into number morphemes at {word[i:]!r}")
    return out


def _fix_german_eins(morphemes: list[str]) -> list[str]:
    """num2words writes 101000 as "einhunderteinstausend" and 101 million as
    "einhunderteins Millionen"; German says "ein" before "tausend" and "eine" before
    "millionen"/"milliarden"."""
    out = list(morphemes)
    for j in range(len(out) - 1):
        if out[j] == "eins" and out[j + 1] == "tausend":
            out[j] = "ein"
        elif out[j] == "eins" and out[j + 1] in ("millionen", "milliarden", "billionen"):
            out[j] = "eine"
    return out


def tokenize(text: str, lang: str) -> list[str]:
    """Lower-case word tokens of a number written by num2words; hyphens and commas split
    words and are dropped; German compounds are split into morphemes."""
    string(text, "text")
    one_of(lang, LANGUAGES, "language")
    words = [w for w in re.split(r"[\s,\-]+", text.lower()) if w]
    if lang == "de":
        return _fix_german_eins([m for w in words for m in _morphemes(w)])
    return words


def number_to_words(number: int, lang: str) -> list[str]:
    """The tokens of ``number`` in language ``lang``, e.g. ``(21, "de")`` ->
    ``["ein", "und", "zwanzig"]``."""
    if not 0 <= integer(number, "number") < _LIMIT:
        raise ValueError(f"number must be in [0, 10**16), got {number}")
    return _words(number, one_of(lang, LANGUAGES, "language"))


def _words(number: int, lang: str) -> list[str]:
    return tokenize(_converter(lang).to_cardinal(number), lang)
