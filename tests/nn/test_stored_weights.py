"""Weights kept in bfloat16 or int8 (transformer_lab.nn.stored_weights) and a Llama that
decodes with them."""

from __future__ import annotations

import pytest
import torch

from transformer_lab.analysis.roofline import decode_bytes_per_token
from transformer_lab.generation.sampling import generate
from transformer_lab.models.llama import Llama, LlamaConfig
from transformer_lab.nn.stored_weights import (
    STORAGES,
    StoredWeight,
    storage_supported,
    store_matrices,
)

pytestmark = pytest.mark.skipif(
    not all(storage_supported(s) for s in STORAGES), reason="this CPU lacks the kernels"
)


@pytest.mark.parametrize("storage", STORAGES)
def test_product_equals_the_dequantized_matrix(storage):
    torch.manual_seed(0)
    w, x = torch.randn(64, 48), torch.randn(3, 5, 64)
    stored = StoredWeight(w, storage)
    got = x @ stored
    assert got.shape == (3, 5, 48) and got.dtype == torch.float32
    want = x.bfloat16().float() @ stored.dequantized()  # the activations go in as bfloat16
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
    # and close to the float32 product: the storage's rounding is all that differs
    exact = x @ w
    assert ((got - exact).norm() / exact.norm()).item() < (0.01 if storage == "int8" else 0.005)
    assert stored.nbytes == {"bfloat16": 2 * w.numel(), "int8": w.numel() + 2 * 48}[storage]


def test_int8_scales_are_per_output_column():
    w = torch.zeros(4, 3)
    w[:, 0], w[:, 1], w[:, 2] = torch.tensor([1.0, -2, 0, 0]), torch.tensor([0.0, 0, 127, 1]), 0.0
    stored = StoredWeight(w, "int8")
    torch.testing.assert_close(stored.scale[:2], torch.tensor([2 / 127, 1.0]))
    assert stored.q[0].tolist() == [64, -127, 0, 0] and stored.q[1].tolist() == [0, 0, 127, 1]
    assert stored.q[2].abs().sum() == 0  # an all-zero column stays zero


def small_llama():
    torch.manual_seed(0)
    config = LlamaConfig(d_vocab=97, n_layers=2, n_heads=4, n_kv_heads=2, d_model=64, d_mlp=160)
    return Llama(config).eval()


@pytest.mark.parametrize("storage", STORAGES)
def test_llama_with_stored_weights_stays_close_and_reads_fewer_bytes(storage):
    model, stored = small_llama(), small_llama().store_weights(storage)
    ids = torch.randint(0, 97, (2, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        exact, got = model(ids), stored(ids)
    assert ((got - exact).norm() / exact.norm()).item() < 0.02
    assert (got.argmax(-1) == exact.argmax(-1)).float().mean() > 0.9
    # decoding with the cache gives what the whole sequence gives
    out = generate(stored, ids[:1, :4], 6, temperature=0)
    with torch.no_grad():
        full = stored(out[:, :-1]).argmax(-1)[0, 3:]
    assert out[0, 4:].tolist() == full.tolist()
    names = {n for n, _ in stored.named_parameters()}
    assert not any(k in n for n in names for k in ("W_Q", "W_gate", "W_U"))
    before, after = decode_bytes_per_token(model, 0), decode_bytes_per_token(stored, 0)
    matrices = (
        sum(p.numel() for n, p in model.named_parameters() if "attn" in n or "mlp" in n)
        + model.W_E.numel()
    )  # the head's copy of the embedding
    per = {"bfloat16": 2, "int8": 1}[storage]
    assert after["weights"] < before["weights"] and per * matrices <= after["weights"]


def test_store_matrices_replaces_named_parameters():
    lin = torch.nn.Module()
    lin.W = torch.nn.Parameter(torch.randn(8, 4))
    n = store_matrices(lin, ["W"], "bfloat16")
    assert n == 64 and isinstance(lin.W, StoredWeight) and not list(lin.parameters())
    with pytest.raises(ValueError, match="has no parameter 'V' to store"):
        store_matrices(lin, ["V"], "bfloat16")


def test_storing_twice_is_refused():
    model = small_llama().store_weights("int8")
    with pytest.raises(ValueError, match="already stored as int8"):
        model.store_weights("bfloat16")
