"""Weights kept as float32 rows, bfloat16 or int8 (transformer_lab.nn.stored_weights), the
row kernels that multiply by them (transformer_lab.nn.row_kernels), and a Llama that decodes
with them."""

from __future__ import annotations

import pytest
import torch

from transformer_lab.analysis.roofline import decode_bytes_per_token
from transformer_lab.generation.sampling import generate
from transformer_lab.models.llama import Llama, LlamaConfig
from transformer_lab.nn.stored_weights import (
    STORAGES,
    StoredWeight,
    huge_page_buffer,
    pack_rows,
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
    got = x @ stored  # 15 vectors: widened once, multiplied by PyTorch
    assert got.shape == (3, 5, 48) and got.dtype == torch.float32
    want = x @ stored.dequantized()  # activations, products and sums in float32
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # and close to the float32 product: the storage's rounding is all that differs
    exact = x @ w
    error = ((got - exact).norm() / exact.norm()).item()
    assert error < {"float32-rows": 1e-6, "bfloat16": 0.005, "int8": 0.01}[storage]
    per = {"float32-rows": 4 * w.numel(), "bfloat16": 2 * w.numel(), "int8": w.numel() + 4 * 48}
    assert stored.nbytes == per[storage]


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("n_in", [1, 15, 16, 64, 70, 200])
def test_the_kernels_give_the_prompt_path_numbers(storage, n_in):
    """A few vectors go through the row kernels, more through PyTorch: the same numbers up
    to the order of the sums, for widths that fill the kernels' 64-wide steps, their
    16-wide tail, or neither."""
    torch.manual_seed(n_in)
    w, x = torch.randn(n_in, 37), torch.randn(12, n_in)
    stored = StoredWeight(w, storage)
    by_rows = torch.cat([x[i : i + 3] @ stored for i in range(0, 12, 3)])  # the kernels
    torch.testing.assert_close(by_rows, x @ stored, rtol=1e-5, atol=1e-5)  # 12 rows: PyTorch
    torch.testing.assert_close(x[:1] @ stored, x[:1] @ stored.dequantized(), rtol=1e-5, atol=1e-5)


def test_bfloat16_activations_come_back_as_bfloat16():
    w = torch.randn(32, 8)
    y = torch.randn(2, 32).bfloat16() @ StoredWeight(w, "bfloat16")
    assert y.dtype == torch.bfloat16 and y.shape == (2, 8)


def test_int8_scales_are_per_output_column():
    w = torch.zeros(4, 3)
    w[:, 0], w[:, 1], w[:, 2] = torch.tensor([1.0, -2, 0, 0]), torch.tensor([0.0, 0, 127, 1]), 0.0
    stored = StoredWeight(w, "int8")
    torch.testing.assert_close(stored.scale[:2], torch.tensor([2 / 127, 1.0]))
    assert stored.rows[0].tolist() == [64, -127, 0, 0] and stored.rows[1].tolist() == [0, 0, 127, 1]
    assert stored.rows[2].abs().sum() == 0  # an all-zero column stays zero


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
    per = {"float32-rows": 4, "bfloat16": 2, "int8": 1}[storage]
    assert per * matrices <= after["weights"]
    assert after["weights"] < before["weights"] or storage == "float32-rows"


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


def test_without_the_kernels_storage_is_refused_with_the_reason(monkeypatch):
    from transformer_lab.nn import row_kernels

    monkeypatch.setenv("TRANSFORMER_LAB_KERNELS", "0")
    row_kernels._load.cache_clear()
    try:
        assert not storage_supported("int8")
        assert row_kernels.kernels_status() == "turned off by TRANSFORMER_LAB_KERNELS=0"
        with pytest.raises(RuntimeError, match="TRANSFORMER_LAB_KERNELS=0.*keep the float32"):
            StoredWeight(torch.randn(4, 4), "int8")
    finally:
        monkeypatch.delenv("TRANSFORMER_LAB_KERNELS")
        row_kernels._load.cache_clear()
    assert storage_supported("int8")


def test_the_kernels_build_into_the_cache_folder(tmp_path, monkeypatch):
    from transformer_lab.nn import row_kernels

    monkeypatch.setenv("TRANSFORMER_LAB_CACHE", str(tmp_path))
    row_kernels._load.cache_clear()
    try:
        assert row_kernels.kernels_available(), row_kernels.kernels_status()
        built = list(tmp_path.glob("row_kernels-*.so"))
        assert len(built) == 1 and built[0].stat().st_size > 0
        assert not [p for p in tmp_path.iterdir() if p.is_dir()]  # no scratch folder left
    finally:
        monkeypatch.delenv("TRANSFORMER_LAB_CACHE")
        row_kernels._load.cache_clear()


@pytest.mark.parametrize("storage", STORAGES)
def test_pack_rows_moves_rows_into_one_huge_page_buffer(storage):
    torch.manual_seed(0)
    weights = [
        StoredWeight(torch.randn(n_in, n_out), storage) for n_in, n_out in [(5, 3), (64, 17)]
    ]
    before = [(w.rows.clone(), w.rows.data_ptr()) for w in weights]
    x = torch.randn(2, 64)
    y = x @ weights[1]
    buffer = pack_rows(weights)
    assert buffer.dtype == torch.uint8 and buffer.data_ptr() % (2 << 20) == 0
    for w, (rows, old) in zip(weights, before, strict=True):
        assert torch.equal(w.rows, rows) and w.rows.is_contiguous() and w.rows.data_ptr() != old
        assert w.rows.untyped_storage().data_ptr() == buffer.untyped_storage().data_ptr()
        assert (w.rows.data_ptr() - buffer.data_ptr()) % 64 == 0  # each on a cache line
    assert torch.equal(x @ weights[1], y)  # the same numbers from the new place
    assert huge_page_buffer(10).shape == (10,) and not huge_page_buffer(10).any()


def test_store_weights_packs_every_matrix_in_reading_order():
    model = small_llama().store_weights("int8")
    a, m = model.blocks[0].attn, model.blocks[1].mlp
    base = model.stored_unembed.rows.untyped_storage().data_ptr()
    for w in (a.W_Q, a.W_O, m.W_down):
        assert w.rows.untyped_storage().data_ptr() == base
    assert a.W_Q.rows.data_ptr() < a.W_K.rows.data_ptr() < m.W_gate.rows.data_ptr()
    assert m.W_down.rows.data_ptr() < model.stored_unembed.rows.data_ptr()


@pytest.mark.parametrize("n_in, group", [(64, 16), (70, 32), (200, 64), (15, 16)])
def test_int8_groups_scale_each_group_of_a_row(n_in, group):
    """One scale per ``group`` inputs of a row (the last group shorter where ``group`` does
    not divide the row): the kernels and the prompt path give the dequantized product, and
    the rounding error is at most that of one scale per row."""
    torch.manual_seed(n_in)
    w, x = torch.randn(n_in, 37), torch.randn(12, n_in)
    w[0] *= 20  # one large weight in every row: one scale per row rounds the rest coarsely
    stored = StoredWeight(w, "int8", group_size=group)
    assert stored.scale.shape == (37, -(-n_in // group)) and stored.group_size == group
    assert stored.nbytes == w.numel() + 4 * stored.scale.numel()
    torch.testing.assert_close(x[:3] @ stored, x[:3] @ stored.dequantized(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(x @ stored, x @ stored.dequantized(), rtol=1e-5, atol=1e-5)
    exact = x @ w
    by_group = ((x[:3] @ stored - exact[:3]).norm() / exact[:3].norm()).item()
    by_row = ((x[:3] @ StoredWeight(w, "int8") - exact[:3]).norm() / exact[:3].norm()).item()
    assert by_group < 0.8 * by_row or n_in <= group
    assert "group_size=" + str(group) in repr(stored)
    for bad, storage in [(48, "int8"), (32, "bfloat16"), (8, "int8")]:
        with pytest.raises(ValueError, match="group_size"):
            StoredWeight(w, storage, group_size=bad)
