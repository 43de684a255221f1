"""Tests of transformer_lab.viz: the Plotly display bundle, matplotlib and SVG heatmaps,
and the precomputed slider/dropdown figures."""

from __future__ import annotations

import hashlib
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
from transformer_lab.viz import layout as VIZ_LAYOUT
from transformer_lab.viz import plotly as VIZ_PLOTLY

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
    assert set(bundle) == {VIZ_PLOTLY.PLOTLY_MIME, "text/html", "text/plain"}
    spec = bundle[VIZ_PLOTLY.PLOTLY_MIME]
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
    assert VIZ_PLOTLY.PLOTLY_MIME in obj and 'aria-label="described"' in obj["text/html"]


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


def test_heatmap_explorer_own_sliders_follow_each_option():
    """Each option its own slider: as many steps as the option has (a 4-word translation
    gets 4), named by the option's own labels, shown only while the option is chosen."""
    words = {"21": ["ein", "und", "zwanzig", "<eos>"], "7": ["sieben", "<eos>"]}
    states = {
        name: {f"step {t + 1}: '{w}'": [np.full((2, 2), t)] for t, w in enumerate(ws)}
        for name, ws in words.items()
    }
    labels = {name: [(["a", "b"], ["r1", "r2"])] for name in words}
    fig = viz.heatmap_explorer(
        states, labels=labels, panel_titles=["w"], slider_label="", dropdown_label="number",
        own_sliders=True,
    )  # fmt: skip
    sliders = fig.layout.sliders
    assert [len(s.steps) for s in sliders] == [4, 2]
    assert [s.visible for s in sliders] == [True, False]
    assert sliders[0].steps[2].label == "step 3: 'zwanzig'"
    assert sliders[0].currentvalue.prefix == ""  # the labels name themselves
    # a step sets its own option's trace only; a button shows that option's slider
    assert list(sliders[1].steps[1].args[1]) == [1]
    assert sliders[1].steps[1].args[0]["z"][0][0][0] == 1
    buttons = fig.layout.updatemenus[0].buttons
    assert buttons[1].args[1]["sliders[0].visible"] is False
    assert buttons[1].args[1]["sliders[1].visible"] is True
    # step labels too long to stand side by side under the rail are drawn in no colour,
    # and the current value above the rail names the step
    long = {"x": {f"step {t + 1}: 'millionen'": [np.zeros((1, 1))] for t in range(14)}}
    fig = viz.heatmap_explorer(
        long, labels={"x": [(["a"], ["b"])]}, panel_titles=["w"], slider_label="",
        own_sliders=True,
    )  # fmt: skip
    (slider,) = fig.layout.sliders
    assert (
        slider.font.color == "rgba(0,0,0,0)" and slider.currentvalue.font.color != slider.font.color
    )
    assert fig.layout.sliders[0].steps[13].label == "step 14: 'millionen'"
    short = _two_state_figure()  # short labels keep their place under the rail
    assert short.layout.sliders[0].font.color is None


# --- colour bars, tick labels, titles -------------------------------------------------------


def _scales(fig):
    """(trace index, colorbar) of every trace that draws a colour bar."""
    spec = fig.to_dict()
    return [(i, t.get("colorbar", {})) for i, t in enumerate(spec["data"]) if t.get("showscale")]


def test_one_panel_heatmaps_have_a_colour_bar_right_of_the_panel():
    fig = _two_state_figure()
    ((index, bar),) = _scales(fig)
    assert index == 0 and bar["x"] > 1.0 and bar.get("orientation", "v") == "v"
    frames = {"long": np.ones((3, 3)), "short": np.zeros((2, 2))}
    fig = viz.dropdown_heatmaps(frames, list("abc"), list("abc"), "pick", "size")
    assert [i for i, _ in _scales(fig)] == [0, 1]  # one per option; only the visible one shows


def _two_panel_states(second=1.0):
    """Two options, slider values p and q, a 2x2 and a 2x3 panel (the second scaled)."""
    values = {"p": 0.0, "q": 0.5}
    state = {s: [np.full((2, 2), v), np.full((2, 3), second * v)] for s, v in values.items()}
    return {"A": state, "B": state}


def _two_panel_labels():
    return {opt: [(["k1", "k2"], ["r1", "r2"]), (["d0", "d1", "d2"], ["r1", "r2"])] for opt in "AB"}


def test_panels_on_one_scale_share_one_colour_bar():
    fig = viz.heatmap_explorer(
        _two_panel_states(), labels=_two_panel_labels(), panel_titles=["first", "second"],
        slider_label="s", dropdown_label="option", zranges=[(0, 1), (0, 1)],
    )  # fmt: skip
    assert [i for i, _ in _scales(fig)] == [1, 3]  # the second panel of each option
    assert all(bar["x"] > 1.0 for _, bar in _scales(fig))


def test_panels_on_different_scales_get_a_colour_bar_each_below_the_panels():
    fig = viz.heatmap_explorer(
        _two_panel_states(second=10.0), labels=_two_panel_labels(),
        panel_titles=["first", "second"], slider_label="s", zranges=[(0, 1), (-10, 10)],
        colorscale=["Viridis", "RdBu"],
    )  # fmt: skip
    scales = _scales(fig)
    assert [i for i, _ in scales] == [0, 1, 2, 3]
    layout = fig.to_dict()["layout"]
    for (_, bar), axis in zip(scales, ["xaxis", "xaxis2"] * 2, strict=True):
        lo, hi = layout[axis]["domain"]
        assert bar["orientation"] == "h" and lo <= bar["x"] <= hi  # under its own panel
        assert bar["len"] <= hi - lo + 1e-9 and bar["y"] < 0  # no wider than it, below it
    # the slider is pushed below the row of colour bars
    assert layout["sliders"][0]["pad"]["t"] > 40
    # a panel whose colours name things gets no bar
    fig = viz.heatmap_explorer(
        _two_panel_states(second=10.0), labels=_two_panel_labels(),
        panel_titles=["picture", "weights"], slider_label="s", colorbars=[False, True],
    )  # fmt: skip
    assert [i for i, _ in _scales(fig)] == [1, 3]
    with pytest.raises(ValueError, match="colorbars flags"):
        viz.heatmap_explorer(
            _two_panel_states(), labels=_two_panel_labels(), panel_titles=["a", "b"],
            slider_label="s", colorbars=[True],
        )  # fmt: skip


def _updated(fig, state):
    """A copy of ``fig`` as ``Plotly.update(gd, state["data"], state["layout"])`` leaves it
    (what the site's script does on a phone)."""
    fig = type(fig)(fig)
    for key, value in state["layout"].items():
        fig.layout[key] = value
    for key, values in state["data"].items():
        for trace, value in zip(fig.data, values, strict=True):
            trace[key] = value
    return fig


def test_several_panels_stack_on_a_phone_and_come_back():
    long = "a sentence far too long to stand in a dropdown on a phone, as chapter 4 has"
    states = _two_panel_states(second=10.0)
    states = {long: states["A"], "B": states["B"]}
    labels = {long: _two_panel_labels()["A"], "B": _two_panel_labels()["B"]}
    fig = viz.heatmap_explorer(
        states, labels=labels, panel_titles=["scores of each query", "weights"],
        slider_label="s", dropdown_label="sentence", zranges=[(0, 1), (-10, 10)],
        title="A title that is longer than a phone's width holds", shared_rows=True,
        axis_titles=[("key", "query"), ("key", "")],
    )  # fmt: skip
    stack = fig.layout.meta["tl_stack"]
    assert stack["below_px"] == VIZ_LAYOUT.NARROWEST_PX
    narrow = _updated(fig, stack["narrow"])
    layout = narrow.layout
    assert layout.xaxis.domain == layout.xaxis2.domain == (0.0, 1.0)
    top, bottom = layout.yaxis.domain, layout.yaxis2.domain
    assert top[1] == 1.0 and bottom[0] == 0.0 and bottom[1] < top[0]  # one above the other
    plot_px = layout.height - layout.margin.t - layout.margin.b
    assert (top[0] - bottom[1]) * plot_px > 60  # room for the column labels and a title
    # the second panel has its own row labels and y title; each title stands over its panel
    assert layout.yaxis2.showticklabels and layout.yaxis2.title.text == "query"
    assert [(a.x, a.y) for a in layout.annotations[:2]] == [(0.5, top[1]), (0.5, bottom[1])]
    # each colour bar lies under its own panel, above the next one
    bars = [t.colorbar for t in narrow.data if t.showscale][:2]
    assert all(b.orientation == "h" and b.x == 0.5 for b in bars)
    assert bottom[1] < bars[0].y < top[0] and bars[1].y < bottom[0]
    # the title and the dropdown's labels fit the phone
    lines = layout.title.text.split("<br>")
    assert len(lines) > 1 and all(len(line) <= VIZ_LAYOUT.PHONE_TITLE_WRAP for line in lines)
    shown = [b.label for b in layout.updatemenus[0].buttons]
    assert shown[0].endswith("…") and long.startswith(shown[0][:-1]) and shown[1] == "B"
    assert VIZ_LAYOUT.label_px([shown[0]]) < VIZ_LAYOUT.PHONE_PX - 100
    # the dropdown's and slider's moves keep the stacking: they touch none of its keys
    moved = {k for b in layout.updatemenus[0].buttons for k in b.args[1]}
    moved |= {k for st in layout.sliders[0].steps for k in st.args[0]}
    assert not moved & (set(stack["narrow"]["layout"]) | set(stack["narrow"]["data"]))
    # and back: the wide state is the figure as it was (an emptied title leaves {} behind)
    assert _pruned(_updated(narrow, stack["wide"]).to_dict()) == _pruned(fig.to_dict())


def _pruned(tree):
    """``tree`` without its empty dicts."""
    if isinstance(tree, dict):
        kept = {k: _pruned(v) for k, v in tree.items()}
        return {k: v for k, v in kept.items() if v != {}}
    if isinstance(tree, list):
        return [_pruned(v) for v in tree]
    return tree


def test_one_panel_has_nothing_to_stack():
    assert _two_state_figure().layout.meta is None


def test_max_ticks_thins_the_tick_labels():
    frames = {"a": np.zeros((48, 64))}
    names = [str(i) for i in range(64)]
    fig = viz.slider_heatmaps(frames, names, names[:48], "t", "s", max_ticks=8)
    assert list(fig.layout.xaxis.tickvals) == list(range(0, 64, 8))
    assert list(fig.layout.xaxis.ticktext) == [str(i) for i in range(0, 64, 8)]
    assert list(fig.layout.yaxis.tickvals) == list(range(0, 48, 8))
    fig = viz.slider_heatmaps(frames, names, names[:48], "t", "s")
    assert len(fig.layout.xaxis.tickvals) == 64  # every label by default


def test_wrap_title_breaks_between_words_and_keeps_tags_whole():
    text = "one two three four five six seven<br><span style='color:red'>eight</span> nine"
    wrapped = viz.wrap_title(text, 10)
    lines = wrapped.split("<br>")
    plain = [re.sub(r"<[^>]*>", "", line) for line in lines]
    assert all(len(line) <= 10 for line in plain)
    assert " ".join(plain).split() == re.sub(r"<[^>]*>", " ", text).split()
    assert "<span style='color:red'>eight</span>" in wrapped
    assert viz.wrap_title("a_very_long_word", 4) == "a_very_long_word"
    assert viz.wrap_title("a < b and c", 80) == "a < b and c"


def test_long_titles_wrap_and_the_top_margin_holds_them():
    title = "A title much longer than any figure line could hold, " * 3
    fig = viz.heatmap_explorer(
        _two_panel_states(), labels=_two_panel_labels(), panel_titles=["a", "b"],
        slider_label="s", dropdown_label="option", title=title,
    )  # fmt: skip
    layout = fig.to_dict()["layout"]
    lines = layout["title"]["text"].split("<br>")
    assert len(lines) >= 3 and all(len(line) <= VIZ_LAYOUT.TITLE_WRAP for line in lines)
    _, title_px = viz.title_layout(title, layout["height"])
    menu = layout["updatemenus"][0]
    # title, then the dropdown (its bottom pad px above the panels), all in the top margin
    assert layout["margin"]["t"] >= title_px + 30 + menu["pad"]["b"]
    assert layout["title"]["yref"] == "container" and layout["title"]["yanchor"] == "bottom"
    # the plain-text title of the bundle has no tags
    assert "<br>" not in viz.mimebundle(fig)["text/plain"]


def _pinned_states():
    """Two options, slider values p and q, a 2x2 and a 2x3 panel that differ between all."""
    state = {
        s: [np.full((2, 2), v) + np.eye(2) * 0.25, np.full((2, 3), 10 * v)]
        for s, v in {"p": 0.0, "q": 0.5}.items()
    }
    return {"A": state, "B": {s: [a * 2, b - 1] for s, (a, b) in state.items()}}


# Figures whose JSON is pinned: every path through heatmap_explorer (one shared colour bar
# beside the panels, a row of bars below them, panels without a bar, -inf cells, thinned
# ticks, options of different shapes, shared rows, axis titles, widths, a wrapped title).
PINNED_FIGURES = {
    "one shared bar": lambda: viz.heatmap_explorer(
        {o: {s: [a, b / 10] for s, (a, b) in st.items()} for o, st in _pinned_states().items()},
        labels=_two_panel_labels(), panel_titles=["first panel", "second panel"],
        slider_label="s", dropdown_label="option", zranges=[(0, 1), (0, 1)],
        title="Two panels on one scale behind a slider and a dropdown, under a long title",
        active=1,
    ),
    "bars below": lambda: viz.heatmap_explorer(
        _pinned_states(), labels=_two_panel_labels(), panel_titles=["left", "a longer title"],
        slider_label="s", colorscale=["Viridis", "RdBu"], fmt=[".1f", ".3f"],
        annotate=[True, False], axis_titles=[("key", "query"), ("dim", "")],
        column_widths=[1, 2], shared_rows=True, height=500,
    ),
    "no bar, -inf": lambda: viz.heatmap_explorer(
        {"only": {"x": [np.array([[0.5, NEG_INF], [1.0, 2.0]]), np.eye(2)]}},
        labels={"only": [(["a", "b"], ["c", "d"]), (["a", "b"], ["c", "d"])]},
        panel_titles=["picture", ""], slider_label=None, colorbars=[False, True],
    ),
    "thinned ticks": lambda: viz.slider_heatmaps(
        {"a": np.arange(48 * 64).reshape(48, 64) / 100, "b": np.zeros((48, 64))},
        [str(i) for i in range(64)], [str(i) for i in range(48)], "ticks", "state", max_ticks=8,
    ),
    "dropdown shapes": lambda: viz.dropdown_heatmaps(
        {"long": np.ones((3, 3)), "short": np.array([[0.0, NEG_INF], [1.0, 0.5]])},
        {"long": list("abc"), "short": list("ab")}, {"long": list("xyz"), "short": list("xy")},
        "pick one", "size",
    ),
}  # fmt: skip

# sha256 of each figure's JSON (keys sorted, the Plotly template left out) as the
# one-function heatmap_explorer of commit e337f31 drew it (plotly 7.1). A new digest means
# readers see a new figure: compare with that commit's viz/heatmap_explorer.py.
PINNED_DIGESTS = {
    "one shared bar": "cf09904cf3f04af10d54b7da21316dadaf802c22102b840b9816040e0131b6d6",
    "bars below": "e4ca217557e9b83b4f4f28b5fd4a4ced9ea8061cce0983ee43cc39a7b2bd7c73",
    "no bar, -inf": "cf6c00d595142de6093df3cd7b3de0e8cbc8111b329f35c11d9dbef81075fcc6",
    "thinned ticks": "21bf79aa1abc022a4058bd2bbe5091f6cc9727daa6065f0661c01d4e80e2e065",
    "dropdown shapes": "574eb6f7c3cda12b2808565dd1dd7c570ec7ee0dd2e012f10def82b992827357",
}


def _digest(fig) -> str:
    spec = fig.to_dict()
    spec["layout"].pop("template", None)
    spec["layout"].pop("meta", None)  # the panels stacked for a phone, tested on their own
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


@pytest.mark.parametrize("name", list(PINNED_FIGURES))
def test_heatmap_explorer_draws_the_pinned_figures(name):
    assert _digest(PINNED_FIGURES[name]()) == PINNED_DIGESTS[name]


# --- bar charts behind a dropdown or a slider ----------------------------------------------


def test_dropdown_bars_headings_follow_the_dropdown():
    bars = {"21": (["twenty", "one"], [0.5, 0.25]), "4,021": (list("abcd"), [1, 2, 3, 4])}
    headings = {
        "21": "<b>21</b>: right",
        "4,021": "<b>4,021</b>: <span style='color:#c0392b'>WRONG</span><br>" + "word " * 40,
    }
    fig = viz.dropdown_bars(bars, headings=headings, dropdown_label="number", y_title="size")
    assert len(fig.data) == 2 and [t.visible for t in fig.data] == [True, False]
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == ["21", "4,021"]
    assert buttons[1].args[0]["visible"] == [False, True]
    heading = buttons[1].args[1]["title.text"]
    assert "WRONG" in heading and len(heading.split("<br>")) >= 4  # the long line wrapped
    assert fig.layout.title.text == buttons[0].args[1]["title.text"]
    # the top margin holds the longest heading below the dropdown
    assert fig.layout.margin.t >= 16 * len(heading.split("<br>")) + 34
    with pytest.raises(ValueError, match="no heading"):
        viz.dropdown_bars(bars, headings={"21": "x"}, dropdown_label="number")
    with pytest.raises(ValueError, match="2 labels for 3 heights"):
        viz.dropdown_bars({"a": (["x", "y"], [1, 2, 3])}, headings={"a": "a"}, dropdown_label="n")


def _apply(traces, args):
    """What Plotly's restyle does to the traces (a list of dicts)."""
    update, indices = args[0], args[1] if len(args) > 1 else range(len(traces))
    for key, values in update.items():
        for j, index in enumerate(indices):
            traces[index][key] = values[j]


def test_decoding_explorer_text_follows_both_controls():
    labels = ["a", "b", "c"]
    temperatures = [0.5, 1.0, 2.0]
    filters = {"no filter": {}, "top-k, k = 2": {}, "top-p, p = 0.9": {}}
    states = {(f, t): [i / 10, t / 10, 0.0] for i, f in enumerate(filters) for t in temperatures}
    samples = {(f, t): f"sample of {f} at {t} <&>" for f in filters for t in temperatures}
    fig = viz.decoding_explorer(labels, states, samples, temperatures, filters, prompt_tail="fr")
    spec = fig.to_dict()
    n = len(filters)
    assert [t["type"] for t in spec["data"]] == ["bar"] * n + ["scatter"] * n
    assert spec["layout"]["sliders"][0]["active"] == 1  # temperature 1 first
    steps = spec["layout"]["sliders"][0]["steps"]
    buttons = spec["layout"]["updatemenus"][0]["buttons"]
    # every order of every slider step and dropdown option shows one rule's bars and text
    for s, t in enumerate(temperatures):
        for k, name in enumerate(filters):
            for order in ((steps[s], buttons[k]), (buttons[k], steps[s])):
                traces = [dict(t) for t in spec["data"]]
                for control in order:
                    _apply(traces, control["args"])
                shown = [tr for tr in traces if tr.get("visible", True)]
                assert len(shown) == 2
                bar, text = shown
                assert bar["type"] == "bar" and list(bar["y"]) == states[name, t]
                assert text["mode"] == "text"
                assert f"{name}, temperature {t:g}" in text["text"][0]
                assert f"sample of {name} at {t} &lt;&amp;&gt;" in text["text"][0]
    with pytest.raises(ValueError, match="no state or sample"):
        viz.decoding_explorer(labels, states, {}, temperatures, filters, prompt_tail="fr")


def test_slider_bars_restyle_heights_and_whiskers():
    states = {
        n: {"probe": ([0.5, 0.6], [0.4, 0.5], [0.7, 0.8]), "scratch": [n / 100, 0.3]}
        for n in (24, 96)
    }
    fig = viz.slider_bars(
        states, ["MiniLM", "tiny"], slider_label="labels", title="accuracy " * 20,
        reference=(1 / 3, "majority class"), active=1,
    )  # fmt: skip
    assert [t.name for t in fig.data] == [
        "probe", "scratch", "probe (values)", "scratch (values)", "majority class"
    ]  # fmt: skip
    assert list(fig.data[1].y) == [0.96, 0.3]  # built at the active step
    assert fig.data[0].error_y.array == (0.2, 0.2)
    step = fig.layout.sliders[0].steps[0]
    assert list(step.args[1]) == [0, 1, 2, 3]  # the reference line's legend entry is left alone
    assert step.args[0]["y"][1] == [0.24, 0.3]
    assert step.args[0]["error_y"][0]["arrayminus"] == [0.1, 0.1]
    assert step.args[0]["error_y"][1] == {"visible": False}
    assert step.args[0]["text"][3] == ["0.24", "0.30"]  # the values written over the bars
    assert all(len(line) <= VIZ_LAYOUT.TITLE_WRAP for line in fig.layout.title.text.split("<br>"))
    with pytest.raises(ValueError, match="series"):
        viz.slider_bars({1: {"a": [1]}, 2: {"b": [1]}}, ["x"], slider_label="s", title="t")


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
