"""The book's GPT and BERT as ONNX graphs, with every head's attention as an output.

The graphs run the package's own modules, traced by the TorchScript exporter of
``torch.onnx`` (``dynamo=False``) at opset :data:`OPSET`; the number of positions ``pos``
is a dynamic axis, the batch is one sequence.

- :func:`export_gpt`: input ``ids`` int64 ``[1, pos]`` (``1 <= pos <= n_ctx``); outputs
  ``logits`` float32 ``[1, pos, d_vocab]`` and ``attention`` float32 ``[n_layers, n_heads,
  pos, pos]``, the softmax weights of every layer and head (the hooks
  ``blocks.N.attn.pattern``, stacked by :class:`GPTWithAttention`).
- :func:`export_bert`: input ``input_ids`` int64 ``[1, pos]`` (one sentence with its
  ``[CLS]`` and ``[SEP]``, no padding; segment ids all zero inside the graph); outputs
  ``attention`` float32 ``[n_layers, n_heads, pos, pos]`` and ``sentence`` float32
  ``[1, d_model]``, the mean of the last hidden states over the tokens scaled to unit
  length, as :func:`transformer_lab.pretrained.minilm.sentence_embeddings` computes it
  (:class:`SentenceEncoderWithAttention`).

Neither graph checks its ids: ONNX's ``Gather`` reads a negative id from the end of the
embedding table (-1 as the last token) where the package's models refuse it, so whoever runs
a graph refuses ids outside ``[0, d_vocab)`` first, as the site's ``live.js`` does
(``idsProblem``). ONNX has no operator that stops a run with an error, so a check inside
the graph could only clip the id or spoil the output, not refuse it.

``weights="float16"`` stores the weight matrices as float16 and casts them back to
float32 in the graph (:func:`transformer_lab.export.float16.weights_to_float16`), which
halves the file; the arithmetic stays float32. Tolerances checked by
``tests/export/test_onnx.py`` with ONNX Runtime against the package on the CPU (largest
absolute difference): the float32 files agree with the package to 1e-4 in logits and 1e-5
in attention weights and sentence vectors; the float16-stored files agree as closely with
the package run on the same float16-rounded weight matrices, and with the original weights
to 2e-2 in logits, 5e-3 in attention weights and 1e-3 in sentence vectors.
"""

from __future__ import annotations

import io
import os
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from transformer_lab.checks import instance_of, integer, one_of, require
from transformer_lab.data.cache import write_atomically
from transformer_lab.device import evaluating
from transformer_lab.hooks import capture
from transformer_lab.models.bert import BertModel
from transformer_lab.models.gpt import GPT
from transformer_lab.nn.pooling import mean_pool

__all__ = [
    "OPSET",
    "GPTWithAttention",
    "SentenceEncoderWithAttention",
    "export_gpt",
    "export_bert",
]

OPSET = 17  # LayerNormalization is an operator from 17 on; ONNX Runtime Web runs it
WEIGHTS = ("float32", "float16")  # how the file stores the weight matrices


def _one_sequence(ids: torch.Tensor, name: str) -> None:
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.shape[0] != 1:
        shape = tuple(ids.shape) if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise ValueError(f"{name} must be one sequence of token ids [1, pos], got {shape}")


class GPTWithAttention(nn.Module):
    """``(ids [1, pos]) -> (logits [1, pos, d_vocab], attention [n_layers, n_heads, pos,
    pos])``: the GPT's logits and the pattern of every head, read from its hooks."""

    def __init__(self, model: GPT):
        super().__init__()
        self.model = instance_of(model, GPT, "model")
        self.train(model.training)  # a new module trains; this one keeps the model's mode

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _one_sequence(ids, "ids")
        with capture(self.model, "blocks.*.attn.pattern") as patterns:
            logits = self.model(ids)  # [1, pos, d_vocab]
        n_layers = len(self.model.blocks)
        attention = torch.cat([patterns[f"blocks.{i}.attn.pattern"] for i in range(n_layers)])
        return logits, attention  # attention: [n_layers, n_heads, pos, pos]


class SentenceEncoderWithAttention(nn.Module):
    """``(input_ids [1, pos]) -> (attention [n_layers, n_heads, pos, pos], sentence [1,
    d_model])`` of a :class:`~transformer_lab.models.bert.BertModel`: every head's weights
    and the unit-length mean of the last hidden states (no padding: every token counts)."""

    def __init__(self, model: BertModel):
        super().__init__()
        self.model = instance_of(model, BertModel, "model")
        self.train(model.training)

    def forward(self, input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _one_sequence(input_ids, "input_ids")
        out = self.model(input_ids, output_attentions=True)
        attention = torch.cat(out.attentions)  # [n_layers, n_heads, pos, pos]
        sentence = F.normalize(mean_pool(out.last_hidden_state), dim=-1)  # [1, d_model]
        return attention, sentence


def export_gpt(
    model: GPT, path: str | os.PathLike, *, weights: str = "float32", opset: int = OPSET
) -> Path:
    """Write ``model`` (a :class:`~transformer_lab.models.gpt.GPT`) to the ONNX file
    ``path``: ``ids [1, pos] -> logits [1, pos, d_vocab], attention [n_layers, n_heads, pos,
    pos]`` for ``1 <= pos <= n_ctx``. ``weights`` is ``"float32"`` or ``"float16"`` (stored
    as float16, computed in float32). Returns the path."""
    wrapper = GPTWithAttention(model)
    n_ctx = model.config.n_ctx
    # traced on more than one position, so the causal mask is part of the graph
    example = torch.zeros(1, min(n_ctx, 8), dtype=torch.long)
    axes = {"ids": {1: "pos"}, "logits": {1: "pos"}, "attention": {2: "pos", 3: "pos"}}
    return _export(wrapper, example, path, ["ids"], ["logits", "attention"], axes, weights, opset)


def export_bert(
    model: BertModel, path: str | os.PathLike, *, weights: str = "float32", opset: int = OPSET
) -> Path:
    """Write ``model`` (a :class:`~transformer_lab.models.bert.BertModel`, such as
    all-MiniLM-L6-v2 from :func:`transformer_lab.pretrained.minilm.minilm`) to the ONNX
    file ``path``: ``input_ids [1, pos] -> attention [n_layers, n_heads, pos, pos],
    sentence [1, d_model]`` for ``1 <= pos <= max_pos``. ``weights`` as in
    :func:`export_gpt`. Returns the path."""
    wrapper = SentenceEncoderWithAttention(model)
    example = torch.zeros(1, min(model.config.max_pos, 8), dtype=torch.long)
    axes = {"input_ids": {1: "pos"}, "attention": {2: "pos", 3: "pos"}}
    names = (["input_ids"], ["attention", "sentence"])
    return _export(wrapper, example, path, *names, axes, weights, opset)


def _export(wrapper, example, path, inputs, outputs, axes, weights, opset) -> Path:
    instance_of(path, (str, os.PathLike), "path", "a file path")
    one_of(weights, WEIGHTS, "weights")
    integer(opset, "opset", minimum=1)
    if not 17 <= opset <= 21:
        raise ValueError(f"opset must be in [17, 21] (LayerNormalization needs 17), got {opset}")
    onnx = require("onnx", "onnx")
    device = next(wrapper.parameters()).device
    buffer = io.BytesIO()
    with evaluating(wrapper), torch.no_grad(), warnings.catch_warnings():
        # the tracer warns about the argument checks it cannot record, the exporter about
        # its own deprecation; neither changes the graph of valid inputs
        warnings.simplefilter("ignore")
        torch.onnx.export(
            wrapper,
            (example.to(device),),
            buffer,  # type: ignore[arg-type]  # the stub omits the file objects export takes
            input_names=inputs,
            output_names=outputs,
            dynamic_axes=axes,
            opset_version=opset,
            do_constant_folding=True,
            dynamo=False,
        )
    proto = onnx.load_from_string(buffer.getvalue())
    if weights == "float16":
        from transformer_lab.export.float16 import weights_to_float16

        proto = weights_to_float16(proto)
    proto.producer_name = "transformer_lab.export"
    onnx.helper.set_model_props(proto, {"weights": weights, "model": type(wrapper).__name__})
    onnx.checker.check_model(proto)
    data = proto.SerializeToString()
    return write_atomically(path, lambda file: file.write(data))
