"""The live panels of chapters 12 and 13 (``scripts/site/live/live.js``) with the input a reader
types, in headless Chromium on the built site:

- the GPT panel refuses an empty prompt and clears what the last run showed; maps characters
  outside its alphabet to their equivalents (curly quotes, dashes, accents) and drops the rest,
  saying which, and still generates; shows the prompt, styled apart, before the continuation;
  generates on Enter (Shift+Enter starts a new line);
- the MiniLM panel refuses an empty box and clears its results; says when a long text is cut
  to 512 tokens and by how much, and keeps its heatmap within a bounded box; shows how much of
  the model has arrived while it loads; runs on Enter;
- in dark mode and in light mode the panels' status lines and notes and the page's figure
  captions have a contrast of at least 4.5:1 with what is behind them (computed styles);
- no page asks for a file the site does not have (the favicon in particular).

Screenshots of both panels, light and dark, at 1280 and 400 px, go to ``artifacts/``. Run after
``make book``.
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import threading

import pytest
import torch
from browser_support import CHROMIUM_FLAGS, HTML, PageProblems, is_local, missing

LIVE = HTML / "_static" / "live"
GPT_PAGE, BERT_PAGE = "book/13_gpt.html", "book/12_bert.html"
GPT_PANEL, BERT_PANEL = ".tl-live[data-tl-live='gpt']", ".tl-live[data-tl-live='minilm']"
N_CHARS = 30
MIN_CONTRAST = 4.5  # WCAG AA for body text
# a sentence of 10 WordPiece tokens, 60 times: 600 tokens, more than MiniLM's 512 positions
LONG_SENTENCE = " ".join(["The quick brown fox jumps over the lazy dog."] * 60)
HEATMAP_BOUND = 700  # px: the largest heatmap (64 tokens) with its labels, on any screen


@pytest.fixture(scope="module")
def live_files():
    needed = ["gpt.onnx", "gpt.json", "minilm.onnx", "minilm.json", "tokenizers.js", "live.js"]
    absent = [name for name in needed if not (LIVE / name).exists()]
    if absent:
        missing(f"no {', '.join(absent)} in {LIVE}: run `make book` first")


def open_page(context, site_url: str, name: str):
    page = context.new_page()
    page.set_default_timeout(120_000)  # a busy machine; MiniLM is tens of megabytes
    problems = PageProblems(page)
    page.goto(f"{site_url}/{name}", wait_until="load")
    page.wait_for_function("window.TransformerLabLive !== undefined")
    page.evaluate("TransformerLabLive.settings.backend = 'wasm'")
    return page, problems


@pytest.fixture(scope="module")
def gpt_page(browser_context, site_url, live_files):
    page, problems = open_page(browser_context, site_url, GPT_PAGE)
    yield page
    assert not problems.errors, problems.errors
    page.close()


@pytest.fixture(scope="module")
def bert_page(browser_context, site_url, live_files):
    page, problems = open_page(browser_context, site_url, BERT_PAGE)
    yield page
    assert not problems.errors, problems.errors
    page.close()


@pytest.fixture(scope="module")
def book_gpt():
    from transformer_lab.pretrained.book_gpt import load_book_gpt

    torch.manual_seed(0)
    return load_book_gpt()


def greedy_continuation(book_gpt, prompt: str, n: int) -> str:
    from transformer_lab.generation.sampling import generate

    model, tok = book_gpt
    idx = torch.tensor([tok.encode(prompt)])
    return tok.decode(generate(model, idx, n, temperature=0)[0, idx.shape[1] :].tolist())


def wait_status(page, panel_selector: str, pattern: str) -> str:
    """Wait until the panel's status line matches the regular expression; return the line."""
    page.wait_for_function(
        "([sel, pattern]) => new RegExp(pattern).test("
        "document.querySelector(sel + ' .tl-live-status').textContent)",
        arg=[panel_selector, pattern],
    )
    return page.locator(f"{panel_selector} .tl-live-status").inner_text()


def heatmap_shown(page, panel_selector: str) -> bool:
    return page.evaluate(
        "(sel) => { const c = document.querySelector(sel + ' canvas');"
        " return !!c && !c.hidden && c.width > 0 && c.getBoundingClientRect().height > 0; }",
        panel_selector,
    )


def forget_status(page, panel_selector: str) -> None:
    """Empty the panel's status line, so that the next line waited for is the next run's."""
    page.evaluate(
        "(sel) => { document.querySelector(sel + ' .tl-live-status').textContent = ''; }",
        panel_selector,
    )


def gpt_generate(page, prompt: str, n: int = N_CHARS, press_enter: bool = False) -> str:
    """Type ``prompt``, generate ``n`` greedy characters; return the final status line."""
    panel = page.locator(GPT_PANEL)
    forget_status(page, GPT_PANEL)
    panel.locator("input[type='checkbox']").check()
    panel.locator("label:has-text('characters') input").fill(str(n))
    box = panel.locator("textarea")
    box.fill(prompt)
    if press_enter:
        box.press("Enter")
    else:
        panel.locator("button", has_text="Generate").click()
    return wait_status(page, GPT_PANEL, "characters in|Type a prompt|None of|Cannot")


def minilm_run(page, sentence: str) -> str:
    panel = page.locator(BERT_PANEL)
    panel.locator("input[type='text']").fill(sentence)
    forget_status(page, BERT_PANEL)
    panel.locator("button", has_text="Run MiniLM").click()
    return wait_status(page, BERT_PANEL, "tokens in|Type a sentence|Cannot|nothing to read")


# --- the GPT panel -------------------------------------------------------------------------


def test_gpt_empty_prompt_is_refused_and_clears_the_last_output(gpt_page):
    page, panel = gpt_page, gpt_page.locator(GPT_PANEL)
    status = gpt_generate(page, "ROMEO:\nWhat light")
    assert "characters in" in status, status
    assert panel.locator(".tl-live-continuation").inner_text() != ""
    assert heatmap_shown(page, GPT_PANEL)
    status = gpt_generate(page, "")
    assert status.startswith("Type a prompt"), status
    assert panel.locator(".tl-live-status.tl-live-error").count() == 1
    assert panel.locator(".tl-live-output").inner_text() == "", "the last output stayed"
    assert not heatmap_shown(page, GPT_PANEL), "the last heatmap stayed"


def test_gpt_prompt_outside_the_alphabet_is_mapped_with_a_note(gpt_page, book_gpt):
    page, panel = gpt_page, gpt_page.locator(GPT_PANEL)
    prompt = "ROMEO:\n“Hello,” she said — <look> 🙂 naïve…"
    read = 'ROMEO:\n"Hello," she said -- look  naive...'  # what the model is given
    status = gpt_generate(page, prompt)
    assert "characters in" in status, status
    note = panel.locator(".tl-live-adapted")
    assert note.is_visible()
    text = note.inner_text()
    for shown in ("“", "”", "—", "ï", "…", "<", ">", "🙂"):
        assert shown in text, (shown, text)
    assert "dropped" in text and "became" in text, text
    assert panel.locator(".tl-live-prompt").inner_text() == read
    assert panel.locator(".tl-live-continuation").inner_text() == greedy_continuation(
        book_gpt, read, N_CHARS
    )
    # a prompt in the alphabet needs no note
    gpt_generate(page, "ROMEO:\n")
    assert not panel.locator(".tl-live-adapted").is_visible()
    # a prompt with nothing left is refused, and the note says what was dropped
    status = gpt_generate(page, "<🙂>")
    assert "None of the prompt's characters" in status, status
    assert panel.locator(".tl-live-output").inner_text() == ""
    assert "🙂" in panel.locator(".tl-live-adapted").inner_text()


CLEANED = [  # (typed, what the model reads, changed, dropped)
    ("plain text, as in the plays!", "plain text, as in the plays!", {}, []),
    ("‘single’ “double” «guillemets»", "'single' \"double\" \"guillemets\"",
     {"‘": "'", "’": "'", "“": '"', "”": '"', "«": '"', "»": '"'}, []),
    ("a – b — c ― d", "a - b -- c -- d", {"–": "-", "—": "--", "―": "--"}, []),
    ("wait…\tthen\u00a0go\r\nnow", "wait... then go\nnow",
     {"…": "...", "\t": " ", "\u00a0": " "}, []),
    ("Café Ångström ﬁne Ｈｉ Straße", "Cafe Angstrom fine Hi Strasse",
     {"é": "e", "Å": "A", "ö": "o", "ﬁ": "fi", "Ｈ": "H", "ｉ": "i", "ß": "ss"}, []),
    ("x <= y (or {z}) #1 @me 👍🏽 ok", "x  y or z 1 me  ok", {},
     ["<", "=", "(", "{", "}", ")", "#", "@", "👍", "🏽"]),
]  # fmt: skip


def test_clean_prompt_maps_equivalents_and_drops_the_rest(gpt_page):
    vocab = json.loads((LIVE / "gpt.json").read_text())["vocab"]
    for typed, read, changed, dropped in CLEANED:
        out = gpt_page.evaluate("([t, v]) => TransformerLabLive.cleanPrompt(t, v)", [typed, vocab])
        assert out["text"] == read, (typed, out)
        assert dict(out["changed"]) == changed, (typed, out)
        assert out["dropped"] == dropped, (typed, out)
        assert all(ch in vocab for ch in out["text"])


def test_gpt_prompt_is_shown_before_the_continuation(gpt_page, book_gpt):
    page, panel = gpt_page, gpt_page.locator(GPT_PANEL)
    prompt = "KING HENRY V:\nOnce more unto the breach, dear fr"
    gpt_generate(page, prompt)
    shown, continued = panel.locator(".tl-live-prompt"), panel.locator(".tl-live-continuation")
    assert shown.inner_text() == prompt
    assert continued.inner_text() == greedy_continuation(book_gpt, prompt, N_CHARS)
    assert panel.locator(".tl-live-output").inner_text() == prompt + continued.inner_text()
    order = panel.locator(".tl-live-output").evaluate(
        "(o) => Array.from(o.children).map((c) => c.className)"
    )
    assert order == ["tl-live-prompt", "tl-live-continuation"], order
    style = "(e) => { const s = getComputedStyle(e); return [s.fontWeight, s.backgroundColor]; }"
    assert shown.evaluate(style) != continued.evaluate(style), "the prompt is not set apart"


def test_enter_generates_and_shift_enter_starts_a_line(gpt_page, book_gpt):
    page, panel = gpt_page, gpt_page.locator(GPT_PANEL)
    status = gpt_generate(page, "ROMEO:\nO", press_enter=True)
    assert "characters in" in status, status
    box = panel.locator("textarea")
    assert box.input_value() == "ROMEO:\nO", "Enter added a line break to the prompt"
    assert panel.locator(".tl-live-continuation").inner_text() == greedy_continuation(
        book_gpt, "ROMEO:\nO", N_CHARS
    )
    before = panel.locator(".tl-live-output").inner_text()
    box.press("End")
    box.press("Shift+Enter")
    page.wait_for_timeout(500)
    assert box.input_value() == "ROMEO:\nO\n"
    assert panel.locator(".tl-live-output").inner_text() == before, "Shift+Enter generated"


# --- the MiniLM panel ----------------------------------------------------------------------


def test_minilm_empty_box_is_refused_and_clears_the_results(bert_page):
    page, panel = bert_page, bert_page.locator(BERT_PANEL)
    status = minilm_run(page, "A man is playing a guitar.")
    assert "tokens in" in status, status
    assert panel.locator(".tl-live-cos").count() == 4 and heatmap_shown(page, BERT_PANEL)
    for empty in ("", "   "):
        status = minilm_run(page, empty)
        assert status.startswith("Type a sentence"), status
        assert panel.locator(".tl-live-status.tl-live-error").count() == 1
        assert panel.locator(".tl-live-cos").count() == 0, "the last similarities stayed"
        assert not heatmap_shown(page, BERT_PANEL), "the last heatmap stayed"
        minilm_run(page, "A man is playing a guitar.")


def test_minilm_long_text_says_it_was_cut_and_keeps_a_bounded_heatmap(bert_page):
    from transformer_lab.data.wordpiece import WordPieceTokenizer
    from transformer_lab.pretrained.minilm import minilm_dir

    page, panel = bert_page, bert_page.locator(BERT_PANEL)
    whole = WordPieceTokenizer.from_file(minilm_dir() / "tokenizer.json", max_length=100_000)
    length = len(whole(LONG_SENTENCE).tokens[0])  # [CLS] and [SEP] included
    assert length > 512
    # one run of 512 tokens (about a minute in WebAssembly on a busy 2-core machine): the
    # panel's note must name the whole length and the tokens cut
    status = minilm_run(page, LONG_SENTENCE)
    assert "512 tokens in" in status, status
    note = panel.locator(".tl-live-warning")
    assert note.is_visible()
    text = note.inner_text()
    assert "cut" in text and str(length) in text and str(length - 512) in text, text
    for part in ("canvas", ".tl-live-figure"):
        box = panel.locator(part).bounding_box()
        assert box["height"] <= HEATMAP_BOUND and box["width"] <= HEATMAP_BOUND, (part, box)
    assert "first 64 of the 512 tokens" in panel.locator(".tl-live-note").first.inner_text()
    # a short sentence again: no note
    minilm_run(page, "A man is playing a guitar.")
    assert not note.is_visible()


def test_minilm_enter_runs(bert_page):
    page, panel = bert_page, bert_page.locator(BERT_PANEL)
    minilm_run(page, "A man is playing a guitar.")
    box = panel.locator("input[type='text']")
    # set the text without an input event (which runs the model after a pause), then Enter
    box.evaluate("(e) => { e.value = 'Dogs run.'; }")
    forget_status(page, BERT_PANEL)
    box.press("Enter")
    status = wait_status(page, BERT_PANEL, r"; 5 tokens in")
    assert "5 tokens in" in status, status


def test_minilm_first_load_shows_its_progress(browser_context, site_url, live_files):
    page, _ = open_page(browser_context, site_url, BERT_PAGE)
    try:
        page.evaluate(
            """(sel) => {
                window.seenStatus = [];
                const s = document.querySelector(sel + " .tl-live-status");
                new MutationObserver(() => window.seenStatus.push(s.textContent))
                    .observe(s, {childList: true, characterData: true, subtree: true});
            }""",
            BERT_PANEL,
        )
        page.locator(BERT_PANEL).locator("button", has_text="Run MiniLM").click()
        wait_status(page, BERT_PANEL, "tokens in")
        seen = page.evaluate("window.seenStatus")
    finally:
        page.close()
    total = (
        (LIVE / "minilm.onnx").stat().st_size
        + (HTML / "_static" / "ort" / "ort-wasm-simd-threaded.jsep.wasm").stat().st_size
    ) / 1e6
    progress = [re.search(r"Loading MiniLM .*: ([\d.]+) MB of ([\d.]+) MB", s) for s in seen]
    amounts = [(float(m.group(1)), float(m.group(2))) for m in progress if m]
    assert amounts, f"no progress in the status: {seen[:5]}"
    assert all(of == round(total, 1) for _, of in amounts), (amounts[:3], total)
    assert len({got for got, _ in amounts}) >= 2, "the amount loaded never changed"


# --- contrast ------------------------------------------------------------------------------

# the colour of each element's text and of what lies behind it (its own background and its
# ancestors', composited over the white canvas), as [r, g, b, a]
COLOURS = """(selectors) => {
    const parse = (c) => {
        const m = c.match(/^rgba?\\(([^)]*)\\)$/);
        if (!m) throw new Error("unexpected colour " + c);
        const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
        return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    };
    const over = (top, under) => {
        const a = top[3] + under[3] * (1 - top[3]);
        return [0, 1, 2].map((i) => (top[i] * top[3] + under[i] * under[3] * (1 - top[3])) / a)
            .concat([a]);
    };
    const behind = (el) => {
        const layers = [];
        for (let n = el; n; n = n.parentElement) {
            const c = parse(getComputedStyle(n).backgroundColor);
            if (c[3] > 0) layers.push(c);
            if (c[3] >= 1) break;
        }
        return layers.reduceRight((under, top) => over(top, under), [255, 255, 255, 1]);
    };
    const found = [];
    for (const sel of selectors) {
        for (const el of document.querySelectorAll(sel)) {
            if (!el.getClientRects().length || !el.textContent.trim()) continue;
            const back = behind(el);
            found.push({selector: sel, text: el.textContent.trim().slice(0, 60),
                        color: over(parse(getComputedStyle(el).color), back), background: back});
        }
    }
    return found;
}"""


def luminance(rgb) -> float:
    def linear(c: float) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def set_theme(page, theme: str) -> None:
    """The theme's own switch: pydata-sphinx-theme styles html[data-theme]."""
    page.evaluate(
        "(t) => { document.documentElement.dataset.theme = t;"
        " document.documentElement.dataset.mode = t; }",
        theme,
    )
    page.wait_for_timeout(100)


TEXT_SELECTORS = [
    ".tl-live-status", ".tl-live-note", ".tl-live-warning", ".tl-live-adapted",
    ".tl-live-adapted code", ".tl-live-prompt", ".tl-live-continuation",
    ".bd-article figure figcaption",
]  # fmt: skip


def low_contrast(page, theme: str) -> list[str]:
    set_theme(page, theme)
    found = page.evaluate(COLOURS, TEXT_SELECTORS)
    assert any(f["selector"] == ".tl-live-status" for f in found)
    assert any(f["selector"] == ".bd-article figure figcaption" for f in found)
    return [
        f"{theme}: {f['selector']} {contrast(f['color'], f['background']):.2f}:1 ({f['text']!r})"
        for f in found
        if contrast(f["color"], f["background"]) < MIN_CONTRAST
    ]


def test_status_notes_and_captions_read_in_dark_and_light_mode(gpt_page, bert_page):
    bad = []
    try:
        # the GPT panel with a note and a status, then with an error
        gpt_generate(gpt_page, "“Hello” <there>")
        for theme in ("dark", "light"):
            bad += low_contrast(gpt_page, theme)
        gpt_generate(gpt_page, "")
        for theme in ("dark", "light"):
            bad += low_contrast(gpt_page, theme)
        # the MiniLM panel with its cut note
        minilm_run(bert_page, LONG_SENTENCE)
        for theme in ("dark", "light"):
            bad += low_contrast(bert_page, theme)
    finally:
        set_theme(gpt_page, "light")
        set_theme(bert_page, "light")
    assert not bad, bad


# --- screenshots ---------------------------------------------------------------------------


@pytest.mark.parametrize("width", [1280, 400])
def test_panels_in_light_and_dark_mode(gpt_page, bert_page, artifacts, width):
    """Both panels after a run, at a desktop and a phone width; the page does not scroll
    sideways at 400 px. Screenshots: artifacts/live_{gpt,minilm}_{light,dark}_{width}.png."""
    runs = [
        (gpt_page, GPT_PANEL, "gpt", lambda: gpt_generate(gpt_page, "“Good morrow,” <sir> —", 120)),
        (bert_page, BERT_PANEL, "minilm", lambda: minilm_run(bert_page, LONG_SENTENCE)),
    ]
    for page, selector, name, run in runs:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(300)  # the heatmap is drawn again for the new width
        run()
        page.wait_for_timeout(300)
        if width <= 400:
            scroll = page.evaluate("() => document.documentElement.scrollWidth")
            assert scroll <= width + 1, f"{name}: the page scrolls sideways ({scroll} px)"
            box = page.locator(selector).bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= width + 1, (name, box)
        panel = page.locator(selector)
        for theme in ("light", "dark"):
            set_theme(page, theme)
            panel.scroll_into_view_if_needed()
            panel.screenshot(path=str(artifacts / f"live_{name}_{theme}_{width}.png"))
        set_theme(page, "light")
        page.set_viewport_size({"width": 1280, "height": 900})


# --- no missing files ----------------------------------------------------------------------


class LoggingHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site and records (path, status) of every request."""

    def __init__(self, *args, log: list, **kwargs):
        self.log_to = log
        super().__init__(*args, **kwargs)

    def log_request(self, code="-", size="-"):
        self.log_to.append((self.path, int(code) if isinstance(code, int) else 0))

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@pytest.mark.parametrize("name", ["index.html", GPT_PAGE, BERT_PAGE])
def test_no_page_asks_for_a_missing_file(playwright_api, tmp_path, name):
    """Every request a page makes, the browser's own ones included (the favicon, which
    Chromium asks for on a first visit: a fresh profile here), is answered, and none leaves the
    machine; the page names its icon and the icon is an image the site serves."""
    if not (HTML / "index.html").exists():
        missing(f"no built site in {HTML}: run `make book` first")
    manager, executable = playwright_api
    context = manager.chromium.launch_persistent_context(
        str(tmp_path / "profile"), executable_path=executable, headless=True, args=CHROMIUM_FLAGS
    )
    # no routing here: with request interception on, Chromium does not ask for favicons
    asked: list[str] = []
    context.on("request", lambda request: asked.append(request.url))
    log: list[tuple[str, int]] = []
    handler = functools.partial(LoggingHandler, directory=str(HTML), log=log)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page = context.new_page()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        page.goto(f"{base}/{name}", wait_until="load")
        for _ in range(50):  # the browser asks for the icon after the page has loaded
            if any("favicon" in path for path, _ in log):
                break
            page.wait_for_timeout(100)
        page.wait_for_timeout(500)
        seen = list(log)
        missing_files = [(path, code) for path, code in seen if code >= 400]
        assert not missing_files, missing_files
        assert any("favicon" in path and code == 200 for path, code in seen), seen[-5:]
        icon = page.evaluate(
            "() => { const l = document.querySelector('link[rel~=\"icon\"]');"
            " return l ? l.href : null; }"
        )
        assert icon, f"{name} names no icon"
        assert not [url for url in asked if not is_local(url)], asked
        reply = page.request.get(icon)
        assert reply.status == 200 and reply.body()[:4] == b"\x00\x00\x01\x00", icon  # an ICO
    finally:
        context.close()
        server.shutdown()
        server.server_close()
