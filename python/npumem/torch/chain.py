"""A model as a chain of layers, and what each layer costs, for the shard and
checkpoint runners.

torch.fx traces the model with its direct children as leaves; the traced graph must be
a chain: every step (a child module, a function or a method) reads the previous step's
output and constants only. nn.Sequential models are chains; so is torchvision's ResNet
(conv1, bn1, relu, maxpool, layer1..layer4, avgpool, flatten, fc).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch
import torch.fx

from npumem import _core


@dataclass
class ChainLayer:
    """One step of the chain: `run(x)` gives its output."""

    name: str
    run: Callable[[torch.Tensor], torch.Tensor]
    module: Optional[torch.nn.Module]

    def tensors(self) -> list[torch.Tensor]:
        """Its parameters and buffers (none for a function step)."""
        if self.module is None:
            return []
        return [*self.module.parameters(), *self.module.buffers()]


@dataclass
class LayerCost:
    name: str
    weight_bytes: int
    activation_bytes: int  # the planners' activation of this layer (see measure_layers)
    compute_seconds: float


class _ChildrenAreLeaves(torch.fx.Tracer):
    def __init__(self, root: torch.nn.Module):
        super().__init__()
        self._children = {id(child) for child in root.children()}

    def is_leaf_module(self, module: torch.nn.Module, qualified_name: str) -> bool:
        return id(module) in self._children or super().is_leaf_module(module, qualified_name)


def chain_layers(model: torch.nn.Module) -> list[ChainLayer]:
    """The model's steps in order. Raises npumem.Error naming the model, or the step that
    breaks the chain, when torch.fx cannot trace it or the graph is not a chain."""
    title = type(model).__name__
    try:
        graph = _ChildrenAreLeaves(model).trace(model)
    except Exception as problem:  # noqa: BLE001 - fx raises many kinds; each means untraceable
        raise _core.Error(
            f"npumem: model {title} cannot be traced with torch.fx ({type(problem).__name__}: "
            f"{problem}); the runners need a model whose forward is a chain of layers, "
            f"e.g. an nn.Sequential"
        ) from problem
    layers: list[ChainLayer] = []
    previous: Optional[torch.fx.Node] = None
    for node in graph.nodes:
        if node.op == "placeholder":
            if previous is not None:
                raise _core.Error(f"npumem: model {title} takes more than one input ({node.name})")
            previous = node
            continue
        inputs = node.all_input_nodes
        if node.op == "output":
            if inputs != [previous]:
                raise _core.Error(f"npumem: model {title} must return its last layer's output")
            break
        if node.op == "get_attr" or inputs != [previous]:
            used = ", ".join(n.name for n in inputs) or "no earlier step"
            raise _core.Error(
                f"npumem: model {title} is not a chain of layers: step '{node.name}' ({node.op} "
                f"{node.target}) reads {used}, not just the previous step's output"
            )
        layers.append(_layer(model, node, previous))
        previous = node
    if not layers:
        raise _core.Error(f"npumem: model {title} has no layers")
    return layers


def _layer(model: torch.nn.Module, node: torch.fx.Node, previous: torch.fx.Node) -> ChainLayer:
    def bind(value: Any, x: torch.Tensor) -> Any:
        return torch.fx.node.map_arg(value, lambda arg: x if arg is previous else arg)

    if node.op == "call_module":
        module = model.get_submodule(node.target)

        def run_module(x: torch.Tensor) -> torch.Tensor:
            return module(*bind(node.args, x), **bind(node.kwargs, x))

        return ChainLayer(node.target, run_module, module)
    if node.op == "call_function":

        def run_function(x: torch.Tensor) -> torch.Tensor:
            return node.target(*bind(node.args, x), **bind(node.kwargs, x))

        return ChainLayer(node.name, run_function, None)

    def run_method(x: torch.Tensor) -> torch.Tensor:
        self_arg, *rest = bind(node.args, x)
        return getattr(self_arg, node.target)(*rest, **bind(node.kwargs, x))

    return ChainLayer(node.name, run_method, None)


def unique_bytes(tensors: list[torch.Tensor]) -> int:
    """Bytes of the distinct tensors (tied weights count once)."""
    seen: dict[int, int] = {}
    for tensor in tensors:
        seen[id(tensor)] = tensor.numel() * tensor.element_size()
    return sum(seen.values())


def measure_layers(
    layers: list[ChainLayer], example_input: torch.Tensor, device: Any, training: bool
) -> list[LayerCost]:
    """Runs the example through the chain once, layer by layer, on npumem's allocator,
    and measures each layer: its weights, its forward CPU time and its activation bytes.

    Inference (training=False, no autograd): the most bytes the layer allocates at once
    above what was live before it (its output included), so input + that bounds it.
    Training: the bytes its forward leaves allocated for the backward pass (its output
    and the tensors autograd saves), as the recompute planner counts activations.
    Resets the device's peak statistics."""
    costs: list[LayerCost] = []
    x = example_input
    with torch.set_grad_enabled(training):
        for layer in layers:
            device.reset_peak_stats()
            before = device.stats()["allocated_bytes.all.current"]
            # CPU time, not wall time: on a busy machine (a build beside it) wall time
            # swings per layer and reorders which layers a plan keeps.
            start = time.process_time()
            y = layer.run(x)
            seconds = time.process_time() - start
            stats = device.stats()
            output_bytes = y.numel() * y.element_size()
            if training:
                activation = max(output_bytes, stats["allocated_bytes.all.current"] - before)
            else:
                activation = max(output_bytes, stats["allocated_bytes.all.peak"] - before)
            costs.append(
                LayerCost(layer.name, unique_bytes(layer.tensors()), activation, seconds)
            )
            x = y
    return costs


def model_json(title: str, input_bytes: int, costs: list[LayerCost]) -> dict[str, Any]:
    """The planners' model description (docs/PLANNING.md) of measured layers."""
    return {
        "model": title,
        "input_bytes": input_bytes,
        "layers": [
            {
                "name": cost.name,
                "weight_bytes": cost.weight_bytes,
                "activation_bytes": cost.activation_bytes,
                "compute_ms": cost.compute_seconds * 1000.0,
            }
            for cost in costs
        ],
    }
