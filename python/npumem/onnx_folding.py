"""Constant folding for npumem.onnx_lifetimes: exporters leave small computations on
constants in graphs (torch.onnx writes `class_token.expand(n, -1, -1)` as
ConstantOfShape, Equal and Where feeding an Expand), and onnx's shape inference does not
evaluate them, so the tensors after them have no size. Nodes that read constants only
are evaluated here with numpy and replaced by initializers holding their values, as
ATC and ONNX Runtime fold them before a model runs. Only small values are computed
(shape arithmetic, not weights); a node this does not evaluate stays as it is. Identity
is left alone: exporters use it to share one weight under two names, not to compute.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np
from onnx import TensorProto, helper, mapping, numpy_helper

# Values up to this many elements are computed: shapes and indices, never weights.
MAX_ELEMENTS = 4096


def _attribute(node, name: str, default=None):
    for attribute in node.attribute:
        if attribute.name == name:
            return helper.get_attribute_value(attribute)
    return default


def _axes(node, inputs: list, position: int) -> Optional[list]:
    """Axes from the attribute (opset < 13) or from input `position` (opset 13 on)."""
    if len(inputs) > position and inputs[position] is not None:
        return [int(axis) for axis in inputs[position]]
    axes = _attribute(node, "axes")
    return list(axes) if axes is not None else None


def _constant(node, inputs):
    tensor = _attribute(node, "value")
    if tensor is not None:
        return numpy_helper.to_array(tensor)
    for name, dtype in (("value_int", np.int64), ("value_float", np.float32),
                        ("value_ints", np.int64), ("value_floats", np.float32)):
        value = _attribute(node, name)
        if value is not None:
            return np.array(value, dtype=dtype)
    return None


def _constant_of_shape(node, inputs):
    shape = [int(size) for size in inputs[0]]
    if int(np.prod(shape)) > MAX_ELEMENTS:
        return None
    tensor = _attribute(node, "value")
    fill = numpy_helper.to_array(tensor).reshape(-1)[0] if tensor is not None else np.float32(0)
    return np.full(shape, fill, dtype=fill.dtype)


def _unsqueeze(node, inputs):
    result = inputs[0]
    axes = _axes(node, inputs, 1)
    rank = result.ndim + len(axes)
    for axis in sorted(axis % rank for axis in axes):
        result = np.expand_dims(result, axis)
    return result


def _squeeze(node, inputs):
    axes = _axes(node, inputs, 1)
    return np.squeeze(inputs[0], axis=None if axes is None else tuple(axes))


def _reshape(node, inputs):
    data, shape = inputs[0], [int(size) for size in inputs[1]]
    if not _attribute(node, "allowzero", 0):
        shape = [data.shape[axis] if size == 0 else size for axis, size in enumerate(shape)]
    return data.reshape(shape)


def _slice(node, inputs):
    data = inputs[0]
    starts, ends = inputs[1], inputs[2]
    axes = inputs[3] if len(inputs) > 3 and inputs[3] is not None else range(len(starts))
    steps = inputs[4] if len(inputs) > 4 and inputs[4] is not None else [1] * len(starts)
    index = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        index[int(axis)] = slice(int(start), int(end), int(step))
    return data[tuple(index)]


def _divide(node, inputs):
    a, b = inputs
    if np.issubdtype(a.dtype, np.integer):
        return (np.trunc(a / b)).astype(a.dtype)  # ONNX integer Div truncates
    return a / b


def _cast(node, inputs):
    to = _attribute(node, "to")
    if hasattr(helper, "tensor_dtype_to_np_dtype"):  # onnx 1.13 on; `mapping` goes
        return inputs[0].astype(helper.tensor_dtype_to_np_dtype(to))
    return inputs[0].astype(mapping.TENSOR_TYPE_TO_NP_TYPE[to])


_EVALUATORS: dict[str, Callable] = {
    "Constant": _constant,
    "ConstantOfShape": _constant_of_shape,
    "Cast": _cast,
    "Gather": lambda node, inputs: np.take(inputs[0], inputs[1], axis=_attribute(node, "axis", 0)),
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Concat": lambda node, inputs: np.concatenate(inputs, axis=_attribute(node, "axis")),
    "Reshape": _reshape,
    "Slice": _slice,
    "Add": lambda node, inputs: inputs[0] + inputs[1],
    "Sub": lambda node, inputs: inputs[0] - inputs[1],
    "Mul": lambda node, inputs: inputs[0] * inputs[1],
    "Div": _divide,
    "Equal": lambda node, inputs: np.equal(inputs[0], inputs[1]),
    "Where": lambda node, inputs: np.where(inputs[0], inputs[1], inputs[2]),
    "Expand": lambda node, inputs: (
        inputs[0] * np.ones([int(size) for size in inputs[1]], dtype=inputs[0].dtype)),
    "Range": lambda node, inputs: np.arange(inputs[0], inputs[1], inputs[2]).astype(
        inputs[0].dtype),
}


def _small_initializer(tensor) -> Optional[np.ndarray]:
    if tensor.data_location == TensorProto.EXTERNAL or int(np.prod(tensor.dims)) > MAX_ELEMENTS:
        return None
    return numpy_helper.to_array(tensor)


def _evaluate(node, inputs: list) -> Optional[np.ndarray]:
    evaluate = _EVALUATORS.get(node.op_type)
    if evaluate is None or node.domain not in ("", "ai.onnx") or len(node.output) != 1:
        return None
    try:
        value = evaluate(node, inputs)
    except (ValueError, TypeError, IndexError, KeyError):  # left to shape inference
        return None
    if value is None:  # an evaluator declined (a large ConstantOfShape: an RNN's state)
        return None
    value = np.asarray(value)
    return value if value.size <= MAX_ELEMENTS else None


def _shape(node, shape: tuple) -> np.ndarray:
    rank = len(shape)
    start = _attribute(node, "start", 0)
    end = _attribute(node, "end", rank)
    return np.array(shape[start:end], dtype=np.int64)


def fold_constants(graph, static_shapes: dict[str, tuple]) -> int:
    """Replaces, in place, each node that reads small constants only and that this can
    evaluate, and each Shape of a tensor in static_shapes (name -> its dims, all known),
    by an initializer holding its output. Returns how many nodes it replaced."""
    values = {}
    for tensor in graph.initializer:
        value = _small_initializer(tensor)
        if value is not None:
            values[tensor.name] = value
    kept = []
    folded = 0
    for node in graph.node:
        inputs = [values.get(name) if name else None for name in node.input]
        known = all(value is not None for name, value in zip(node.input, inputs) if name)
        if node.op_type == "Shape" and node.input[0] in static_shapes:
            value = _shape(node, static_shapes[node.input[0]])
        else:
            value = _evaluate(node, inputs) if known else None
        if value is None:
            kept.append(node)
            continue
        values[node.output[0]] = value
        folded += 1
        graph.initializer.append(numpy_helper.from_array(value, node.output[0]))
    del graph.node[:]
    graph.node.extend(kept)
    # Values only folded nodes read are gone with them (graph inputs' defaults stay).
    needed = {name for node in kept for name in node.input}
    needed |= {value.name for value in [*graph.output, *graph.input]}
    for tensor in [tensor for tensor in graph.initializer if tensor.name not in needed]:
        if tensor.name in values:
            graph.initializer.remove(tensor)
    return folded
