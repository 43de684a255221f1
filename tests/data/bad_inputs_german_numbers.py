"""Bad inputs to transformer_lab.data.german_numbers (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import RECORDS, case

from transformer_lab.data import german_numbers as GN

RECORDS.update({GN.NumberPair, GN.NumberSplit})

case(
    GN.german_words,
    lambda: GN.german_words(-1),
    ValueError,
    "number must be a non-negative int, got -1",
)
case(GN.german_words, lambda: GN.german_words(2.5), TypeError, "number must be an int")
case(GN.german_words, lambda: GN.german_words(10**7), ValueError, "below 1,000,000")
case(GN.german_number_split, lambda: GN.german_number_split(0, 5), ValueError, "n_train")
case(GN.german_number_split, lambda: GN.german_number_split(5, 5, high=50), ValueError, "high")
case(GN.german_number_split, lambda: GN.german_number_split(800, 200), ValueError, "must fit")
case(GN.prompt, lambda: GN.prompt(12), TypeError, "words")
case(GN.answer, lambda: GN.answer("12"), TypeError, "number must be an int")
case(GN.few_shot_prefix, lambda: GN.few_shot_prefix("elf = 11"), TypeError, "shots must be")
case(GN.read_number, lambda: GN.read_number(None), TypeError, "reply")
case(GN.read_number, lambda: GN.read_number("9" * 5000), ValueError,
     "reply's first number has 5000 digits; at most 4000 are read")  # fmt: skip
case(GN.few_shot_prefix, lambda: GN.few_shot_prefix([("eins",)]), TypeError,
     "shots[0] must be a NumberPair or a (words, number) pair, got ('eins',)")  # fmt: skip
case(GN.nearest_word_answer, lambda: GN.nearest_word_answer([("eins", 1)], "elf"), TypeError,
     "train must hold NumberPairs only, got ('eins', 1)")  # fmt: skip
case(GN.nearest_word_answer, lambda: GN.nearest_word_answer([], "elf"), ValueError, "at least one")
case(GN.nearest_word_answer, lambda: GN.nearest_word_answer("elf", "elf"), TypeError, "train must")
