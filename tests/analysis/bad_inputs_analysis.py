"""Bad inputs to transformer_lab.analysis.

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import (  # noqa: F401
    ANALYSIS_HEAD_PATTERNS,
    ANALYSIS_LOSS_SURFACE,
    BL,
    PA,
    TK,
    E,
    case,
    f,
    ids,
    np,
    torch,
)

case(
    E.one_hot,
    lambda: E.one_hot(ids(1, 5), 3),
    ValueError,
    "indices must be in 0..2, got values from 1 to 5",
)

case(
    E.one_hot, lambda: E.one_hot(f(3), 3), TypeError, "indices must be integers, got torch.float32"
)

case(
    E.one_hot,
    lambda: E.one_hot(ids(1), 0),
    ValueError,
    "vocab_size must be a positive int, got 0",
)

case(
    E.cosine_similarity,
    lambda: E.cosine_similarity(f(3), f(4)),
    ValueError,
    "a has 3 features but b has 4",
)

case(
    E.cosine_similarity,
    lambda: E.cosine_similarity([1.0], f(1)),
    TypeError,
    "a must be a floating-point tensor, got list",
)

case(
    E.euclidean_distance,
    lambda: E.euclidean_distance(f(2, 3), f(4, 3)),
    ValueError,
    "shapes (2, 3) and (4, 3) do not broadcast together",
)

case(
    E.nearest,
    lambda: E.nearest("a", f(4, 2), TK.Vocabulary("abcd"), k=0),
    ValueError,
    "k must be an int in [1, 3], got 0",
)

case(
    E.nearest,
    lambda: E.nearest("z", f(4, 2), TK.Vocabulary("abcd")),
    ValueError,
    "k must be an int in [1, 3], got 5",
)

case(
    ANALYSIS_HEAD_PATTERNS.head_pattern_scores,
    lambda: ANALYSIS_HEAD_PATTERNS.head_pattern_scores([f(1, 2, 3, 3)], ["a", "b"]),
    ValueError,
    "2 tokens for attention over 3 positions",
)

case(
    ANALYSIS_HEAD_PATTERNS.bag_of_words_scores,
    lambda: ANALYSIS_HEAD_PATTERNS.bag_of_words_scores([f(1, 2, 3, 3)], ["[CLS]", "a", "[SEP]"]),
    ValueError,
    "need at least 2 tokens besides [CLS], [SEP] and [PAD], got 1",
)

case(
    ANALYSIS_HEAD_PATTERNS.bag_of_words_scores,
    lambda: ANALYSIS_HEAD_PATTERNS.bag_of_words_scores([f(1, 2, 3, 3)], ["a", "b"]),
    ValueError,
    "2 tokens for attention over 3 positions",
)

case(
    ANALYSIS_HEAD_PATTERNS.top_heads,
    lambda: ANALYSIS_HEAD_PATTERNS.top_heads(np.zeros(3)),
    ValueError,
    "scores must be [n_layers, n_heads], got shape (3,)",
)

case(
    ANALYSIS_HEAD_PATTERNS.top_heads,
    lambda: ANALYSIS_HEAD_PATTERNS.top_heads(np.zeros((2, 2)), k=0),
    ValueError,
    "k must be a positive int, got 0",
)

case(
    E.nearest,
    lambda: E.nearest(f(3), f(4, 2), TK.Vocabulary(["a", "b", "c", "d"]), k=2),
    ValueError,
    "a query vector must be [d_model]=[2], got (3,)",
)

case(PA.interleaved_medians, lambda: PA.interleaved_medians({}), ValueError, "fns is empty")

case(PA.longest_chain, lambda: PA.longest_chain(None), TypeError, "output must be a torch.Tensor")

case(PA.multiply_adds, lambda: PA.multiply_adds(None), TypeError, "not callable")

case(E.pca_2d, lambda: E.pca_2d(f(2, 3)), ValueError, "n >= 3 rows and d >= 2, got (2, 3)")

case(E.pca_2d, lambda: E.pca_2d(ids(1, 2, 3)), TypeError, "X must be a floating-point tensor")

case(
    E.group_separation,
    lambda: E.group_separation(f(3, 2), ["a", "b"]),
    ValueError,
    "2 labels for 3 rows",
)

case(
    E.analogy,
    lambda: E.analogy("a", "b", "z", f(4, 2), TK.Vocabulary("abcd")),
    ValueError,
    "not single tokens of the vocabulary: ['z']",
)

case(
    E.analogy_rank,
    lambda: E.analogy_rank("a", "b", "c", "a", f(4, 2), TK.Vocabulary("abcd")),
    ValueError,
    "expected='a' is one of the question's words",
)


def _table_with_nan():
    W_E = torch.randn(6, 4, generator=torch.Generator().manual_seed(0))
    W_E[5] = float("nan")
    return W_E, TK.Vocabulary(["a", "b", "c", "d", "e", "f"])


for target, thunk, error, fragment in [
    (E.analogy, lambda: E.analogy("a", "b", "c", *_table_with_nan(), k=2), ValueError,
     "the vectors must be finite, but the scores of 1 tokens are NaN (e.g. ['f'])"),
    (E.analogy_rank, lambda: E.analogy_rank("a", "b", "c", "d", *_table_with_nan()),
     ValueError, "the vectors must be finite"),
    (E.nearest, lambda: E.nearest("a", *_table_with_nan(), k=2), ValueError,
     "the vectors must be finite"),
    (E.nearest, lambda: E.nearest(torch.ones(4, dtype=torch.long), *_table_with_nan()),
     TypeError, "query must be a floating-point tensor, got torch.int64"),
    (E.pca_2d, lambda: E.pca_2d(torch.tensor([[0.0, 1.0], [1.0, 0.0], [float("inf"), 0.0]])),
     ValueError, "X must hold finite numbers, got NaN or inf"),
    (E.group_separation, lambda: E.group_separation(
        torch.tensor([[0.0, 1.0], [1.0, float("nan")], [1.0, 0.0]]), ["x", "x", "y"]),
     ValueError, "X must hold finite numbers, got NaN or inf"),
]:  # fmt: skip
    case(target, thunk, error, fragment)


def _line() -> torch.nn.Linear:
    torch.manual_seed(0)
    return torch.nn.Linear(3, 2)


case(
    ANALYSIS_LOSS_SURFACE.random_direction,
    lambda: ANALYSIS_LOSS_SURFACE.random_direction(_line(), 0),
    TypeError,
    "generator must be a Generator, got int",
)

case(
    ANALYSIS_LOSS_SURFACE.random_direction,
    lambda: ANALYSIS_LOSS_SURFACE.random_direction("model", torch.Generator()),
    TypeError,
    "model must be a Module, got str",
)

case(
    ANALYSIS_LOSS_SURFACE.loss_slice,
    lambda: ANALYSIS_LOSS_SURFACE.loss_slice(_line(), lambda m: 0.0, [torch.zeros(2, 3)], [0.0]),
    ValueError,
    "direction has 1 tensors but the model has 2 parameters",
)

case(
    ANALYSIS_LOSS_SURFACE.loss_slice,
    lambda: ANALYSIS_LOSS_SURFACE.loss_slice(
        _line(), lambda m: 0.0, [torch.zeros(3, 2), torch.zeros(2)], [0.0]
    ),
    ValueError,
    "direction[0] must have the shape (2, 3), got (3, 2)",
)

case(
    ANALYSIS_LOSS_SURFACE.loss_slice,
    lambda: ANALYSIS_LOSS_SURFACE.loss_slice(
        _line(), lambda m: 0.0, [torch.zeros(2, 3), torch.zeros(2)], [0.0, float("nan")]
    ),
    ValueError,
    "alphas[1] must be a finite number, got nan",
)

case(
    ANALYSIS_LOSS_SURFACE.loss_slice,
    lambda: ANALYSIS_LOSS_SURFACE.loss_slice(_line(), None, [], [0.0]),
    TypeError,
    "loss_fn must be callable (model -> loss), got NoneType",
)

case(
    BL.fit_baseline,
    lambda: BL.fit_baseline("svm", ["ox bee", "cow elk"], [0, 1]),
    ValueError,
    "kind must be one of ('tfidf_lr', 'naive_bayes'), got 'svm'",
)
case(
    BL.fit_baseline,
    lambda: BL.fit_baseline("tfidf_lr", "a b", [0, 1]),
    TypeError,
    "training texts must be a list of strings, got str",
)
case(
    BL.fit_baseline,
    lambda: BL.fit_baseline("naive_bayes", ["ox bee", "cow elk"], [0]),
    ValueError,
    "training texts must be as many as the labels, and not none, got 2 texts and 1 labels",
)
case(
    BL.fit_baseline,
    lambda: BL.fit_baseline("naive_bayes", ["ox bee", "cow elk"], [1, 1]),
    ValueError,
    "the training labels must hold at least two classes",
)
case(
    BL.baseline_accuracy,
    lambda: BL.baseline_accuracy("tfidf_lr", ["ox bee", "cow elk"], [0, 1], ["a"], [0.5]),
    TypeError,
    "test labels must be non-negative int class ids",
)

from transformer_lab.analysis import roofline as ROOF  # noqa: E402

case(
    ROOF.read_bandwidth,
    lambda: ROOF.read_bandwidth(0),
    ValueError,
    "n_bytes must be a positive int",
)
case(ROOF.read_bandwidth, lambda: ROOF.read_bandwidth(2), ValueError, "at least one float32, got 2")
case(ROOF.decode_bytes_per_token, lambda: ROOF.decode_bytes_per_token(torch.nn.Linear(2, 2), 3),
     TypeError, "model.config must name n_layers, n_heads and d_model")  # fmt: skip
case(ROOF.decode_bytes_per_token, lambda: ROOF.decode_bytes_per_token(None, 3), TypeError,
     "model must be an nn.Module, got NoneType")  # fmt: skip
case(ROOF.roofline, lambda: ROOF.roofline(1e6, float("nan")), ValueError,
     "bandwidth must be a positive finite number, got nan")  # fmt: skip
