"""Per-thread scopes: `with npumem.pool("model_a", quota="2GiB"):` routes this thread's
allocations to a pool with a quota; `with npumem.tag("layer1"):` names the blocks
this thread allocates (snapshots and leak reports show the tag)."""

from __future__ import annotations

import sys
import threading
import warnings
from types import TracebackType
from typing import Any, Optional, Protocol, Union

from npumem import _core
from npumem.devices import DeviceLike, device_index, existing_device, get_device, make_pool
from npumem.user_frame import user_stacklevel

Size = Union[int, str]


def to_bytes(size: Size) -> int:
    """Bytes from an int or a size such as "512MiB"."""
    if isinstance(size, bool) or not isinstance(size, (int, str)):
        raise TypeError(f"a size is a number of bytes or a string such as '512MiB', not {size!r}")
    if isinstance(size, str):
        return _core.parse_size(size)
    if size < 0:
        raise ValueError(f"size {size} is negative")
    if size >= 1 << 64:
        raise ValueError(f"size {size} does not fit in 64 bits")
    return size


def create_pool(
    name: str, quota: Size = 0, device: DeviceLike = None, tier: Optional[str] = None
) -> None:
    """Creates a named pool on the device; quota 0 means none. `tier` ("hbm" or "ddr")
    pins it: its allocations come only from that tier and never spill. Raises
    ConfigError when the pool exists already or the device lacks the tier."""
    make_pool(get_device(device), _pool_name(name), to_bytes(quota), _tier(tier))


def remove_pool(name: str, device: DeviceLike = None) -> int:
    """Removes the named pool (a model unloaded from a server): its memory goes back to
    the device, a static arena too, and the name is free for create_pool() or pool()
    again, with another quota. Returns the bytes released. Raises ConfigError for the
    default pool, an unknown pool, one holding live allocations (named with their
    count and bytes: free the model's tensors first) and one a pool() scope routes to
    on any thread."""
    made = existing_device(device)
    name = _pool_name(name)
    if made is None:
        index = device_index(device)
        raise _core.ConfigError(f"unknown pool {name!r}: device {index} is not made")
    for watcher in _removal_watchers:
        watcher.check(name)
    kept = [info for info in made.pools() if info["name"] == name]
    released = made.remove_pool(name)
    removed = _removed.setdefault(made.index, [])
    for info in kept:
        earlier = sum(1 for other in removed if other["name"].startswith(f"{name} (removed"))
        info["name"] = f"{name} (removed)" if earlier == 0 else f"{name} (removed {earlier + 1})"
        removed.append(info)
    for watcher in _removal_watchers:
        watcher.removed(name)
    return released


class RemovalWatcher(Protocol):
    """What remove_pool tells besides the device (npumem.torch's recordings)."""

    def check(self, name: str) -> None:
        """Raises ConfigError to refuse the removal before anything changes."""

    def removed(self, name: str) -> None:
        """The pool was removed."""


_removal_watchers: list[RemovalWatcher] = []


def watch_pool_removals(watcher: RemovalWatcher) -> None:
    _removal_watchers.append(watcher)


def _pool_name(name: str) -> str:
    """A pool's name, checked here: other types reached the bindings, whose TypeError
    listed their signature."""
    if not isinstance(name, str):
        raise TypeError(f"a pool name is a string, not {name!r}")
    return name


def _tier(tier: Optional[str]) -> Optional[str]:
    """A tier checked for its type here (the bindings' TypeError listed their signature);
    the allocator names the tiers a device has."""
    if tier is not None and not isinstance(tier, str):
        raise TypeError(f"a tier is 'hbm', 'ddr' or None, not {tier!r}")
    return tier


def pools(device: DeviceLike = None, removed: bool = False) -> list[dict[str, Any]]:
    """Each pool of the device: name, quota_bytes, tier (None unless pinned) and its
    stats (memory_stats keys); [] for a device not made yet (making it would refuse a
    later init()). With `removed`, the pools remove_pool() removed come after the
    default one too, as they were then, named "NAME (removed)" ("(removed 2)" for a
    second): a report of a server's whole run."""
    made = existing_device(device)
    if made is None:
        return []
    listed = made.pools()
    if removed:
        listed[1:1] = [dict(info) for info in _removed.get(made.index, [])]
    return listed


# By device index: the pools remove_pool() removed, as they were then.
_removed: dict[int, list[dict[str, Any]]] = {}


class pool:  # noqa: N801 - used like torch.cuda.use_mem_pool, as a lower-case context
    """Routes this thread's allocations on the device to the pool `name` while in the
    `with` block; allocations on other threads are unaffected. The pool is created
    when it does not exist (with `quota`, or none); naming a quota that differs from
    an existing pool's raises ConfigError. `tier` ("hbm" or "ddr") pins a new pool to
    that tier (see create_pool); naming another tier than an existing pool's raises
    ConfigError."""

    def __init__(
        self,
        name: str,
        quota: Optional[Size] = None,
        device: DeviceLike = None,
        tier: Optional[str] = None,
    ):
        self.name = _pool_name(name)
        self.quota_bytes = None if quota is None else to_bytes(quota)
        self.tier = _tier(tier)
        self.device = get_device(device)
        self._scope: Optional[_core.PoolScope] = None

    def __enter__(self) -> "pool":
        if self._scope is not None:
            raise _core.Error(f"pool scope '{self.name}' is active already; a scope enters once")
        _check_recordable(self.name)
        self._ensure_pool()
        self._scope = _core.PoolScope(self.device, self.name)
        self._scope.enter()
        _scope_stack().append(self)
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        if self._scope is None:
            raise _core.Error(f"pool scope '{self.name}' is not active")
        _check_innermost(self, "pool")
        self._scope.exit()
        self._scope = None
        stack = _scope_stack()
        if self in stack:
            stack.remove(self)

    def stats(self) -> dict[str, int]:
        """The pool's statistics under memory_stats() keys."""
        return self._info()["stats"]

    def _info(self) -> dict[str, Any]:
        for info in self.device.pools():
            if info["name"] == self.name:
                return info
        raise _core.ConfigError(f"pool '{self.name}' does not exist on device {self.device.index}")

    def _ensure_pool(self) -> None:
        existing = {info["name"]: info for info in self.device.pools()}
        if self.name not in existing:
            _warn_of_a_likely_typo(self.name, existing, self.device.index)
            make_pool(self.device, self.name, self.quota_bytes or 0, self.tier)
            return
        quota = existing[self.name]["quota_bytes"]
        if self.quota_bytes is not None and self.quota_bytes != quota:
            raise _core.ConfigError(
                f"pool '{self.name}' exists with {_quota_text(quota)}, "
                f"not {_quota_text(self.quota_bytes)}"
            )
        tier = existing[self.name]["tier"]
        if self.tier is not None and self.tier != tier:
            raise _core.ConfigError(
                f"pool '{self.name}' exists pinned to {tier or 'no tier'}, not {self.tier}"
            )


def _quota_text(quota_bytes: int) -> str:
    if quota_bytes == 0:
        return "no quota"
    return f"quota {_core.format_bytes(quota_bytes)} ({quota_bytes} bytes)"


def _warn_of_a_likely_typo(name: str, existing: dict[str, Any], index: int) -> None:
    """pool() makes a pool it does not find: one that differs from an existing pool only
    in case is likely a typo, whose allocations would escape that pool's quota."""
    for other in existing:
        if other != name and other.casefold() == name.casefold():
            warnings.warn(
                f"npumem device {index}: pool '{name}' is made, with no quota, beside "
                f"pool '{other}': a typo? Its allocations do not count in '{other}'",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )


# This thread's pool and tag scopes now active, innermost last: a tag scope checked as
# pool scopes are (a second exit, or one out of order, put back a tag that was not this
# thread's), and each kind against the other (a pool closed inside a tag's scope routed
# the next allocations to 'default' under that tag, without a word).
_open_scopes = threading.local()


def _scope_stack() -> list[Any]:
    if not hasattr(_open_scopes, "stack"):
        _open_scopes.stack = []
    return _open_scopes.stack


def _check_innermost(scope: Any, kind: str) -> None:
    stack = _scope_stack()
    if scope in stack and stack[-1] is not scope:
        later = stack[-1]
        raise _core.Error(
            f"{kind} scope '{scope.name}' exits before a scope entered after it "
            f"({'tag' if isinstance(later, tag) else 'pool'} '{later.name}')"
        )


def _check_recordable(name: str) -> None:
    """While npumem.torch.record() records (`python3 -m npumem.torch capture`), a pool
    name a trace's `p` line cannot hold raises ValueError at once, not after the run."""
    recorder = sys.modules.get("npumem._torch")
    if recorder is not None and recorder.recording():
        from npumem.torch.trace import check_pool_names

        check_pool_names([name])


class tag:  # noqa: N801 - a context, like torch.autograd.profiler.record_function
    """Tags the blocks this thread allocates while in the `with` block; the previous
    tag comes back on exit. A scope enters once and exits in reverse order, on the
    thread that entered it (Error otherwise, the tags unchanged)."""

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError(f"a memory tag is a string, not {name!r}")
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"a memory tag is text UTF-8 can hold, not {name!r}") from None
        self.name = name
        self._previous: Optional[str] = None
        self._thread: Optional[int] = None

    def __enter__(self) -> "tag":
        if self._thread is not None:
            raise _core.Error(f"tag scope '{self.name}' is active already; a scope enters once")
        self._previous = _core.memory_tag()
        _core.set_memory_tag(self.name)
        self._thread = threading.get_ident()
        _scope_stack().append(self)
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        if self._thread is None:
            raise _core.Error(f"tag scope '{self.name}' is not active")
        if self._thread != threading.get_ident():
            raise _core.Error(f"tag scope '{self.name}' must exit on the thread that entered it")
        _check_innermost(self, "tag")
        _scope_stack().pop()
        _core.set_memory_tag(self._previous or "")
        self._previous = None
        self._thread = None
