"""Bad inputs to transformer_lab.data.toy_sentences (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import case

from transformer_lab.data import toy_sentences as TS

case(
    TS.tokenize,
    lambda: TS.tokenize(""),
    ValueError,
    "the sentence has no tokens; type at least one word",
)
case(TS.tokenize, lambda: TS.tokenize("a " * 41), ValueError, "41 tokens; at most 40 fit")
case(TS.tokenize, lambda: TS.tokenize(3), TypeError, "sentence must be a str, got int")
case(
    TS.token_embedding,
    lambda: TS.token_embedding(None),
    TypeError,
    "token must be a str, got NoneType",
)
