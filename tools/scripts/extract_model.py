#!/usr/bin/python3
"""Extracts what `npumem plan` needs from a PyTorch model, with torch.fx.

Traces the model symbolically, runs it once on a random input and writes:

  --records FILE  tensor lifetime records for `npumem plan memory`: one line per
                  intermediate activation buffer, `<bytes> <first_op> <last_op>`, op
                  indices being positions in the fx graph (0 is the input placeholder).
                  Views, reshapes, in-place ops and tuple indexing are folded into the
                  buffer that owns the storage; weights and the input are excluded; graph
                  outputs live to the last op.
  --layers FILE   the model as a chain of layers for `npumem plan shard|recompute`: one
                  layer per buffer-producing node, with the weights it reads first and its
                  output bytes (with --time, its measured CPU time as compute_ms).

MODEL is a torchvision model name (resnet18, vit_b_16, ...) or `package.module:factory`
for a function returning an nn.Module. Example:

  npumem-extract-model resnet18 --records r18.records --layers r18.json
  (in a checkout: /usr/bin/python3 tools/scripts/extract_model.py ...)
"""

import argparse
import dis
import importlib
import inspect
import json
import os
import sys
import time

import torch
import torch.fx


def fail(message):
    """Bad input: one line naming it, exit 2 (as npumem's commands do)."""
    print(f"extract_model: {message}", file=sys.stderr)
    sys.exit(2)


def first_line(error):
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


def make_model(spec, factory):
    """Calls the factory; anything but an nn.Module out of it is bad input."""
    if not callable(factory):
        fail(f"{spec} is not a model factory to call (it is a {type(factory).__name__})")
    try:
        model = factory()
    except Exception as error:  # a factory that needs arguments, or fails
        fail(f"{spec}() did not make a model: {first_line(error)}")
    if not isinstance(model, torch.nn.Module):
        fail(f"{spec} did not make a torch.nn.Module (it returned {type(model).__name__})")
    return model.eval()


def build_model(spec):
    """An nn.Module in eval mode from a torchvision name or `module:factory`."""
    if ":" in spec:
        module_name, factory_name = spec.split(":", 1)
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            fail(f"cannot import module '{module_name}' ({error})")
        if not hasattr(module, factory_name):
            fail(f"module '{module_name}' has no '{factory_name}' to call")
        return make_model(spec, getattr(module, factory_name))
    import torchvision

    if not hasattr(torchvision.models, spec):
        fail(f"unknown torchvision model '{spec}'")
    return make_model(spec, getattr(torchvision.models, spec))


def parse_shape(text):
    try:
        shape = [int(part) for part in text.split(",")]
    except ValueError:
        shape = []
    if not shape or any(size <= 0 for size in shape):
        fail(f"--input wants positive sizes like 1,3,224,224, got '{text}'")
    return shape


def check_output(option, path):
    """An output path that cannot be a file fails before the model runs."""
    if os.path.isdir(path):
        fail(f"{option} {path}: is a directory, not a file to write")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        fail(f"{option} {path}: no directory {directory}")


def unpack_proxy(proxy):
    """Proxy.__iter__ that can unpack (`n, c, h, w = x.shape` in torchvision's ViT).
    torch.fx 1.13 finds the unpacking instruction by indexing the bytecode with
    f_lasti // 2, which Python 3.11's inline caches broke; this looks it up by offset."""
    caller = inspect.currentframe().f_back
    for instruction in dis.get_instructions(caller.f_code):
        if instruction.offset == caller.f_lasti and instruction.opname == "UNPACK_SEQUENCE":
            return (proxy[i] for i in range(instruction.argval))
    return proxy.tracer.iter(proxy)


def trace(model):
    # Every proxy class (Attribute too) inherits __iter__ from Proxy, so patch it there.
    torch.fx.proxy.Proxy.__iter__ = unpack_proxy
    return torch.fx.symbolic_trace(model)


def tensors_in(value):
    """The tensors in a node's output (a tensor, or tuples/lists/dicts of them)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in tensors_in(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in tensors_in(item)]
    return []


def storage_key(tensor):
    return tensor.storage().data_ptr()


def storage_bytes(tensor):
    return tensor.storage().size() * tensor.element_size()


class Recorder(torch.fx.Interpreter):
    """Runs the graph, noting each node's output storages and, optionally, its time."""

    def __init__(self, module, timed):
        super().__init__(module)
        self.timed = timed
        self.outputs = {}  # node -> list of output tensors
        self.seconds = {}  # node -> seconds

    def run_node(self, node):
        start = time.perf_counter()
        result = super().run_node(node)
        self.seconds[node] = time.perf_counter() - start if self.timed else 0.0
        self.outputs[node] = tensors_in(result)
        return result


def module_weight_bytes(module):
    tensors = list(module.parameters()) + list(module.buffers())
    return sum(t.numel() * t.element_size() for t in tensors)


class Extraction:
    """Buffers (storages) with their lifetimes, and the layers that produce them."""

    def __init__(self, graph_module, recorder):
        self.nodes = list(graph_module.graph.nodes)
        self.index = {node: i for i, node in enumerate(self.nodes)}
        self.owner = {}  # storage key -> node index that created it
        self.bytes = {}  # storage key -> bytes
        self.last_use = {}  # storage key -> last op index
        self.excluded = set()  # storages of the input and of weights
        self.node_storages = {}  # node -> storage keys it outputs
        self._collect(graph_module, recorder)

    def _collect(self, graph_module, recorder):
        output_index = len(self.nodes) - 1
        for i, node in enumerate(self.nodes):
            keys = []
            for tensor in recorder.outputs.get(node, []):
                key = storage_key(tensor)
                keys.append(key)
                if key in self.owner or key in self.excluded:
                    continue
                if node.op in ("placeholder", "get_attr") or self._is_weight(graph_module, tensor):
                    self.excluded.add(key)
                    continue
                self.owner[key] = i
                self.bytes[key] = storage_bytes(tensor)
                self.last_use[key] = i
            self.node_storages[node] = keys
            for used in node.all_input_nodes:
                for key in self.node_storages.get(used, []):
                    if key in self.owner:
                        self.last_use[key] = max(self.last_use[key], i)
            if node.op == "output":
                for used in node.all_input_nodes:
                    for key in self.node_storages.get(used, []):
                        if key in self.owner:
                            self.last_use[key] = output_index

    @staticmethod
    def _is_weight(graph_module, tensor):
        key = storage_key(tensor)
        return any(storage_key(t) == key for t in graph_module.parameters()) or any(
            storage_key(t) == key for t in graph_module.buffers()
        )

    def records(self):
        keys = sorted(self.owner, key=lambda k: (self.owner[k], k))
        return [(self.bytes[k], self.owner[k], self.last_use[k]) for k in keys]

    def layers(self, graph_module, recorder):
        """One layer per buffer-producing node; alias nodes add their time to the layer
        that owns their storage, weights count at their first reader."""
        modules = dict(graph_module.named_modules())
        layers = []
        layer_of_node = {}
        seen_modules = set()
        pending_weights = 0
        for node in self.nodes:
            if node.op == "get_attr":
                value = recorder.outputs.get(node, [])
                pending_weights += sum(t.numel() * t.element_size() for t in value)
                continue
            if node.op in ("placeholder", "output"):
                continue
            weights = 0
            if node.op == "call_module" and node.target not in seen_modules:
                seen_modules.add(node.target)
                weights = module_weight_bytes(modules[node.target])
            owned = [k for k in self.node_storages[node] if self.owner.get(k) == self.index[node]]
            if owned:
                layer = {
                    "name": node.name,
                    "weight_bytes": weights + pending_weights,
                    "activation_bytes": sum(self.bytes[k] for k in owned),
                    "seconds": recorder.seconds[node],
                }
                pending_weights = 0
                layers.append(layer)
                layer_of_node[node] = layer
                continue
            # An alias (view, in-place op, getitem): charge the layer that owns its storage.
            target = layers[-1] if layers else None
            for used in node.all_input_nodes:
                if used in layer_of_node:
                    target = layer_of_node[used]
            if target is not None:
                target["weight_bytes"] += weights
                target["seconds"] += recorder.seconds[node]
            layer_of_node[node] = target
        return layers


def write_records(path, model_name, shape, extraction):
    records = extraction.records()
    with open(path, "w") as out:
        out.write(f"# model: {model_name}; input {'x'.join(map(str, shape))} float32; "
                  f"torch.fx symbolic_trace, PyTorch {torch.__version__}\n")
        out.write(f"# ops: {len(extraction.nodes)} graph nodes (0 = input placeholder); "
                  f"records: {len(records)}\n")
        out.write("# size_bytes first_op last_op\n")
        for size, first, last in records:
            out.write(f"{size} {first} {last}\n")


def write_layers(path, model_name, input_bytes, layers, timed):
    items = []
    for layer in layers:
        item = {
            "name": layer["name"],
            "weight_bytes": layer["weight_bytes"],
            "activation_bytes": layer["activation_bytes"],
        }
        if timed:
            item["compute_ms"] = layer["seconds"] * 1000.0
        items.append(item)
    with open(path, "w") as out:
        json.dump({"model": model_name, "input_bytes": input_bytes, "layers": items}, out, indent=1)
        out.write("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="torchvision model name, or package.module:factory")
    parser.add_argument("--input", default="1,3,224,224", help="input shape (default 1,3,224,224)")
    parser.add_argument("--records", help="write tensor lifetime records here")
    parser.add_argument("--layers", help="write the layer list (JSON) here")
    parser.add_argument("--time", action="store_true", help="measure each layer's CPU time (compute_ms)")
    args = parser.parse_args()
    if not args.records and not args.layers:
        parser.error("give --records and/or --layers")
    for option, path in (("--records", args.records), ("--layers", args.layers)):
        if path:
            check_output(option, path)
    torch.manual_seed(0)
    shape = parse_shape(args.input)
    model = build_model(args.model)
    try:
        graph_module = trace(model)
    except Exception as error:  # torch.fx's TraceError and what tracing runs into
        fail(f"{args.model} cannot be traced with torch.fx (data-dependent control flow?): "
             f"{first_line(error)}")
    example = torch.randn(*shape)
    recorder = Recorder(graph_module, args.time)
    try:
        with torch.no_grad():
            recorder.run(example)
    except RuntimeError as error:
        fail(f"{args.model} cannot run on an input of shape {args.input}: {first_line(error)}")
    extraction = Extraction(graph_module, recorder)
    if args.records:
        write_records(args.records, args.model, shape, extraction)
    if args.layers:
        layers = extraction.layers(graph_module, recorder)
        write_layers(args.layers, args.model, storage_bytes(example), layers, args.time)
    return 0


if __name__ == "__main__":
    sys.exit(main())
