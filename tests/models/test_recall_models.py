"""The three recall models: causal, of the sizes claimed, the GPT's hooks in place."""

import pytest
import torch

from transformer_lab.data.recall import RecallTask
from transformer_lab.hooks import run_with_cache
from transformer_lab.models.recall import KINDS, RecallConfig, RecallLM, matched_width


@pytest.mark.parametrize("kind", KINDS)
def test_a_position_sees_only_the_past(kind):
    torch.manual_seed(0)
    model = RecallLM(RecallConfig(kind, n_keys=8, n_values=4, d_model=16, n_ctx=12)).eval()
    b = RecallTask(n_keys=8, n_values=4).batch(4, 2, torch.Generator().manual_seed(0))
    out = model(b.keys, b.values)
    assert out.shape == (2, 8, 4)
    keys = b.keys.clone()
    keys[:, 5:] = (keys[:, 5:] + 1) % 8  # change the future of position 4
    changed = model(keys, b.values)
    torch.testing.assert_close(changed[:, :5], out[:, :5])
    assert not torch.allclose(changed[:, 5:], out[:, 5:])


def test_matched_width_is_the_closest_count():
    target = RecallLM(RecallConfig("gpt")).num_params()
    for kind in ("gru", "lstm"):
        d = matched_width(kind, target)

        def gap(width, kind=kind):
            return abs(RecallLM(RecallConfig(kind, d_model=width)).num_params() - target)

        assert gap(d) <= gap(d - 1) and gap(d) <= gap(d + 1)
        assert gap(d) / target < 0.01


def test_the_gpt_body_has_the_books_hooks():
    model = RecallLM(RecallConfig("gpt", n_keys=8, n_values=4, d_model=16, n_ctx=12))
    b = RecallTask(n_keys=8, n_values=4).batch(3, 2, torch.Generator().manual_seed(0))
    _, cache = run_with_cache(model, b.keys, b.values, names="*.pattern")
    assert sorted(cache) == ["blocks.0.attn.pattern", "blocks.1.attn.pattern"]
    assert cache["blocks.1.attn.pattern"].shape == (2, 4, 6, 6)
    torch.testing.assert_close(cache["blocks.0.attn.pattern"].sum(-1), torch.ones(2, 4, 6))
