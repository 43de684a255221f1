"""Chapter 14's checkers pass right answers and name the usual mistakes."""

from __future__ import annotations

import pytest
import torch
from checker_helpers import assert_fails

from transformer_lab.exercises.ch14_decoders import check_kv_cache_bytes, check_rms_norm
from transformer_lab.nn.norms import rms_norm


def right_rms(x, gain, eps):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gain


def test_rms_norm_right_answers_pass(capsys):
    assert check_rms_norm(right_rms)
    assert "check_rms_norm" in capsys.readouterr().out
    assert check_rms_norm(rms_norm, verbose=False)


@pytest.mark.parametrize(
    ("fn", "phrases"),
    [
        (lambda x, g, e: right_rms(x - x.mean(-1, keepdim=True), g, e), ["subtracted the mean"]),
        (
            lambda x, g, e: x / (x.pow(2).mean(-1, keepdim=True).sqrt() + e) * g,
            ["inside the square root"],
        ),
        (
            lambda x, g, e: x / (x.pow(2).sum(-1, keepdim=True) + e).sqrt() * g,
            ["sum of the squares"],
        ),
        (lambda x, g, e: x / (x.pow(2).mean(-1, keepdim=True) + e) * g, ["square root is missing"]),
        (lambda x, g, e: right_rms(x, torch.ones_like(g), e), ["gain is missing"]),
        (lambda x, g, e: torch.zeros_like(x), ["placeholder"]),
        (lambda x, g, e: "x", ["tensor"]),
    ],
)
def test_rms_norm_names_the_mistake(fn, phrases):
    assert_fails(check_rms_norm(fn, verbose=False), *phrases)


def right_bytes(config, n_tokens, batch):
    return 2 * config.n_layers * config.n_kv_heads * config.d_head * 4 * n_tokens * batch


def test_kv_cache_bytes_right_answer_passes(capsys):
    assert check_kv_cache_bytes(right_bytes)
    assert "check_kv_cache_bytes" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("fn", "phrases"),
    [
        (lambda c, n, b: right_bytes(c, n, b) * c.n_heads // c.n_kv_heads, ["n_kv_heads shared"]),
        (lambda c, n, b: right_bytes(c, n, b) // 2, ["keys only"]),
        (lambda c, n, b: right_bytes(c, n, b) // 4, ["4 bytes"]),
        (lambda c, n, b: right_bytes(c, n, b) * 8, ["bits"]),
        (lambda c, n, b: right_bytes(c, n, b) // b, ["batch"]),
        (lambda c, n, b: 0, ["placeholder"]),
        (lambda c, n, b: right_bytes(c, n, b) + 1, ["expected"]),
        (lambda c, n, b: "many", ["number of bytes"]),
    ],
)
def test_kv_cache_bytes_names_the_mistake(fn, phrases):
    assert_fails(check_kv_cache_bytes(fn, verbose=False), *phrases)


def test_strict_raises():
    with pytest.raises(AssertionError, match="keys only"):
        check_kv_cache_bytes(lambda c, n, b: right_bytes(c, n, b) // 2, strict=True, verbose=False)
