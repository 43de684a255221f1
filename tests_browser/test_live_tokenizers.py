"""The live models' tokenizers in the browser (``scripts/site/live/tokenizers.js``) give the
package's ids: WordPiece as all-MiniLM-L6-v2's tokenizer runs it, and chapter 13's
characters. The JSON comes from the build's own functions (``transformer_lab.export.live``),
so no built site is needed."""

from __future__ import annotations

import json
import sys
import unicodedata

import pytest
from browser_support import ROOT

from transformer_lab.data.wordpiece import WordPieceTokenizer
from transformer_lab.export.live import gpt_live_json, minilm_live_json
from transformer_lab.pretrained.book_gpt import book_gpt_info, load_book_gpt
from transformer_lab.pretrained.minilm import config_from_hf, minilm_dir

SCRIPT = ROOT / "scripts" / "site" / "live" / "tokenizers.js"

TEXTS = [
    "",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "It's 42 degrees; 3.14159 is pi, and 1,000,000 > 999.",
    "e-mail: someone@example.com, https://example.org/a?b=c&d=e#f",
    "Café, naïve, résumé, façade, Ångström, Øresund, Straße",
    "ÀÉÎÕÜ àéîõü ñÑ çÇ",
    "İstanbul ΣΊΣΥΦΟΣ Ελληνικά: καλημέρα κόσμε",
    "Москва — столица России.",
    "中文分词测试：我爱北京天安门。",
    "日本語のテキスト、カタカナとひらがな。",
    "한국어 문장입니다.",
    "emoji 😀🎉👍🏽 and 🥰 with ❤️ hearts",
    "flags 🇫🇷🇯🇵 and family 👨‍👩‍👧",
    "   leading and trailing spaces   ",
    "tabs\tand\nnewlines\r\nand\u00a0no-break\u2003em space\u3000ideographic",
    "many     spaces   between",
    "control\u0000chars\u0007and\u200bzero\u200dwidth\ufeffbom",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "a" * 100,
    "b" * 101,
    "unaffable unbelievably untranslatability",
    "[CLS] [SEP] [MASK] [UNK] [PAD] inside the text",
    "lower [mask] and glued[MASK]words",
    "ﬁ ligature, ½ fraction, ² superscript, Ⅻ numeral",
    "quotes “double” ‘single’ «guillemets» „low“",
    "math ∑ ∫ √ ∞ ≠ ≤ ± × ÷ and $100 £50 €20 ¥10",
    "Arabic: مرحبا بالعالم و Hebrew: שלום עולם",
    "Hindi: नमस्ते दुनिया",
    "Thai: สวัสดีชาวโลก",
    "zalgo: Z̷̢a̴l̶g̸o̵ t̶e̷x̸t",
    "ooh\u0301 combining acute after a letter",
    "what?!...;;--((brackets))[[]]{{}}",
    "ALL CAPS SHOUTING AND MiXeD CaSe",
    "x" + "\u0301" * 5 + "y",
    "private use \ue000 and \U000f0000 and unassigned \u0378",
]
LONG = " ".join(["word"] * 600)  # longer than max_positions: truncated
SAMPLE = (
    "ROMEO:\nBut, soft! what light through yonder window breaks?\n"
    "It is the east, and Juliet is the sun.\n\nJULIET:\nO Romeo, Romeo! wherefore art thou Romeo?"
)


@pytest.fixture(scope="module")
def wordpiece() -> WordPieceTokenizer:
    path = minilm_dir()
    config = config_from_hf(json.loads((path / "config.json").read_text()))
    return WordPieceTokenizer.from_file(path / "tokenizer.json", max_length=config.max_pos)


@pytest.fixture(scope="module")
def page(browser_context, wordpiece, tmp_path_factory):
    """A blank page with tokenizers.js loaded and both tokenizers built from the JSON that
    the build writes (into a temporary folder here)."""
    path = minilm_dir()
    config = config_from_hf(json.loads((path / "config.json").read_text()))
    folder = tmp_path_factory.mktemp("live")
    metas = {
        "minilm": minilm_live_json(config, wordpiece),
        "gpt": gpt_live_json(book_gpt_info()),
    }
    for name, meta in metas.items():
        (folder / f"{name}.json").write_text(json.dumps(meta, ensure_ascii=False))
    page = browser_context.new_page()
    errors = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.goto("about:blank")
    page.add_script_tag(content=SCRIPT.read_text())
    page.evaluate(
        """([minilm, gpt]) => {
            const T = window.TransformerLabTokenizers;
            window.wp = new T.WordPieceTokenizer(JSON.parse(minilm));
            window.chars = new T.CharTokenizer(JSON.parse(gpt));
        }""",
        [(folder / "minilm.json").read_text(), (folder / "gpt.json").read_text()],
    )
    yield page
    assert not errors, errors
    page.close()


def test_wordpiece_ids_and_tokens_equal_the_packages(page, wordpiece):
    assert len(TEXTS) >= 30
    got = page.evaluate("texts => texts.map(t => wp.encode(t))", [*TEXTS, LONG])
    wrong = []
    for text, js in zip([*TEXTS, LONG], got, strict=True):
        ids, tokens = wordpiece.encode(text), wordpiece(text).tokens[0]
        if js["ids"] != ids or js["tokens"] != tokens:
            wrong.append((text[:40], js["tokens"][:12], tokens[:12]))
    assert not wrong, wrong
    assert len(got[-1]["ids"]) == wordpiece.max_length  # the long text is truncated
    unk = wordpiece.unk_id
    assert unk in got[TEXTS.index("b" * 101)]["ids"]  # past max_input_chars_per_word
    assert got[0]["ids"] == [wordpiece.cls_id, wordpiece.sep_id]


def test_the_normalizer_agrees_on_every_code_point(page, wordpiece):
    """The normalizer of one code point at a time, over all of Unicode: every code point
    that the package's normalizer changes is changed the same way in the browser."""
    normalize = wordpiece.backend.normalizer.normalize_str
    codes = [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000]
    expected = {c: out for c in codes if (out := normalize(chr(c))) != chr(c)}
    got = page.evaluate(
        """() => {
            const changed = {};
            for (let c = 0; c <= 0x10ffff; c++) {
                if (c >= 0xd800 && c < 0xe000) continue;
                const ch = String.fromCodePoint(c), out = wp.normalize(ch);
                if (out !== ch) changed[c] = out;
            }
            return changed;
        }"""
    )
    got = {int(c): out for c, out in got.items()}
    differ = sorted(set(expected) ^ set(got)) + [
        c for c in expected if c in got and expected[c] != got[c]
    ]
    shown = [(hex(c), unicodedata.name(chr(c), "?"), expected.get(c), got.get(c)) for c in differ]
    assert not differ, shown[:20]
    assert len(expected) > 1000  # accents, capitals, controls and CJK, at least


def test_the_character_tokenizer_round_trips_with_the_packages_ids(page):
    _, tok = load_book_gpt()
    every = "".join(tok.itos)
    for text in (SAMPLE, every, ""):
        ids = page.evaluate("t => chars.encode(t)", text)
        assert ids == tok.encode(text)
        assert page.evaluate("ids => chars.decode(ids)", ids) == text


def test_the_character_tokenizer_refuses_what_the_package_refuses(page):
    _, tok = load_book_gpt()
    for text in ("naïve", "emoji 😀", "tab\there"):
        with pytest.raises(ValueError, match="is not in the vocabulary"):
            tok.encode(text)
        message = page.evaluate(
            "t => { try { chars.encode(t); return null; } catch (e) { return e.message; } }", text
        )
        assert message is not None and "is not in the vocabulary" in message
    message = page.evaluate(
        "n => { try { chars.decode([0, n]); return null; } catch (e) { return e.message; } }",
        tok.vocab_size,
    )
    assert message is not None and f"[0, {tok.vocab_size})" in message
