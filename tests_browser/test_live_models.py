"""The live models of the site (``scripts/site/live/live.js``) equal the package's models.

In headless Chromium, on the built chapter pages, ONNX Runtime Web (WebAssembly) runs the
exported files of ``_static/live/``; the numbers the page computes are compared with the
package's models in this process:

- the chapter-13 GPT (``transformer_lab.pretrained.book_gpt``, float32 weights in the file):
  logits and attention of three prompts within ``GPT_TOL`` (only the order of float32
  operations differs), and 40 greedy characters equal to ``generate(..., temperature=0)``;
- all-MiniLM-L6-v2 (``transformer_lab.pretrained.minilm``, weight matrices stored as
  float16 in the file): attention and sentence vectors of three sentences within
  ``ROUNDED_TOL`` of the package's model with the same weights rounded to float16, and
  within ``MINILM_TOL`` of the package's float32 model;
- the page's sampling rule equals ``next_token_probs`` on random logits.

The panels are used as a reader would (Generate, a typed sentence), a panel whose model
cannot load says so, and no request leaves the site. Run after ``make book``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from browser_support import HTML, PageProblems, missing

LIVE = HTML / "_static" / "live"
GPT_PAGE, BERT_PAGE = "book/13_gpt.html", "book/12_bert.html"

PROMPTS = [
    "ROMEO:\n",
    "KING HENRY V:\nOnce more unto the breach, dear fr",
    # longer than the GPT's window: the page and the package both read its last n_ctx chars
    "HAMLET:\nTo be, or not to be, that is the question:\n"
    "Whether 'tis nobler in the mind to suffer",
]
SENTENCES = [
    "The animal didn't cross the street because it was too tired.",
    "A man is playing a guitar.",
    "Shall I compare thee to a summer's day? Thou art more lovely and more temperate.",
]
GPT_TOL = 1e-4  # absolute, logits and attention: float32 weights, float32 arithmetic
ROUNDED_TOL = 1e-5  # absolute: MiniLM against the package with the file's float16 weights
MINILM_TOL = 5e-3  # absolute: MiniLM against the package's float32 weights
N_GREEDY = 40


@pytest.fixture(scope="module")
def live_files():
    needed = ["gpt.onnx", "gpt.json", "minilm.onnx", "minilm.json", "tokenizers.js", "live.js"]
    absent = [name for name in needed if not (LIVE / name).exists()]
    if absent:
        missing(f"no {', '.join(absent)} in {LIVE}: run `make book` first")
    if not (HTML / "_static" / "ort" / "ort.min.js").exists():
        missing("no ONNX Runtime Web in _static/ort: run `make book` first")


def open_live_page(context, site_url: str, name: str):
    page = context.new_page()
    page.set_default_timeout(120_000)  # a busy machine; MiniLM is tens of megabytes
    problems = PageProblems(page)
    page.goto(f"{site_url}/{name}", wait_until="load")
    page.wait_for_function("window.TransformerLabLive !== undefined")
    return page, problems


@pytest.fixture(scope="module")
def gpt_page(browser_context, site_url, live_files):
    page, problems = open_live_page(browser_context, site_url, GPT_PAGE)
    page.evaluate("TransformerLabLive.settings.backend = 'wasm'")
    yield page
    assert not problems.errors, problems.errors
    page.close()


@pytest.fixture(scope="module")
def bert_page(browser_context, site_url, live_files):
    page, problems = open_live_page(browser_context, site_url, BERT_PAGE)
    page.evaluate("TransformerLabLive.settings.backend = 'wasm'")
    yield page
    assert not problems.errors, problems.errors
    page.close()


@pytest.fixture(scope="module")
def book_gpt():
    from transformer_lab.pretrained.book_gpt import load_book_gpt

    torch.manual_seed(0)
    return load_book_gpt()


@pytest.fixture(scope="module")
def minilm_models():
    """The package's MiniLM, and a copy whose weight matrices are rounded to float16 as the
    exported file stores them."""
    import copy

    from transformer_lab.pretrained.minilm import minilm

    model, tokenizer = minilm()
    rounded = copy.deepcopy(model)
    with torch.no_grad():
        for p in rounded.parameters():
            if p.dim() >= 2:  # the matrices and embeddings, as export.float16 stores them
                p.copy_(p.half().float())
    return model, rounded, tokenizer


def gpt_reference(model, tok, prompt: str):
    from transformer_lab.hooks import run_with_cache

    ids = tok.encode(prompt)[-model.config.n_ctx :]
    with torch.no_grad():
        logits, cache = run_with_cache(model, torch.tensor([ids]), names="blocks.*.attn.pattern")
    attention = [cache[f"blocks.{i}.attn.pattern"][0] for i in range(model.config.n_layers)]
    return ids, logits[0].numpy(), torch.stack(attention).numpy()


@pytest.mark.parametrize("prompt", PROMPTS)
def test_gpt_logits_and_attention_equal_the_package(gpt_page, book_gpt, prompt):
    model, tok = book_gpt
    ids, logits, attention = gpt_reference(model, tok, prompt)
    out = gpt_page.evaluate("(p) => TransformerLabLive.gptRun(p)", prompt)
    assert out["backend"] == "wasm"
    assert out["ids"] == ids
    np.testing.assert_allclose(np.array(out["logits"]), logits, rtol=0, atol=GPT_TOL)
    page_attention = np.array(out["attention"])
    assert page_attention.shape == attention.shape
    np.testing.assert_allclose(page_attention, attention, rtol=0, atol=GPT_TOL)


@pytest.mark.parametrize("prompt", PROMPTS)
def test_gpt_greedy_characters_equal_the_package(gpt_page, book_gpt, prompt):
    from transformer_lab.generation.sampling import generate

    model, tok = book_gpt
    idx = torch.tensor([tok.encode(prompt)])
    expected = tok.decode(generate(model, idx, N_GREEDY, temperature=0)[0, idx.shape[1] :].tolist())
    page_text = gpt_page.evaluate(
        "([p, n]) => TransformerLabLive.gptGenerate(p, n, {greedy: true})", [prompt, N_GREEDY]
    )
    assert page_text == expected
    # the sampler's own path: top-k = 1 and a tiny nucleus leave only the argmax
    for rule in ({"temperature": 1.0, "topK": 1}, {"temperature": 1.5, "topP": 1e-3}):
        sampled = gpt_page.evaluate(
            "([p, n, r]) => TransformerLabLive.gptGenerate(p, n, r)", [prompt, N_GREEDY, rule]
        )
        assert sampled == expected, rule


def test_sampling_rule_equals_next_token_probs(gpt_page):
    from transformer_lab.generation.sampling import next_token_probs

    gen = torch.Generator().manual_seed(0)
    logits = 3 * torch.randn(4, 75, generator=gen)
    logits[3, :10] = logits[3, 10]  # ties at the k-th value are all kept
    rules = [(1.0, None, None), (0.5, None, None), (1.0, 3, None), (1.0, None, 0.9),
             (0.7, 5, 0.8), (2.0, 12, 0.5), (0.0, None, None)]  # fmt: skip
    for i, row in enumerate(logits):
        for temperature, top_k, top_p in rules:
            if i == 3 and top_p is not None:
                continue  # which of several tied logits a nucleus keeps is left open by both
            expected = next_token_probs(row, temperature, top_k, top_p).numpy()
            got = gpt_page.evaluate(
                "([l, t, k, p]) => TransformerLabLive.nextTokenProbs(l, t, k, p)",
                [row.tolist(), temperature, top_k, top_p],
            )
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)


def test_minilm_attention_and_sentence_vectors_equal_the_package(bert_page, minilm_models):
    model, rounded, tokenizer = minilm_models
    worst_rounded, worst_float32 = 0.0, 0.0
    for sentence in SENTENCES:
        out = bert_page.evaluate("(s) => TransformerLabLive.minilmRun(s)", sentence)
        batch = tokenizer(sentence)
        assert out["ids"] == batch.input_ids[0].tolist()
        assert out["tokens"] == batch.tokens[0]
        page_attention, page_vector = np.array(out["attention"]), np.array(out["sentence"])
        for reference in (rounded, model):
            with torch.no_grad():
                attention = torch.stack(
                    [a[0] for a in reference(batch.input_ids, output_attentions=True).attentions]
                ).numpy()
            from transformer_lab.pretrained.minilm import sentence_embeddings

            vector = sentence_embeddings(reference, tokenizer, [sentence])[0].numpy()
            assert page_attention.shape == attention.shape
            gap = max(np.abs(page_attention - attention).max(), np.abs(page_vector - vector).max())
            if reference is rounded:
                worst_rounded = max(worst_rounded, gap)
            else:
                worst_float32 = max(worst_float32, gap)
    print(
        f"MiniLM: largest gap {worst_rounded:.1e} (float16 weights), {worst_float32:.1e} (float32)"
    )
    assert worst_rounded <= ROUNDED_TOL, worst_rounded
    assert worst_float32 <= MINILM_TOL, worst_float32


def test_gpt_panel_streams_greedy_text(gpt_page, book_gpt, artifacts):
    from transformer_lab.generation.sampling import generate

    model, tok = book_gpt
    page = gpt_page
    panel = page.locator(".tl-live[data-tl-live='gpt']")
    assert panel.count() == 1
    prompt = panel.locator("textarea").input_value()
    panel.locator("input[type='checkbox']").check()
    panel.locator("label:has-text('characters') input").fill(str(N_GREEDY))
    panel.locator("button", has_text="Generate").click()
    page.wait_for_function(
        "(el) => /characters in/.test(el.querySelector('.tl-live-status').textContent)",
        arg=panel.element_handle(),
    )
    status = panel.locator(".tl-live-status").inner_text()
    assert "ONNX Runtime Web" in status and "WebAssembly" in status, status
    idx = torch.tensor([tok.encode(prompt)])
    expected = tok.decode(generate(model, idx, N_GREEDY, temperature=0)[0, idx.shape[1] :].tolist())
    assert panel.locator(".tl-live-continuation").inner_text() == expected
    assert panel.locator(".tl-live-prompt").inner_text() == prompt  # shown before the continuation
    size = panel.locator("canvas").evaluate("(c) => [c.width, c.height]")
    assert min(size) > 100, size
    panel.scroll_into_view_if_needed()
    panel.screenshot(path=str(artifacts / "live_gpt_panel.png"))


def test_minilm_panel_shows_attention_and_similarities(bert_page, minilm_models, artifacts):
    from transformer_lab.pretrained.minilm import sentence_embeddings
    from transformer_lab.viz.live import COMPARE_SENTENCES

    model, _, tokenizer = minilm_models
    page = bert_page
    panel = page.locator(".tl-live[data-tl-live='minilm']")
    assert panel.count() == 1
    sentence = "The cat sat on the mat because it was warm."
    panel.locator("input[type='text']").fill(sentence)
    page.wait_for_function(
        "(el) => /tokens in/.test(el.querySelector('.tl-live-status').textContent)",
        arg=panel.element_handle(),
    )
    shown = [float(t) for t in panel.locator(".tl-live-cos").all_inner_texts()]
    vectors = sentence_embeddings(model, tokenizer, [sentence, *COMPARE_SENTENCES])
    expected = (vectors[1:] @ vectors[0]).tolist()
    assert len(shown) == len(expected)
    np.testing.assert_allclose(shown, expected, rtol=0, atol=0.006)  # printed to 2 decimals
    panel.locator("select").select_option("3")
    size = panel.locator("canvas").evaluate("(c) => [c.width, c.height]")
    assert min(size) > 100, size
    panel.scroll_into_view_if_needed()
    panel.screenshot(path=str(artifacts / "live_minilm_panel.png"))


def test_a_model_that_cannot_load_is_reported_in_the_panel(browser_context, site_url, live_files):
    page, problems = open_live_page(browser_context, site_url, BERT_PAGE)
    page.route("**/_static/live/minilm.onnx", lambda route: route.abort())
    panel = page.locator(".tl-live[data-tl-live='minilm']")
    panel.locator("button", has_text="Run MiniLM").click()
    page.wait_for_selector(".tl-live[data-tl-live='minilm'] .tl-live-error")
    text = panel.locator(".tl-live-status").inner_text()
    assert "cannot run in this browser" in text and "precomputed" in text, text
    page.close()


def test_live_pages_fetch_only_from_the_site(browser_context, site_url, gpt_page, bert_page):
    # after the tests above have loaded both models in this browser context
    gpt_page.evaluate("TransformerLabLive.load('gpt').then(() => null)")
    bert_page.evaluate("TransformerLabLive.load('minilm').then(() => null)")
    urls = browser_context.request_log.urls
    assert browser_context.request_log.external() == []
    for path in ("ort/ort.min.js", "ort/ort-wasm-simd-threaded.jsep.wasm", "live/gpt.onnx",
                 "live/minilm.onnx", "live/tokenizers.js"):  # fmt: skip
        assert f"{site_url}/_static/{path}" in urls, path
