"""The pictures of shapes and steps (transformer_lab.viz.chapters.pictures and
transformer_lab.viz.chapters.pictures_ring): each draws, writes the sizes it was given (none
is fixed in the picture), and shows what its chapter says."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from transformer_lab.viz.chapters import pictures as P  # noqa: E402
from transformer_lab.viz.chapters import pictures_ring as R  # noqa: E402


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts] + [ax.get_title() for ax in fig.axes]


def _draws(fig) -> None:
    """The figure renders to a PNG with something on it."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=40, bbox_inches="tight")
    assert buffer.getvalue().startswith(b"\x89PNG") and len(buffer.getvalue()) > 2000
    assert any(ax.patches for ax in fig.axes)


@pytest.mark.parametrize("pos, d, dk, dv", [(7, 64, 16, None), (3, 512, 64, 32)])
def test_qkv_shapes_figure_writes_the_shapes_it_is_given(pos, d, dk, dv):
    fig = P.qkv_shapes_figure(pos, d, dk, d_v=dv)
    _draws(fig)
    texts = _texts(fig)
    dv = dk if dv is None else dv
    for shape in ("[pos, d]", "[d, d_k]", "[pos, d_k]", "[d_k, pos]", "[pos, pos]", "[pos, d_v]"):
        assert shape in texts, shape
    for numbers in (f"{pos} × {d}", f"{d} × {dk}", f"{pos} × {dk}", f"{dk} × {pos}",
                    f"{pos} × {pos}", f"{pos} × {dv}"):  # fmt: skip
        assert numbers in texts, numbers
    # the rows of a [pos, ...] box are the tokens: one white line between each two
    ax = fig.axes[0]
    assert sum(len(line.get_xdata()) == 2 for line in ax.lines) >= pos - 1


@pytest.mark.parametrize("d, h, pos", [(512, 8, 2), (64, 16, 3)])
def test_head_split_figure_cuts_d_model_into_the_heads_given(d, h, pos):
    fig = P.head_split_figure(d, h, pos)
    _draws(fig)
    text = "\n".join(_texts(fig))
    assert f"{h} groups of d_k = {d // h}" in text
    assert f"= [{h}, {pos}, {d // h}]" in text and f"= [{pos}, {d}]" in text
    assert f"view(pos, {h}, {d // h})" in text
    assert "head 0" in text
    # one small matrix per head, each of pos rows, in two rows of heads, plus two strips
    assert len(fig.axes[0].patches) >= 2 * h * pos + 2 * h * pos
    with pytest.raises(ValueError, match="not divisible"):
        P.head_split_figure(10, 4)


def test_kv_cache_figure_grows_the_cache_one_row_per_step():
    tokens = list("ROMEO")
    fig = P.kv_cache_figure(tokens, 16)
    _draws(fig)
    texts = _texts(fig)
    for t in range(1, len(tokens) + 1):
        assert f"step {t}" in texts
        assert f"K [{t}, 16]" in texts and f"V [{t}, 16]" in texts
        assert f"$q_{{{t}}}$  [1, 16]" in texts
    # rows: step t draws t keys and t values, one of each new (red)
    red = [
        p for p in fig.axes[0].patches if p.get_facecolor()[:3] == (214 / 255, 39 / 255, 40 / 255)
    ]
    assert len(red) == 3 * len(tokens)  # a query, a key and a value per step
    assert "'O'" in texts  # each cached row names its token


def test_lora_figure_counts_from_its_arguments():
    fig = P.lora_figure(576, 576, 8, 16.0)
    _draws(fig)
    text = "\n".join(_texts(fig))
    assert "576 × 576" in text and "576 × 8" in text and "8 × 576" in text
    assert "331,776" in text and "9,216" in text and "(16/8)" in text
    fig = P.lora_figure(100, 40, 2)
    text = "\n".join(_texts(fig))
    assert "40 × 100" in text and "2 × 100" in text and f"{2 * 140:,}" in text
    with pytest.raises(ValueError, match="rank=50"):
        P.lora_figure(100, 40, 50)


def test_ring_all_reduce_figure_follows_the_chapters_ring():
    n = 4
    fig = R.ring_all_reduce_figure(n)
    _draws(fig)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert len(titles) == 1 + 2 * (n - 1)
    states = R._ring_states(n)
    # after reduce-scatter every rank holds the full sum of exactly one chunk ...
    _, after_scatter, _ = states[n - 1]
    assert [sum(len(c) == n for c in row) for row in after_scatter] == [1] * n
    # ... after all-gather every chunk of every rank
    _, after_gather, _ = states[-1]
    assert all(len(c) == n for row in after_gather for c in row)
    # the start shows each rank's own numbers only
    _, start, sent = states[0]
    assert sent is None and all(c == {r} for r, row in enumerate(start) for c in row)
    # the chunks sent are those of the chapter's ring_all_reduce_v1
    assert states[1][2] == [(r - 0) % n for r in range(n)]
    assert states[n][2] == [(r + 1) % n for r in range(n)]
    assert f"= {2 * (n - 1)}/{n} of its tensor." in "\n".join(_texts(fig))


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: P.qkv_shapes_figure(0, 8, 4), ValueError, "n_tokens must be a positive int"),
        (lambda: P.qkv_shapes_figure(65, 8, 4), ValueError, "at most 64"),
        (lambda: P.qkv_shapes_figure(4, 8.0, 4), TypeError, "d_model must be an int"),
        (lambda: P.head_split_figure(512, 33), ValueError, "n_heads must be at most 32"),
        (lambda: P.kv_cache_figure("ROMEO", 16), TypeError, "sequence of strings"),
        (lambda: P.kv_cache_figure(list("abcdefghi"), 16), ValueError, "1 to 8 tokens"),
        (lambda: P.kv_cache_figure(["a", 1], 16), TypeError, "tokens[i] must be a str"),
        (lambda: P.lora_figure(10, 10, 2, alpha=-1.0), ValueError, "alpha"),
        (lambda: R.ring_all_reduce_figure(1), ValueError, "n_ranks must be an int >= 2"),
        (lambda: R.ring_all_reduce_figure(5), ValueError, "at most 4"),
    ],
)
def test_pictures_refuse_what_they_cannot_draw(call, error, words):
    with pytest.raises(error, match=words.replace("[", r"\[")):
        call()
