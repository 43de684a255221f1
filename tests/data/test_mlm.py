"""Masked-LM corruption and next-sentence pairs.

Rates are checked over many samples against their binomial standard deviation: an
observed share of n trials with probability p passes when it lies within
TOLERANCE_SD * sqrt(p (1 - p) / n) of p. With 4 standard deviations a correct
implementation fails with probability below 1e-4 per check (the seeds are fixed, so the
outcome is deterministic anyway), while a rate off by one percentage point is far outside.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_lab.data.mlm import (
    IGNORE_INDEX,
    SentencePair,
    mask_tokens,
    next_sentence_pairs,
    pack_pair,
    pad_batch,
    pretraining_batch,
)
from transformer_lab.models import bert

TOLERANCE_SD = 4.0
VOCAB = 1000
PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
SPECIAL = (PAD, UNK, CLS, SEP, MASK)


def within(successes: int, trials: int, p: float) -> bool:
    """True when successes / trials is within TOLERANCE_SD binomial sds of p."""
    sd = math.sqrt(p * (1 - p) / trials)
    return abs(successes / trials - p) <= TOLERANCE_SD * sd


def _corpus(seed=0, batch=4000, pos=64):
    """Token ids with [CLS] ... [SEP] and right padding of random lengths."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, VOCAB, (batch, pos), generator=g)
    lengths = torch.randint(8, pos + 1, (batch,), generator=g)
    attention = (torch.arange(pos)[None, :] < lengths[:, None]).long()
    ids[:, 0] = CLS
    ids[torch.arange(batch), lengths - 1] = SEP
    ids[attention == 0] = PAD
    return ids, attention


def _counts(ids, attention, seed=0, **kwargs):
    masked, labels = mask_tokens(
        ids,
        mask_id=MASK,
        vocab_size=VOCAB,
        special_ids=SPECIAL,
        attention_mask=attention,
        generator=torch.Generator().manual_seed(seed),
        **kwargs,
    )
    eligible = (attention == 1) & (ids >= 5)
    chosen = labels != IGNORE_INDEX
    return dict(
        eligible=int(eligible.sum()),
        chosen=int(chosen.sum()),
        mask=int((chosen & (masked == MASK)).sum()),
        random=int((chosen & (masked != MASK) & (masked != ids)).sum()),
        same=int((chosen & (masked == ids)).sum()),
    )


def test_tolerance_is_tight_enough_to_catch_a_wrong_rate():
    ids, attention = _corpus()
    c = _counts(ids, attention, mask_prob=0.16)
    assert not within(c["chosen"], c["eligible"], 0.15)
    c = _counts(ids, attention, mask_token_prob=0.78, random_token_prob=0.12)
    assert not within(c["mask"], c["chosen"], 0.8)


def test_rates_15_then_80_10_10():
    ids, attention = _corpus()
    c = _counts(ids, attention)
    assert c["eligible"] > 10_000
    assert within(c["chosen"], c["eligible"], 0.15), c
    n_candidates = VOCAB - len(SPECIAL)
    # a random replacement equals the original with probability 1 / n_candidates
    p_random = 0.1 * (1 - 1 / n_candidates)
    assert within(c["mask"], c["chosen"], 0.8), c
    assert within(c["random"], c["chosen"], p_random), c
    assert within(c["same"], c["chosen"], 1 - 0.8 - p_random), c
    assert c["mask"] + c["random"] + c["same"] == c["chosen"]


@pytest.mark.parametrize("seed", range(5))
def test_rates_hold_for_every_seed(seed):
    ids, attention = _corpus(seed=seed, batch=1000)
    c = _counts(ids, attention, seed=seed)
    assert within(c["chosen"], c["eligible"], 0.15), c
    assert within(c["mask"], c["chosen"], 0.8), c


def test_random_replacements_are_ordinary_and_spread():
    ids = torch.randint(5, VOCAB, (200, 100), generator=torch.Generator().manual_seed(3))
    masked, labels = mask_tokens(
        ids,
        mask_id=MASK,
        vocab_size=VOCAB,
        special_ids=SPECIAL,
        mask_token_prob=0.0,
        random_token_prob=1.0,
        generator=torch.Generator().manual_seed(4),
    )
    replaced = masked[labels != IGNORE_INDEX]
    assert (replaced >= 5).all()  # never a special token
    assert replaced.unique().numel() > 0.9 * min(len(replaced), VOCAB - 5) * 0.9
    # uniform over 995 ids: mean (5 + 999) / 2 = 502, sd of the mean about 287 / sqrt(n)
    sd = math.sqrt((995**2 - 1) / 12 / len(replaced))
    assert abs(replaced.float().mean().item() - 502.0) < TOLERANCE_SD * sd


def test_labels_and_seeding():
    ids, attention = _corpus(batch=50)
    a = mask_tokens(
        ids,
        mask_id=MASK,
        vocab_size=VOCAB,
        special_ids=SPECIAL,
        attention_mask=attention,
        generator=torch.Generator().manual_seed(7),
    )
    b = mask_tokens(
        ids,
        mask_id=MASK,
        vocab_size=VOCAB,
        special_ids=SPECIAL,
        attention_mask=attention,
        generator=torch.Generator().manual_seed(7),
    )
    c = mask_tokens(
        ids,
        mask_id=MASK,
        vocab_size=VOCAB,
        special_ids=SPECIAL,
        attention_mask=attention,
        generator=torch.Generator().manual_seed(8),
    )
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[1], c[1])
    masked, labels = a
    chosen = labels != IGNORE_INDEX
    assert torch.equal(labels[chosen], ids[chosen])  # the label is the original token
    assert torch.equal(masked[~chosen], ids[~chosen])  # unchosen positions are untouched
    assert ids.equal(_corpus(batch=50)[0])  # the input is not modified
    assert bert.IGNORE_INDEX == IGNORE_INDEX


@settings(max_examples=60, deadline=None)
@given(
    ids=st.lists(st.lists(st.integers(0, 29), min_size=1, max_size=12), min_size=1, max_size=6),
    seed=st.integers(0, 2**16),
    mask_prob=st.sampled_from([0.15, 0.5, 1.0]),
)
def test_never_touches_special_tokens_or_padding(ids, seed, mask_prob):
    width = max(len(r) for r in ids)
    tensor, attention = pad_batch(ids, pad_value=PAD)
    special = (PAD, UNK, CLS, SEP, MASK)
    masked, labels = mask_tokens(
        tensor,
        mask_id=MASK,
        vocab_size=30,
        special_ids=special,
        attention_mask=attention,
        mask_prob=mask_prob,
        generator=torch.Generator().manual_seed(seed),
    )
    assert masked.shape == labels.shape == (len(ids), width)
    protected = (attention == 0) | torch.isin(tensor, torch.tensor(special))
    assert (labels[protected] == IGNORE_INDEX).all()
    assert torch.equal(masked[protected], tensor[protected])
    chosen = labels != IGNORE_INDEX
    assert not torch.isin(masked[chosen & (masked != MASK)], torch.tensor(special)).any()
    if mask_prob == 1.0:
        assert torch.equal(chosen, ~protected)


def test_mask_tokens_rejects_bad_arguments():
    ids = torch.tensor([[5, 6, 7]])
    with pytest.raises(TypeError):
        mask_tokens(ids.float(), mask_id=MASK, vocab_size=VOCAB)
    with pytest.raises(ValueError, match="mask_prob"):
        mask_tokens(ids, mask_id=MASK, vocab_size=VOCAB, mask_prob=1.5)
    with pytest.raises(ValueError, match="> 1"):
        mask_tokens(ids, mask_id=MASK, vocab_size=VOCAB, mask_token_prob=0.9, random_token_prob=0.2)
    with pytest.raises(ValueError, match="vocab_size"):
        mask_tokens(ids, mask_id=VOCAB, vocab_size=VOCAB)
    with pytest.raises(ValueError, match="lie in"):
        mask_tokens(ids, mask_id=MASK, vocab_size=6)
    with pytest.raises(ValueError, match="attention_mask"):
        mask_tokens(ids, mask_id=MASK, vocab_size=VOCAB, attention_mask=torch.ones(1, 2))


def _documents():
    # sentence (d, i) is sentence i of document d, so a pair tells where its parts came from
    return [[(d, i) for i in range(n)] for d, n in enumerate([5, 12, 3, 8, 20])]


def test_next_sentence_pairs_half_true_half_random():
    pairs = next_sentence_pairs(_documents(), 4000, generator=torch.Generator().manual_seed(0))
    n_next = sum(p.is_next for p in pairs)
    assert within(n_next, len(pairs), 0.5)
    for p in pairs:
        (da, ia), (db, ib) = p.a, p.b
        if p.is_next:
            assert (db, ib) == (da, ia + 1)
        else:
            assert db != da  # a random sentence from another document


def test_next_sentence_pairs_single_document_and_seeding():
    docs = [[(0, i) for i in range(6)]]
    pairs = next_sentence_pairs(docs, 500, generator=torch.Generator().manual_seed(1))
    assert all(p.b != (0, p.a[1] + 1) for p in pairs if not p.is_next)
    assert all(p.b == (0, p.a[1] + 1) for p in pairs if p.is_next)
    again = next_sentence_pairs(docs, 500, generator=torch.Generator().manual_seed(1))
    assert again == pairs
    assert all(p.is_next for p in next_sentence_pairs(docs, 20, next_prob=1.0))
    with pytest.raises(ValueError, match="consecutive"):
        next_sentence_pairs([["a"], ["b"]], 3)


def test_pack_pair_layout_and_truncation():
    ids, seg = pack_pair([10, 11], [20, 21, 22], cls_id=CLS, sep_id=SEP, max_len=16)
    assert ids == [CLS, 10, 11, SEP, 20, 21, 22, SEP]
    assert seg == [0, 0, 0, 0, 1, 1, 1, 1]
    ids, seg = pack_pair(list(range(10, 20)), [20, 21], cls_id=CLS, sep_id=SEP, max_len=9)
    assert len(ids) == 9 and ids[-3:] == [20, 21, SEP]  # the longer sentence was cut
    assert ids[:5] == [CLS, 10, 11, 12, 13] and seg.count(1) == 3


def test_pretraining_batch():
    docs = [[[10 + i, 11 + i, 12 + i] for i in range(0, 30, 3)], [[50 + i] * 4 for i in range(8)]]
    pairs = next_sentence_pairs(docs, 64, generator=torch.Generator().manual_seed(2))
    batch = pretraining_batch(
        pairs,
        cls_id=CLS,
        sep_id=SEP,
        pad_id=PAD,
        mask_id=MASK,
        vocab_size=100,
        special_ids=SPECIAL,
        max_len=12,
        generator=torch.Generator().manual_seed(3),
    )
    assert batch.input_ids.shape == batch.labels.shape == batch.segment_ids.shape
    assert batch.input_ids.shape[1] <= 12
    assert torch.equal(batch.is_next, torch.tensor([p.is_next for p in pairs]))
    original = batch.labels.where(batch.labels != IGNORE_INDEX, batch.input_ids)
    assert (original[:, 0] == CLS).all()
    assert ((original == SEP).sum(1) == 2).all()
    assert (batch.labels[original < 5] == IGNORE_INDEX).all()
    assert (batch.labels != IGNORE_INDEX).any()
    assert (batch.segment_ids[batch.attention_mask == 0] == 0).all()
    first = SentencePair([10, 11], [20], 1)
    one = pretraining_batch(
        [first], cls_id=CLS, sep_id=SEP, pad_id=PAD, mask_id=MASK, vocab_size=100, mask_prob=0.0
    )
    assert one.input_ids.tolist() == [[CLS, 10, 11, SEP, 20, SEP]]
    assert one.segment_ids.tolist() == [[0, 0, 0, 0, 1, 1]]
    assert set(dict(**one)) == {"input_ids", "labels", "is_next", "attention_mask", "segment_ids"}


def test_word_spans_cut_each_document_and_drop_the_rest():
    from transformer_lab.data.mlm import word_spans
    from transformer_lab.data.tokenizers import WordVocabulary

    vocab = WordVocabulary(["a", "b", "c"])
    docs = [["a b", "c a b"], ["c c"]]
    assert word_spans(docs, vocab, 2) == [[[5, 6], [7, 5]], [[7, 7]]]  # "b" of doc 0 dropped
    assert word_spans(docs, vocab, 3) == [[[5, 6, 7]], []]
