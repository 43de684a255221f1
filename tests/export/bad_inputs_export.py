"""Bad inputs to transformer_lab.export, and to the loader of the checkpoint it exports
(transformer_lab.pretrained.book_gpt).

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by ``tests/test_bad_inputs.py``)."""

import onnx
import torch
from bad_input_support import bert, case, gpt, ids, np, wordpiece

from transformer_lab.data.tokenizers import CharTokenizer
from transformer_lab.export import float16 as EXPORT_FLOAT16
from transformer_lab.export import live as EXPORT_LIVE
from transformer_lab.export import onnx as EXPORT_ONNX
from transformer_lab.models.gpt import GPT, GPTConfig
from transformer_lab.pretrained import book_gpt as BOOK_GPT

NOWHERE = "/nonexistent-dir/model.onnx"  # never written: every case fails before writing

case(
    EXPORT_ONNX.export_gpt,
    lambda: EXPORT_ONNX.export_gpt(None, NOWHERE),
    TypeError,
    "model must be a GPT, got NoneType",
)
case(
    EXPORT_ONNX.export_gpt,
    lambda: EXPORT_ONNX.export_gpt(gpt(), NOWHERE, weights="int8"),
    ValueError,
    "weights must be one of",
)
case(
    EXPORT_ONNX.export_gpt,
    lambda: EXPORT_ONNX.export_gpt(gpt(), 3),
    TypeError,
    "path must be a file path, got int",
)
case(
    EXPORT_ONNX.export_bert,
    lambda: EXPORT_ONNX.export_bert(bert(), NOWHERE),
    TypeError,
    "model must be a BertModel, got BertForPreTraining",
)
case(
    EXPORT_ONNX.export_bert,
    lambda: EXPORT_ONNX.export_bert(bert().bert, NOWHERE, opset=13),
    ValueError,
    "opset must be in [17, 21] (LayerNormalization needs 17), got 13",
)
case(
    EXPORT_ONNX.GPTWithAttention,
    lambda: EXPORT_ONNX.GPTWithAttention(None),
    TypeError,
    "model must be a GPT, got NoneType",
)
case(
    EXPORT_ONNX.GPTWithAttention,
    lambda: EXPORT_ONNX.GPTWithAttention(gpt())(ids([1, 2], [3, 4])),
    ValueError,
    "ids must be one sequence of token ids [1, pos], got (2, 2)",
)
case(
    EXPORT_ONNX.SentenceEncoderWithAttention,
    lambda: EXPORT_ONNX.SentenceEncoderWithAttention(gpt()),
    TypeError,
    "model must be a BertModel, got GPT",
)
case(
    EXPORT_ONNX.SentenceEncoderWithAttention,
    lambda: EXPORT_ONNX.SentenceEncoderWithAttention(bert().bert)(ids(1, 2, 3)),
    ValueError,
    "input_ids must be one sequence of token ids [1, pos], got (3,)",
)


def _huge_weights():
    weight = onnx.numpy_helper.from_array(np.full((2, 2), 1e6, dtype=np.float32), "W")
    node = onnx.helper.make_node("MatMul", ["x", "W"], ["y"])
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 2])
    return onnx.helper.make_model(onnx.helper.make_graph([node], "g", [x], [y], [weight]))


case(
    EXPORT_FLOAT16.weights_to_float16,
    lambda: EXPORT_FLOAT16.weights_to_float16(b"bytes"),
    TypeError,
    "model must be an onnx.ModelProto, got bytes",
)
case(
    EXPORT_FLOAT16.weights_to_float16,
    lambda: EXPORT_FLOAT16.weights_to_float16(_huge_weights()),
    ValueError,
    "initializer 'W' holds 1e+06, beyond float16's 65504",
)
case(
    EXPORT_LIVE.gpt_live_json,
    lambda: EXPORT_LIVE.gpt_live_json({"vocab": []}),
    ValueError,
    "info lacks ['config', 'held_out_loss', 'recipe']; pass book_gpt_info()",
)
case(
    EXPORT_LIVE.gpt_live_json,
    lambda: EXPORT_LIVE.gpt_live_json(None),
    TypeError,
    "info must be the dict of book_gpt_info(), got NoneType",
)
case(
    EXPORT_LIVE.minilm_live_json,
    lambda: EXPORT_LIVE.minilm_live_json(None, wordpiece()),
    TypeError,
    "config must be a BertConfig, got NoneType",
)
case(
    EXPORT_LIVE.minilm_live_json,
    lambda: EXPORT_LIVE.minilm_live_json(bert().config, "vocab.txt"),
    TypeError,
    "tokenizer must be a WordPieceTokenizer, got str",
)
case(
    EXPORT_LIVE.wordpiece_char_classes,
    lambda: EXPORT_LIVE.wordpiece_char_classes(None),
    TypeError,
    "tokenizer must be a WordPieceTokenizer, got NoneType",
)
case(
    EXPORT_LIVE.write_live_models,
    lambda: EXPORT_LIVE.write_live_models(3),
    TypeError,
    "directory must be a folder path, got int",
)
case(
    EXPORT_LIVE.write_live_models,
    lambda: EXPORT_LIVE.write_live_models("/nonexistent-dir", minilm_weights="bfloat16"),
    ValueError,
    "minilm_weights must be one of",
)
case(
    BOOK_GPT.save_book_gpt,
    lambda: BOOK_GPT.save_book_gpt(None, None, {}),
    TypeError,
    "model must be a GPT, got NoneType",
)
case(
    BOOK_GPT.save_book_gpt,
    lambda: BOOK_GPT.save_book_gpt(
        GPT(GPTConfig(d_vocab=3, n_ctx=4, n_layers=1, n_heads=1, d_model=4)),
        CharTokenizer("abc"), {}, "/nonexistent-dir", storage="int4",
    ),
    ValueError,
    "storage must be one of ('as-is', 'int8'), got 'int4'",
)  # fmt: skip
case(
    BOOK_GPT.quantize_rows,
    lambda: BOOK_GPT.quantize_rows(torch.zeros(3)),
    ValueError,
    "weight must be a 2-d float tensor, got torch.float32 (3,)",
)
case(
    BOOK_GPT.quantize_rows,
    lambda: BOOK_GPT.quantize_rows([[1.0]]),
    TypeError,
    "weight must be a tensor, got list",
)
case(
    BOOK_GPT.book_gpt_info,
    lambda: BOOK_GPT.book_gpt_info("/nonexistent-dir"),
    ValueError,
    "no gpt_book_cpu.json in /nonexistent-dir; run scripts/experiments/train_book_gpt.py",
)
case(
    BOOK_GPT.book_gpt_info,
    lambda: BOOK_GPT.book_gpt_info(None),
    TypeError,
    "directory must be a folder path, got NoneType",
)
case(
    BOOK_GPT.load_book_gpt,
    lambda: BOOK_GPT.load_book_gpt(device="gpu"),
    ValueError,
    "device must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got 'gpu'",
)


def _book_gpt_of_another_depth():
    """A one-layer book GPT saved in a temporary folder whose JSON then says 2 layers."""
    import json
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        model = GPT(GPTConfig(d_vocab=3, n_ctx=4, n_layers=1, n_heads=1, d_model=4))
        BOOK_GPT.save_book_gpt(model, CharTokenizer("abc"), {}, folder)
        path = Path(folder) / BOOK_GPT.INFO
        info = json.loads(path.read_text())
        path.write_text(json.dumps({**info, "config": {**info["config"], "n_layers": 2}}))
        BOOK_GPT.load_book_gpt(directory=folder)


case(
    BOOK_GPT.load_book_gpt,
    _book_gpt_of_another_depth,
    ValueError,
    "gpt_book_cpu.safetensors does not hold the model its gpt_book_cpu.json describes "
    "(n_layers=2): 16 of the model's tensors are missing, e.g. ['blocks.1.attn.W_K', "
    "'blocks.1.attn.W_O']; reinstall the package for the shipped files, or save the model "
    "again with save_book_gpt",
)
