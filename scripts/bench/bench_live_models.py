"""Time the site's live models in headless Chromium with ONNX Runtime Web (WebAssembly).

Serves the built site (``_build/html``, after ``make book``) on 127.0.0.1 and, on the
chapter pages that hold the panels, measures with the page's own functions
(``window.TransformerLabLive`` of ``scripts/site/live/live.js``):

- the first load of each model in a fresh browser: fetching ONNX Runtime Web, the model
  file and its JSON, and creating the session (budget: at most 5 s);
- MiniLM's attention and sentence vector for a sentence of 16 tokens, after loading: the
  median of ``--repeats`` runs (budget: at most 300 ms);
- the GPT's greedy generation of 200 characters, one forward pass over the last ``n_ctx``
  characters per character: characters per second, the median of three runs (budget: at
  least 50);
- the size the live models add to the site: ``_static/ort`` and ``_static/live`` (budget:
  80 MB together).

It prints the figures, the budgets, and the load average of the machine (the figures are
only as quiet as the machine was).

    .venv/bin/python scripts/bench/bench_live_models.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import statistics
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
sys.path.insert(0, str(ROOT / "tests_browser"))

from browser_support import CHROMIUM_FLAGS, QuietHandler, chromium_path, is_local  # noqa: E402

SENTENCE_16 = "The king gave his three daughters the land he had ruled for years."  # 16 tokens
BUDGETS = {"load_s": 5.0, "minilm_ms": 300.0, "gpt_chars_per_s": 50.0, "size_mb": 80.0}
PAGES = {"gpt": "book/13_gpt.html", "minilm": "book/12_bert.html"}


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def measure(repeats: int) -> dict:
    from playwright.sync_api import sync_playwright

    handler = functools.partial(QuietHandler, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site = f"http://127.0.0.1:{server.server_address[1]}"
    found: dict = {}
    with sync_playwright() as p:
        for name, page_name in PAGES.items():
            # a fresh browser for each model, so that its first load fetches everything
            browser = p.chromium.launch(
                executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS
            )
            page = browser.new_page()
            page.set_default_timeout(120_000)
            outside: list[str] = []
            page.on("request", lambda r, out=outside: out if is_local(r.url) else out.append(r.url))
            page.goto(f"{site}/{page_name}", wait_until="load")
            page.wait_for_function("window.TransformerLabLive !== undefined")
            page.evaluate("TransformerLabLive.settings.backend = 'wasm'")
            found[f"{name}_load_s"] = page.evaluate(
                """async (name) => {
                    const start = performance.now();
                    await TransformerLabLive.load(name);
                    return (performance.now() - start) / 1000;
                }""",
                name,
            )
            found[f"{name}_backend"] = page.evaluate(
                "(n) => TransformerLabLive.backendText(n)", name
            )
            if name == "minilm":
                runs = page.evaluate(
                    """async ([text, n]) => {
                        const L = TransformerLabLive, times = [];
                        let tokens = 0;
                        for (let i = 0; i < n + 1; i++) {
                            const start = performance.now();
                            const out = await L.minilmRun(text);
                            times.push(performance.now() - start);
                            tokens = out.tokens.length;
                        }
                        return {times: times.slice(1), tokens};  // the first run warms up
                    }""",
                    [SENTENCE_16, repeats],
                )
                found["minilm_tokens"] = runs["tokens"]
                found["minilm_ms"] = statistics.median(runs["times"])
            else:
                rates = page.evaluate(
                    """async () => {
                        const rates = [];
                        await TransformerLabLive.gptGenerate("ROMEO:\\n", 10, {greedy: true});
                        for (let i = 0; i < 3; i++) {
                            const start = performance.now();
                            const text = await TransformerLabLive.gptGenerate(
                                "ROMEO:\\n", 200, {greedy: true});
                            rates.push(text.length / ((performance.now() - start) / 1000));
                        }
                        return rates;
                    }"""
                )
                found["gpt_chars_per_s"] = statistics.median(rates)
            found[f"{name}_outside_requests"] = outside
            browser.close()
    server.shutdown()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="MiniLM runs after loading")
    args = parser.parse_args()
    if not (HTML / "_static" / "live" / "minilm.onnx").exists():
        sys.exit(f"no live models in {HTML / '_static' / 'live'}: run `make book` first")
    if chromium_path() is None:
        sys.exit("needs Chromium at /usr/bin/chromium (or TRANSFORMER_LAB_CHROMIUM)")
    load_before = os.getloadavg()
    found = measure(args.repeats)
    load_after = os.getloadavg()
    ort_mb = folder_bytes(HTML / "_static" / "ort") / 1e6
    live_mb = folder_bytes(HTML / "_static" / "live") / 1e6
    rows = [
        ("GPT first load (s)", found["gpt_load_s"], f"<= {BUDGETS['load_s']}",
         found["gpt_load_s"] <= BUDGETS["load_s"]),
        ("MiniLM first load (s)", found["minilm_load_s"], f"<= {BUDGETS['load_s']}",
         found["minilm_load_s"] <= BUDGETS["load_s"]),
        (f"MiniLM, {found['minilm_tokens']} tokens, median of {args.repeats} (ms)",
         found["minilm_ms"], f"<= {BUDGETS['minilm_ms']}",
         found["minilm_ms"] <= BUDGETS["minilm_ms"]),
        ("GPT greedy, 200 characters, median of 3 (chars/s)", found["gpt_chars_per_s"],
         f">= {BUDGETS['gpt_chars_per_s']}",
         found["gpt_chars_per_s"] >= BUDGETS["gpt_chars_per_s"]),
        ("_static/ort (MB)", ort_mb, "", True),
        ("_static/live (MB)", live_mb, "", True),
        ("added to the site (MB)", ort_mb + live_mb, f"<= {BUDGETS['size_mb']}",
         ort_mb + live_mb <= BUDGETS["size_mb"]),
    ]  # fmt: skip
    print(f"backend: {found['gpt_backend']} (GPT), {found['minilm_backend']} (MiniLM)")
    for label, value, budget, ok in rows:
        print(f"{label:55} {value:9.2f}  {budget:8}  {'ok' if ok else 'OVER BUDGET'}")
    outside = found["gpt_outside_requests"] + found["minilm_outside_requests"]
    print(f"requests outside the site: {len(outside)}")
    print(f"load average (1, 5, 15 min): before {load_before}, after {load_after} "
          f"on {os.cpu_count()} CPUs")  # fmt: skip
    return 0 if all(ok for *_, ok in rows) and not outside else 1


if __name__ == "__main__":
    sys.exit(main())
