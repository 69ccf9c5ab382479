"""Iteration boundaries and module attribution for PyTorch scripts on npumem.

iteration() marks the start of an iteration (training step, inference batch) on the
npumem devices (Allocator::mark_iteration: the leak check and strategies that learn
per iteration see it) and in an allocation recording (an `i` line).
mark_optimizer_steps() makes every optimizer.step() such a boundary.
tag_modules() tags the memory each nn.Module's forward allocates with the module's
path ("ResNet.layer1.0.conv1"), so snapshots, the HTML timeline and the leak report
name the module that made it."""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Optional

import torch
import torch.optim.optimizer as optimizer_module  # torch.optim deletes this name

from npumem import _core, _torch
from npumem.devices import (
    DeviceLike,
    device_index,
    existing_device,
    initialized_devices,
)


def iteration(device: DeviceLike = None, key: Optional[int] = None) -> None:
    """Marks an iteration boundary on `device` (None: every npumem device made so far)
    and in a running recording; a device not made yet is left alone. `key` (an int
    >= 0, e.g. the batch size or the sequence-length bucket) names the shape of the
    iteration that begins here (call it before the step): strategy:planned keeps a plan
    per key and serves the iteration by it (an `i <key>` line in a recording).
    A script that calls it marks its own iterations: the boundaries mark_optimizer_steps()
    adds at optimizer.step() stop from then on, on the devices it marks (both made two
    iterations of each step)."""
    if key is not None:
        message = f"an iteration key is an int from 0 to 2**64 - 1, not {key!r}"
        if isinstance(key, bool) or not isinstance(key, int):
            raise TypeError(message)
        if not 0 <= key < 1 << 64:
            raise ValueError(message)
    if device is None:
        _optimizer_steps.script_marks_all = True
        _mark(initialized_devices(), key)
        return
    _optimizer_steps.script_marked.add(device_index(device))
    made = existing_device(device)  # a device made later learns from its own start
    _mark([made] if made is not None else [], key)


def _mark(devices: list[_core.Device], key: Optional[int]) -> None:
    """One boundary: an `i` line in a running recording, and a mark on each device."""
    _torch.record_iteration(key)
    for made in devices:
        made.mark_iteration(key)


def _devices_holding(optimizer: Any) -> list[_core.Device]:
    """The npumem devices that hold any of the optimizer's parameters."""
    pointers = [
        param.data_ptr()
        for group in optimizer.param_groups
        for param in group["params"]
        if param.data_ptr() != 0
    ]
    held = []
    for made in initialized_devices():
        for pointer in pointers:
            try:
                made.tier_of(pointer)
            except _core.InvalidPointerError:
                continue
            held.append(made)
            break
    return held


class _OptimizerSteps:
    """optimizer.step() ends an iteration on the devices that hold its parameters
    (every device when none does): with a model per device, each device's iterations
    are its own model's steps, not every model's. PyTorch 1.13 has no step hook; every
    step calls Optimizer._optimizer_step_code() (the profiler's hook point), which is
    wrapped here. Newer PyTorch has register_optimizer_step_post_hook."""

    def __init__(self) -> None:
        self.active = False
        # iteration() was called, for every device or for these: the script marks its own.
        self.script_marks_all = False
        self.script_marked: set[int] = set()
        self._installed = False
        # Found at an optimizer's first step: its parameters stay where they were made.
        self._devices: "weakref.WeakKeyDictionary[Any, list[_core.Device]]" = (
            weakref.WeakKeyDictionary()
        )

    def start(self) -> None:
        self.active = True
        if self._installed:
            return
        register = getattr(optimizer_module, "register_optimizer_step_post_hook", None)
        if register is not None:
            register(lambda optimizer, *_: self._step(optimizer))
        else:
            original: Callable[[Any], None] = torch.optim.Optimizer._optimizer_step_code

            def step_code(optimizer: Any) -> None:
                original(optimizer)
                self._step(optimizer)

            torch.optim.Optimizer._optimizer_step_code = step_code
        self._installed = True

    def _step(self, optimizer: Any) -> None:
        if not self.active or self.script_marks_all:
            return
        devices = self._devices.get(optimizer)
        if devices is None:
            devices = _devices_holding(optimizer)
            self._devices[optimizer] = devices
        devices = devices or initialized_devices()
        unmarked = [made for made in devices if made.index not in self.script_marked]
        # With no device (a recording under PyTorch's allocator) the mark is the `i` line.
        if unmarked or not devices:
            _mark(unmarked, None)


_optimizer_steps = _OptimizerSteps()


def mark_optimizer_steps(enabled: bool = True) -> None:
    """From now on (until called with False, or the script calls iteration() itself),
    every optimizer.step() is an iteration boundary, after the step."""
    if not isinstance(enabled, bool):
        raise TypeError(f"mark_optimizer_steps takes True or False, not {enabled!r}")
    if enabled:
        _optimizer_steps.script_marks_all = False
        _optimizer_steps.script_marked.clear()
        _optimizer_steps.start()
    else:
        _optimizer_steps.active = False


class tag_modules:  # noqa: N801 - a context, like npumem.tag
    """While active, the memory a module's forward allocates is tagged with the module's
    path: the outermost module by its class name ("Linear#2" for the second of a class
    seen outermost), its submodules by their dotted names under it
    ("ResNet.layer1.0.conv1"). Tags nest and the previous one comes back.
    In backward, the gradients computed from a leaf module's output on are tagged
    "<path> (backward)" (a hook on the output's grad_fn; CPU backward runs in the
    calling thread), until the next leaf module's; the caller's tag comes back when
    backward() returns."""

    def __init__(self) -> None:
        self._names: "weakref.WeakKeyDictionary[torch.nn.Module, str]" = weakref.WeakKeyDictionary()
        self._root_counts: dict[str, int] = {}
        self._lone: set[str] = set()  # names given to leaf modules seen as roots
        self._local = threading.local()
        self._handles: list[Any] = []

    def __enter__(self) -> "tag_modules":
        hooks = torch.nn.modules.module
        self._handles = [
            hooks.register_module_forward_pre_hook(self._enter_module),
            hooks.register_module_forward_hook(self._leave_module),
        ]
        self._backward = torch.autograd.backward

        def backward(*args: Any, **kwargs: Any) -> Any:
            previous = _core.memory_tag()
            try:
                return self._backward(*args, **kwargs)
            finally:
                _core.set_memory_tag(previous)

        torch.autograd.backward = backward
        return self

    def __exit__(self, *_: object) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        torch.autograd.backward = self._backward

    def name_of(self, module: torch.nn.Module) -> str:
        name = self._names.get(module)
        if name is None:
            root = self._root_name(module)
            for path, submodule in module.named_modules():
                # A submodule seen alone before (its own root) takes its path under this one.
                known = self._names.get(submodule)
                if known is None or (path and known in self._lone):
                    self._names[submodule] = f"{root}.{path}" if path else root
            name = self._names[module]
        return name

    def _root_name(self, module: torch.nn.Module) -> str:
        """The class name; a second module of the class seen as a root gets "#2", and so
        on: submodules called directly, never through their parent, were all "Linear"."""
        base = type(module).__name__
        count = self._root_counts.get(base, 0) + 1
        self._root_counts[base] = count
        name = base if count == 1 else f"{base}#{count}"
        if next(module.children(), None) is None:
            self._lone.add(name)
        return name

    def _stack(self) -> list[str]:
        stack: Optional[list[str]] = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def _enter_module(self, module: torch.nn.Module, _inputs: Any) -> None:
        self._stack().append(_core.memory_tag())
        _core.set_memory_tag(self.name_of(module))

    def _leave_module(self, module: torch.nn.Module, _inputs: Any, output: Any) -> None:
        stack = self._stack()
        _core.set_memory_tag(stack.pop() if stack else "")
        grad_fn = getattr(output, "grad_fn", None)
        if grad_fn is not None and next(module.children(), None) is None:
            backward_tag = self.name_of(module) + " (backward)"
            grad_fn.register_prehook(lambda _grads: _core.set_memory_tag(backward_tag))


__all__ = ["iteration", "mark_optimizer_steps", "tag_modules"]
