"""Checkers for chapter 15, fine-tuning: the majority-class baseline, optimizer parameter
groups with a smaller learning rate for the encoder, and Naive Bayes by hand."""

from __future__ import annotations

import math
import re
from collections import Counter

import torch

from transformer_lab.exercises.runner import CheckResult, WrongAnswer, as_number, call, run_check
from transformer_lab.models.bert import BertConfig, BertModel
from transformer_lab.models.classifier import SequenceClassifier

__all__ = [
    "majority_baseline",
    "check_majority_baseline",
    "check_parameter_groups",
    "naive_bayes",
    "check_naive_bayes",
]


def majority_baseline(train_labels, test_labels) -> float:
    """Test accuracy of always answering the label most common in ``train_labels``."""
    majority = Counter(int(y) for y in train_labels).most_common(1)[0][0]
    return sum(int(y) == majority for y in test_labels) / len(test_labels)


def _as_float(out, describe: str) -> float:
    got = as_number(out)
    if got is None:
        raise WrongAnswer(
            f"return one number (an accuracy), got {type(out).__name__} ({describe})."
        )
    return float(got)


def check_majority_baseline(
    fn, *, strict: bool = False, verbose: bool = True, seed: int = 0
) -> CheckResult:
    """Check ``fn(train_labels, test_labels) -> float``: the test accuracy of a classifier
    that always answers the most common label of the *training* labels."""

    def body():
        gen = torch.Generator().manual_seed(seed)
        # training majority 1, test majority 2: a test-set majority is a different answer
        cases = [
            ([0] * 5 + [1] * 9 + [2] * 4, [0] * 3 + [1] * 4 + [2] * 8),
            ([2] * 7 + [0] * 2, [2] * 2 + [0] * 5 + [1] * 2),
        ]
        perm = torch.randperm(18, generator=gen).tolist()
        cases.append(([cases[0][0][i] for i in perm], list(cases[0][1])))
        for train_labels, test_labels in cases:
            describe = f"train labels {Counter(train_labels)}, test labels {Counter(test_labels)}"
            got = _as_float(call(fn, (list(train_labels), list(test_labels)), describe), describe)
            want = majority_baseline(train_labels, test_labels)
            if abs(got - want) < 1e-6:
                continue
            test_major = Counter(test_labels).most_common(1)[0][0]
            train_major = Counter(train_labels).most_common(1)[0][0]
            n_classes = len(set(train_labels) | set(test_labels))
            mistakes = [
                (
                    "you took the most common label of the TEST set; the classifier may only "
                    "learn from the training labels",
                    sum(y == test_major for y in test_labels) / len(test_labels),
                ),
                (
                    "you returned the share of the majority label in the training set; "
                    "score its answer on the test labels",
                    sum(y == train_major for y in train_labels) / len(train_labels),
                ),
                ("you returned 1 / number of classes, chance for a uniform guess", 1 / n_classes),
            ]
            for words, value in mistakes:
                if abs(got - value) < 1e-6:
                    raise WrongAnswer(f"{words} ({describe}: expected {want:.4f}).")
            raise WrongAnswer(f"expected {want:.4f}, got {got:.4f} ({describe}).")
        return "right, including a test set whose own majority differs from the training one."

    return run_check("check_majority_baseline", body, strict, verbose)


def _tiny_classifier(seed: int) -> SequenceClassifier:
    torch.manual_seed(seed)
    cfg = BertConfig(d_vocab=30, d_model=8, n_heads=2, d_mlp=16, n_layers=1, max_pos=8)
    return SequenceClassifier(BertModel(cfg), 3)


def _check_groups(groups, model: SequenceClassifier, lr: float, encoder_lr: float, what: str):
    if not isinstance(groups, (list, tuple)) or not all(isinstance(g, dict) for g in groups):
        raise WrongAnswer(
            f"return a list of dicts such as {{'params': [...], 'lr': ...}}, got "
            f"{type(groups).__name__} ({what})."
        )
    rate: dict[int, list[float]] = {}
    for g in groups:
        if "params" not in g or "lr" not in g:
            raise WrongAnswer(
                f"every group needs 'params' and 'lr', got keys {sorted(g)} ({what})."
            )
        for p in g["params"]:
            rate.setdefault(id(p), []).append(g["lr"])
    twice = [k for k, v in rate.items() if len(v) > 1]
    if twice:
        raise WrongAnswer(
            f"{len(twice)} parameters are in more than one group; the optimizer refuses that "
            f"({what})."
        )
    head = list(model.classifier.parameters())
    body = list(model.encoder.parameters())
    if any(id(p) not in rate for p in head):
        raise WrongAnswer(f"the head's parameters (model.classifier) are missing ({what}).")
    frozen = [p for p in body if not p.requires_grad]
    if frozen and any(id(p) in rate for p in frozen):
        raise WrongAnswer(
            f"frozen encoder parameters are in a group; leave out those with requires_grad "
            f"False ({what})."
        )
    trainable = [p for p in body if p.requires_grad]
    if any(id(p) not in rate for p in trainable):
        raise WrongAnswer(f"some trainable encoder parameters are in no group ({what}).")
    if any(rate[id(p)][0] == lr for p in trainable) and lr != encoder_lr:
        if all(rate[id(p)][0] == lr for p in trainable) and all(
            rate[id(p)][0] == encoder_lr for p in head
        ):
            raise WrongAnswer(
                f"the rates are swapped: the encoder gets lr, the head encoder_lr ({what})."
            )
        raise WrongAnswer(
            f"the encoder should learn at encoder_lr={encoder_lr}, not lr={lr} ({what})."
        )
    if any(rate[id(p)][0] != encoder_lr for p in trainable):
        raise WrongAnswer(
            f"every encoder parameter should learn at encoder_lr={encoder_lr} ({what})."
        )
    if any(rate[id(p)][0] != lr for p in head):
        raise WrongAnswer(f"the head should learn at lr={lr} ({what}).")


def check_parameter_groups(
    fn, *, strict: bool = False, verbose: bool = True, seed: int = 0
) -> CheckResult:
    """Check ``fn(model, lr, encoder_lr) -> list of {'params', 'lr'} dicts`` for a
    :class:`~transformer_lab.models.classifier.SequenceClassifier`: the head at ``lr``, every
    trainable encoder parameter at ``encoder_lr``, frozen ones left out, none twice."""

    def body():
        model = _tiny_classifier(seed)
        _check_groups(call(fn, (model, 1e-3, 1e-4), "a classifier, lr=1e-3, encoder_lr=1e-4"),
                      model, 1e-3, 1e-4, "lr=1e-3, encoder_lr=1e-4")  # fmt: skip
        model.encoder.embeddings.requires_grad_(False)  # freeze the embeddings only
        what = "embeddings frozen, lr=2e-3, encoder_lr=5e-5"
        _check_groups(call(fn, (model, 2e-3, 5e-5), what), model, 2e-3, 5e-5, what)
        groups = call(fn, (model, 2e-3, 5e-5), what)
        torch.optim.AdamW(groups)  # the optimizer accepts them
        return (
            "right: the head at lr, the trainable encoder at encoder_lr, frozen weights left out."
        )

    return run_check("check_parameter_groups", body, strict, verbose)


def words(text: str) -> list[str]:
    """The words of ``text``: runs of two or more letters or digits, lowercased (the rule of
    scikit-learn's ``CountVectorizer``)."""
    return re.findall(r"\b\w\w+\b", text.lower())


def naive_bayes(train_texts, train_labels, test_texts, *, prior=True, smoothing=1.0):
    """Multinomial Naive Bayes: for each test text, the class ``c`` that maximises
    ``log P(c) + sum over its words w of log P(w | c)``, with
    ``P(w | c) = (count(w, c) + 1) / (words in c + |V|)`` over the training vocabulary ``V``;
    words outside ``V`` are skipped. (``prior``, ``smoothing``: the usual mistakes.)"""
    classes = sorted(set(int(y) for y in train_labels))
    counts = {c: Counter() for c in classes}
    for text, y in zip(train_texts, train_labels, strict=True):
        counts[int(y)].update(words(text))
    vocab = set().union(*counts.values())
    n = Counter(int(y) for y in train_labels)
    out = []
    for text in test_texts:
        best, best_score = None, -math.inf
        for c in classes:
            total = sum(counts[c].values()) + smoothing * len(vocab)
            score = math.log(n[c] / len(train_labels)) if prior else 0.0
            for w in words(text):
                if w in vocab:
                    k = counts[c][w] + smoothing
                    score += math.log(k / total) if k else -math.inf
            if best is None or score > best_score:
                best, best_score = c, score
        out.append(best)
    return out


_NB_CASES = (
    # the class prior decides a text with no known word
    (["owl cat", "cat dog", "dog hen", "fox owl"], [1, 1, 1, 0], ["zebra yak", "fox"]),
    # without smoothing a word unseen in a class rules that class out
    (
        ["apple pear pear pear", "plum", "apple bread", "bread rice"],
        [0, 0, 1, 1],
        ["apple apple rice", "pear bread bread", "plum rice rice"],
    ),
    (
        [
            "The kayak and the canoe",
            "A canoe, a ferry!",
            "the chef cooks",
            "a baker, a chef",
            "chef",
        ],
        [2, 2, 4, 4, 4],
        ["The chef's canoe", "A ferry for the baker", "canoe canoe kayak", "unheard-of words"],
    ),
)


def check_naive_bayes(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(train_texts, train_labels, test_texts) -> list of predicted labels``:
    multinomial Naive Bayes with add-one smoothing and the class prior, words as in
    :func:`words`, words never seen in training skipped."""

    def body():
        for train_texts, train_labels, test_texts in _NB_CASES:
            describe = f"training texts {list(train_texts)} with labels {list(train_labels)}"
            got = call(fn, (list(train_texts), list(train_labels), list(test_texts)), describe)
            try:
                got = [int(y) for y in got]
            except (TypeError, ValueError):
                raise WrongAnswer(
                    f"return a list of int labels, one per test text, got {got!r} ({describe})."
                ) from None
            want = naive_bayes(train_texts, train_labels, test_texts)
            if got == want:
                continue
            if len(got) != len(test_texts):
                raise WrongAnswer(
                    f"return one label per test text ({len(test_texts)}), got {len(got)}."
                )
            mistakes = [
                ("you left out the class prior log P(c): with no known word it decides",
                 dict(prior=False)),
                ("without add-one smoothing a word never seen with a class gives that class "
                 "probability 0; add 1 to every count and |V| to every total", dict(smoothing=0.0)),
            ]  # fmt: skip
            for words_, kwargs in mistakes:
                if got == naive_bayes(train_texts, train_labels, test_texts, **kwargs):
                    raise WrongAnswer(f"{words_} (test texts {list(test_texts)}).")
            raise WrongAnswer(
                f"expected {want} for test texts {list(test_texts)}, got {got} ({describe})."
            )
        return "right: prior, add-one smoothing, unseen words skipped."

    return run_check("check_naive_bayes", body, strict, verbose)
