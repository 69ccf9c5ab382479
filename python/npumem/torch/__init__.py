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
from typing import Optional

import torch  # noqa: F401 - loads libc10, which npumem._torch links, before it

from npumem import _core, _torch
from npumem.devices import device_index, get_device, init, is_initialized
from npumem.torch.steps import iteration, mark_optimizer_steps, tag_modules
from npumem.torch.trace import Recording, record

# Sized for a workstation: tensors beyond 4 GiB spill to DDR, and the device holds
# at most 20 GiB of real memory.
DEFAULT_SPEC = "sim:hbm=4GiB,ddr=16GiB,backing=host"


def install(
    spec: Optional[str] = None, conf: Optional[str] = None, device: int = 0
) -> _core.Device:
    """Serves PyTorch's CPU tensors from npumem device `device`, made now from `spec`
    (default: NPUMEM_DEVICE, else DEFAULT_SPEC) and `conf` (over NPUMEM_ALLOC_CONF)
    unless it exists already. The device needs host-accessible memory ("host", or
    "sim" with backing=host). Tensors made before keep their memory; one device per
    process serves PyTorch. Returns the device."""
    index = device_index(device)
    if is_initialized(index):
        chosen = get_device(index)
        if spec is not None and spec != chosen.spec:
            raise _core.ConfigError(
                f"npumem device {index} exists already with spec '{chosen.spec}', not '{spec}'"
            )
        if conf:
            raise _core.ConfigError(
                f"npumem device {index} exists already; its config cannot change to '{conf}'"
            )
    else:
        chosen = init(spec or os.environ.get("NPUMEM_DEVICE") or DEFAULT_SPEC, conf, index)
    if not chosen.host_accessible:
        raise _core.ConfigError(
            f"npumem device {index} ('{chosen.spec}') has no host memory behind it; "
            f"PyTorch's CPU tensors need 'host' or a sim device with backing=host, "
            f"e.g. '{DEFAULT_SPEC}'"
        )
    _torch.install(chosen.bridge())
    return chosen


def uninstall() -> None:
    """Puts back the CPU allocator install() replaced. Tensors npumem serves stay valid
    and return their memory to npumem when freed."""
    _torch.uninstall()


def is_installed() -> bool:
    """Whether npumem serves PyTorch's new CPU tensors now."""
    return _torch.installed()


__all__ = [
    "DEFAULT_SPEC",
    "Recording",
    "install",
    "is_installed",
    "iteration",
    "mark_optimizer_steps",
    "record",
    "tag_modules",
    "uninstall",
]
