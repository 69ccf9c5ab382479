"""PyTorch on npumem: install() makes npumem the allocator behind PyTorch's CPU tensors
(through c10::SetCPUAllocator), on an npumem device whose memory is real host memory,
so every CPU tensor lives in the device's HBM or DDR tier and npumem's statistics,
snapshots, pools, quotas and memory tags apply to a real model.

    import torch, npumem, npumem.torch
    npumem.torch.install("sim:hbm=1GiB,ddr=4GiB,backing=host")
    x = torch.randn(1024, 1024)           # served by npumem
    print(npumem.max_memory_allocated())

An allocation npumem cannot serve raises torch.cuda.OutOfMemoryError (PyTorch's
out-of-memory error, a RuntimeError) with npumem's explanation. record() captures
every CPU allocation and free as an allocation trace. `python3 -m npumem.torch run
SCRIPT.py` runs a script this way and reports at exit.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Optional

import torch  # noqa: F401 - loads libc10, which npumem._torch links, before it

from npumem import _core, _torch
from npumem.devices import (
    check_setting_types,
    device_index,
    enter_device_scope,
    get_device,
    init,
    is_initialized,
    leave_device_scope,
    set_default_device,
    settings,
)
from npumem.torch.steps import iteration, mark_optimizer_steps, tag_modules
from npumem.torch import script_runner, trace
from npumem.torch.trace import Recording, record

# Sized for a workstation: tensors beyond 4 GiB spill to DDR, and the device holds
# at most 20 GiB of real memory.
DEFAULT_SPEC = "sim:hbm=4GiB,ddr=16GiB,backing=host"

_default: Optional[_core.Device] = None  # serves threads not routed by device()
_served: dict[int, _core.Device] = {}  # every device PyTorch's tensors may live on
_routes = threading.local()  # this thread's stack of device() scopes


def install(
    spec: Optional[str] = None,
    conf: Optional[str] = None,
    device: int = 0,
    devices: Optional[int] = None,
) -> _core.Device:
    """Serves PyTorch's CPU tensors from npumem device `device`, made now from `spec`
    (default: NPUMEM_DEVICE, else DEFAULT_SPEC) and `conf` (over NPUMEM_ALLOC_CONF)
    unless it exists already. With `devices=N`, devices 0..N-1 are made (or taken) the
    same way and all serve PyTorch: `with npumem.torch.device(i):` routes a thread's new
    tensors to device i, and `device` is the default for the others. Each device needs
    host-accessible memory ("host", or "sim" with backing=host). Tensors made before
    keep their memory; devices served before stay served (their tensors free to them).
    Under strategy:planned every optimizer.step() becomes an iteration boundary
    (mark_optimizer_steps), since that strategy learns and serves per iteration; loops
    without an optimizer call npumem.torch.iteration() themselves.
    Returns the default device."""
    check_setting_types(spec, conf)
    index = device_index(device)
    indices = [index]
    if devices is not None:
        if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
            raise ValueError(f"devices is a number of devices (>= 1), not {devices!r}")
        if devices > _core.MAX_DEVICES:
            # Checked before any is made: devices live until the process exits, and 64 of
            # them made before the 65th was refused kept any later install from working.
            raise ValueError(f"devices={devices} is more than the {_core.MAX_DEVICES} a "
                             f"process can have")
        if index >= devices:
            raise _core.ConfigError(
                f"device index {index} is out of range: devices={devices} makes 0..{devices - 1}"
            )
        indices = list(range(devices))
    # Those made before first: a conflict with one is refused before any is made.
    made = {i: _host_device(i, spec, conf) for i in indices if is_initialized(i)}
    chosen = {i: made[i] if i in made else _host_device(i, spec, conf) for i in indices}
    if trace.capturing:
        # `capture` records PyTorch's own allocator: installed, npumem would take its
        # place and the script stopped here (a serving script could not be captured).
        _say_once(
            "npumem: capture: the script's npumem.torch.install() leaves PyTorch's allocator "
            "in place, which the capture records (replay the trace to run it under npumem)"
        )
        return chosen[index]
    for i in indices:
        if i != index:
            _torch.install(chosen[i].bridge())
            _served[i] = chosen[i]
    _torch.install(chosen[index].bridge())  # the last one installed is the default
    _served[index] = chosen[index]
    global _default
    _default = chosen[index]
    set_default_device(index)
    if any(settings(made)["strategy"] == "planned" for made in chosen.values()):
        mark_optimizer_steps()
    return chosen[index]


_said: set[str] = set()


def _say_once(message: str) -> None:
    if message not in _said:
        _said.add(message)
        sys.stderr.write(message + "\n")


def _host_device(index: int, spec: Optional[str], conf: Optional[str]) -> _core.Device:
    if is_initialized(index):
        chosen = get_device(index)
        # A device is made once; the same settings again (a notebook cell run twice) are
        # no change.
        if script_runner.running and (
            (spec is not None and spec != chosen.spec)
            or (conf and _core.check_config(conf) != chosen.config)
        ):
            # The script's own settings, for its runs without `run`: run's device serves it.
            _say_once(
                f"npumem: run: the script's npumem.torch.install() asks for device {index} as "
                f"'{spec or chosen.spec}'{f' with --conf {conf!r}' if conf else ''}; it runs "
                f"on run's ({chosen.spec}): give run --device/--conf to change it"
            )
            return chosen
        if spec is not None and spec != chosen.spec:
            raise _core.ConfigError(
                f"npumem device {index} exists already with spec '{chosen.spec}', not "
                f"'{spec}' (a device is made once; under `python3 -m npumem.torch run`, "
                f"give the spec with --device)"
            )
        if conf and _core.check_config(conf) != chosen.config:
            raise _core.ConfigError(
                f"npumem device {index} exists already; its config cannot change to '{conf}' "
                f"(a device is made once; under `python3 -m npumem.torch run`, give the "
                f"config with --conf)"
            )
        if not chosen.host_accessible:
            raise _no_host_memory(index, chosen.spec)
        return chosen
    if spec == "":
        raise _core.ConfigError(
            "an empty device spec names no device; leave it out for NPUMEM_DEVICE, else "
            f"'{DEFAULT_SPEC}'"
        )
    wanted = spec or os.environ.get("NPUMEM_DEVICE") or DEFAULT_SPEC
    # Where the spec came from, for errors: the user may never have written one in code.
    source = "" if spec or not os.environ.get("NPUMEM_DEVICE") else "NPUMEM_DEVICE: "
    # Checked before the device is made: made, it would keep the refused spec. A spec
    # that does not parse is named as such, not as one without host memory.
    try:
        _core.check_device_spec(wanted)
    except _core.ConfigError as error:
        raise _core.ConfigError(f"{source}{error}") from None
    if not _core.spec_is_host_accessible(wanted):
        raise _core.ConfigError(f"{source}{_no_host_memory(index, wanted)}")
    return init(wanted, conf, index)


def _no_host_memory(index: int, spec: str) -> _core.ConfigError:
    # A GPU's or NPU's memory cannot hold CPU tensors: such a device takes PyTorch's
    # pluggable allocator instead (a trial read the refusal as a missing backend).
    accelerator = spec.split(":", 1)[0] in ("cuda", "acl")
    return _core.ConfigError(
        f"npumem device {index} ('{spec}') has no host memory behind it; "
        f"npumem.torch serves PyTorch's CPU tensors, which need 'host' or a sim device with "
        f"backing=host, e.g. '{DEFAULT_SPEC}'"
        + (
            "; for the accelerator's own tensors, load libnpumem.so as PyTorch's pluggable "
            "allocator (docs/CUDA.md, docs/ASCEND.md)"
            if accelerator
            else ""
        )
    )


def installed_device(device: Optional[int] = None) -> _core.Device:
    """A device that serves PyTorch's CPU tensors: `device`, or the one this thread's
    tensors go to now. Raises npumem.Error when install() has not run (or uninstall()
    followed it), ConfigError naming the served devices for an index that is not one."""
    if _default is None or not is_installed():
        if trace.capturing:
            # A script that installs and reads its device died under capture with "call
            # install() first", though it had.
            raise _core.Error(
                "npumem does not serve PyTorch's tensors under `capture`: the script's "
                "install() leaves PyTorch's allocator in place, which the capture records; "
                "run the script plainly or under `python3 -m npumem.torch run` to use its device"
            )
        raise _core.Error(
            "npumem does not serve PyTorch's tensors: call npumem.torch.install() first"
        )
    if device is None:
        stack = getattr(_routes, "stack", None)
        return stack[-1] if stack else _default
    index = device_index(device)
    if index not in _served:
        served = ", ".join(str(i) for i in sorted(_served))
        raise _core.ConfigError(
            f"device index {index} is out of range: PyTorch's tensors are served by npumem "
            f"device{'s' if len(_served) > 1 else ''} {served} (install(devices=N) serves more)"
        )
    return _served[index]


class device:  # noqa: N801 - a context, like torch.cuda.device
    """Routes this thread's new CPU tensors to served device `index` while in the `with`
    block (other threads are unaffected; frees find their device by address). Raises
    ConfigError naming the served devices for an index that is not one of them."""

    def __init__(self, index: int):
        self.device = installed_device(index)

    def __enter__(self) -> _core.Device:
        stack = _routes.__dict__.setdefault("stack", [])
        stack.append(self.device)
        _torch.route(self.device.bridge())
        enter_device_scope(self.device.index)
        return self.device

    def __exit__(self, *exc_info: object) -> None:
        stack = _routes.stack
        if not stack or stack[-1] is not self.device:
            raise _core.Error("npumem.torch.device scopes must close in reverse order")
        stack.pop()
        leave_device_scope()
        _torch.route(stack[-1].bridge() if stack else None)


def uninstall() -> None:
    """Puts back the CPU allocator install() replaced. Tensors npumem serves stay valid
    and return their memory to npumem when freed."""
    _torch.uninstall()


def is_installed() -> bool:
    """Whether npumem serves PyTorch's new CPU tensors now."""
    return _torch.installed()


from npumem.torch.checkpointing import CheckpointedModel, checkpoint  # noqa: E402
from npumem.torch.sharding import ShardedModel, shard  # noqa: E402

__all__ = [
    "DEFAULT_SPEC",
    "CheckpointedModel",
    "Recording",
    "ShardedModel",
    "checkpoint",
    "device",
    "install",
    "installed_device",
    "is_installed",
    "iteration",
    "mark_optimizer_steps",
    "record",
    "shard",
    "tag_modules",
    "uninstall",
]
