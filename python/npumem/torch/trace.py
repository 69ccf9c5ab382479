"""Allocation traces of real PyTorch runs, in the shared format of ../shared/traces:
`a <id> <bytes>` allocates under a fresh id, `f <id>` frees it, `i` starts an
iteration, `p <name> [<quota>]` routes the allocations after it to a pool, `r <name>`
removes it, `#` lines are comments. record() captures every CPU allocation and free
with its exact size, the iteration boundaries (npumem.torch.iteration(),
optimizer.step()), the pool each allocation was made in (npumem.pool()) with its
quota, and the pools removed (npumem.remove_pool())."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from types import TracebackType
from typing import Iterable, Optional, Sequence, TextIO, Union

import torch

from npumem import _core, _torch
from npumem.scopes import watch_pool_removals

# (kind, id, bytes): kind "a" (bytes requested), "f" (bytes 0), "i" (id 1 and bytes the
# key when keyed, else both 0), "p" (id: the index of the pool's name in `pools`, bytes
# its quota), "r" (the pool removed; id as "p") or "t" (id: the index of the memory tag in
# `tags`; "" clears it).
Event = tuple[str, int, int]


class _RecordedRemovals:
    """remove_pool() while recording. A capture runs on PyTorch's own allocator, so the
    npumem device holds none of the pool's tensors and would remove it with tensors
    live, which npumem refuses: the recording sees them and refuses as npumem does (a
    capture recorded removals its live run had refused). A removal is an `r` line."""

    def check(self, name: str) -> None:
        count, size = _torch.live_in_pool(name)
        if count:
            plural = "" if count == 1 else "s"
            raise _core.ConfigError(
                f"pool {name!r} holds {count} live allocation{plural} "
                f"({_core.format_bytes(size)}); free them before removing it"
            )

    def removed(self, name: str) -> None:
        _torch.record_pool_removal(name)


watch_pool_removals(_RecordedRemovals())

# While `python3 -m npumem.torch capture` runs its script: install() then leaves
# PyTorch's allocator in place, which the capture records.
capturing = False

# The separators of a trace line's fields, which a `p` line's name cannot hold.
_FIELD_SEPARATORS = (" ", "\t", "\r", "\n")


@dataclass
class Recording:
    """The events of one recording; filled when the `with record()` block ends."""

    events: list[Event] = field(default_factory=list)
    pools: list[str] = field(default_factory=list)  # the names "p" events index
    tags: list[str] = field(default_factory=list)  # the tags "t" events index

    @property
    def allocations(self) -> int:
        return sum(1 for kind, _, _ in self.events if kind == "a")

    @property
    def memory_events(self) -> int:
        """Allocations and frees: the `events` `npumem replay` counts (no `i` lines)."""
        return sum(1 for kind, _, _ in self.events if kind in ("a", "f"))

    def peak_live_bytes(self) -> int:
        """The largest sum of live requested bytes at any point of the recording."""
        return peak_live_bytes(self.events)

    def write(self, path: Union[str, TextIO], what: str) -> None:
        """Writes the trace file (a path, or a file open for writing) with a header
        naming `what` was run."""
        write_trace(path, self.events, what, self.pools, self.tags)


class record:  # noqa: N801 - a context, like torch.autograd.profiler.record_function
    """Records every PyTorch CPU allocation and free in the `with` block, over the
    allocator in use (PyTorch's default, or npumem after install()). Allocations made
    before the block are not recorded, nor are their frees; zero-byte allocations
    hold no memory and are not recorded."""

    def __init__(self) -> None:
        self.recording = Recording()

    def __enter__(self) -> Recording:
        _torch.start_recording(_core.scope_bridge())
        return self.recording

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.recording.events, self.recording.pools, self.recording.tags = (
            _torch.stop_recording()
        )


def quota_excesses(events: Iterable[Event], pools: Sequence[str]) -> list[tuple[str, int, int]]:
    """(pool, peak live requested bytes, quota) for each making of a pool whose live
    requested bytes passed its quota: a capture, on PyTorch's own allocator, records
    what npumem would have refused with OutOfMemoryError there (and a replay stops)."""
    quotas: dict[int, int] = {}
    current: dict[int, int] = {}
    peaks: dict[int, int] = {}
    live: dict[int, tuple[Optional[int], int]] = {}
    pool: Optional[int] = None
    excesses = []

    def close(index: int) -> None:
        if quotas.get(index) and peaks.get(index, 0) > quotas[index]:
            excesses.append((pools[index], peaks[index], quotas[index]))
        quotas.pop(index, None)
        peaks.pop(index, None)

    for kind, ident, size in events:
        if kind == "p":
            pool = None if pools[ident] == "default" else ident
            if size and pool is not None:
                quotas.setdefault(pool, size)
        elif kind == "r":
            close(ident)
            pool = None if pool == ident else pool
        elif kind == "a":
            live[ident] = (pool, size)
            if pool is not None:
                current[pool] = current.get(pool, 0) + size
                peaks[pool] = max(peaks.get(pool, 0), current[pool])
        elif kind == "f":
            owner, freed = live.pop(ident)
            if owner is not None:
                current[owner] -= freed
    for index in list(quotas):
        close(index)
    return excesses


def peak_live_bytes(events: Iterable[Event]) -> int:
    live: dict[int, int] = {}
    current = 0
    peak = 0
    for kind, ident, size in events:
        if kind == "a":
            live[ident] = size
            current += size
            peak = max(peak, current)
        elif kind == "f":
            current -= live.pop(ident)
    return peak


def check_pool_names(pools: Iterable[str]) -> None:
    """Raises ValueError for a pool name a trace's `p` line cannot hold."""
    for name in pools:
        if not name or any(blank in name for blank in _FIELD_SEPARATORS):
            raise ValueError(
                f"pool {name!r} cannot be written in a trace: a `p` line names its pool in "
                "one field, without blanks or line breaks; rename the pool"
            )


def write_trace(
    target: Union[str, TextIO],
    events: Iterable[Event],
    what: str,
    pools: Sequence[str] = (),
    tags: Sequence[str] = (),
) -> None:
    """Writes the trace to `target`, a path or a file open for writing (UTF-8 where a
    name needs it); `pools` and `tags`: the names "p" and "t" events index. A pool name
    with a blank or a line break, which a `p` line cannot hold, raises ValueError before
    anything is written; a tag's blanks are written as '_' (a module's backward tag,
    "Linear (backward)", is one word in a trace)."""
    check_pool_names(pools)
    if isinstance(target, str):
        with open(target, "w", encoding="utf-8") as file:
            write_trace(file, events, what, pools, tags)
        return
    # One ASCII comment line whatever `what` holds: a line break in it began a line
    # replay refused, and a character past ASCII failed the write.
    what = what.encode("unicode_escape").decode("ascii")
    header = (
        f"# what: {what}; PyTorch {torch.__version__} CPU, "
        f"{torch.get_num_threads()} intra-op threads, Python {platform.python_version()}\n"
        "# format: 'a <id> <bytes>' allocates, 'f <id>' frees, 'i' starts an iteration, "
        "'p <name> [<quota>]' routes to a pool, 'r <name>' removes it, 't <tag>' tags what "
        "follows; '#' lines are comments/phase markers\n"
    )
    target.write(header)
    quota_written = set()
    for kind, ident, size in events:
        if kind == "a":
            target.write(f"a {ident} {size}\n")
        elif kind == "f":
            target.write(f"f {ident}\n")
        elif kind == "p":
            # The quota once, on the pool's first line: a replay makes the pool with it.
            quota = f" {size}" if size and ident not in quota_written else ""
            quota_written.add(ident)
            target.write(f"p {pools[ident]}{quota}\n")
        elif kind == "r":
            quota_written.discard(ident)  # made anew, it gets its own quota
            target.write(f"r {pools[ident]}\n")
        elif kind == "t":
            tag = "_".join(tags[ident].split())
            target.write(f"t {tag}\n" if tag else "t\n")
        elif ident:
            target.write(f"i {size}\n")
        else:
            target.write("i\n")
