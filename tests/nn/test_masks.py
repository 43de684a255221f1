"""Masks: causal, padding, combination, validation, and conversion to and from PyTorch's
convention (True = ignore), checked against ``nn.MultiheadAttention`` itself.

Tolerance for attention outputs: float32 on the CPU, ``atol=1e-5, rtol=1e-5``.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from transformer_lab.nn.masks import (
    causal_mask,
    check_mask,
    combine_masks,
    from_torch_mask,
    padding_mask,
    padding_mask_from_ids,
    to_torch_mask,
)
from transformer_lab.nn.multi_head import MultiHeadAttention

F32 = dict(atol=1e-5, rtol=1e-5)


# --- causal -------------------------------------------------------------------------------


def test_causal_mask_small_example():
    expected = torch.tensor(
        [
            [True, False, False],
            [True, True, False],
            [True, True, True],
        ]
    )
    assert torch.equal(causal_mask(3), expected)
    assert causal_mask(3).dtype == torch.bool


@pytest.mark.parametrize("n", [1, 2, 7, 16])
def test_causal_mask_is_lower_triangle(n):
    mask = causal_mask(n)
    assert mask.shape == (n, n)
    for i in range(n):
        for j in range(n):
            assert bool(mask[i, j]) == (j <= i)


@pytest.mark.parametrize(("n_query", "n_key"), [(1, 1), (1, 5), (3, 7), (4, 4)])
def test_causal_mask_aligns_to_bottom_right(n_query, n_key):
    # queries are the last n_query tokens of an n_key-token sequence (a key/value cache)
    mask = causal_mask(n_query, n_key)
    assert mask.shape == (n_query, n_key)
    assert torch.equal(mask, causal_mask(n_key)[n_key - n_query :])
    assert mask[-1].all()  # the newest token sees everything
    # bottom-right alignment is also what torch's is_causal means for n_query < n_key
    # when taken from a square mask: the same as tril with the diagonal shifted
    shifted = torch.ones(n_query, n_key, dtype=torch.bool).tril(diagonal=n_key - n_query)
    assert torch.equal(mask, shifted)


def test_causal_mask_bad_input():
    with pytest.raises(ValueError, match=r"n_key=2 is smaller than n_query=3"):
        causal_mask(3, 2)
    with pytest.raises(ValueError, match=r"n_query must be a positive int, got 0"):
        causal_mask(0)
    with pytest.raises(TypeError, match=r"n_query must be an int, got float"):
        causal_mask(2.0)
    with pytest.raises(TypeError, match=r"n_key must be an int, got bool"):
        causal_mask(1, True)


# --- padding ------------------------------------------------------------------------------


def test_padding_mask_from_lengths():
    mask = padding_mask([3, 1, 4])
    assert mask.shape == (3, 1, 1, 4) and mask.dtype == torch.bool
    expected = torch.tensor(
        [[True, True, True, False], [True, False, False, False], [True, True, True, True]]
    )
    assert torch.equal(mask[:, 0, 0], expected)
    assert (
        padding_mask(torch.tensor([2]), max_len=5)[0, 0, 0].tolist() == [True, True] + [False] * 3
    )


def test_padding_mask_bad_input():
    with pytest.raises(ValueError, match=r"max_len=2 is shorter than the longest sequence \(3\)"):
        padding_mask([3, 1], max_len=2)
    with pytest.raises(TypeError, match=r"lengths must be integers, got torch.float32"):
        padding_mask(torch.tensor([2.0, 1.0]))
    with pytest.raises(ValueError, match=r"lengths must be >= 0, got \[2, -1\]"):
        padding_mask([2, -1])
    with pytest.raises(ValueError, match=r"non-empty 1-d sequence, got shape \(0,\)"):
        padding_mask([])
    with pytest.raises(ValueError, match=r"max_len must be a positive int, got 0"):
        padding_mask([0, 0])
    with pytest.raises(TypeError, match=r"max_len must be an int, got float"):
        padding_mask([1], max_len=2.0)


def test_padding_mask_from_ids():
    ids = torch.tensor([[5, 6, 0, 0], [7, 0, 8, 0]])
    mask = padding_mask_from_ids(ids, pad_id=0)
    assert mask.shape == (2, 1, 1, 4)
    assert mask[:, 0, 0].tolist() == [[True, True, False, False], [True, False, True, False]]
    assert torch.equal(padding_mask_from_ids(ids[:1], pad_id=0), padding_mask([2], max_len=4))


def test_padding_mask_from_ids_bad_input():
    with pytest.raises(TypeError, match=r"ids must be integer token ids, got dtype torch.float32"):
        padding_mask_from_ids(torch.zeros(2, 3), pad_id=0)
    with pytest.raises(ValueError, match=r"ids must be \[batch, pos\], got shape \(3,\)"):
        padding_mask_from_ids(torch.zeros(3, dtype=torch.long), pad_id=0)
    with pytest.raises(TypeError, match=r"got list"):
        padding_mask_from_ids([[1, 2]], pad_id=0)


# --- combination and validation -----------------------------------------------------------


def test_combine_masks():
    causal = causal_mask(4)  # [4, 4]
    padding = padding_mask([4, 2])  # [2, 1, 1, 4]
    combined = combine_masks(causal, None, padding)
    assert combined.shape == (2, 1, 4, 4)
    for b in range(2):
        for i in range(4):
            for j in range(4):
                assert bool(combined[b, 0, i, j]) == (j <= i and j < [4, 2][b])
    assert combine_masks(None, None) is None
    assert combine_masks(causal) is causal


def test_combine_masks_bad_input():
    with pytest.raises(TypeError, match=r"masks must be bool .*got torch.int64"):
        combine_masks(causal_mask(3), torch.ones(3, 3, dtype=torch.long))
    with pytest.raises(
        ValueError, match=r"mask shapes \(3, 3\) and \(2, 1, 1, 4\) do not broadcast"
    ):
        combine_masks(causal_mask(3), padding_mask([4, 2]))


def test_check_mask():
    mask = padding_mask([3, 2])
    assert check_mask(mask, (2, 8, 5, 3)) is mask
    with pytest.raises(
        ValueError, match=r"mask shape \(2, 1, 1, 3\) does not broadcast to \(3, 8, 5, 3\)"
    ):
        check_mask(mask, (3, 8, 5, 3))
    with pytest.raises(ValueError, match=r"does not broadcast to \(5, 3\)"):
        check_mask(mask, (5, 3))  # more dimensions than the target
    with pytest.raises(TypeError, match=r"mask must be bool .*got dtype torch.float32"):
        check_mask(mask.float(), (2, 8, 5, 3))
    with pytest.raises(TypeError, match=r"mask must be a torch.Tensor, got list"):
        check_mask([[True]], (1, 1))


# --- the PyTorch boundary -----------------------------------------------------------------


def test_conversion_round_trip():
    mask = combine_masks(causal_mask(4), padding_mask([4, 3]))
    assert torch.equal(from_torch_mask(to_torch_mask(mask)), mask)
    assert to_torch_mask(None) is None and from_torch_mask(None) is None
    key_padding = to_torch_mask(padding_mask([4, 3]), key_padding=True)
    assert key_padding.tolist() == [[False] * 4, [False, False, False, True]]
    assert torch.equal(from_torch_mask(key_padding, key_padding=True), padding_mask([4, 3]))


def test_from_torch_float_masks():
    additive = nn.Transformer.generate_square_subsequent_mask(4)  # 0 and -inf
    assert torch.equal(from_torch_mask(additive), causal_mask(4))
    with pytest.raises(ValueError, match=r"only 0 and -inf.*has no boolean form"):
        from_torch_mask(torch.tensor([[0.0, -0.5]]))
    # a bias next to -inf entries is rejected as well, not silently dropped
    with pytest.raises(ValueError, match=r"only 0 and -inf"):
        from_torch_mask(torch.tensor([[0.0, -float("inf"), 0.3]]))
    with pytest.raises(TypeError, match=r"bool or float PyTorch mask, got dtype torch.int64"):
        from_torch_mask(torch.zeros(2, 2, dtype=torch.long))


def test_conversion_bad_input():
    with pytest.raises(ValueError, match=r"\[batch, key_pos\], got shape \(2, 1, 3\)"):
        from_torch_mask(torch.zeros(2, 1, 3, dtype=torch.bool), key_padding=True)
    with pytest.raises(ValueError, match=r"\[batch, 1, 1, key_pos\], got shape \(3, 3\)"):
        to_torch_mask(causal_mask(3), key_padding=True)
    with pytest.raises(TypeError, match=r"mask must be bool"):
        to_torch_mask(torch.ones(3, 3))


@pytest.fixture
def torch_and_ours():
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(12, 3, batch_first=True).eval()
    return theirs, MultiHeadAttention.from_torch(theirs).eval()


def test_key_padding_matches_multihead_attention(torch_and_ours):
    theirs, ours = torch_and_ours
    x = torch.randn(3, 5, 12)
    key_padding_mask = torch.tensor(  # torch: True = ignore
        [[False] * 5, [False, False, False, True, True], [False, True, False, True, False]]
    )
    expected, expected_w = theirs(x, x, x, key_padding_mask=key_padding_mask)
    out, weights = ours(x, mask=from_torch_mask(key_padding_mask, key_padding=True))
    torch.testing.assert_close(out, expected, **F32)
    torch.testing.assert_close(weights.mean(1), expected_w, **F32)
    assert (weights[1, :, :, 3:] == 0).all()
    # and back: our padding mask drives torch to the same result
    ours_mask = padding_mask([5, 3, 5])
    expected2, _ = theirs(x, x, x, key_padding_mask=to_torch_mask(ours_mask, key_padding=True))
    torch.testing.assert_close(ours(x, mask=ours_mask)[0], expected2, **F32)


def test_attn_mask_matches_multihead_attention(torch_and_ours):
    theirs, ours = torch_and_ours
    x = torch.randn(2, 6, 12)
    for torch_mask in (
        nn.Transformer.generate_square_subsequent_mask(6),  # float, -inf = ignore
        to_torch_mask(causal_mask(6)),  # bool, True = ignore
    ):
        expected, expected_w = theirs(x, x, x, attn_mask=torch_mask)
        out, weights = ours(x, mask=from_torch_mask(torch_mask))
        torch.testing.assert_close(out, expected, **F32)
        torch.testing.assert_close(weights.mean(1), expected_w, **F32)
