"""German number words to digits: a small task for adapting a pretrained decoder.

``"siebenhundertdreiundsechzig" -> "763"``. The words come from ``num2words`` (German
writes a number below a million as one word, the units before the tens:
*dreiundsechzig*, three-and-sixty), so the task is built offline and every answer is
exact. :func:`german_number_split` draws disjoint training and test numbers, so a model
that only memorised its training pairs scores nothing on the test numbers.

Prompts are plain text, one ``words =`` line; the answer is `` digits`` and a newline::

    prompt("dreihundertzwölf")                      -> "dreihundertzwölf ="
    answer(312)                                     -> " 312\\n"
    few_shot_prefix([("elf", 11), ("zwölf", 12)])   -> "elf = 11\\nzwölf = 12\\n"

:func:`read_number` reads the first number out of a reply (a lenient reading for the
baselines, which may say more than the number); :func:`nearest_word_answer` is the simple
baseline: the number of the training word most similar to the question.
"""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from transformer_lab.checks import instance_of, integer, seed_int, string

__all__ = [
    "NumberPair",
    "NumberSplit",
    "german_words",
    "german_number_split",
    "prompt",
    "answer",
    "few_shot_prefix",
    "read_number",
    "nearest_word_answer",
]


@dataclass(frozen=True)
class NumberPair:
    words: str  # "dreihundertzwölf"
    number: int  # 312


@dataclass(frozen=True)
class NumberSplit:
    train: tuple[NumberPair, ...]  # the labelled examples
    test: tuple[NumberPair, ...]  # held out: numbers disjoint from train's
    low: int  # the numbers are drawn from range(low, high)
    high: int


def german_words(number: int) -> str:
    """``number`` in German words (``num2words``): 763 -> ``"siebenhundertdreiundsechzig"``."""
    number = integer(number, "number", minimum=0)
    if number >= 10**6:
        raise ValueError(f"number must be below 1,000,000 (one German word), got {number}")
    try:
        from num2words import num2words
    except ImportError as err:  # pragma: no cover - a dependency of the package
        raise ImportError("the task needs num2words: pip install 'num2words>=0.5.13,<0.6'") from err
    return num2words(number, lang="de")


def german_number_split(
    n_train: int, n_test: int, seed: int = 0, low: int = 100, high: int = 1000
) -> NumberSplit:
    """``n_train`` training and ``n_test`` test pairs, numbers drawn without replacement
    from ``range(low, high)`` with ``seed`` (so no test number is a training number). The
    test numbers depend on ``n_test`` and ``seed`` only, not on ``n_train``: the training
    sets of one seed are nested."""
    n_train, n_test = integer(n_train, "n_train", minimum=1), integer(n_test, "n_test", minimum=1)
    seed, low = seed_int(seed), integer(low, "low", minimum=0)
    high = integer(high, "high", minimum=low + 1)
    if n_train + n_test > high - low:
        raise ValueError(
            f"n_train + n_test must fit in range({low}, {high}) ({high - low} numbers), "
            f"got {n_train} + {n_test}"
        )
    numbers = random.Random(seed).sample(range(low, high), high - low)
    test, train = numbers[:n_test], numbers[n_test : n_test + n_train]
    pairs = lambda ns: tuple(NumberPair(german_words(n), n) for n in ns)  # noqa: E731
    return NumberSplit(pairs(train), pairs(test), low, high)


def prompt(words: str) -> str:
    """The question of one example: ``"<words> ="``."""
    return f"{string(words, 'words')} ="


def answer(number: int) -> str:
    """The answer of one example: a space, the digits, a newline."""
    return f" {integer(number, 'number', minimum=0)}\n"


def few_shot_prefix(shots: Sequence[NumberPair | tuple[str, int]]) -> str:
    """Worked examples, one ``"<words> = <digits>"`` line each, to put before a prompt."""
    if isinstance(shots, str) or not isinstance(shots, Sequence):
        raise TypeError(
            f"shots must be a list of (words, number) pairs, got {type(shots).__name__}"
        )
    lines = []
    for i, shot in enumerate(shots):
        if not isinstance(shot, NumberPair) and (not isinstance(shot, tuple) or len(shot) != 2):
            raise TypeError(
                f"shots[{i}] must be a NumberPair or a (words, number) pair, got {shot!r}"
            )
        words, number = (shot.words, shot.number) if isinstance(shot, NumberPair) else shot
        lines.append(prompt(words) + answer(number))
    return "".join(lines)


def read_number(reply: str) -> int | None:
    """The first run of digits in ``reply`` as an int (``" 312\\n..."`` -> 312), None if
    there is none. Separators inside a number are not read: ``"1.000"`` gives 1."""
    match = re.search(r"\d+", string(reply, "reply"))
    if match is not None and len(match.group()) > 4000:
        raise ValueError(
            f"reply's first number has {len(match.group())} digits; at most 4000 are read"
        )
    return None if match is None else int(match.group())


def nearest_word_answer(train: Sequence[NumberPair], words: str) -> int:
    """The number of the training pair whose words are most similar to ``words``
    (``difflib``'s ratio of matching characters; the first of equals)."""
    instance_of(train, (list, tuple), "train", "a list of NumberPair")
    if not train:
        raise ValueError("train must hold at least one NumberPair, got none")
    if not all(isinstance(p, NumberPair) for p in train):
        bad = next(p for p in train if not isinstance(p, NumberPair))
        raise TypeError(f"train must hold NumberPairs only, got {bad!r}")
    words = string(words, "words")
    ratio = lambda p: difflib.SequenceMatcher(None, p.words, words).ratio()  # noqa: E731
    return max(train, key=ratio).number
