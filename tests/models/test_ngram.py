"""The interpolated Kneser-Ney n-gram model: against a worked example and a reference written
with dictionaries straight from the formulas, normalised, never zero, independent of how a
sequence is cut, and strict about its arguments."""

from __future__ import annotations

from collections import Counter, defaultdict
from fractions import Fraction

import numpy as np
import pytest
import torch

from transformer_lab.models import ngram
from transformer_lab.models.ngram import NGramLM, select_ngram


def corpus(n: int, d_vocab: int = 6, seed: int = 0) -> torch.Tensor:
    """A second-order Markov chain over tokens 0 .. d_vocab - 2 (the last never occurs), with
    peaked random transitions: frequent and rare n-grams, and two tokens of context matter."""
    gen = np.random.default_rng(1234)  # one chain for every seed: held-out text is like training
    m = d_vocab - 1
    table = gen.dirichlet(np.full(m, 0.3), size=(m, m)).cumsum(-1)  # [m, m, m]
    draws = np.random.default_rng(seed).random(n)
    x = [0, 1]
    for u in draws[2:]:
        x.append(min(int(np.searchsorted(table[x[-2], x[-1]], u)), m - 1))
    return torch.tensor(x[:n])


def reference_probability(text, order, d_vocab, discounts, context, w):
    """p(w | context) of interpolated Kneser-Ney, from dictionaries of tuples.

    ``discounts[k - 1]`` is the function count -> D of level k. The top level counts
    occurrences; a lower level k counts, for each k-gram, the distinct tokens before it."""
    text = [int(t) for t in text]
    occurrences = {
        k: Counter(tuple(text[i : i + k]) for i in range(len(text) - k + 1))
        for k in range(1, order + 2)
    }
    counts = {order: occurrences[order]}
    for k in range(1, order):
        before = defaultdict(set)
        for gram in occurrences[k + 1]:
            before[gram[1:]].add(gram[0])
        counts[k] = {gram: len(tokens) for gram, tokens in before.items()}

    def p(k, h, w):
        if k == 0:
            return 1 / d_vocab
        followers = {g[-1]: c for g, c in counts[k].items() if g[:-1] == h}
        total = sum(followers.values())
        if total == 0:
            return p(k - 1, h[1:], w)
        D = discounts[k - 1]
        gamma = sum(D(c) for c in followers.values())
        c = followers.get(w, 0)
        return (max(c - D(c), 0) + gamma * p(k - 1, h[1:], w)) / total

    h = tuple(int(t) for t in context)[-(order - 1) :] if order > 1 else ()
    return p(len(h) + 1, h, w)


def test_a_bigram_worked_by_hand():
    # "abracadabra" with a=0 b=1 r=2 c=3 d=4 and one token (5) that never occurs; D = 1/2.
    # Bigrams: ab 2, br 2, ra 2, ac 1, ca 1, ad 1, da 1 (10 in all). Unigram level, the
    # continuation counts: a follows r, c and d (3); b, r, c and d follow one token each: 7 in
    # all, 5 types, so p1(w) = (N(.w) - 1/2) / 7 + (5/2) / 7 / 6:
    # p1(a) = 5/2 / 7 + 5/84 = 35/84, p1(b) = 1/2 / 7 + 5/84 = 11/84.
    # After a: b twice, c once, d once (4, 3 types), so gamma = 3/2 / 4 = 3/8 and
    # p2(b | a) = (2 - 1/2) / 4 + 3/8 * 11/84 = 3/8 * 95/84 = 95/224; p2(a | a) = 3/8 * 35/84.
    ids = torch.tensor([0, 1, 2, 0, 3, 0, 4, 0, 1, 2, 0])
    lm = NGramLM(2, 6, discount=0.5).fit(ids)
    dist = lm.next_distribution(torch.tensor([0]))
    assert dist[1].item() == pytest.approx(float(Fraction(95, 224)), abs=1e-15)
    assert dist[0].item() == pytest.approx(float(Fraction(3, 8) * Fraction(35, 84)), abs=1e-15)
    unigram = lm.next_distribution(torch.tensor([], dtype=torch.long))  # no context: level 1
    assert unigram[0].item() == pytest.approx(35 / 84, abs=1e-15)
    assert unigram[5].item() == pytest.approx(5 / 84, abs=1e-15)  # never seen: (5/2) / 7 / 6
    assert lm.n_counts == 5 + 7  # five characters follow another, seven distinct bigrams


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_equals_the_dictionary_reference_on_a_20_token_string(order):
    text = corpus(20, seed=1)
    lm = NGramLM(order, 6, discount=0.7).fit(text)
    plain = [lambda c: 0.7] * order
    for context in ([], [0], [1, 2], [2, 3, 4], [4, 4, 4], [0, 1, 2, 3]):
        dist = lm.next_distribution(torch.tensor(context, dtype=torch.long))
        for w in range(6):
            expected = reference_probability(text, order, 6, plain, context, w)
            assert dist[w].item() == pytest.approx(expected, rel=1e-12), (context, w)


@pytest.mark.parametrize("text", [[0, 1, 2, 0, 1, 2, 0, 1, 3], [0, 1, 2, 0, 1, 2, 0, 1, 2]])
@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_the_last_tokens_are_counted_too(text, order):
    # shorter levels are read from the longest n-grams; the n-grams that end the text, new
    # (first text) or seen before (second), start no longer n-gram and are added by hand
    lm = NGramLM(order, 5, discount=0.4).fit(torch.tensor(text))
    plain = [lambda c: 0.4] * order
    for context in ([], [1], [0, 1], [2, 0, 1], [1, 3]):
        dist = lm.next_distribution(torch.tensor(context, dtype=torch.long))
        for w in range(5):
            expected = reference_probability(text, order, 5, plain, context, w)
            assert dist[w].item() == pytest.approx(expected, rel=1e-12), (context, w)


def test_modified_discounts_follow_chen_and_goodman():
    text = corpus(3000, d_vocab=8, seed=2)
    lm = NGramLM(3, 8).fit(text)
    top = Counter(tuple(text[i : i + 3].tolist()) for i in range(len(text) - 2))
    n1, n2, n3, n4 = (sum(c == r for c in top.values()) for r in (1, 2, 3, 4))
    assert min(n1, n2, n3, n4) > 0
    y = n1 / (n1 + 2 * n2)
    expected = [1 - 2 * y * n2 / n1, 2 - 3 * y * n3 / n2, 3 - 4 * y * n4 / n3]
    np.testing.assert_allclose(lm.discounts[2], expected, rtol=1e-12)
    levels = [lambda c, d=d: d[min(c, 3) - 1] for d in lm.discounts]
    for context in ([1, 2], [3, 5], [6, 6], [0]):
        dist = lm.next_distribution(torch.tensor(context))
        for w in range(8):
            expected = reference_probability(text, 3, 8, levels, context, w)
            assert dist[w].item() == pytest.approx(expected, rel=1e-12), (context, w)


@pytest.mark.parametrize("discount", [None, 0.3, 0.9])
@pytest.mark.parametrize("order", [1, 3, 5])
def test_distributions_sum_to_one_and_are_never_zero(order, discount):
    lm = NGramLM(order, 6, discount=discount).fit(corpus(500))
    gen = torch.Generator().manual_seed(0)
    for n in range(8):  # random contexts, seen and unseen, shorter and longer than order - 1
        dist = lm.next_distribution(torch.randint(0, 6, (n,), generator=gen))
        assert dist.shape == (6,) and dist.dtype == torch.float64
        assert abs(dist.sum().item() - 1) < 1e-12
        assert dist.min().item() > 0  # token 5 never occurs in the corpus
    assert torch.isfinite(lm.log_probs(torch.tensor([5, 5, 5, 0, 5]))).all()


def test_order_one_is_the_unigram_frequency_smoothed():
    text = corpus(20_000)
    lm = NGramLM(1, 6, discount=0.5).fit(text)
    counts = torch.bincount(text, minlength=6).double()
    seen = int((counts > 0).sum())
    expected = (counts - 0.5 * (counts > 0)) / len(text) + 0.5 * seen / len(text) / 6
    for context in ([], [3], [1, 2, 3]):  # no context matters
        dist = lm.next_distribution(torch.tensor(context, dtype=torch.long))
        torch.testing.assert_close(dist, expected)
    torch.testing.assert_close(expected, counts / len(text), atol=1e-4, rtol=0)


def test_log_probs_agree_with_next_distribution():
    text, held_out = corpus(2000), corpus(300, seed=5)
    lm = NGramLM(4, 6).fit(text)
    log_probs = lm.log_probs(held_out)
    assert log_probs.shape == (299,)
    for t in (0, 1, 2, 3, 150, 298):  # log_probs[t] scores token t + 1
        dist = lm.next_distribution(held_out[: t + 1])
        assert log_probs[t].item() == pytest.approx(dist[held_out[t + 1]].log().item(), rel=1e-12)
    assert lm.nats_per_token(held_out) == pytest.approx(-log_probs.mean().item(), rel=1e-15)


def test_scoring_does_not_depend_on_how_the_ids_are_cut(monkeypatch):
    text, held_out = corpus(2000), corpus(1000, seed=7)
    lm = NGramLM(5, 6).fit(text)
    whole = lm.log_probs(held_out)
    monkeypatch.setattr(ngram, "_CHUNK", 7)  # scored seven positions at a time
    assert torch.equal(lm.log_probs(held_out), whole)
    a, b = 300, 640  # a window scores its tokens as the whole does once it holds 4 before them
    assert torch.equal(lm.log_probs(held_out[a:b])[3:], whole[a + 3 : b - 1])
    assert torch.equal(lm.log_probs(held_out.numpy().astype(np.int32)), whole)  # NumPy ids


def test_more_context_helps_on_structured_text():
    text, held_out = corpus(20_000), corpus(3000, seed=3)
    nats = [NGramLM(n, 6).fit(text).nats_per_token(held_out) for n in (1, 2, 3)]
    assert nats[0] > nats[1] > nats[2], nats


def test_select_ngram_scores_every_setting_as_a_separate_fit():
    text, valid = corpus(3000), corpus(500, seed=9)
    scores, best = select_ngram(text, valid, 6, orders=[4, 1, 2], discounts=[None, 0.5])
    assert set(scores) == {(n, d) for n in (1, 2, 4) for d in (None, 0.5)}
    for (order, discount), nats in scores.items():
        expected = NGramLM(order, 6, discount).fit(text).nats_per_token(valid)
        assert nats == pytest.approx(expected, rel=1e-12)
    assert scores[best] == min(scores.values())


def test_counting_a_long_sequence_is_fast():
    import time

    text = torch.randint(0, 75, (500_000,), generator=torch.Generator().manual_seed(0))
    start = time.process_time()
    NGramLM(7, 75).fit(text).nats_per_token(text[:20_000])
    assert time.process_time() - start < 10  # about 0.4 s on one core


@pytest.mark.parametrize(
    "make, error, fragment",
    [
        (lambda: NGramLM(0, 6), ValueError, "order must be a positive int, got 0"),
        (lambda: NGramLM(11, 75), ValueError, "order=11 is too long for d_vocab=75"),
        (lambda: NGramLM(3, 0), ValueError, "d_vocab must be a positive int, got 0"),
        (lambda: NGramLM(3, 6, discount=1.0), ValueError, "discount must be None (estimated)"),
        (lambda: NGramLM(3, 6, discount=0), ValueError, "a number in (0, 1), got 0"),
        (lambda: NGramLM(3, 6, discount=-0.2), ValueError, "discount must be None"),
        (lambda: NGramLM(3, 6).fit(torch.tensor([1, 2, 6])), ValueError, "ids must be in [0, 6)"),
        (lambda: NGramLM(3, 6).fit(torch.tensor([1, -1, 2])), ValueError, "ids must be in [0, 6)"),
        (lambda: NGramLM(3, 6).fit(torch.tensor([1, 2])), ValueError, "at least 3 token ids"),
        (lambda: NGramLM(3, 6).fit(torch.zeros(2, 4).long()), ValueError, "ids must be 1-d"),
        (lambda: NGramLM(3, 6).fit(torch.zeros(5)), TypeError, "ids must be an integer tensor"),
        (lambda: NGramLM(3, 6).fit([1, 2, 3]), TypeError, "ids must be an integer tensor"),
        (lambda: NGramLM(3, 6).log_probs(torch.tensor([1, 2])), ValueError, "call fit(ids) first"),
        (
            lambda: NGramLM(2, 6).fit(corpus(50)).next_distribution(torch.tensor([9])),
            ValueError,
            "context_ids must be in [0, 6), got values from 9 to 9",
        ),
        (
            lambda: NGramLM(2, 6).fit(corpus(50)).nats_per_token(torch.tensor([1])),
            ValueError,
            "ids must be 1-d with at least 2 token ids",
        ),
        (lambda: select_ngram(corpus(50), corpus(9), 6, orders=[]), ValueError, "orders must"),
        (
            lambda: select_ngram(corpus(50), corpus(9), 6, discounts=[0.5, 2]),
            ValueError,
            "discounts[i] must be None (estimated) or a number in (0, 1), got 2",
        ),
    ],
)
def test_bad_arguments_are_named(make, error, fragment):
    with pytest.raises(error) as info:
        make()
    assert fragment in str(info.value), str(info.value)
