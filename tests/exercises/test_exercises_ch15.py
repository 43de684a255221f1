"""Chapter 15's checkers pass right answers and name the usual mistakes."""

from __future__ import annotations

from collections import Counter

import pytest
from checker_helpers import assert_fails, verdict

from transformer_lab import exercises
from transformer_lab.exercises.ch15_fine_tuning import (
    check_majority_baseline,
    check_naive_bayes,
    check_parameter_groups,
    majority_baseline,
    naive_bayes,
)


def test_reference_majority_baseline():
    assert majority_baseline([0, 1, 1, 2], [1, 0, 0, 0]) == 0.25
    assert majority_baseline([2, 2, 0], [2, 2, 2, 1]) == 0.75


def test_majority_baseline_checker(capsys):
    assert check_majority_baseline(majority_baseline)
    assert "✓ check_majority_baseline" in capsys.readouterr().out

    def with_max(train, test):
        counts = Counter(train)
        best = max(counts, key=counts.get)
        return sum(y == best for y in test) / len(test)

    assert verdict(check_majority_baseline, with_max)
    cases = {
        "TEST set": lambda tr, te: max(Counter(te).values()) / len(te),
        "share of the majority label in the training set": (
            lambda tr, te: max(Counter(tr).values()) / len(tr)
        ),
        "1 / number of classes": lambda tr, te: 1 / 3,
        "expected": lambda tr, te: 0.0,
        "one number": lambda tr, te: [0.5],
        "not written yet": lambda tr, te: (_ for _ in ()).throw(NotImplementedError),
        "ZeroDivisionError": lambda tr, te: 1 / 0,
    }
    for words, fn in cases.items():
        assert_fails(verdict(check_majority_baseline, fn), words)
    with pytest.raises(AssertionError):
        check_majority_baseline(cases["TEST set"], strict=True, verbose=False)


def test_parameter_groups_checker():
    assert verdict(check_parameter_groups, lambda m, lr, elr: m.parameter_groups(lr, elr))

    def by_name(m, lr, elr):
        head = [p for n, p in m.named_parameters() if n.startswith("classifier")]
        body = [p for n, p in m.named_parameters() if n.startswith("encoder") and p.requires_grad]
        return [{"params": head, "lr": lr}, {"params": body, "lr": elr}]

    assert verdict(check_parameter_groups, by_name)

    def swapped(m, lr, elr):
        return m.parameter_groups(elr, lr)

    def frozen_too(m, lr, elr):
        return [
            {"params": list(m.classifier.parameters()), "lr": lr},
            {"params": list(m.encoder.parameters()), "lr": elr},
        ]

    def one_rate(m, lr, elr):
        return [{"params": [p for p in m.parameters() if p.requires_grad], "lr": lr}]

    def no_head(m, lr, elr):
        return [{"params": [p for p in m.encoder.parameters() if p.requires_grad], "lr": elr}]

    def twice(m, lr, elr):
        return m.parameter_groups(lr, elr) + [{"params": list(m.classifier.parameters()), "lr": lr}]

    cases = {
        "swapped": swapped,
        "frozen encoder parameters": frozen_too,
        "not lr=": one_rate,
        "head's parameters": no_head,
        "more than one group": twice,
        "list of dicts": lambda m, lr, elr: None,
        "RuntimeError": lambda m, lr, elr: (_ for _ in ()).throw(RuntimeError("boom")),
    }
    for words, fn in cases.items():
        assert_fails(verdict(check_parameter_groups, fn), words)


def test_checkers_are_reexported():
    assert exercises.check_majority_baseline is check_majority_baseline
    assert exercises.check_parameter_groups is check_parameter_groups


def test_reference_naive_bayes_agrees_with_scikit_learn():
    from transformer_lab.analysis.baselines import fit_baseline
    from transformer_lab.data.topics import sample_labelled, topic_task

    task = topic_task(0)
    texts, labels = sample_labelled(task.train, 160, 0)
    test = [s.text for s in task.test_seen[::7]]
    assert (
        naive_bayes(texts, labels, test)
        == fit_baseline("naive_bayes", texts, labels).predict(test).tolist()
    )


def test_naive_bayes_checker(capsys):
    assert check_naive_bayes(naive_bayes)
    assert "✓ check_naive_bayes" in capsys.readouterr().out
    cases = {
        "class prior": lambda a, b, c: naive_bayes(a, b, c, prior=False),
        "add-one smoothing": lambda a, b, c: naive_bayes(a, b, c, smoothing=0.0),
        "expected": lambda a, b, c: [3] * len(c),
        "list of int labels": lambda a, b, c: "cat",
        "one label per test text": lambda a, b, c: [1],
    }
    for words, fn in cases.items():
        assert_fails(verdict(check_naive_bayes, fn), words)
    with pytest.raises(AssertionError):
        check_naive_bayes(cases["class prior"], strict=True, verbose=False)
