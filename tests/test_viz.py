"""Tests of transformer_lab.viz: the Plotly display bundle, matplotlib and SVG heatmaps,
and the precomputed slider/dropdown figures."""

from __future__ import annotations

import json
import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from transformer_lab import viz  # noqa: E402

NEG_INF = float("-inf")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _two_state_figure(title="two states"):
    frames = {"a": np.eye(3), "b": np.array([[0.5, NEG_INF, 1.0]] * 3)}
    return viz.slider_heatmaps(frames, ["x", "y", "z"], ["u", "v", "w"], title, "state")


# --- show / mimebundle --------------------------------------------------------------------


def test_bundle_has_plotly_json_html_and_text():
    fig = _two_state_figure()
    bundle = viz.mimebundle(fig, alt="two heatmap states")
    assert set(bundle) == {viz.PLOTLY_MIME, "text/html", "text/plain"}
    spec = bundle[viz.PLOTLY_MIME]
    json.dumps(spec)  # JSON-serialisable, as the notebook format requires
    assert spec["data"][0]["type"] == "heatmap"
    assert spec["config"]["displaylogo"] is False
    assert spec["config"]["showSendToCloud"] is False  # no upload button
    assert len(spec["layout"]["sliders"][0]["steps"]) == 2
    assert "two states" in bundle["text/plain"]


def test_html_draws_with_the_global_plotly_and_loads_nothing():
    html = viz.figure_html(_two_state_figure(), alt="alt & text", div_id="fig-1")
    assert 'class="tl-plotly"' in html and 'aria-label="alt &amp; text"' in html
    assert 'id="fig-1"' in html and "window.Plotly" in html and "newPlot" in html
    assert "src=" not in html  # no script or image is fetched
    assert not re.search(r"https?://", html)
    # the figure JSON embedded in the script round-trips
    payload = re.search(r"var fig = (\{.*?\});\n", html).group(1)
    assert json.loads(payload)["layout"]["title"]["text"] == "two states"


def test_html_escapes_script_end_inside_the_figure():
    html = viz.figure_html(_two_state_figure(title="</script><b>x</b>"))
    assert html.count("</script>") == 1
    assert html.endswith("</script></div>")


def test_show_publishes_the_bundle_raw(monkeypatch):
    import IPython.display

    calls = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: calls.append((obj, kw)))
    viz.show(_two_state_figure(), alt="described")
    ((obj, kwargs),) = calls
    assert kwargs == {"raw": True}
    assert viz.PLOTLY_MIME in obj and 'aria-label="described"' in obj["text/html"]


# --- matplotlib -------------------------------------------------------------------------


def test_heatmap_writes_every_number_and_marks_minus_inf():
    m = torch.tensor([[1.0, NEG_INF], [0.25, 0.5]])
    ax = viz.heatmap(m, x_labels=["k1", "k2"], y_labels=["q1", "q2"], title="t")
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["1.00", "-∞", "0.25", "0.50"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["k1", "k2"]
    assert ax.get_title() == "t"
    image = ax.get_images()[0]
    assert image.get_clim() == (0.25, 1.0)  # the colour scale ignores -inf
    assert image.get_array().mask[0, 1]


def test_heatmap_without_numbers_and_errors():
    ax = viz.heatmap(np.zeros((2, 3)), annotate=False)
    assert len(ax.texts) == 0
    with pytest.raises(ValueError, match="2 column labels for 3 columns"):
        viz.heatmap(np.zeros((2, 3)), x_labels=["a", "b"])
    with pytest.raises(ValueError, match="must be 2-d"):
        viz.heatmap(np.zeros((2, 2, 2)))


def test_attention_heatmap_labels_queries_and_keys():
    weights = torch.softmax(torch.randn(1, 3, 4), dim=-1)  # leading size-1 dim is dropped
    ax = viz.attention_heatmap(weights, ["a", "b", "c", "d"], ["x", "y", "z"])
    assert ax.get_xlabel() == "key" and ax.get_ylabel() == "query"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["x", "y", "z"]
    assert ax.get_images()[0].get_clim() == (0.0, 1.0)
    assert len(ax.texts) == 12


def test_plot_heads_one_panel_per_head():
    pattern = torch.softmax(torch.randn(1, 3, 4, 4), dim=-1)
    fig = viz.plot_heads(pattern, list("abcd"), ncols=2)
    visible = [ax for ax in fig.axes if ax.axison]
    assert [ax.get_title() for ax in visible] == ["head 0", "head 1", "head 2"]
    with pytest.raises(ValueError, match=r"\[n_heads, query_pos, key_pos\]"):
        viz.plot_heads(torch.zeros(4, 4), list("abcd"))


# --- SVG --------------------------------------------------------------------------------


def test_svg_heatmap_is_valid_svg_with_one_cell_per_entry():
    m = np.array([[0.1, NEG_INF, 0.9], [0.2, 0.3, 0.5]])
    svg = viz.svg_heatmap(m, ["<pad>", "b", "c"], ["q1", "q2"], "weights & more")
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    rects = root.findall(f"{ns}rect")
    assert len(rects) == 6
    assert rects[1].get("fill") == "#d0d0d0"  # the masked cell
    texts = [t.text for t in root.findall(f"{ns}text")]
    assert "-∞" in texts and "<pad>" in texts and "weights & more" in texts
    assert root.get("role") == "img" and root.get("aria-label") == "weights & more"
    # the largest value gets the top of the colour map, the smallest the bottom
    viridis = matplotlib.colormaps["viridis"]
    top = "#{:02x}{:02x}{:02x}".format(*(round(c * 255) for c in viridis(1.0)[:3]))
    assert rects[2].get("fill") == top


# --- Plotly with precomputed states -------------------------------------------------------


def test_slider_heatmaps_one_step_per_frame():
    fig = _two_state_figure()
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["a", "b"]
    assert fig.layout.sliders[0].currentvalue.prefix == "state = "
    assert steps[0].args[0]["z"][0] == np.eye(3).tolist()
    assert steps[1].args[0]["z"][0][0] == [0.5, None, 1.0]  # -inf leaves a gap
    assert steps[1].args[0]["text"][0][0] == ["0.50", "-∞", "1.00"]
    assert list(fig.data[0].z[1]) == [0.0, 1.0, 0.0]  # the first frame is shown first
    assert list(fig.layout.xaxis.ticktext) == ["x", "y", "z"]


def test_dropdown_heatmaps_switch_visibility_and_labels():
    frames = {"long": np.ones((3, 3)), "short": np.zeros((2, 2))}
    x_labels = {"long": list("abc"), "short": list("ab")}
    y_labels = {"long": list("abc"), "short": ["x", "y"]}
    fig = viz.dropdown_heatmaps(frames, x_labels, y_labels, "pick", "size")
    (menu,) = fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == ["long", "short"]
    assert menu.buttons[1].args[0]["visible"] == [False, True]
    assert menu.buttons[1].args[1]["yaxis.ticktext"] == ["x", "y"]
    assert [t.visible for t in fig.data] == [True, False]
    assert not fig.layout.sliders


def test_heatmap_explorer_controls_are_independent():
    states = {
        opt: {s: [np.full((2, 2), 10 * i + j), np.full((2, 3), -j)] for j, s in enumerate("pq")}
        for i, opt in enumerate(["A", "B"])
    }
    labels = {
        opt: [(["k1", "k2"], ["r1", "r2"]), (["d0", "d1", "d2"], ["r1", "r2"])] for opt in "AB"
    }
    fig = viz.heatmap_explorer(
        states, labels=labels, panel_titles=["first", "second"], slider_label="s",
        dropdown_label="option", active=1,
    )  # fmt: skip
    assert len(fig.data) == 4
    # each slider step sets every trace of every option, so the dropdown choice survives
    step_q = fig.layout.sliders[0].steps[1].args[0]["z"]
    assert [z[0][0] for z in step_q] == [1, -1, 11, -1]
    assert fig.data[2].z[0][0] == 11  # built at the active slider value
    buttons = fig.layout.updatemenus[0].buttons
    assert buttons[1].args[0]["visible"] == [False, False, True, True]
    assert fig.layout.sliders[0].active == 1
    with pytest.raises(ValueError, match="slider values"):
        viz.heatmap_explorer(
            {"A": states["A"], "B": {"p": states["B"]["p"]}}, labels=labels,
            panel_titles=["first", "second"], slider_label="s",
        )  # fmt: skip


# --- the HTML fragment in a real browser (skipped without Chromium) ------------------------


def _chromium():
    """Debian's Chromium (or TRANSFORMER_LAB_CHROMIUM) and playwright, else skip or fail."""
    candidates = [os.environ.get("TRANSFORMER_LAB_CHROMIUM"), "/usr/bin/chromium"]
    path = next((c for c in candidates if c and Path(c).exists()), shutil.which("chromium"))
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        path = None
    if path is None:
        reason = "needs Chromium and playwright: apt install chromium; pip install playwright"
        if os.environ.get("TRANSFORMER_LAB_REQUIRE_BROWSER", "") not in ("", "0"):
            pytest.fail(f"{reason} (TRANSFORMER_LAB_REQUIRE_BROWSER is set)")
        pytest.skip(reason)
    return path


@pytest.mark.browser
def test_static_html_moves_with_its_slider_in_chromium(tmp_path):
    chromium = _chromium()
    import plotly
    from playwright.sync_api import sync_playwright

    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    shutil.copy(plotly_js, tmp_path / "plotly.min.js")
    body = viz.figure_html(_two_state_figure(), div_id="fig")
    page_html = f'<html><head><script defer src="plotly.min.js"></script></head><body>{body}'
    (tmp_path / "page.html").write_text(page_html + "</body></html>")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        requests, errors = [], []
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((tmp_path / "page.html").as_uri())
        page.wait_for_function("() => document.getElementById('fig').data !== undefined")
        before = page.evaluate("() => document.getElementById('fig').data[0].z[1][1]")
        rail = page.locator("g.slider-container rect.slider-rail-touch-rect").bounding_box()
        page.mouse.click(rail["x"] + rail["width"] - 2, rail["y"] + rail["height"] / 2)
        page.wait_for_function("() => document.getElementById('fig').data[0].z[1][1] !== 1")
        after = page.evaluate("() => document.getElementById('fig').data[0].z[1][1]")
        titles = page.eval_on_selector_all(".modebar-btn", "bs => bs.map(b => b.dataset.title)")
        browser.close()
    assert (before, after) == (1, None)
    assert "Share chart..." not in titles and "Download plot as a PNG" in titles
    assert errors == []
    assert all(url.startswith("file://") for url in requests)
