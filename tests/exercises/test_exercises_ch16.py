"""Chapter 16's checkers pass right answers and name the usual mistakes."""

from __future__ import annotations

import pytest
from checker_helpers import assert_fails

from transformer_lab.exercises.ch16_lora import check_lora_count, check_lora_forward, check_merge


def right_forward(x, W, A, B, alpha):
    return x @ W + alpha / A.shape[0] * (x @ A.T) @ B.T


def right_merge(W, A, B, alpha):
    return W + alpha / A.shape[0] * A.T @ B.T


def right_count(config, rank):
    kv = config.n_kv_heads * config.d_head
    d = config.d_model
    return config.n_layers * rank * (2 * (d + d) + 2 * (d + kv))


def test_right_answers_pass(capsys):
    assert check_lora_forward(right_forward)
    assert check_merge(right_merge)
    assert check_lora_count(right_count)
    assert "check_lora_count" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("fn", "phrases"),
    [
        (lambda x, W, A, B, a: x @ W + (x @ A.T) @ B.T, ["scale is missing"]),
        (lambda x, W, A, B, a: x @ W + a * (x @ A.T) @ B.T, ["scaled by alpha"]),
        (lambda x, W, A, B, a: x @ W, ["frozen path only"]),
        (lambda x, W, A, B, a: "x", ["tensor"]),
    ],
)
def test_forward_names_the_mistake(fn, phrases):
    assert_fails(check_lora_forward(fn, verbose=False), *phrases)


@pytest.mark.parametrize(
    ("fn", "phrases"),
    [
        (lambda W, A, B, a: W + A.T @ B.T, ["scale is missing"]),
        (lambda W, A, B, a: a / A.shape[0] * A.T @ B.T, ["change alone"]),
    ],
)
def test_merge_names_the_mistake(fn, phrases):
    assert_fails(check_merge(fn, verbose=False), *phrases)


@pytest.mark.parametrize(
    ("fn", "phrases"),
    [
        (lambda c, r: c.n_layers * 4 * r * 2 * c.d_model, ["n_kv_heads"]),
        (lambda c, r: right_count(c, r) // c.n_layers, ["one layer"]),
        (lambda c, r: right_count(c, r) // 2, ["both A and B"]),
        (lambda c, r: "many", ["number"]),
    ],
)
def test_count_names_the_mistake(fn, phrases):
    assert_fails(check_lora_count(fn, verbose=False), *phrases)
