"""npumem devices by index, each with its allocator, made on first use.

A device comes from a device spec ("sim:hbm=16GiB,ddr=32GiB", "host"; see
docs/DEVICES.md) and a config string ("key:value,..." read over NPUMEM_ALLOC_CONF).
Unless init() made it first, device N is made from NPUMEM_DEVICE (default "sim").
Devices live until the process exits: tensors may hold their memory until then.
"""

from __future__ import annotations

import os
import threading
import warnings
from typing import Callable, Optional, Union

from npumem import _core
from npumem.user_frame import user_stacklevel

DEFAULT_SPEC = "sim"

DeviceLike = Union[int, _core.Device, None]

_creation_lock = threading.Lock()

# The device None names, as torch.cuda's current device: this thread's innermost
# npumem.torch.device(i) scope, else the device npumem.torch.install() made the default
# for PyTorch's tensors, else 0. (None always meant 0: inside `device(1)`, tensors went
# to device 1 while npumem.pool() and memory_allocated() used device 0.)
_scopes = threading.local()
_default_index = 0

# A forked child (torch.multiprocessing, DataLoader workers) shows in `npumem smi` as itself.
os.register_at_fork(after_in_child=_core.publish_after_fork)


def environment_spec() -> str:
    """NPUMEM_DEVICE, or "sim" when it is unset or empty (as the C ABI reads it)."""
    return os.environ.get("NPUMEM_DEVICE") or DEFAULT_SPEC


def init(spec: Optional[str] = None, conf: Optional[str] = None, device: int = 0) -> _core.Device:
    """Makes device `device` from `spec` (default: NPUMEM_DEVICE, else "sim") with the
    settings `conf` over NPUMEM_ALLOC_CONF. Raises ConfigError for a bad spec or config,
    or when that device exists already (init must come before first use)."""
    index = device_index(device)
    spec_source = ""
    if spec is None:
        spec, spec_source = environment_spec(), "NPUMEM_DEVICE"
    check_setting_types(spec, conf)
    _check_static_size(conf or "")
    with _creation_lock:
        made = _core.create_device(index, spec, conf or "", spec_source)
    return _made(made)


def check_setting_types(spec: Optional[str], conf: Optional[str]) -> None:
    """TypeError naming what a device spec and a config are, for anything but strings
    (None: not given)."""
    if spec is not None and not isinstance(spec, str):
        raise TypeError(f"a device spec is a string such as 'sim', not {spec!r}")
    if conf is not None and not isinstance(conf, str):
        raise TypeError(f"a config is a string such as 'strategy:expandable', not {conf!r}")


def _check_static_size(conf: str) -> None:
    """The static strategy's arena size, asked for where the strategy was set: the
    allocator's own error did not say whether that was `conf` or NPUMEM_ALLOC_CONF."""
    chosen = dict(item.split(":", 1) for item in _core.check_config(conf).split(","))
    if chosen["strategy"] != "static" or chosen.get("static_size", "0") != "0":
        return
    given = {item.split(":", 1)[0].strip() for item in conf.split(",") if ":" in item}
    source = "conf" if "strategy" in given else "NPUMEM_ALLOC_CONF"
    raise _core.ConfigError(
        f"{source}: strategy:static needs static_size:<bytes> (the arena size; "
        f"`npumem replay TRACE --strategy static --advise` finds one)"
    )


def get_device(device: DeviceLike = None) -> _core.Device:
    """The device at `device` (an index, a Device, or None for current_device()), made from
    NPUMEM_DEVICE and NPUMEM_ALLOC_CONF when it does not exist yet."""
    if isinstance(device, _core.Device):
        return device
    index = device_index(device)
    with _creation_lock:
        found = _core.find_device(index)
        if found is not None:
            return found
        _check_static_size("")
        made = _core.create_device(index, environment_spec(), "", "NPUMEM_DEVICE")
    return _made(made)


def existing_device(device: DeviceLike = None) -> Optional[_core.Device]:
    """The device at `device` if it exists already, else None: what reads and resets
    use, so that they make no device an init() with other settings would then refuse."""
    if isinstance(device, _core.Device):
        return device
    return _core.find_device(device_index(device))


# Called with each device made from now on (history recording asked for before it).
_made_listeners: list[Callable[[_core.Device], None]] = []


def when_made(listener: Callable[[_core.Device], None]) -> None:
    """Calls `listener` with every device init() or get_device() makes from now on."""
    _made_listeners.append(listener)


def _made(device: _core.Device) -> _core.Device:
    _warn(device)
    for listener in _made_listeners:
        listener(device)
    return device


def _warn(device: _core.Device, seen: int = 0) -> None:
    """The allocator's warnings after the first `seen` as Python warnings at the user's
    line: those of its construction (e.g. "expandable_segments feature is not supported
    by device ...") once, when the device is made; a pool's, when the pool is made."""
    for message in device.warnings[seen:]:
        warnings.warn(
            f"npumem device {device.index}: {message}",
            RuntimeWarning,
            stacklevel=user_stacklevel(),
        )


def make_pool(device: _core.Device, name: str, quota_bytes: int, tier: Optional[str]) -> None:
    """Creates the pool; what the allocator says of it (a quota not in whole granules)
    comes as a RuntimeWarning at the user's line."""
    seen = len(device.warnings)
    device.create_pool(name, quota_bytes, tier)
    _warn(device, seen)


def is_initialized(device: DeviceLike = None) -> bool:
    """Whether the device exists already (made by init() or by first use)."""
    return existing_device(device) is not None


def initialized_devices() -> list[_core.Device]:
    """Every device made so far, by index."""
    return [_core.find_device(index) for index in _core.device_indices()]


def settings(made: _core.Device) -> dict[str, str]:
    """The device's allocator settings, key to value, as its `config` string spells them
    ("strategy:planned,granule:512,...")."""
    return dict(item.split(":", 1) for item in made.config.split(","))


def current_device() -> int:
    """The index None names (see _scopes above)."""
    stack = getattr(_scopes, "stack", None)
    return stack[-1] if stack else _default_index


def enter_device_scope(index: int) -> None:
    """npumem.torch.device(index) begins on this thread."""
    _scopes.__dict__.setdefault("stack", []).append(index)


def leave_device_scope() -> None:
    """The innermost npumem.torch.device scope of this thread ends."""
    _scopes.stack.pop()


def set_default_device(index: int) -> None:
    """The device PyTorch's tensors go to outside device() scopes (npumem.torch.install)."""
    global _default_index
    _default_index = index


def device_index(device: DeviceLike) -> int:
    """The index `device` names: None is current_device()."""
    if device is None:
        return current_device()
    if isinstance(device, _core.Device):
        return device.index
    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(f"a device is an index (int), an npumem Device or None, not {device!r}")
    if device < 0:
        raise ValueError(f"device index {device} is negative")
    if device >= _core.MAX_DEVICES:
        raise ValueError(f"device index {device} is out of range [0, {_core.MAX_DEVICES})")
    return device
