"""``scripts/site/build_live_models.py`` writes the live-model files of the interface the
page reads (``scripts/site/live/README.md``), copies the page's scripts, and skips the
export when its outputs are newer than everything they are made from."""

from __future__ import annotations

import json
import os

import pytest
from script_loader import load_script

pytest.importorskip("onnxruntime")

build_live_models = load_script("site/build_live_models")


def test_up_to_date_compares_the_oldest_output_with_the_newest_source(tmp_path):
    source, output = tmp_path / "source.py", tmp_path / "model.onnx"
    source.write_text("x = 1")
    assert not build_live_models.up_to_date([output], [source])  # missing output
    output.write_bytes(b"graph")
    os.utime(source, (1000, 1000))
    os.utime(output, (2000, 2000))
    assert build_live_models.up_to_date([output], [source])
    os.utime(source, (3000, 3000))  # the source changed after the export
    assert not build_live_models.up_to_date([output], [source])


def test_the_inputs_name_the_checkpoint_the_export_code_and_minilm():
    names = {p.name for p in build_live_models.inputs()}
    assert {"gpt_book_cpu.safetensors", "onnx.py", "gpt.py", "bert.py"} <= names
    assert {"model.safetensors", "tokenizer.json"} <= names
    assert all(p.is_file() for p in build_live_models.inputs())


def test_the_build_writes_the_interface_and_then_skips(tmp_path, capsys):
    files = build_live_models.build(tmp_path)
    names = {p.name for p in files}
    assert {"gpt.onnx", "gpt.json", "minilm.onnx", "minilm.json", "tokenizers.js"} <= names
    gpt = json.loads((tmp_path / "gpt.json").read_text(encoding="utf-8"))
    assert {"vocab", "n_ctx", "n_layers", "n_heads", "d_model", "held_out_loss", "recipe"} <= set(
        gpt
    )
    minilm = json.loads((tmp_path / "minilm.json").read_text(encoding="utf-8"))
    assert {"vocab", "lowercase", "n_layers", "n_heads", "max_positions", "unk", "cls"} <= set(
        minilm
    )
    assert minilm["vocab"][101] == minilm["cls"] == "[CLS]" and minilm["lowercase"] is True
    assert (tmp_path / "minilm.onnx").stat().st_size < 50e6  # float16-stored weights
    out = capsys.readouterr().out
    assert "exporting the live models" in out and "minilm.onnx" in out
    stamps = {p.name: p.stat().st_mtime_ns for p in files}
    build_live_models.build(tmp_path)
    assert "exporting" not in capsys.readouterr().out
    assert {p.name: p.stat().st_mtime_ns for p in files} == stamps
