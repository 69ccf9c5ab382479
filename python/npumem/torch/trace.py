"""Allocation traces of real PyTorch runs, in the shared format of ../shared/traces:
`a <id> <bytes>` allocates under a fresh id, `f <id>` frees it, `i` starts an
iteration, `p <name>` routes the allocations after it to a pool, `#` lines are
comments. record() captures every CPU allocation and free with its exact size, the
iteration boundaries (npumem.torch.iteration(), optimizer.step()) and the pool each
allocation was made in (npumem.pool())."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from types import TracebackType
from typing import Iterable, Optional, Sequence, TextIO, Union

import torch

from npumem import _core, _torch

# (kind, id, bytes): kind "a" (bytes requested), "f" (bytes 0), "i" (id 1 and bytes the
# key when keyed, else both 0), "p" (id: the index of the pool's name in `pools`) or "t"
# (id: the index of the memory tag in `tags`; "" clears it).
Event = tuple[str, int, int]

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
        "'p <name> [<quota>]' routes to a pool, 't <tag>' tags what follows; '#' lines are "
        "comments/phase markers\n"
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
        elif kind == "t":
            tag = "_".join(tags[ident].split())
            target.write(f"t {tag}\n" if tag else "t\n")
        elif ident:
            target.write(f"i {size}\n")
        else:
            target.write("i\n")
