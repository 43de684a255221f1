"""Decoding rules (greedy, temperature, top-k, top-p) and the generation loop."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_lab.generation.sampling import (
    generate,
    next_token_probs,
    sample_next,
    top_k_filter,
    top_p_filter,
)
from transformer_lab.models import GPT, GPTConfig

logit_rows = st.integers(0, 2**31 - 1).map(
    lambda seed: torch.randn(4, 12, generator=torch.Generator().manual_seed(seed)) * 3
)


@settings(max_examples=40, deadline=None)
@given(logit_rows, st.integers(1, 12), st.integers(0, 2**31 - 1))
def test_top_k_never_samples_outside_the_k_largest(logits, k, seed):
    g = torch.Generator().manual_seed(seed)
    allowed = torch.topk(logits, k, dim=-1).indices  # [4, k]
    for _ in range(5):
        token = sample_next(logits, temperature=1.0, top_k=k, generator=g)  # [4]
        assert (allowed == token[:, None]).any(dim=-1).all()
    kept = torch.isfinite(top_k_filter(logits, k))
    assert (kept.sum(-1) == k).all()  # continuous random logits: no ties


@settings(max_examples=40, deadline=None)
@given(logit_rows, st.floats(0.05, 1.0))
def test_top_p_keeps_the_smallest_set_reaching_p(logits, p):
    probs = torch.softmax(logits, dim=-1)
    kept = torch.isfinite(top_p_filter(logits, p))  # [4, 12]
    for row in range(4):
        mass = probs[row][kept[row]].sum().item()
        assert mass >= p - 1e-6  # enough probability...
        smallest_kept = probs[row][kept[row]].min().item()
        assert mass - smallest_kept < p  # ...and dropping any kept token falls short
        dropped = probs[row][~kept[row]]
        assert dropped.numel() == 0 or dropped.max() <= smallest_kept  # the most likely ones
    renormalised = next_token_probs(logits, top_p=p)
    torch.testing.assert_close(renormalised.sum(-1), torch.ones(4))
    assert (renormalised[~kept] == 0).all()


def test_top_p_worked_example():
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]])
    logits = probs.log()
    assert torch.isfinite(top_p_filter(logits, 0.45)).tolist() == [[True, False, False, False]]
    assert torch.isfinite(top_p_filter(logits, 0.75)).tolist() == [[True, True, False, False]]
    assert torch.isfinite(top_p_filter(logits, 0.81)).tolist() == [[True, True, True, False]]
    torch.testing.assert_close(
        next_token_probs(logits, top_p=0.75), torch.tensor([[0.625, 0.375, 0.0, 0.0]])
    )


def test_temperature_to_zero_is_greedy():
    logits = torch.randn(6, 20, generator=torch.Generator().manual_seed(0)) * 2
    g = torch.Generator().manual_seed(1)
    for temperature in (1e-3, 1e-4):
        assert torch.equal(sample_next(logits, temperature, generator=g), logits.argmax(-1))
    assert torch.equal(sample_next(logits, 0.0), logits.argmax(-1))
    # high temperature flattens the distribution towards uniform
    flat = next_token_probs(logits, temperature=1e3)
    torch.testing.assert_close(flat, torch.full_like(flat, 1 / 20), atol=1e-3, rtol=0)


def test_sampling_matches_the_distribution_and_is_seeded():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]]).repeat(20_000, 1)
    a = sample_next(logits, 1.0, generator=torch.Generator().manual_seed(3))
    b = sample_next(logits, 1.0, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b)
    freq = torch.bincount(a, minlength=4) / len(a)
    torch.testing.assert_close(freq, torch.softmax(logits[0], -1), atol=0.015, rtol=0)


def test_bad_arguments_are_named():
    logits = torch.randn(2, 5)
    with pytest.raises(ValueError, match="top_k"):
        top_k_filter(logits, 0)
    with pytest.raises(ValueError, match="top_p"):
        top_p_filter(logits, 0.0)
    with pytest.raises(ValueError, match="temperature"):
        next_token_probs(logits, temperature=-1.0)
    with pytest.raises(ValueError, match=r"\[batch, d_vocab\]"):
        sample_next(logits[0])


@pytest.fixture(scope="module")
def tiny_gpt():
    torch.manual_seed(0)
    return GPT(GPTConfig(d_vocab=23, n_ctx=12, n_layers=2, n_heads=2, d_model=16)).eval()


@pytest.mark.parametrize("settings_", [dict(temperature=0.0), dict(temperature=0.9, top_k=5),
                                       dict(temperature=1.2, top_p=0.8)])  # fmt: skip
def test_generation_with_and_without_cache_is_identical(tiny_gpt, settings_):
    prompt = torch.randint(23, (3, 4), generator=torch.Generator().manual_seed(5))
    # 30 new tokens: past n_ctx=12, so the sliding window is exercised too
    with_cache = generate(
        tiny_gpt, prompt, 30, **settings_, generator=torch.Generator().manual_seed(7)
    )
    without = generate(tiny_gpt, prompt, 30, **settings_, use_cache=False,
                       generator=torch.Generator().manual_seed(7))  # fmt: skip
    assert with_cache.shape == (3, 34)
    assert torch.equal(with_cache[:, :4], prompt)
    assert torch.equal(with_cache, without)


def test_greedy_generation_takes_the_argmax_each_step(tiny_gpt):
    prompt = torch.randint(23, (2, 3), generator=torch.Generator().manual_seed(2))
    out = generate(tiny_gpt, prompt, 6, temperature=0.0)
    with torch.no_grad():
        for t in range(3, 9):
            assert torch.equal(out[:, t], tiny_gpt(out[:, :t])[:, -1].argmax(-1))
