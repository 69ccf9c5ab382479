"""Tensor lifetimes of an ONNX model, the input of `npumem plan memory --onnx` (rules in
docs/PLANNING.md). Needs the Python package onnx (Debian: python3-onnx).

    python3 -m npumem.onnx_lifetimes MODEL.onnx [--dim NAME=VALUE ...] [--json]

prints lifetime records (`<bytes> <first_op> <last_op>`, what `npumem plan memory RECORDS`
reads) or, with --json, one object with each tensor's name. From Python:

    lifetimes = npumem.onnx_lifetimes.read("model.onnx", dims={"batch": 8})
    plan = npumem.plan.memory(lifetimes.records())

Op k is the k-th node in the graph's topological order (which ONNX requires and the
checker checks), leaving out Constant nodes and nodes that read weights only: those are
folded into weights. A tensor a node makes lives from that node to its last reader; a
graph output lives to the last op; one nobody reads lives at its node only. Reshape,
Flatten, Squeeze, Unsqueeze and Identity make no tensor: their output is a view of
their data input's buffer (as ONNX Runtime and ATC run them, without a copy), so its
readers keep that buffer alive.
Initializers, Constant outputs and folded outputs are weights: they last for the
model's life, so they are counted but not planned in the reused arena. Graph inputs
are the caller's buffers and are not planned either. Sizes are the element type's
bytes times the shape after onnx.shape_inference; a symbolic
dimension of a graph input takes its size from `dims`; a size still unknown, a subgraph
(If, Loop, Scan) or a file that is not a model raises OnnxModelError naming the tensor,
the node or the problem.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

# Bytes per element, by TensorProto.DataType number (onnx.proto3), so that this does not
# depend on the onnx version's own tables. STRING (8) has no fixed size.
_ELEMENT_BYTES = {
    1: 4,  # FLOAT
    2: 1,  # UINT8
    3: 1,  # INT8
    4: 2,  # UINT16
    5: 2,  # INT16
    6: 4,  # INT32
    7: 8,  # INT64
    9: 1,  # BOOL
    10: 2,  # FLOAT16
    11: 8,  # DOUBLE
    12: 4,  # UINT32
    13: 8,  # UINT64
    14: 8,  # COMPLEX64
    15: 16,  # COMPLEX128
    16: 2,  # BFLOAT16
    17: 1,  # FLOAT8E4M3FN
    18: 1,  # FLOAT8E4M3FNUZ
    19: 1,  # FLOAT8E5M2
    20: 1,  # FLOAT8E5M2FNUZ
}


# What `npumem plan memory` reads: sizes in 64 bits; ONNX's dimensions are int64.
_MAX_BYTES = 2**64 - 1
_MAX_DIM = 2**63 - 1

# Ops whose output is their first input's buffer under another shape or name.
_VIEW_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})


class OnnxModelError(ValueError):
    """The model cannot be turned into lifetimes; the message names the file and why."""


@dataclass
class Tensor:
    """A tensor planned in the arena: made by op first_op, last read by op last_op."""

    name: str
    bytes: int
    first_op: int
    last_op: int


@dataclass
class OnnxLifetimes:
    model: str
    ops: int
    tensors: list[Tensor] = field(default_factory=list)  # planned, in the order made
    weight_tensors: int = 0  # initializers, Constant and folded outputs: lasting, not planned
    weight_bytes: int = 0
    input_tensors: int = 0  # graph inputs: the caller's buffers, not planned
    input_bytes: int = 0
    view_tensors: int = 0  # outputs of _VIEW_OPS: another tensor's buffer, not planned

    def records(self) -> str:
        """Lifetime records text (`npumem plan memory RECORDS`, npumem.plan.memory)."""
        header = (
            f"# npumem.onnx_lifetimes {self.model}: {self.ops} ops, {len(self.tensors)} "
            f"tensors; not planned: {self.weight_tensors} weights ({self.weight_bytes} B), "
            f"{self.input_tensors} inputs ({self.input_bytes} B), {self.view_tensors} views\n"
        )
        return header + "".join(f"{t.bytes} {t.first_op} {t.last_op}\n" for t in self.tensors)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "ops": self.ops,
            "tensors": [vars(tensor) for tensor in self.tensors],
            "weight_tensors": self.weight_tensors,
            "weight_bytes": self.weight_bytes,
            "input_tensors": self.input_tensors,
            "input_bytes": self.input_bytes,
            "view_tensors": self.view_tensors,
        }


def _import_onnx():
    try:
        import onnx
        import onnx.checker
        import onnx.shape_inference
    except ImportError as error:
        raise ImportError(
            f"npumem.onnx_lifetimes needs the Python package onnx (Debian: apt-get install "
            f"python3-onnx) in {sys.executable}: {error}"
        ) from error
    return onnx


def _one_line(error: Exception) -> str:
    """onnx's message on one line: it breaks lines mid-sentence ("input 'x' of node:
    name: ..."), so its first line alone was cut off."""
    return " ".join(str(error).split())


def _load(onnx, path: str):
    if os.path.isdir(path):
        raise OnnxModelError(f"{path}: is a directory, not an ONNX model")
    if not os.path.exists(path):
        raise OnnxModelError(f"{path}: no such file")
    if not os.path.isfile(path):
        raise OnnxModelError(f"{path}: not a regular file, so not an ONNX model")
    # Weights' data is not needed, only their shapes: external data stays where it is.
    with open(path, "rb") as file:
        data = file.read()
    try:
        with warnings.catch_warnings():  # protobuf warns before it fails on garbage
            warnings.simplefilter("ignore")
            model = onnx.load_model_from_string(data)
    except Exception as error:  # protobuf's DecodeError and its relatives
        raise OnnxModelError(f"{path}: not an ONNX model (cannot decode it: {error})") from error
    if model.ir_version == 0 or not model.HasField("graph") or not model.graph.node:
        raise OnnxModelError(
            f"{path}: not an ONNX model (no IR version or no graph nodes; truncated?)"
        )
    try:
        # The bytes read already, unless the checker must find external data beside it.
        external = any(tensor.data_location == onnx.TensorProto.EXTERNAL
                       for tensor in model.graph.initializer)
        onnx.checker.check_model(path if external else data)
    except onnx.checker.ValidationError as error:
        problem = _one_line(error)
        raise OnnxModelError(f"{path}: not a valid ONNX model: {problem}") from error
    return model


def _node_name(index: int, node) -> str:
    return f"node {index} {node.name!r} ({node.op_type})" if node.name else (
        f"node {index} ({node.op_type})"
    )


def _reject_subgraphs(onnx, path: str, graph) -> None:
    graph_kinds = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
    for index, node in enumerate(graph.node):
        for attribute in node.attribute:
            if attribute.type in graph_kinds:
                raise OnnxModelError(
                    f"{path}: {_node_name(index, node)} has a subgraph (attribute "
                    f"{attribute.name!r}): npumem plans one flat graph; If, Loop and Scan "
                    f"are not supported"
                )


def _cli_dim(key: str, size="") -> str:
    return f"--dim {key}" + (f"={size}" if size != "" else "")


def _python_dim(key: str, size="") -> str:
    return f"dims[{key!r}]" + (f"={size}" if size != "" else "")


def _set_input_dims(path: str, graph, initializer_names: set[str],
                    dims: Mapping[str, int], spelled: Callable[..., str]) -> None:
    """Gives the graph inputs' symbolic dimensions their sizes before shape inference, so
    that the sizes propagate; every symbolic or unknown one left is an error."""
    used = set()
    missing = []
    sized: dict[str, tuple[str, int]] = {}  # a symbolic name -> (the key that sized it, size)
    for value in graph.input:
        if value.name in initializer_names or not value.type.HasField("tensor_type"):
            continue
        for axis, dim in enumerate(value.type.tensor_type.shape.dim):
            if dim.HasField("dim_value"):
                continue
            by_axis = f"{value.name}:{axis}"
            if by_axis in dims and dim.dim_param in dims:
                if dims[by_axis] != dims[dim.dim_param]:
                    raise OnnxModelError(
                        f"{path}: input {value.name!r} dim {axis} is given twice: "
                        f"{spelled(by_axis, dims[by_axis])} and "
                        f"{spelled(dim.dim_param, dims[dim.dim_param])}"
                    )
                used.add(dim.dim_param)
            name = dim.dim_param  # setting dim_value clears it (a oneof)
            key = by_axis if by_axis in dims else name
            if key in dims:
                dim.dim_value = dims[key]
                used.add(key)
                if name:
                    # Axes that share a name share its size (shape inference failed
                    # later, or planned two sizes at once).
                    given = sized.setdefault(name, (key, dims[key]))
                    if given[1] != dims[key]:
                        raise OnnxModelError(
                            f"{path}: dimension {name!r} is given two sizes: "
                            f"{spelled(*given)} and {spelled(key, dims[key])}; axes that "
                            f"share a name share its size"
                        )
            else:
                label = f"{dim.dim_param!r}" if dim.dim_param else "unnamed"
                hint = dim.dim_param if dim.dim_param else by_axis
                missing.append(f"input {value.name!r} dim {axis} ({label}): {spelled(hint, 'N')}")
    # A size given to no dimension first: it is what the user meant for a missing one
    # (`--dim X:5=4` for X's axis 0 was ignored, and the message asked for that axis).
    unused = sorted(set(dims) - used)
    if unused:
        raise OnnxModelError(f"{path}: {spelled(unused[0])}: {_why_unused(graph, unused[0])}")
    if missing:
        raise OnnxModelError(
            f"{path}: symbolic dimensions need a size: " + "; ".join(missing)
        )


def _why_unused(graph, key: str) -> str:
    """Why `key` of dims sized no dimension: an input's axis it does not have or that is
    fixed, or a name no symbolic dimension has."""
    name, _, axis = key.rpartition(":")
    inputs = {value.name: value for value in graph.input}
    if name in inputs and axis.isdigit():
        shape = inputs[name].type.tensor_type.shape.dim
        if int(axis) >= len(shape):
            count = len(shape)
            return f"input {name!r} has {count} ax{'i' if count == 1 else 'e'}s (0 to {count - 1})"
        return f"input {name!r} dim {axis} is fixed at {shape[int(axis)].dim_value}"
    return "no graph input has a symbolic dimension of that name"


def _tensor_bytes(path: str, name: str, what: str, elem_type: int, shape: list) -> int:
    if elem_type not in _ELEMENT_BYTES:
        raise OnnxModelError(
            f"{path}: tensor {name!r} ({what}) has element type {elem_type}, which has no "
            f"fixed size (strings) or is unknown"
        )
    for axis, size in enumerate(shape):
        if not isinstance(size, int):
            label = f" ({size!r})" if size else ""
            raise OnnxModelError(
                f"{path}: tensor {name!r} ({what}) dim {axis}{label} is unknown after shape "
                f"inference: its size depends on data or on an unset input dimension"
            )
    size = _ELEMENT_BYTES[elem_type] * math.prod(shape)
    if size > _MAX_BYTES:
        raise OnnxModelError(
            f"{path}: tensor {name!r} ({what}) holds {size} bytes, more than 2^64-1"
        )
    return size


def _inference_failure(error: Exception) -> str:
    """What onnx's shape inference said, cut to the first node that failed: the nodes
    after it fail for want of its output's type, and onnx lists each of them."""
    text = _one_line(error)
    nodes = re.split(r" ?\(op_type:(\w+), node name: ([^)]*)\): ", text)
    if len(nodes) < 4:  # not a list of node errors: as onnx said it
        problem = f"shape inference failed: {text}"
    else:
        # nodes: [preamble, op, name, message, op, name, message, ...]
        problem = f"shape inference failed at node '{nodes[2]}' ({nodes[1]}): {nodes[3]}"
        after = (len(nodes) - 1) // 3 - 1
        if after:
            problem += f"; {after} node{'s' if after != 1 else ''} after it failed too"
    return problem


def _infer_shapes(onnx, path: str, model):
    """onnx's shape inference, then constant folding of what it found (npumem.onnx_folding),
    again until nothing more folds: a shape computed in the graph can depend on a tensor
    whose size the previous round found."""
    from npumem.onnx_folding import MAX_ELEMENTS, fold_constants  # needs onnx

    # Only the weights' shapes matter from here on; without their data each round of
    # inference copies little.
    for tensor in model.graph.initializer:
        if math.prod(tensor.dims) > MAX_ELEMENTS:
            for data in ("raw_data", "float_data", "int32_data", "int64_data", "double_data",
                         "uint64_data", "string_data", "external_data"):
                tensor.ClearField(data)
    while True:
        try:
            # data_prop: shapes computed by Shape, Gather, Concat... are followed.
            model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True,
                                                      data_prop=True)
        except Exception as error:  # InferenceError, ValidationError
            raise OnnxModelError(f"{path}: {_inference_failure(error)}") from error
        static = {name: tuple(shape) for name, (_, shape) in _value_shapes(model.graph).items()
                  if all(isinstance(size, int) for size in shape)}
        if fold_constants(model.graph, static) == 0:
            return model
        # Inference keeps what it found before, unknown dims too: start afresh.
        del model.graph.value_info[:]


def _value_shapes(graph) -> dict[str, tuple[int, list]]:
    """name -> (element type, dims: an int, or the dim_param / '' when unknown)."""
    shapes = {}
    for value in [*graph.input, *graph.value_info, *graph.output]:
        if not value.type.HasField("tensor_type"):
            continue
        tensor_type = value.type.tensor_type
        if not tensor_type.HasField("shape"):
            continue
        dims = [dim.dim_value if dim.HasField("dim_value") else dim.dim_param
                for dim in tensor_type.shape.dim]
        shapes[value.name] = (tensor_type.elem_type, dims)
    return shapes


def _output_bytes(path: str, shapes: dict, index: int, node, name: str) -> int:
    what = f"output of {_node_name(index, node)}"
    if name not in shapes:
        raise OnnxModelError(f"{path}: tensor {name!r} ({what}) has no shape after shape inference")
    return _tensor_bytes(path, name, what, *shapes[name])


def _constant_bytes(path: str, onnx, node) -> int:
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.TENSOR:
            tensor = attribute.t
            return _tensor_bytes(path, node.output[0], "a Constant", tensor.data_type,
                                 list(tensor.dims))
    # value_float(s), value_int(s) and friends: small scalars or lists.
    return 0


def read(path: str, dims: Optional[Mapping[str, int]] = None) -> OnnxLifetimes:
    """The lifetimes of the model at `path`. dims: sizes of the graph inputs' symbolic
    dimensions, by name (`batch`) or by `INPUT:AXIS`. Raises OnnxModelError."""
    return _read(path, dims, _python_dim)


def _read(path: str, dims: Optional[Mapping[str, int]],
          spelled: Callable[..., str]) -> OnnxLifetimes:
    """read(), its errors naming a dimension as `spelled` writes it: as the caller gave it,
    `dims['batch']` in Python and `--dim batch` on the command line."""
    onnx = _import_onnx()
    path = os.fspath(path)
    dims = dict(dims or {})
    for key, size in dims.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise OnnxModelError(f"{spelled(key)}: the size must be a positive integer")
        if size == 0:
            # Empty tensors plan to nothing (and Reshape reads a 0 as "keep the size").
            raise OnnxModelError(f"{spelled(key, 0)}: an input dimension of 0 leaves nothing "
                                 "to plan; give the size the model runs with (1 or more)")
        if size > _MAX_DIM:
            raise OnnxModelError(
                f"{spelled(key, size)}: more than 2^63-1 (ONNX dimensions are 64-bit signed)"
            )
    model = _load(onnx, path)
    graph = model.graph
    _reject_subgraphs(onnx, path, graph)
    _set_input_dims(path, graph, {tensor.name for tensor in graph.initializer}, dims, spelled)
    model = _infer_shapes(onnx, path, model)
    graph = model.graph
    shapes = _value_shapes(graph)
    initializers = {tensor.name: tensor for tensor in graph.initializer}

    result = OnnxLifetimes(model=path, ops=0)
    for tensor in initializers.values():
        result.weight_tensors += 1
        result.weight_bytes += _tensor_bytes(path, tensor.name, "an initializer",
                                             tensor.data_type, list(tensor.dims))
    inputs = [value.name for value in graph.input if value.name not in initializers]
    for name in inputs:
        if name not in shapes:
            raise OnnxModelError(f"{path}: graph input {name!r} has no tensor shape")
        result.input_tensors += 1
        result.input_bytes += _tensor_bytes(path, name, "a graph input", *shapes[name])

    # The checker has made sure that the nodes are in topological order.
    order = range(len(graph.node))
    weights = set(initializers)
    op_of_node = {}
    for index in order:
        node = graph.node[index]
        standard = node.domain in ("", "ai.onnx")
        if node.op_type == "Constant" and standard:
            result.weight_tensors += 1
            result.weight_bytes += _constant_bytes(path, onnx, node)
            weights.add(node.output[0])
        elif node.input and all(not name or name in weights for name in node.input):
            # Weights only in: folded into weights before the model runs (as ATC and ONNX
            # Runtime fold constants). Identity only renames one.
            for name in filter(None, node.output):
                weights.add(name)
                if node.op_type == "Identity" and standard:
                    continue
                result.weight_tensors += 1
                result.weight_bytes += _output_bytes(path, shapes, index, node, name)
        else:
            op_of_node[index] = result.ops
            result.ops += 1

    planned: dict[str, Tensor] = {}
    buffer_of: dict[str, str] = {}  # a view -> the tensor whose buffer it is

    def buffer(name: str) -> str:
        return buffer_of.get(name, name)

    for index in order:
        if index not in op_of_node:
            continue
        node, op = graph.node[index], op_of_node[index]
        for name in node.input:
            if buffer(name) in planned:
                planned[buffer(name)].last_op = op
        if node.op_type in _VIEW_OPS and node.domain in ("", "ai.onnx") and node.input[0]:
            buffer_of[node.output[0]] = buffer(node.input[0])
            result.view_tensors += 1
            continue
        for name in node.output:
            if not name:
                continue
            planned[name] = Tensor(name, _output_bytes(path, shapes, index, node, name), op, op)
            result.tensors.append(planned[name])
    for value in graph.output:
        if buffer(value.name) in planned:
            planned[buffer(value.name)].last_op = result.ops - 1
    for what, total in (("weights", result.weight_bytes), ("inputs", result.input_bytes)):
        if total > _MAX_BYTES:
            raise OnnxModelError(f"{path}: the {what} hold {total} bytes, more than 2^64-1")
    return result


def _dim_argument(text: str) -> tuple[str, int]:
    key, sep, value = text.partition("=")
    if not sep or not key or not (value.isascii() and value.isdigit()):
        raise OnnxModelError(
            f"--dim {text!r}: expected NAME=SIZE or INPUT:AXIS=SIZE (a positive integer)"
        )
    return key, int(value)


def _dim_arguments(texts: list[str]) -> dict[str, int]:
    dims: dict[str, int] = {}
    for text in texts:
        key, size = _dim_argument(text)
        if key in dims and dims[key] != size:
            raise OnnxModelError(f"--dim {key} is given twice ({dims[key]} and {size})")
        dims[key] = size
    return dims


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m npumem.onnx_lifetimes",
        description="Tensor lifetimes of an ONNX model as lifetime records "
        "(npumem plan memory RECORDS) or JSON.",
    )
    parser.add_argument("model", help="the .onnx file")
    # Checked with the model, not by argparse: a bad one is then bad input in JSON too.
    parser.add_argument("--dim", action="append", default=[],
                        metavar="NAME=SIZE",
                        help="size of a symbolic input dimension, by name or INPUT:AXIS "
                        "(repeatable)")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object (errors too: {\"error\": ...})")
    arguments = parser.parse_args(argv)
    # Exit 2: the model is bad input; 1: this interpreter lacks onnx.
    try:
        lifetimes = _read(arguments.model, _dim_arguments(arguments.dim), _cli_dim)
    except (OnnxModelError, ImportError) as error:
        code = 2 if isinstance(error, OnnxModelError) else 1
        if arguments.json:
            print(json.dumps({"error": str(error)}))
        else:
            print(f"npumem.onnx_lifetimes: {error}", file=sys.stderr)
        return code
    if arguments.json:
        print(json.dumps(lifetimes.to_dict()))
    else:
        sys.stdout.write(lifetimes.records())
    return 0


if __name__ == "__main__":
    sys.exit(main())
