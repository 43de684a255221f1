"""Bad inputs to transformer_lab.analysis.text_loss.

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import RECORDS, TK, case, gpt

from transformer_lab.analysis import text_loss as TL

RECORDS.add(TL.TextLoss)
CHARS = TK.CharTokenizer("abc")  # ids 0-2, below gpt()'s d_vocab=11; gpt() has n_ctx=8


class _Lowercasing:
    """A tokenizer that loses capitals: its decode does not give the text back."""

    def encode(self, text):
        return CHARS.encode(text.lower())

    def decode(self, ids):
        return CHARS.decode(ids)


def loss(*args, **kwargs):
    return TL.text_loss(*args, **kwargs)


case(TL.text_loss, lambda: loss("gpt", CHARS, "abc"), TypeError,
     "model must be an nn.Module (a causal language model), got str")  # fmt: skip
case(TL.text_loss, lambda: loss(gpt(), "abc", "abc"), TypeError,
     "tokenizer must have encode(text) and decode(ids), got str")  # fmt: skip
case(TL.text_loss, lambda: loss(gpt(), CHARS, ["abc"]), TypeError, "text must be a str, got list")
case(TL.text_loss, lambda: loss(gpt(), CHARS, "abc", window=0), ValueError,
     "window must be a positive int, got 0")  # fmt: skip
case(TL.text_loss, lambda: loss(gpt(), CHARS, "abc", window=4, stride=5), ValueError,
     "stride=5 must be at most window=4")  # fmt: skip
case(TL.text_loss, lambda: loss(gpt(), CHARS, "abc", window=9, stride=4), ValueError,
     "window=9 is longer than the model's context n_ctx=8")  # fmt: skip
case(TL.text_loss, lambda: loss(gpt(), CHARS, "abc", 8, 4, start_id=-1), ValueError,
     "start_id must be a non-negative int, got -1")  # fmt: skip
case(TL.text_loss, lambda: loss(gpt(), CHARS, "abc", 8, 4, start_id=1.0), TypeError,
     "start_id must be an int, got float")  # fmt: skip
case(TL.text_loss, lambda: loss(gpt(), CHARS, "abc", 8, 4, start_id=11), ValueError,
     "idx must be in [0, 11), got values from 0 to 11")  # fmt: skip
case(TL.text_loss, lambda: loss(gpt(), _Lowercasing(), "aBc", 8, 4), ValueError,
     "the tokenizer does not give the text back: decode(encode(text)) differs from "
     "character 1 on ('Bc' became 'bc')")  # fmt: skip
case(TL.text_loss, lambda: loss(gpt(), CHARS, "", 8, 4, start_id=0), ValueError,
     "text must not be empty")  # fmt: skip
case(TL.text_loss, lambda: loss(gpt(), CHARS, "a", 8, 4), ValueError,
     "text must encode to at least 2 tokens without a start_id, got 1")  # fmt: skip
