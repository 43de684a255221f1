"""The classification head, freezing, parameter groups and the training recipes.

Parity: our ``SequenceClassifier(pooling="cls")`` on all-MiniLM-L6-v2 equals
``transformers``' ``BertForSequenceClassification`` with the same weights (float32, CPU,
atol 1e-5 on the logits, as for the encoder in tests/test_pretrained.py).
"""

from __future__ import annotations

import os

import pytest
import torch
from torch import nn

from transformer_lab.data.wordpiece import WordPieceTokenizer
from transformer_lab.models.bert import BertConfig, BertModel
from transformer_lab.models.classifier import SequenceClassifier
from transformer_lab.nn.pooling import mean_pool
from transformer_lab.pretrained.minilm import minilm, minilm_dir
from transformer_lab.training.finetune import (
    ClassificationBatch,
    ClassifierRecipe,
    classification_accuracy,
    classification_batches,
    classification_loss,
    encode_features,
    fit_probe,
    predict,
    tokenize_labelled,
    train_classifier,
)
from transformer_lab.training.loop import train
from transformer_lab.training.run import Run
from transformer_lab.training.schedules import warmup_linear

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
ATOL = 1e-5
TEXTS = [
    "Now is the winter of our discontent made glorious summer by this sun of York.",
    "If music be the food of love, play on.",
    "Is this a dagger which I see before me?",
]


def tiny_encoder(seed=0, dropout=0.0):
    torch.manual_seed(seed)
    cfg = BertConfig(d_vocab=50, d_model=16, n_heads=2, d_mlp=32, n_layers=1, max_pos=12,
                     dropout=dropout)  # fmt: skip
    return BertModel(cfg)


def toy_data(n=24, seed=0):
    """Class = whether token 7 occurs: easy to learn."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(10, 50, (n, 8), generator=gen)
    labels = torch.arange(n) % 2
    ids[labels == 1, 3] = 7
    mask = torch.ones_like(ids)
    mask[::3, 6:] = 0  # some padding
    ids[mask == 0] = 0
    return ClassificationBatch(ids, mask, labels)


@pytest.fixture(scope="module")
def ours():
    return minilm()


def test_cls_head_matches_hf_bert_for_sequence_classification(ours):
    transformers = pytest.importorskip("transformers")
    model, tokenizer = ours
    hf = transformers.BertForSequenceClassification.from_pretrained(
        str(minilm_dir()), num_labels=3, local_files_only=True, attn_implementation="eager"
    ).eval()
    torch.manual_seed(0)
    clf = SequenceClassifier(model, 3, pooling="cls").eval()
    with torch.no_grad():  # the same (random) head in both
        hf.classifier.weight.copy_(clf.classifier.weight)
        hf.classifier.bias.copy_(torch.randn(3))
        clf.classifier.bias.copy_(hf.classifier.bias)
    b = tokenizer(TEXTS)  # padded: three lengths
    labels = torch.tensor([1, 0, 2])
    theirs = hf(input_ids=b.input_ids, attention_mask=b.attention_mask, labels=labels)
    with torch.no_grad():
        mine = clf(b.input_ids, b.attention_mask)
        loss = classification_loss(clf, ClassificationBatch(b.input_ids, b.attention_mask, labels))
    torch.testing.assert_close(mine, theirs.logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(loss, theirs.loss, atol=ATOL, rtol=0)
    assert mine.std() > 0.01  # the comparison is not between two constants


def test_mean_pooling_head_uses_real_tokens_only(ours):
    model, tokenizer = ours
    clf = SequenceClassifier(model, 3, pooling="mean").eval()
    b = tokenizer(TEXTS)
    with torch.no_grad():
        hidden = model(b.input_ids, b.attention_mask).last_hidden_state
        expected = mean_pool(hidden, b.attention_mask) @ clf.classifier.weight.T
        expected = expected + clf.classifier.bias
        torch.testing.assert_close(clf(b.input_ids, b.attention_mask), expected)
        alone = clf(tokenizer(TEXTS[1]).input_ids)  # the same text without padding
    torch.testing.assert_close(alone[0], expected[1], atol=ATOL, rtol=0)


def test_freeze_keeps_encoder_and_trains_head():
    clf = SequenceClassifier(tiny_encoder(), 2, pooling="mean").freeze_encoder()
    assert not any(p.requires_grad for p in clf.encoder.parameters())
    assert all(p.requires_grad for p in clf.classifier.parameters())
    before = {k: v.clone() for k, v in clf.state_dict().items()}
    train_classifier(clf, toy_data(), ClassifierRecipe(steps=5, batch_size=8, lr=1e-2), Run(seed=0))
    after = clf.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before if k.startswith("encoder."))
    assert not torch.equal(before["classifier.weight"], after["classifier.weight"])
    assert [g["name"] for g in clf.parameter_groups(1e-3, 1e-4)] == ["head"]
    clf.encoder.requires_grad_(True)
    assert [g["name"] for g in clf.parameter_groups(1e-3, 1e-4)] == ["head", "encoder"]


def test_encoder_learning_rate_is_smaller():
    """Adam's first step moves every weight by about its learning rate: the encoder's by
    encoder_lr, the head's by lr (warmup 0, so the first step runs at the full rate)."""
    clf = SequenceClassifier(tiny_encoder(), 2, pooling="cls")
    before = {k: v.clone() for k, v in clf.named_parameters()}
    recipe = ClassifierRecipe(
        steps=1, batch_size=8, lr=1e-2, encoder_lr=1e-4, weight_decay=0.0, warmup=0.0
    )
    train_classifier(clf, toy_data(), recipe, Run(seed=0))
    moved = {k: (v - before[k]).abs().max().item() for k, v in clf.named_parameters()}
    head = max(v for k, v in moved.items() if k.startswith("classifier."))
    body = max(v for k, v in moved.items() if k.startswith("encoder."))
    assert 0.5e-2 < head <= 1.01e-2, head
    assert 0.5e-4 < body <= 1.01e-4, body


def test_fine_tuning_learns_the_toy_task_through_train():
    data = toy_data(48)
    clf = SequenceClassifier(tiny_encoder(), 2, pooling="mean")
    start = classification_accuracy(clf, data)
    recipe = ClassifierRecipe(steps=60, batch_size=16, lr=1e-2, encoder_lr=3e-3)
    result = train_classifier(clf, data, recipe, Run(seed=0))
    assert result.steps == 60 and result.stopped_by == "steps"
    assert classification_accuracy(clf, data) == 1.0 and start < 0.8, start
    assert sum(result.losses[-10:]) < 0.5 * sum(result.losses[:10])


def test_batches_cover_every_example_each_epoch_and_trim_padding():
    data = toy_data(10)
    data.input_ids[:, 7:] = 0
    data.attention_mask[:, 7:] = 0
    stream = classification_batches(data, 4, seed=0)
    epoch = [next(stream) for _ in range(3)]  # 4 + 4 + 2
    assert [len(b) for b in epoch] == [4, 4, 2]
    assert all(b.input_ids.shape[1] <= 7 for b in epoch)
    seen = sorted(tuple(r.tolist()) for b in epoch for r in b.input_ids)
    assert seen == sorted(tuple(r[: len(seen[0])].tolist()) for r in data.input_ids)
    with pytest.raises(ValueError, match="batch_size"):
        next(classification_batches(data, 0, seed=0))


def test_predict_and_features_agree_with_forward():
    data = toy_data(10)
    clf = SequenceClassifier(tiny_encoder(), 2, pooling="mean").eval()
    with torch.no_grad():
        logits = clf(data.input_ids, data.attention_mask)
        feats = clf.features(data.input_ids, data.attention_mask)
    torch.testing.assert_close(predict(clf, data, batch_size=3), logits.argmax(-1))
    torch.testing.assert_close(encode_features(clf, data, batch_size=4), feats)
    assert (
        classification_accuracy(clf, data)
        == (logits.argmax(-1) == data.labels).float().mean().item()
    )


def test_static_features_are_mean_input_embeddings_and_ignore_context():
    data = toy_data(6)
    clf = SequenceClassifier(tiny_encoder(), 2, pooling="mean").eval()
    feats = encode_features(clf, data, batch_size=4, static=True)
    table = clf.encoder.embeddings.W_E.weight.detach()
    for row, (ids, mask) in enumerate(zip(data.input_ids, data.attention_mask, strict=True)):
        torch.testing.assert_close(feats[row], table[ids[mask.bool()]].mean(0))
    # the order of the tokens (their context) changes nothing, unlike the encoder's output
    flipped = ClassificationBatch(data.input_ids.flip(1), data.attention_mask.flip(1), data.labels)
    torch.testing.assert_close(encode_features(clf, flipped, static=True), feats)
    assert not torch.allclose(encode_features(clf, flipped), encode_features(clf, data))


def test_probe_folds_standardisation_and_separates_separable_features():
    gen = torch.Generator().manual_seed(0)
    labels = torch.arange(60) % 3
    features = torch.randn(60, 5, generator=gen) * torch.tensor([1.0, 10.0, 0.1, 1.0, 1.0])
    features[:, 0] += 3.0 * labels  # class shows in one feature
    head = fit_probe(features, labels, 3, steps=200, lr=0.05, seed=0)
    assert isinstance(head, nn.Linear) and head.weight.shape == (3, 5)
    assert (head(features).argmax(-1) == labels).float().mean() > 0.95
    with pytest.raises(ValueError, match="labels must be"):
        fit_probe(features, labels[:5], 3)


def test_warmup_linear_schedule():
    f = warmup_linear(10, warmup=0.2)
    assert [round(f(s), 3) for s in range(10)] == [0.5, 1.0, 1.0, 0.875, 0.75, 0.625, 0.5,
                                                    0.375, 0.25, 0.125]  # fmt: skip
    with pytest.raises(ValueError, match="warmup"):
        warmup_linear(10, warmup=1.0)


def test_tokenize_labelled_and_bad_inputs(ours):
    _, tokenizer = ours
    data = tokenize_labelled(tokenizer, TEXTS, [0, 1, 2], max_length=8)
    assert data.input_ids.shape == (3, 8) and data.labels.tolist() == [0, 1, 2]
    assert isinstance(tokenizer, WordPieceTokenizer)
    with pytest.raises(ValueError, match="as long as labels"):
        tokenize_labelled(tokenizer, TEXTS, [0, 1], max_length=8)
    with pytest.raises(ValueError, match="pooling"):
        SequenceClassifier(tiny_encoder(), 2, pooling="max")
    with pytest.raises(ValueError, match="n_classes"):
        SequenceClassifier(tiny_encoder(), 1)
    with pytest.raises(ValueError, match=r"labels must be in \[0, 2\)"):
        clf = SequenceClassifier(tiny_encoder(), 2)
        classification_loss(
            clf, ClassificationBatch(*toy_data(4)._tensors()[:2], torch.tensor([0, 1, 2, 0]))
        )


def test_probe_through_train_equals_frozen_classifier_predictions():
    """A probe fitted on precomputed features, put in as the head of the frozen
    classifier, gives the classifier's predictions (the features never change)."""
    data = toy_data(30)
    clf = SequenceClassifier(tiny_encoder(), 2, pooling="mean").freeze_encoder()
    head = fit_probe(encode_features(clf, data), data.labels, 2, steps=50, seed=0)
    clf.classifier.load_state_dict(head.state_dict())
    expected = head(encode_features(clf, data)).argmax(-1)
    torch.testing.assert_close(predict(clf, data), expected)
    # and train() itself refuses a fully frozen model
    frozen = SequenceClassifier(tiny_encoder(), 2).freeze_encoder()
    frozen.classifier.requires_grad_(False)
    with pytest.raises(ValueError, match="no trainable parameters"):
        train(frozen, classification_batches(data, 4, 0), classification_loss, run=Run(steps=1))


def test_slicing_a_left_padded_batch_keeps_the_tokens():
    data = ClassificationBatch(
        torch.tensor([[0, 0, 5], [0, 6, 7]]),
        torch.tensor([[0, 0, 1], [0, 1, 1]]),
        torch.tensor([0, 1]),
    )
    first = data[0:1]
    assert first.input_ids.tolist() == [[5]] and first.attention_mask.tolist() == [[1]]
    both = data[[0, 1]]
    assert both.input_ids.tolist() == [[0, 5], [6, 7]]
    right = toy_data(6)[[0, 3]]  # right padding: trimmed on the right
    assert right.attention_mask[:, -1].any() and right.input_ids.shape[1] == 6


def test_batches_refuse_empty_data_and_take_numpy_sizes():
    empty = ClassificationBatch(*(t[:0] for t in toy_data(3)._tensors()))
    with pytest.raises(ValueError, match="at least one example"):
        classification_batches(empty, 2, 0)  # refused at once, not at the first next()
    np = pytest.importorskip("numpy")
    batches = classification_batches(toy_data(6), np.int64(4), np.int64(0))
    assert len(next(batches)) == 4 and len(next(batches)) == 2
    assert len(predict(SequenceClassifier(tiny_encoder(), 2), toy_data(5), np.int32(2))) == 5


def test_a_batch_must_match_its_parts():
    ids = torch.ones(4, 3, dtype=torch.long)
    with pytest.raises(ValueError, match="one per row of input_ids"):
        ClassificationBatch(ids, torch.ones_like(ids), torch.arange(3))
    with pytest.raises(ValueError, match="only 0 .padding. and 1"):
        ClassificationBatch(ids, 2 * torch.ones_like(ids), torch.arange(4))


def test_mean_pool_refuses_a_mask_that_counts_a_token_twice():
    h = torch.tensor([[[1.0], [3.0]]])
    assert mean_pool(h, torch.tensor([[1, 1]])).item() == 2.0
    assert mean_pool(h, torch.tensor([[True, False]])).item() == 1.0
    with pytest.raises(ValueError, match="only 0 .padding. and 1"):
        mean_pool(h, torch.tensor([[2, 1]]))
