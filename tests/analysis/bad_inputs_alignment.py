"""Bad inputs to transformer_lab.analysis.alignment.

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import case, torch

from transformer_lab.analysis import alignment as AL

W = torch.rand(2, 4, 10)  # three tokens and the end of text
PIECES = [" a", " b", " c"]

case(AL.dtw_path, lambda: AL.dtw_path(torch.ones(0, 3)), ValueError,
     "cost must have at least one row and one column")  # fmt: skip
case(AL.dtw_path, lambda: AL.dtw_path(torch.tensor([[1.0, float("nan")]])), ValueError,
     "cost must be finite")  # fmt: skip
case(AL.dtw_path, lambda: AL.dtw_path(torch.ones(3)), ValueError, "cost must")
case(AL.token_words, lambda: AL.token_words(" a b"), TypeError, "pieces must be")
case(AL.token_words, lambda: AL.token_words([" a", 3]), TypeError, "pieces must all be str")
case(AL.attention_word_times, lambda: AL.attention_word_times(W, PIECES[:2], 10, 50.0),
     ValueError,
     "weights must hold one row per piece and one for the end of text (3), got 4")  # fmt: skip
case(AL.attention_word_times, lambda: AL.attention_word_times(W, PIECES, 11, 50.0),
     ValueError, "n_frames must be at most the weights' 10 frames, got 11")  # fmt: skip
case(AL.attention_word_times, lambda: AL.attention_word_times(W, PIECES, 10, 0.0),
     ValueError, "frames_per_second")  # fmt: skip
case(AL.attention_word_times,
     lambda: AL.attention_word_times(W, PIECES, 10, 50.0, filter_width=4),
     ValueError, "filter_width must be odd, got 4")  # fmt: skip
case(AL.attention_word_times, lambda: AL.attention_word_times(W, [" ,", ".", "!"], 10, 50.0),
     ValueError, "pieces hold no word to time")  # fmt: skip
case(AL.voiced_span, lambda: AL.voiced_span(torch.zeros(1000), 1000), ValueError,
     "audio is silent")  # fmt: skip
case(AL.voiced_span, lambda: AL.voiced_span(torch.ones(2, 100), 1000), ValueError, "audio")
case(AL.voiced_span, lambda: AL.voiced_span(torch.ones(5), 1000), ValueError,
     "audio must hold at least one window (10 samples), got 5")  # fmt: skip
case(AL.spread_word_times, lambda: AL.spread_word_times([], 0.0, 1.0), ValueError,
     "words must be a non-empty list")  # fmt: skip
case(AL.spread_word_times, lambda: AL.spread_word_times(["a"], 1.0, 1.0), ValueError,
     "need 0 <= start < end, got start=1.0, end=1.0")  # fmt: skip
case(AL.timing_errors, lambda: AL.timing_errors([], []), ValueError,
     "truth must hold at least one word")  # fmt: skip
case(AL.timing_errors, lambda: AL.timing_errors([("a", 0.0)], []), TypeError,
     "truth must hold (word, start, end) tuples")  # fmt: skip
