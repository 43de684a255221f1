"""The static site as a reader sees it: ``_build/html`` served on 127.0.0.1, in Chromium.

Every page listed in ``_toc.yml`` loads without console errors and without a single request
leaving the machine; formulas are typeset by the site's own MathJax; chapter figures are
present with alt text; every kernel-free exploration (a Plotly figure with precomputed
states) changes when its slider or dropdown moves; on a 400 px phone no page scrolls
sideways and every part of every exploration can be reached (it fits, or scrolls in its
own box under a finger); the "next" link and the search page work. Screenshots go to
``artifacts/``. Run after ``make book``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest
from browser_support import HTML, ROOT, PageProblems, is_local, load_script, missing

from transformer_lab.viz.chapters import architecture

external_loads = load_script("site/build_book").external_loads
sync_notebooks = load_script("site/sync_notebooks")
is_notebook, toc_files = sync_notebooks.is_notebook, sync_notebooks.toc_files

PAGES = toc_files()
CHAPTERS = [name for name in PAGES if is_notebook(ROOT / f"{name}.md")]
# the chapter whose exploration stands for all of them in the screenshot and issue-3 test
SHOWCASE = "book/04_self_attention"

PLOTS = ".bd-article .plotly-graph-div"
FIGURE_IMAGES = ".bd-article .cell_output img, .bd-article figure img"


def page_url(site_url: str, name: str) -> str:
    return f"{site_url}/{name}.html"


def open_page(context, url: str):
    """Open ``url`` in a new tab, wait for the network to settle and for MathJax to finish."""
    page = context.new_page()
    page.set_default_timeout(60_000)  # the machine may be busy; plotly.js alone is 4.6 MB
    problems = PageProblems(page)
    start = len(context.request_log.urls)
    page.goto(url, wait_until="load")
    settle(context, page)
    page.evaluate(
        """async () => {
            if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
                await MathJax.startup.promise;
            }
        }"""
    )
    return page, problems, start


def settle(context, page, quiet_ms: int = 700, limit_s: float = 30.0) -> None:
    """Wait until the page has asked for nothing new for ``quiet_ms`` (at most ``limit_s``).

    Playwright's "networkidle" is not used: on some pages it never fires although every
    request has finished.
    """
    deadline = time.monotonic() + limit_s
    seen = len(context.request_log.urls)
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        page.wait_for_timeout(100)
        now = len(context.request_log.urls)
        if now != seen:
            seen, quiet_since = now, time.monotonic()
        elif (time.monotonic() - quiet_since) * 1000 >= quiet_ms:
            return


def plot_state(page, index: int) -> str:
    """What Plotly currently shows in figure ``index``: every trace's z, visibility, labels,
    and the layout's annotations and shapes (a "relayout" menu moves those)."""
    return page.evaluate(
        """([selector, i]) => {
            const gd = document.querySelectorAll(selector)[i];
            const traces = gd.data.map((t) => [t.z, t.visible, t.text, t.y]);
            return JSON.stringify([traces, gd.layout.annotations || [], gd.layout.shapes || []]);
        }""",
        [PLOTS, index],
    )


def wait_for_change(page, index: int, before: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        after = plot_state(page, index)
        if after != before:
            return after
        page.wait_for_timeout(100)
    return before


def center(page, index: int) -> None:
    """Scroll figure ``index`` to the middle of the window, clear of the sticky header."""
    page.evaluate(
        "([selector, i]) => document.querySelectorAll(selector)[i]"
        ".scrollIntoView({block: 'center', inline: 'center'})",
        [PLOTS, index],
    )
    page.wait_for_timeout(200)


def move_slider(page, index: int) -> bool:
    """Click the slider rail of figure ``index`` at the end farthest from the active step."""
    info = page.evaluate(
        """([selector, i]) => {
            const gd = document.querySelectorAll(selector)[i];
            const sliders = (gd.layout && gd.layout.sliders) || [];
            if (!sliders.length) return null;
            return {active: sliders[0].active || 0, steps: sliders[0].steps.length};
        }""",
        [PLOTS, index],
    )
    if not info or info["steps"] < 2:
        return False
    plot = page.locator(PLOTS).nth(index)
    center(page, index)
    rail = plot.locator("rect.slider-rail-touch-rect").first
    box = rail.bounding_box()
    fraction = 0.03 if info["active"] >= info["steps"] / 2 else 0.97
    page.mouse.click(box["x"] + fraction * box["width"], box["y"] + box["height"] / 2)
    return True


def move_dropdown(page, index: int) -> bool:
    """Open the first dropdown of figure ``index`` and pick an option that is not active."""
    info = page.evaluate(
        """([selector, i]) => {
            const gd = document.querySelectorAll(selector)[i];
            const menus = (gd.layout && gd.layout.updatemenus) || [];
            if (!menus.length || menus[0].type === 'buttons') return null;
            return {active: menus[0].active || 0, buttons: menus[0].buttons.length};
        }""",
        [PLOTS, index],
    )
    if not info or info["buttons"] < 2:
        return False
    plot = page.locator(PLOTS).nth(index)
    center(page, index)
    plot.locator("g.updatemenu-header-group").first.click()
    option = 1 if info["active"] == 0 else 0
    plot.locator("g.updatemenu-dropdown-button").nth(option).click()
    return True


def assert_local(context, start: int, what: str) -> None:
    remote = [url for url in context.request_log.urls[start:] if not is_local(url)]
    assert not remote, f"{what} requested URLs off the machine: {remote}"


# --- tests ------------------------------------------------------------------------------


def test_built_pages_load_nothing_from_the_network():
    """No built page points a script, stylesheet, image or iframe at an http(s) URL."""
    if not (HTML / "index.html").exists():
        missing(f"no built site in {HTML}: run `make book` first")
    pages = list(HTML.rglob("*.html"))
    assert len(pages) >= len(PAGES)
    assert external_loads(HTML) == {}


def test_every_toc_page_was_built():
    if not (HTML / "index.html").exists():
        missing(f"no built site in {HTML}: run `make book` first")
    absent = [name for name in PAGES if not (HTML / f"{name}.html").exists()]
    assert not absent, f"pages in _toc.yml missing from {HTML}: {absent}"


@pytest.mark.parametrize("name", PAGES)
def test_page_as_a_reader_sees_it(browser_context, site_url, name):
    """Load one page from the local server and check what a reader would see.

    Every page: no console error, no request off the machine, every formula typeset by the
    site's MathJax, a "next" link to the following page of the table of contents. Chapter
    pages also: at least one figure, alt text on every image and Plotly figure, and every
    Plotly slider and dropdown changes its figure when moved (no kernel behind the page).
    """
    page, problems, start = open_page(browser_context, page_url(site_url, name))
    try:
        assert page.locator(".bd-article h1").count() >= 1, f"{name} has no title"
        assert "\\" not in page.title(), f"{name}: LaTeX in the tab's title: {page.title()!r}"
        check_math(page, name)
        check_next_link(page, name)
        check_clean(page, name)
        if name in CHAPTERS:
            check_figures(page, name)
            check_explorations(page, name)
        page.wait_for_timeout(300)  # late errors from deferred scripts
        assert not problems.errors, f"{name}: {problems.errors}"
        assert_local(browser_context, start, name)
    finally:
        page.close()


PROGRESS_LINE = re.compile(r"\d+%\|")
PIPE_TABLE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*\|", re.M)


def check_clean(page, name: str) -> None:
    """Nothing between the reader and the lesson, at the desktop width of 1400 px: one
    progress line per output, no Markdown table left as pipe text, no stray verdict repr,
    no formula, printed output or exploration text wider than its column."""
    page.set_viewport_size({"width": 1400, "height": 900})
    page.wait_for_timeout(300)
    outputs = page.locator(".bd-article .cell_output > .output").all_inner_texts()
    for text in outputs:
        n = len(PROGRESS_LINE.findall(text))
        assert n <= 1, f"{name}: an output shows {n} progress lines: {text[:300]!r}"
        assert "CheckResult(" not in text, f"{name}: a CheckResult repr is printed: {text[:200]!r}"
    prose = page.locator(".bd-article p, .bd-article .cell_output").all_inner_texts()
    piped = [t for t in prose if PIPE_TABLE.search(t)]
    assert not piped, f"{name}: a table shows as raw pipe text: {piped[0][:300]!r}"
    too_wide = page.evaluate(
        """() => {
            const out = [];
            const wider = (el, what) => {
                if (el.scrollWidth > el.clientWidth + 2) {
                    out.push(`${what} (${el.scrollWidth} > ${el.clientWidth} px): ` +
                             el.textContent.trim().slice(0, 80));
                }
            };
            const formulas = ".bd-article div.math, .bd-article mjx-container[display='true']";
            document.querySelectorAll(formulas).forEach(el => wider(el, "formula"));
            document.querySelectorAll(".bd-article .cell_output pre")
                .forEach(el => wider(el, "output"));
            document.querySelectorAll(".bd-article .tl-plotly").forEach(fig => {
                const box = fig.getBoundingClientRect();
                fig.querySelectorAll("svg text").forEach(t => {
                    const r = t.getBoundingClientRect();
                    if (r.width && (r.left < box.left - 2 || r.right > box.right + 2)) {
                        out.push(`exploration text outside its figure: ${t.textContent}`);
                    }
                });
            });
            return out;
        }"""
    )
    assert not too_wide, f"{name}: clipped at 1400 px: {too_wide[:5]}"


def check_math(page, name: str) -> None:
    n_math = page.locator(".bd-article .math").count()
    if not n_math:
        return
    n_typeset = page.locator(".bd-article .math mjx-container").count()
    assert n_typeset == n_math, f"{name}: {n_typeset} of {n_math} formulas typeset by MathJax"
    raw = page.locator(".bd-article .math").first.inner_text()
    assert "\\(" not in raw and "\\[" not in raw, f"{name}: raw TeX left: {raw!r}"


def check_next_link(page, name: str) -> None:
    index = PAGES.index(name)
    link = page.locator("a.right-next")
    if index == len(PAGES) - 1:
        assert link.count() == 0, f"{name} is the last page but has a next link"
        return
    assert link.count() == 1, f"{name} has no next link"
    target = urljoin(page.url, link.get_attribute("href"))
    assert urlparse(target).path == f"/{PAGES[index + 1]}.html", f"next from {name}: {target}"


def check_figures(page, name: str) -> None:
    images = page.locator(FIGURE_IMAGES)
    plots = page.locator(".bd-article .tl-plotly")
    assert images.count() + plots.count() >= 1, f"{name} shows no figure"
    for i in range(images.count()):
        image = images.nth(i)
        alt = (image.get_attribute("alt") or "").strip()
        src = image.get_attribute("src") or ""
        assert alt, f"{name}: image {src} has no alt text"
        assert Path(alt).name != Path(src).name, (
            f"{name}: image {src} has only its file name as alt text; give the cell "
            "`mystnb: {image: {alt: ...}}` metadata (or a figure directive with :alt:)"
        )
        loaded = "(img) => img.complete && img.naturalWidth > 0"
        assert page.evaluate(loaded, image.element_handle()), f"{name}: {src} did not load"
    for i in range(plots.count()):
        label = (plots.nth(i).get_attribute("aria-label") or "").strip()
        assert label, f"{name}: Plotly figure {i} has no aria-label"


def check_explorations(page, name: str) -> None:
    n_plots = page.locator(PLOTS).count()
    moved = 0
    for index in range(n_plots):
        for move in (move_slider, move_dropdown):
            before = plot_state(page, index)
            if not move(page, index):
                continue
            after = wait_for_change(page, index, before)
            assert after != before, f"{name}: figure {index} did not change ({move.__name__})"
            moved += 1
    if n_plots:
        assert moved, f"{name}: {n_plots} Plotly figures but none has a slider or dropdown"


def test_issue3_slider_changes_the_figure_offline(browser_context, site_url, artifacts):
    """Open a built chapter, move one Plotly slider, see the figure change; nothing remote.

    Also writes screenshots of the chapter and of its exploration before and after.
    """
    candidates = [SHOWCASE] + [c for c in CHAPTERS if c != SHOWCASE]
    for name in candidates:
        if not (HTML / f"{name}.html").exists():
            continue
        page, problems, start = open_page(browser_context, page_url(site_url, name))
        try:
            stem = Path(name).name
            page.screenshot(path=str(artifacts / f"site_{stem}.png"))
            for index in range(page.locator(PLOTS).count()):
                plot = page.locator(PLOTS).nth(index)
                center(page, index)
                page.wait_for_timeout(300)
                picture_before = plot.screenshot()
                before = plot_state(page, index)
                if not move_slider(page, index):
                    continue
                after = wait_for_change(page, index, before)
                page.wait_for_timeout(500)  # let Plotly finish drawing
                picture_after = plot.screenshot()
                assert after != before, f"{name}: the slider did not change the figure's data"
                assert picture_after != picture_before, f"{name}: the figure looks the same"
                (artifacts / f"site_{stem}_exploration_before.png").write_bytes(picture_before)
                (artifacts / f"site_{stem}_exploration_after.png").write_bytes(picture_after)
                assert not problems.errors, problems.errors
                assert_local(browser_context, start, name)
                return
        finally:
            page.close()
    pytest.fail("no built chapter has a Plotly figure with a slider")


def test_next_link_navigates(browser_context, site_url):
    """Clicking "next" on the landing page opens the following page of the table of contents."""
    page, problems, start = open_page(browser_context, page_url(site_url, PAGES[0]))
    try:
        page.locator("a.right-next").first.click()
        page.wait_for_load_state("load")
        settle(browser_context, page)
        assert urlparse(page.url).path == f"/{PAGES[1]}.html", page.url
        assert page.locator(".bd-article h1").count() >= 1
        assert not problems.errors, problems.errors
        assert_local(browser_context, start, "navigation")
    finally:
        page.close()


def test_search_finds_pages(browser_context, site_url):
    """The search page (Sphinx's own index, no server behind it) lists matching pages."""
    page, problems, start = open_page(browser_context, f"{site_url}/search.html?q=attention")
    try:
        results = page.locator("#search-results ul.search li")
        results.first.wait_for(timeout=30_000)
        assert results.count() >= 1
        links = results.locator("a")
        hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
        assert any(href and ".html" in href for href in hrefs), hrefs
        assert not problems.errors, problems.errors
        assert_local(browser_context, start, "search")
    finally:
        page.close()


# --- the architecture diagram (transformer_lab.viz.architecture) ----------------------------

DIAGRAM = ".bd-article figure.tl-arch"
# the chapters of the diagram's table each show the Transformer with their own part highlighted
DIAGRAM_PAGES = [name for name in CHAPTERS if Path(name).name in architecture.CHAPTER_VIEWS]


def diagram_state(html_text: str) -> list[tuple[str, tuple[str, ...]]]:
    """(variant, highlighted boxes) of every diagram of a built page, read from its HTML."""
    from html.parser import HTMLParser

    class Reader(HTMLParser):
        def __init__(self):
            super().__init__()
            self.found: list[tuple[str, list[str]]] = []

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            classes = (attrs.get("class") or "").split()
            if tag == "figure" and "tl-arch" in classes:
                self.found.append((attrs.get("data-variant"), []))
            elif tag == "a" and {"tl-arch-hit", "tl-arch-on"} <= set(classes) and self.found:
                self.found[-1][1].append(attrs["data-box"])

    reader = Reader()
    reader.feed(html_text)
    return [(variant, tuple(sorted(on))) for variant, on in reader.found]


@pytest.mark.parametrize("name", DIAGRAM_PAGES)
def test_architecture_diagram_links_work(browser_context, site_url, name):
    """The chapter shows the diagram with a text alternative; every box's link loads a page."""
    page, problems, start = open_page(browser_context, page_url(site_url, name))
    try:
        figures = page.locator(DIAGRAM)
        assert figures.count() >= 1, f"{name} shows no architecture diagram"
        figure = figures.first
        svg = figure.locator("svg[role=img]")
        assert svg.count() == 1, f"{name}: the diagram's SVG is not marked role=img"
        label = page.evaluate(
            """(svg) => svg.getAttribute('aria-labelledby').split(' ')
                .map((id) => document.getElementById(id).textContent).join(' ')""",
            svg.element_handle(),
        )
        assert "read from bottom to top" in label and "Highlighted:" in label, (name, label)
        assert figure.locator("figcaption li a").count() >= 8, f"{name}: no list of the boxes"
        assert figure.locator("a.tl-arch-hit.tl-arch-on").count() >= 1, f"{name}: no highlight"
        hrefs = page.evaluate(
            "(sel) => [...document.querySelectorAll(sel + ' a[href]')].map((a) => a.href)",
            DIAGRAM,
        )
        pages = {f"/{p}.html" for p in PAGES}
        for url in sorted(set(hrefs)):
            assert urlparse(url).path in pages, f"{name}: the diagram links to {url}"
            response = page.request.get(url)
            assert response.status == 200, f"{name}: {url} answered {response.status}"
        assert not problems.errors, f"{name}: {problems.errors}"
        assert_local(browser_context, start, name)
    finally:
        page.close()


def test_architecture_highlight_differs_per_chapter():
    """No two chapters of parts 3-4 highlight the same boxes of the same variant."""
    if not (HTML / "index.html").exists():
        missing(f"no built site in {HTML}: run `make book` first")
    shown = {}
    for name in DIAGRAM_PAGES:
        states = diagram_state((HTML / f"{name}.html").read_text(encoding="utf-8"))
        assert states and states[0][1], f"{name}: no diagram with a highlight near its top"
        shown[name] = states[0]
    repeated = {n: s for n, s in shown.items() if list(shown.values()).count(s) > 1}
    assert not repeated, f"chapters with the same highlight: {repeated}"


def test_architecture_box_hover_and_click(browser_context, site_url):
    """Hovering a box outlines it and names its chapter; clicking it opens that chapter."""
    name = SHOWCASE
    page, problems, start = open_page(browser_context, page_url(site_url, name))
    try:
        hit = page.locator(f"{DIAGRAM} a.tl-arch-hit[data-part=positions]").first
        hit.scroll_into_view_if_needed()
        assert "Positional encoding: chapter 7" in hit.get_attribute("title")
        before = hit.evaluate("(a) => getComputedStyle(a).boxShadow")
        hit.hover()
        page.wait_for_timeout(200)
        after = hit.evaluate("(a) => getComputedStyle(a).boxShadow")
        assert after != before and after != "none", (before, after)
        hit.click()
        page.wait_for_load_state("load")
        assert urlparse(page.url).path == "/book/07_positional_encoding.html", page.url
        assert "Positional encoding" in page.locator(".bd-article h1").first.inner_text()
        assert not problems.errors, problems.errors
        assert_local(browser_context, start, "diagram click")
    finally:
        page.close()


PHONE_PAGES = [PAGES[0], *CHAPTERS]


def _on_screen(locator) -> bool:
    if not locator.is_visible():
        return False
    box = locator.bounding_box()
    return bool(box) and box["x"] >= 0 and box["x"] + box["width"] <= 401 and box["width"] > 0


# Everything inside an exploration at a phone's width that reaches past the screen's right
# edge, unless a box inside the exploration scrolls sideways to it; and every figure in such
# a box that a finger cannot scroll (Plotly's drag-to-zoom takes the touch: dragmode false,
# set by _static/transformer_lab.js, gives it to the box).
_PAST_THE_EDGE = """() => {
    const edge = document.documentElement.clientWidth;
    const scrolls = (el) => ["auto", "scroll"].includes(getComputedStyle(el).overflowX)
        && el.scrollWidth > el.clientWidth;
    const name = (el) => el.tagName.toLowerCase() + (el.getAttribute("class") ?
        "." + el.getAttribute("class").trim().split(/\\s+/).join(".") : "");
    const cut = [], stuck = new Set();
    document.querySelectorAll(".bd-article div.tl-plotly").forEach((fig, i) => {
        for (const el of fig.querySelectorAll("*")) {
            const r = el.getBoundingClientRect();
            if (!r.width || !r.height || r.right <= edge + 1) continue;
            let box = el.parentElement;
            while (box && fig.contains(box) && !scrolls(box)) box = box.parentElement;
            if (!box || !fig.contains(box)) {
                cut.push(`exploration ${i}: ${name(el)} ${el.textContent.trim().slice(0, 40)}` +
                         ` reaches ${Math.round(r.right)} px`);
                continue;
            }
            box.querySelectorAll(".js-plotly-plot").forEach((gd) => {
                if (gd._fullLayout && gd._fullLayout.dragmode !== false) stuck.add(i);
            });
        }
    });
    return {cut, stuck: [...stuck]};
}"""


def check_phone_explorations(page, name: str) -> None:
    """Every part of every exploration can be reached on a phone: it fits the screen, or it
    stands in a box of the exploration's own that scrolls sideways under a finger."""
    found = page.evaluate(_PAST_THE_EDGE)
    assert not found["cut"], f"{name}: cut at the right edge at 400 px: {found['cut'][:5]}"
    assert not found["stuck"], (
        f"{name}: explorations {found['stuck']} scroll sideways in their box at 400 px, "
        "but Plotly's drag-to-zoom takes the touch (dragmode is not false)"
    )


@pytest.mark.parametrize("name", PHONE_PAGES)
def test_phone_width(browser_context, site_url, name):
    """At 400 px the page does not scroll sideways, every exploration fits the screen or
    scrolls in its own box (``check_phone_explorations``), and on the first page the
    navigation button opens the table of contents."""
    page = browser_context.new_page()
    page.set_default_timeout(60_000)
    page.set_viewport_size({"width": 400, "height": 800})
    try:
        page.goto(page_url(site_url, name), wait_until="load")
        settle(browser_context, page)
        page.wait_for_timeout(500)
        width = page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 401, f"{name} scrolls sideways at 400 px: {width} px wide"
        check_phone_explorations(page, name)
        if name != PHONE_PAGES[0]:
            return
        link = page.locator(".bd-sidebar-primary a, dialog a", has_text="How to use this book")
        assert not any(_on_screen(link.nth(i)) for i in range(link.count())), (
            "the navigation is open before the button is pressed"
        )
        page.locator("button.primary-toggle:visible").first.click()
        page.wait_for_timeout(800)
        assert any(_on_screen(link.nth(i)) for i in range(link.count())), (
            "the navigation button did not open the table of contents"
        )
        link.filter(visible=True).first.click()
        page.wait_for_url("**/how_to_use.html")
    finally:
        page.close()
