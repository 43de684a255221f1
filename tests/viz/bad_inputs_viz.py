"""Bad inputs to transformer_lab.viz.

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import (  # noqa: F401
    AR,
    BV,
    DSP,
    FIGURE_TEXT,
    TL,
    VIZ_OVERLAY,
    WM,
    H,
    V,
    W,
    _Drawing,
    bert,
    case,
    f,
    nn,
    np,
    transformer_lab,
)

case(
    V.heatmap,
    lambda: V.heatmap(np.zeros((2, 3, 4))),
    ValueError,
    "matrix must be 2-d (rows, columns), got shape (2, 3, 4)",
)

case(
    V.heatmap,
    lambda: V.heatmap(np.zeros((2, 3)), x_labels=["a"]),
    ValueError,
    "1 column labels for 3 columns",
)

case(
    V.attention_heatmap,
    lambda: V.attention_heatmap(np.zeros((2, 3)), ["a", "b"]),
    ValueError,
    "2 column labels for 3 columns",
)

case(
    V.plot_heads,
    lambda: V.plot_heads(np.zeros((2, 3)), ["a", "b", "c"]),
    ValueError,
    "pattern must be [n_heads, query_pos, key_pos], got shape (2, 3)",
)

case(
    V.svg_heatmap,
    lambda: V.svg_heatmap(np.zeros(3)),
    ValueError,
    "matrix must be 2-d (rows, columns), got shape (3,)",
)

case(V.show, lambda: V.show(None), ValueError, "")

case(V.mimebundle, lambda: V.mimebundle(None), ValueError, "")

case(V.figure_html, lambda: V.figure_html(None), ValueError, "")

case(
    V.heatmap_explorer,
    lambda: V.heatmap_explorer(
        {}, labels={}, panel_titles=[], slider_label=None, dropdown_label=None
    ),
    ValueError,
    "states is empty",
)

case(
    V.slider_heatmaps,
    lambda: V.slider_heatmaps({}, ["a"], ["b"], "t", "s"),
    ValueError,
    "states[''] has no slider values",
)

case(
    V.dropdown_heatmaps,
    lambda: V.dropdown_heatmaps({}, ["a"], ["b"], "t", "d"),
    ValueError,
    "states is empty",
)

case(W.projections, lambda: W.projections(0), ValueError, "d_k must be a positive int, got 0")

case(
    W.explore, lambda: W.explore("hi there", d_k=0), ValueError, "d_k must be a positive int, got 0"
)

case(
    W.explore,
    lambda: W.explore("hi there", mask_kind="diagonal"),
    ValueError,
    "mask_kind must be one of ('none', 'causal', 'padding',",
)

case(
    W.AttentionExplorer,
    lambda: W.AttentionExplorer("hi", temperature=0),
    ValueError,
    "temperature must be a positive finite number, got 0",
)

case(
    W.explore,
    lambda: W.explore("hi there", temperature=1e-40),
    ValueError,
    "temperature must be at least 1e-06, got 1e-40: far smaller ones overflow the softmax's",
)

case(
    W.attention_explorer,
    lambda: W.attention_explorer("hi", d_k=-1),
    ValueError,
    "d_k must be a positive int, got -1",
)

case(
    W.static_attention_explorer,
    lambda: W.static_attention_explorer("hi", slider="colour"),
    ValueError,
    "slider must be 'temperature' or 'd_k', got 'colour'",
)

case(
    BV.stack_attentions,
    lambda: BV.stack_attentions([f(2, 3)]),
    ValueError,
    "layer 0: expected [batch, n_heads, pos, pos] or [n_heads, pos, pos],",
)

case(
    BV.stack_attentions,
    lambda: BV.stack_attentions(None),
    TypeError,
    "attentions must be a list of [batch, n_heads, pos, pos] tensors or a 4-d array, got NoneType",
)

case(
    BV.head_view,
    lambda: BV.head_view([f(1, 2, 3, 3)], ["a", "b", "c"], layer=5),
    ValueError,
    "layer=5 is not in 0..0",
)

case(
    BV.model_view,
    lambda: BV.model_view([f(1, 2, 3, 3)], ["a", "b"]),
    ValueError,
    "2 tokens for attention over 3 positions",
)

case(
    BV.AttentionBrowser,
    lambda: BV.AttentionBrowser(None, None, 5),
    TypeError,
    "sentence must be a str, got int",
)

case(
    TL.TimelineEntry,
    lambda: TL.TimelineEntry(2020, "x", "k", "A et al.", "rnn", "y"),
    ValueError,
    "family must be one of",
)

case(
    TL.TimelineEntry,
    lambda: TL.TimelineEntry("2017", "x", "k", "A et al.", "decoder", "y"),
    TypeError,
    "year must be an int, got str",
)

case(
    TL.timeline_figure,
    lambda: TL.timeline_figure([("2017",)]),
    TypeError,
    "TimelineEntry objects, got ['tuple']",
)

case(TL.timeline_plotly, lambda: TL.timeline_plotly([]), ValueError, "entries is empty")

case(
    WM.word_map_plotly,
    lambda: WM.word_map_plotly(f(3, 3), ["a", "b", "c"], ["x", "x", "y"]),
    ValueError,
    "coords must be an [n, 2] tensor, got (3, 3)",
)

case(AR.boxes, lambda: AR.boxes("bert"), ValueError, "variant must be one of")

case(
    AR.architecture_svg,
    lambda: AR.architecture_svg(highlight=["attention"]),
    ValueError,
    "unknown part(s) ['attention']; the known parts are",
)

case(
    AR.architecture_svg,
    lambda: AR.architecture_svg("encoder", "cross_attention"),
    ValueError,
    "the encoder variant has no ['cross_attention']",
)

case(AR.architecture_svg, lambda: AR.architecture_svg(highlight=3), TypeError, "got 3")

case(AR.architecture_html, lambda: AR.architecture_html(link="web"), ValueError, "got 'web'")

case(AR.architecture_html, lambda: AR.architecture_html(caption=1), TypeError, "got int")

case(
    AR.architecture_diagram,
    lambda: AR.architecture_diagram("decoder", ["self_attention"]),
    ValueError,
    "the decoder variant has no ['self_attention']",
)

case(AR.where_we_are, lambda: AR.where_we_are("02_rnn_bottleneck"), ValueError, "no diagram")

case(
    VIZ_OVERLAY.attention_overlay,
    lambda: VIZ_OVERLAY.attention_overlay(f(3, 24, 24), f(8)),
    ValueError,
    "8 weights do not tile a 24x24 picture as a square grid",
)

case(
    VIZ_OVERLAY.attention_overlay,
    lambda: VIZ_OVERLAY.attention_overlay(f(24, 24), f(9)),
    ValueError,
    "image must be [3, H, W], got (24, 24)",
)

case(
    V.dropdown_bars,
    lambda: V.dropdown_bars({}, headings={}, dropdown_label="n"),
    ValueError,
    "bars is empty",
)

case(
    V.decoding_explorer,
    lambda: V.decoding_explorer(["a"], {}, {}, [1.0], ["f"], "fr"),
    ValueError,
    "no state or sample for ('f', 1.0)",
)

case(
    V.slider_bars,
    lambda: V.slider_bars({}, ["x"], slider_label="s", title="t"),
    ValueError,
    "states is empty",
)

case(V.wrap_title, lambda: V.wrap_title(None), TypeError, "expected string")

case(V.title_layout, lambda: V.title_layout(None, 400), TypeError, "expected string")

case(DSP.figure_number, lambda: DSP.figure_number("figure-1"), ValueError, "ch02-some-words")

case(DSP.figure, lambda: DSP.figure(_Drawing(), "chapter2", "c", "a"), ValueError, "look like")

case(DSP.figure, lambda: DSP.figure(_Drawing(), "ch99-x", "", "a"), ValueError, "caption must")

case(DSP.figure, lambda: DSP.figure(_Drawing(), "ch99-y", "c", None), ValueError, "alt must")

case(DSP.figure, lambda: DSP.figure(42, "ch99-z", "c", "a"), TypeError, "Matplotlib figure")

case(DSP.figure, lambda: DSP.figure(_Drawing(), "ch99-q"), ValueError, "no words for figure")

case(FIGURE_TEXT.figure_words, lambda: FIGURE_TEXT.figure_words(5), ValueError, "look like")

case(
    FIGURE_TEXT.figure_words,
    lambda: FIGURE_TEXT.figure_words("ch05-variance-figure", {"x": 1}),
    ValueError,
    "takes no values",
)

case(FIGURE_TEXT.chapter_words, lambda: FIGURE_TEXT.chapter_words("5"), ValueError, "an int")

case(DSP.source, lambda: DSP.source(42), TypeError, "source needs")

case(DSP.source, lambda: DSP.source("transformer_lab.nn.masks.nope"), ValueError, "has no 'nope'")

case(DSP.source, lambda: DSP.source(DSP.table, start_at="zzz"), ValueError, "start_at='zzz'")

case(DSP.source, lambda: DSP.source(DSP.table, end_before="zzz"), ValueError, "end_before")

case(DSP.table, lambda: DSP.table([(1, 2, 3)], ["a", "b"]), ValueError, "row 0 has 3 cells")

import torch  # noqa: E402

_coords = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
for thunk, error, fragment in [
    (lambda: WM.word_map_plotly(_coords * float("nan"), ["a", "b"], ["x", "y"]), ValueError,
     "coords must hold finite numbers, got NaN or inf"),
    (lambda: WM.word_map_plotly(_coords, "ab", ["x", "y"]), TypeError,
     "words must be a sequence of str, one per point, got 'ab'"),
    (lambda: WM.word_map_plotly(_coords, [1, 2], ["x", "y"]), TypeError,
     "words must be strings"),
    (lambda: WM.word_map_plotly(_coords, ["a", "b"], ["x", "y"], arrows=[("a", "b")]),
     TypeError, "arrows must be a dict {label: [(from, to), ...]}, got list"),
    (lambda: WM.word_map_plotly(_coords, ["a", "b"], ["x", "y"], arrows={"m": [("a",)]}),
     ValueError, "arrows['m'] must be a list of (from_word, to_word), got [('a',)]"),
    (lambda: WM.word_map_plotly(_coords, ["a", "b"], ["x", "y"], title=3), TypeError,
     "title must be a str, got int"),
]:  # fmt: skip
    case(WM.word_map_plotly, thunk, error, fragment)

# chapters 1 and 2: the pictures moved out of the reader's cells
from transformer_lab.data.tokenizers import Vocabulary  # noqa: E402
from transformer_lab.viz.chapters import bottleneck as VIZ_BOTTLENECK  # noqa: E402
from transformer_lab.viz.chapters import lookup as VIZ_LOOKUP  # noqa: E402
from transformer_lab.viz.chapters import similarity as VIZ_SIMILARITY  # noqa: E402

_v2 = torch.tensor([1.0, 2.0])
_vocab3 = Vocabulary(["a", "b", "c"])
for target, thunk, error, fragment in [
    (TL.timeline_figure, lambda: TL.timeline_figure(wrap=0), ValueError, "wrap must be"),
    (WM.word_map_figure, lambda: WM.word_map_figure(_coords, ["a"], ["x", "y"]), ValueError,
     "2 points, 1 words and 2 groups"),
    (WM.word_map_controls, lambda: WM.word_map_controls(_coords, ["x", "y"], f(3, 2), _vocab3),
     TypeError, "projection must be the result of pca_2d"),
    (VIZ_LOOKUP.one_hot_lookup_figure,
     lambda: VIZ_LOOKUP.one_hot_lookup_figure(torch.eye(3), f(2, 4), ["a", "b", "c"], list("abc")),
     ValueError, "need O [N, |V|] and E [|V|, d]"),
    (VIZ_SIMILARITY.similarity_figure,
     lambda: VIZ_SIMILARITY.similarity_figure(f(3), _v2, _v2, f(10), {}), ValueError,
     "a must be a vector of 2 numbers, got shape (3,)"),
    (VIZ_SIMILARITY.similarity_explorer,
     lambda: VIZ_SIMILARITY.similarity_explorer(lengths=[0.0, 1.0]), ValueError,
     "lengths must be positive"),
    (VIZ_SIMILARITY.similarity_controls,
     lambda: VIZ_SIMILARITY.similarity_controls(f(4, 2), _vocab3), ValueError,
     "W_E has 4 rows but vocab has 3 tokens"),
    (VIZ_BOTTLENECK.bottleneck_figure,
     lambda: VIZ_BOTTLENECK.bottleneck_figure([1.0], [1.0], [(1, 0.5)], [1, 5], [0.5, 0.2]),
     ValueError, "2 bin edges for 2 bins"),
    (VIZ_BOTTLENECK.distance_figure, lambda: VIZ_BOTTLENECK.distance_figure({}, [1.0]),
     ValueError, "curves is empty"),
    (VIZ_BOTTLENECK.chain_time_figure,
     lambda: VIZ_BOTTLENECK.chain_time_figure({("LSTM", 4): (4, 9)}, {}, d=8), ValueError,
     "chains must have keys (layer, n)"),
    (VIZ_BOTTLENECK.sensitivity_menu, lambda: VIZ_BOTTLENECK.sensitivity_menu(print, []),
     TypeError, "numbers must be a non-empty sequence"),
    (VIZ_BOTTLENECK.sensitivity_box, lambda: VIZ_BOTTLENECK.sensitivity_box(21), TypeError,
     "explain must be a function of a number"),
]:  # fmt: skip
    case(target, thunk, error, fragment)

from transformer_lab.viz import live as VIZ_LIVE  # noqa: E402

for target, thunk, error, fragment in [
    (VIZ_LIVE.live_model, lambda: VIZ_LIVE.live_model("bert"), ValueError,
     "name must be one of ('gpt', 'minilm'), got 'bert'"),
    (VIZ_LIVE.live_model, lambda: VIZ_LIVE.live_model("gpt", model=None), TypeError,
     "live_model('gpt') needs model=a GPT, got NoneType"),
    (VIZ_LIVE.live_model, lambda: VIZ_LIVE.live_model("minilm", n_chars=0), ValueError,
     "n_chars must be"),
    (VIZ_LIVE.live_model, lambda: VIZ_LIVE.live_model("minilm", compare="a sentence"),
     TypeError, "compare must be a list of sentences"),
    (VIZ_LIVE.live_model, lambda: VIZ_LIVE.live_model("minilm", model=nn.Linear(2, 2)),
     TypeError, "takes both model and tokenizer, or neither"),
    (VIZ_LIVE.LiveModel, lambda: VIZ_LIVE.LiveModel("bert", None, None, {}), ValueError,
     "name must be one of ('gpt', 'minilm'), got 'bert'"),
    (VIZ_LIVE.live_model, lambda: VIZ_LIVE.live_model("gpt", model=bert()), TypeError,
     "live_model('gpt') needs model=a GPT, got BertForPreTraining"),
    (VIZ_LIVE.LiveModel,
     lambda: VIZ_LIVE.LiveModel("gpt", None, None, {"layer": float("nan")}).panel_html(),
     ValueError, "the panel's options must be finite numbers"),
]:  # fmt: skip
    case(target, thunk, error, fragment)

from matplotlib.figure import Figure  # noqa: E402

from transformer_lab.viz import bar_labels as VIZ_BAR_LABELS  # noqa: E402
from transformer_lab.viz.chapters import pictures as VIZ_PICTURES  # noqa: E402
from transformer_lab.viz.chapters import pictures_ring as VIZ_RING  # noqa: E402


def _axes_with_bars():
    ax = Figure().add_subplot()
    ax.bar([0, 1], [0.0, 1.0])
    return ax


for target, thunk, error, fragment in [
    (V.label_bars, lambda: V.label_bars(None), TypeError, "ax must be a Matplotlib Axes"),
    (V.label_bars, lambda: V.label_bars(Figure().add_subplot()), ValueError,
     "ax has no bars to label"),
    (V.label_bars, lambda: V.label_bars(_axes_with_bars(), "q"), ValueError,
     "fmt must be a format spec for a number"),
    (V.label_bars, lambda: V.label_bars(_axes_with_bars(), fontsize=0), ValueError,
     "fontsize must be a positive finite number"),
    (VIZ_BAR_LABELS.value_labels, lambda: VIZ_BAR_LABELS.value_labels(3), TypeError,
     "values must be an iterable of numbers, got int"),
    (VIZ_BAR_LABELS.value_labels, lambda: VIZ_BAR_LABELS.value_labels([], "d%q"), ValueError,
     "fmt must be a format spec for a number"),
    (VIZ_BAR_LABELS.value_labels, lambda: VIZ_BAR_LABELS.value_labels([1.0], None), TypeError,
     "fmt must be a str"),
    (V.slider_bars, lambda: V.slider_bars({1: {"a": [1.0]}}, ["x"], slider_label="s",
                                          title="t", log_y=True, y_range=(0, 1)),
     ValueError, "a log axis needs 0 < low < high"),
    (V.slider_bars, lambda: V.slider_bars({1: {"a": [float("nan")]}}, ["x"], slider_label="s",
                                          title="t"),
     ValueError, "bar heights and whiskers must be finite"),
    (V.dropdown_bars, lambda: V.dropdown_bars({"a": (["x"], [1.0])}, headings={"a": "a"},
                                              dropdown_label="n", fmt=3),
     TypeError, "fmt must be a str"),
    (V.heatmap_explorer,
     lambda: V.heatmap_explorer(
         {"A": {"1": [np.zeros((1, 1))]}, "B": {"1": [np.zeros((1, 1))], "2": [np.ones((1, 1))]}},
         labels={o: [(["x"], ["y"])] for o in "AB"}, panel_titles=["p"], slider_label="s"),
     ValueError, "(own_sliders=True gives each option its own)"),
    (V.heatmap_explorer,
     lambda: V.heatmap_explorer({"A": {"1": [np.zeros((1, 1))]}}, labels={"A": [(["x"], ["y"])]},
                                panel_titles=["p"], slider_label="s", own_sliders="yes"),
     TypeError, "own_sliders must be a bool"),
    (VIZ_PICTURES.qkv_shapes_figure, lambda: VIZ_PICTURES.qkv_shapes_figure(0, 64, 16),
     ValueError, "n_tokens must be a positive int, got 0"),
    (VIZ_PICTURES.qkv_shapes_figure, lambda: VIZ_PICTURES.qkv_shapes_figure(4, 64, 16.0),
     TypeError, "d_k must be an int, got float"),
    (VIZ_PICTURES.head_split_figure, lambda: VIZ_PICTURES.head_split_figure(512, 7),
     ValueError, "d_model=512 is not divisible by n_heads=7"),
    (VIZ_PICTURES.head_split_figure, lambda: VIZ_PICTURES.head_split_figure(512, 8, 9),
     ValueError, "n_tokens must be at most 8 to be drawn, got 9"),
    (VIZ_PICTURES.kv_cache_figure, lambda: VIZ_PICTURES.kv_cache_figure("abc", 16), TypeError,
     "tokens must be a sequence of strings, got str"),
    (VIZ_PICTURES.kv_cache_figure, lambda: VIZ_PICTURES.kv_cache_figure([], 16), ValueError,
     "tokens must hold 1 to 8 tokens to be drawn, got 0"),
    (VIZ_PICTURES.kv_cache_figure, lambda: VIZ_PICTURES.kv_cache_figure(["a"], 10**8),
     ValueError, "d_head must be at most 10**7 to be drawn"),
    (VIZ_PICTURES.lora_figure, lambda: VIZ_PICTURES.lora_figure(576, 576, 600), ValueError,
     "rank=600 must be at most min(d_in, d_out) = 576"),
    (VIZ_PICTURES.lora_figure, lambda: VIZ_PICTURES.lora_figure(576, 576, 8, alpha="16"),
     TypeError, "alpha must be a number, got str"),
    (VIZ_RING.ring_all_reduce_figure, lambda: VIZ_RING.ring_all_reduce_figure(8),
     ValueError, "n_ranks must be at most 4 to be drawn, got 8"),
    (VIZ_RING.ring_all_reduce_figure, lambda: VIZ_RING.ring_all_reduce_figure(1),
     ValueError, "n_ranks must be an int >= 2, got 1"),
]:  # fmt: skip
    case(target, thunk, error, fragment)
case(
    DSP.source,
    lambda: DSP.source(DSP.table, checks="no"),
    TypeError,
    "checks must be True or False",
)
