"""Weights stored as float16 in an ONNX file, computed in float32.

:func:`weights_to_float16` replaces every float32 initializer of two or more dimensions
(the weight matrices and embeddings; biases, layer-norm parameters and constants stay
float32) by a float16 copy and a ``Cast`` back to float32 at the start of the graph.
The file holds half the bytes; every operation after the casts is the float32 one, so the
only change is the rounding of each weight to float16 (a relative error of at most
``2**-11``, about 5e-4).
"""

from __future__ import annotations

import numpy as np

from transformer_lab.checks import require

__all__ = ["weights_to_float16", "FLOAT16_MAX"]

FLOAT16_MAX = 65504.0  # the largest finite float16


def weights_to_float16(model):
    """A copy of the ONNX ``model`` (a ``onnx.ModelProto``) whose float32 initializers of
    two or more dimensions are stored as float16 and cast to float32 in the graph. Raises
    a ValueError if a weight is too large for float16 (above :data:`FLOAT16_MAX`)."""
    onnx = require("onnx", "onnx")
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"model must be an onnx.ModelProto, got {type(model).__name__}")
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    taken = {i.name for i in graph.initializer} | {v for n in graph.node for v in n.output}
    casts, keep = [], []
    for init in graph.initializer:
        array = onnx.numpy_helper.to_array(init)
        if init.data_type != onnx.TensorProto.FLOAT or array.ndim < 2:
            keep.append(init)
            continue
        peak = float(np.abs(array).max()) if array.size else 0.0
        if not peak <= FLOAT16_MAX:
            raise ValueError(
                f"initializer {init.name!r} holds {peak:g}, beyond float16's {FLOAT16_MAX:g}"
            )
        stored = _fresh(f"{init.name}_float16", taken)
        keep.append(onnx.numpy_helper.from_array(array.astype(np.float16), stored))
        # the float32 value keeps its old name, so the nodes that read it are unchanged
        casts.append(
            onnx.helper.make_node("Cast", [stored], [init.name], to=onnx.TensorProto.FLOAT)
        )
    del graph.initializer[:]
    graph.initializer.extend(keep)
    nodes = casts + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    return out


def _fresh(name: str, taken: set[str]) -> str:
    """``name``, or ``name_2``, ``name_3`` ... if a value of the graph already has it."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}_{n}"
    taken.add(candidate)
    return candidate
