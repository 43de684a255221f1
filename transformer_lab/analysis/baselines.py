"""Classical text classifiers with no pretraining, the baselines that any adapted encoder
must beat: bag-of-words counts or TF-IDF weights, then logistic regression or multinomial
Naive Bayes (scikit-learn)::

    acc = baseline_accuracy("tfidf_lr", train_texts, train_labels, test_texts, test_labels)

- ``"tfidf_lr"``: TF-IDF weights of the words (scikit-learn's default tokenisation,
  lowercased), then a multinomial logistic regression with L2 penalty (``C=1``);
- ``"naive_bayes"``: word counts, then multinomial Naive Bayes with add-one smoothing.

Both see only the labelled texts: a word that none of them contains is invisible to them.
"""

from __future__ import annotations

from collections.abc import Sequence

from transformer_lab.checks import is_int, one_of

__all__ = ["BASELINES", "fit_baseline", "baseline_accuracy"]

BASELINES = ("tfidf_lr", "naive_bayes")


def _texts_and_labels(texts, labels, what: str) -> tuple[list[str], list[int]]:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise TypeError(f"{what} texts must be a list of strings, got {type(texts).__name__}")
    if not all(isinstance(t, str) for t in texts):
        raise TypeError(f"{what} texts must hold strings only")
    if isinstance(labels, str) or not hasattr(labels, "__len__"):
        raise TypeError(
            f"{what} labels must be a list of int class ids, got {type(labels).__name__}"
        )
    labels = [int(y) if is_int(y) else y for y in list(labels)]
    if not all(is_int(y) and y >= 0 for y in labels):
        raise TypeError(f"{what} labels must be non-negative int class ids, got {labels[:3]!r}")
    if len(texts) != len(labels) or not texts:
        raise ValueError(
            f"{what} texts must be as many as the labels, and not none, got {len(texts)} "
            f"texts and {len(labels)} labels"
        )
    return list(texts), labels


def fit_baseline(kind: str, texts: Sequence[str], labels: Sequence[int]):
    """A fitted scikit-learn pipeline of ``kind`` (see :data:`BASELINES`); it needs at least
    two classes among ``labels``."""
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import MultinomialNB
    from sklearn.pipeline import make_pipeline

    one_of(kind, BASELINES, "kind")
    texts, labels = _texts_and_labels(texts, labels, "training")
    if len(set(labels)) < 2:
        raise ValueError(f"the training labels must hold at least two classes, got {set(labels)}")
    if kind == "tfidf_lr":
        model = make_pipeline(TfidfVectorizer(), LogisticRegression(C=1.0, max_iter=2000))
    else:
        model = make_pipeline(CountVectorizer(), MultinomialNB(alpha=1.0))
    return model.fit(texts, labels)


def baseline_accuracy(
    kind: str,
    train_texts: Sequence[str],
    train_labels: Sequence[int],
    test_texts: Sequence[str],
    test_labels: Sequence[int],
) -> float:
    """Test accuracy of the baseline ``kind`` fitted on the training texts and labels."""
    model = fit_baseline(kind, train_texts, train_labels)
    test_texts, test_labels = _texts_and_labels(test_texts, test_labels, "test")
    predicted = model.predict(test_texts)
    return sum(int(p) == y for p, y in zip(predicted, test_labels, strict=True)) / len(test_labels)
