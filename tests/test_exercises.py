"""Each checker passes a correct answer and names each typical mistake in its message."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from transformer_lab import exercises as ex
from transformer_lab.attention import scaled_dot_product_attention


def attention(q, k, v, mask=None, *, scale=None, fill=float("-inf"), dim=-1):
    """A plain attention with knobs that reproduce the usual mistakes."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, fill)
    return torch.softmax(scores, dim=dim) @ v


def weights(q, k, *, scale=None, dim=-1):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    return torch.softmax(q @ k.transpose(-2, -1) * scale, dim=dim)


def verdict(checker, fn, **kwargs):
    return checker(fn, verbose=False, **kwargs)


def assert_fails(result, *phrases):
    assert not result.passed, result.message
    for phrase in phrases:
        assert phrase in result.message, f"{phrase!r} not in {result.message!r}"


# --- The result object and the strict / verbose switches --------------------------------


def test_result_prints_and_is_truthy(capsys):
    result = ex.check_attention(lambda q, k, v: attention(q, k, v))
    assert result.passed and bool(result)
    assert "check_attention" in capsys.readouterr().out


def test_wrong_answer_never_raises_unless_strict(capsys):
    def buggy(q, k, v):
        return attention(q, k, v, scale=1.0)

    result = ex.check_attention(buggy)
    assert not result and "✗ check_attention" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="sqrt"):
        ex.check_attention(buggy, strict=True, verbose=False)
    assert ex.check_attention(lambda q, k, v: attention(q, k, v), strict=True, verbose=False)


def test_exception_in_reader_code_is_reported_not_raised():
    def broken(q, k, v):
        raise ValueError("not written yet")

    assert_fails(verdict(ex.check_attention, broken), "raised ValueError", "not written yet")

    def stub(q, k, v):
        raise NotImplementedError

    assert_fails(verdict(ex.check_attention, stub), "your function is not written yet")


def test_in_place_change_of_an_input_is_reported():
    def in_place(q, k, v):
        q.mul_(1 / math.sqrt(q.shape[-1]))
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v

    assert_fails(verdict(ex.check_attention, in_place), "in place")


# --- Chapter 1 ---------------------------------------------------------------------------


def test_one_hot():
    assert verdict(ex.check_one_hot, lambda i, V: F.one_hot(i, V).float()).passed
    assert verdict(ex.check_one_hot, lambda i, V: torch.eye(V)[i]).passed
    assert_fails(verdict(ex.check_one_hot, lambda i, V: F.one_hot(i, V)), "dtype torch.int64")
    assert_fails(verdict(ex.check_one_hot, lambda i, V: F.one_hot(i).float()), "num_classes")
    assert_fails(verdict(ex.check_one_hot, lambda i, V: torch.eye(V)[i - 1]), "too far left")
    assert_fails(verdict(ex.check_one_hot, lambda i, V: torch.eye(V)[i].T), "expected shape")
    assert_fails(verdict(ex.check_one_hot, lambda i, V: i.tolist()), "returned list")


def test_embedding_lookup():
    assert verdict(ex.check_embedding_lookup, lambda i, E: E[i]).passed
    assert verdict(ex.check_embedding_lookup, lambda i, E: F.one_hot(i, len(E)).float() @ E).passed
    one_hot = verdict(ex.check_embedding_lookup, lambda i, E: F.one_hot(i, len(E)).float())
    assert_fails(one_hot, "one-hot")
    assert_fails(verdict(ex.check_embedding_lookup, lambda i, E: E.T[:, i]), "as columns")
    assert_fails(verdict(ex.check_embedding_lookup, lambda i, E: E[i - 1]), "row above")


def test_cosine_similarity():
    def cos(a, b):
        return (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1))

    assert verdict(ex.check_cosine_similarity, cos).passed
    assert_fails(verdict(ex.check_cosine_similarity, lambda a, b: (a * b).sum(-1)), "dot product")
    euclid = verdict(ex.check_cosine_similarity, lambda a, b: (a - b).norm(dim=-1))
    assert_fails(euclid, "Euclidean distance")
    assert_fails(verdict(ex.check_cosine_similarity, lambda a, b: 1 - cos(a, b)), "1 - cos")
    one_norm = verdict(ex.check_cosine_similarity, lambda a, b: (a * b).sum(-1) / a.norm(dim=-1))
    assert_fails(one_norm, "only one of the two lengths")
    assert_fails(verdict(ex.check_cosine_similarity, lambda a, b: (a * b).sum(0)), "shape")


# --- Attention -----------------------------------------------------------------------------


def test_attention_weights():
    assert verdict(ex.check_attention_weights, lambda q, k: weights(q, k)).passed
    unscaled = verdict(ex.check_attention_weights, lambda q, k: weights(q, k, scale=1.0))
    assert_fails(unscaled, "forgot to divide the scores by sqrt(d_k)")
    by_d = verdict(ex.check_attention_weights, lambda q, k: weights(q, k, scale=1 / q.shape[-1]))
    assert_fails(by_d, "instead of sqrt(d_k)")
    assert_fails(verdict(ex.check_attention_weights, lambda q, k: weights(q, k, dim=-2)), "axis")
    raw = verdict(ex.check_attention_weights, lambda q, k: q @ k.transpose(-2, -1))
    assert_fails(raw, "skipped the softmax")
    exp = verdict(ex.check_attention_weights, lambda q, k: torch.exp(q @ k.transpose(-2, -1)))
    assert_fails(exp, "Rows should sum to one")


def test_attention_output():
    assert verdict(ex.check_attention, lambda q, k, v: attention(q, k, v)).passed

    def package(q, k, v):
        return scaled_dot_product_attention(q, k, v)[0]

    assert verdict(ex.check_attention, package).passed
    forgot = verdict(ex.check_attention, lambda q, k, v: attention(q, k, v, scale=1.0))
    assert_fails(forgot, "forgot to divide the scores by sqrt(d_k)")
    by_d = verdict(ex.check_attention, lambda q, k, v: attention(q, k, v, scale=1 / q.shape[-1]))
    assert_fails(by_d, "divided the scores by d_k")
    times = verdict(
        ex.check_attention, lambda q, k, v: attention(q, k, v, scale=q.shape[-1] ** 0.5)
    )
    assert_fails(times, "multiplied the scores by sqrt(d_k)")
    assert_fails(verdict(ex.check_attention, lambda q, k, v: attention(q, k, v, dim=-2)), "axis")
    assert_fails(verdict(ex.check_attention, lambda q, k, v: weights(q, k)), "attention weights")
    transposed = verdict(ex.check_attention, lambda q, k, v: attention(q, k, v).transpose(-2, -1))
    assert_fails(transposed, "transposed")
    both = verdict(ex.check_attention, lambda q, k, v: (attention(q, k, v), weights(q, k)))
    assert_fails(both, "tuple of 2 items")
    assert_fails(verdict(ex.check_attention, lambda q, k, v: None), "returned NoneType")
    placeholder = verdict(
        ex.check_attention, lambda q, k, v: torch.zeros(*q.shape[:-1], v.shape[-1])
    )
    assert_fails(placeholder, "all zeros")
    nan = verdict(ex.check_attention, lambda q, k, v: attention(q, k, v) * float("nan"))
    assert_fails(nan, "NaN")


@pytest.mark.filterwarnings("ignore:The use of `x.T`")
def test_attention_written_for_2d_only_gets_a_batch_hint():
    def two_d(q, k, v):
        return torch.softmax(q @ k.T / math.sqrt(q.shape[-1]), -1) @ v

    def wrong_dim(q, k, v):
        return attention(q, k, v, scale=1 / math.sqrt(q.shape[1]))

    assert_fails(verdict(ex.check_attention, two_d), "k.transpose(-2, -1)")
    assert_fails(verdict(ex.check_attention, wrong_dim), "use q.shape[-1]")


def test_masked_attention_correct_versions():
    def with_inf(q, k, v, mask):
        return attention(q, k, v, mask)

    result = verdict(ex.check_masked_attention, with_inf)
    assert result.passed and "NaN" in result.message  # noted, not failed
    strict_rows = verdict(ex.check_masked_attention, with_inf, fully_masked_rows=True)
    assert_fails(strict_rows, "all masked", "NaN")

    def package(q, k, v, mask):
        return scaled_dot_product_attention(q, k, v, mask)[0]

    result = verdict(ex.check_masked_attention, package, fully_masked_rows=True)
    assert result.passed and "gets zeros" in result.message

    def renormalised(q, k, v, mask):  # zeroing after the softmax and renormalising is fine
        w = weights(q, k) * mask
        return w / w.sum(-1, keepdim=True) @ v

    assert verdict(ex.check_masked_attention, renormalised).passed


def test_masked_attention_mistakes():
    def check(fn):
        return verdict(ex.check_masked_attention, fn)

    assert_fails(check(lambda q, k, v, m: attention(q, k, v, ~m)), "wrong way round")
    assert_fails(check(lambda q, k, v, m: attention(q, k, v)), "no effect")
    assert_fails(check(lambda q, k, v, m: attention(q, k, v, m, scale=1.0)), "sqrt(d_k)")
    assert_fails(check(lambda q, k, v, m: (weights(q, k) * m) @ v), "after the softmax")

    def multiplied(q, k, v, m):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) * m
        return torch.softmax(scores, -1) @ v

    assert_fails(check(multiplied), "multiplied the scores by the mask")
    assert_fails(check(lambda q, k, v, m: attention(q, k, v, m, fill=-1e9)), "-1e9", "float16")


def test_masked_attention_with_finite_fill_is_noted_on_fully_masked_rows():
    def finite_fill(q, k, v, mask):  # survives float16 (the product overflows to -inf there)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) + (~mask) * -1e9
        return torch.softmax(scores, dim=-1) @ v

    result = verdict(ex.check_masked_attention, finite_fill)
    assert result.passed and "plain average of the values" in result.message
    strict_rows = verdict(ex.check_masked_attention, finite_fill, fully_masked_rows=True)
    assert_fails(strict_rows, "plain average")


# --- Masks ---------------------------------------------------------------------------------


def test_causal_mask():
    def good(n):
        return torch.ones(n, n, dtype=torch.bool).tril()

    assert verdict(ex.check_causal_mask, good).passed
    assert_fails(verdict(ex.check_causal_mask, lambda n: ~good(n)), "PyTorch's convention")
    assert_fails(verdict(ex.check_causal_mask, lambda n: good(n).tril(-1)), "diagonal")
    assert_fails(verdict(ex.check_causal_mask, lambda n: good(n).T), "triu")
    assert_fails(verdict(ex.check_causal_mask, lambda n: good(n).float()), "dtype torch.float32")

    def additive(n):
        return torch.zeros(n, n).masked_fill(~good(n), float("-inf"))

    assert_fails(verdict(ex.check_causal_mask, additive), "additive")
    assert_fails(verdict(ex.check_causal_mask, lambda n: good(n + 1)), "expected (5, 5)")


def test_padding_mask():
    def good(lengths, max_len):
        return (torch.arange(max_len) < lengths[:, None])[:, None, None, :]

    assert verdict(ex.check_padding_mask, good).passed
    flat = verdict(ex.check_padding_mask, lambda lengths, n: good(lengths, n)[:, 0, 0])
    assert_fails(flat, "mask[:, None, None, :]")
    assert_fails(verdict(ex.check_padding_mask, lambda lengths, n: ~good(lengths, n)), "padding")

    def off_by_one(lengths, max_len):
        return (torch.arange(max_len) <= lengths[:, None])[:, None, None, :]

    assert_fails(verdict(ex.check_padding_mask, off_by_one), "one position too many")

    def longest(lengths, max_len):
        return good(lengths, int(lengths.max()))

    assert_fails(verdict(ex.check_padding_mask, longest), "max_len")
