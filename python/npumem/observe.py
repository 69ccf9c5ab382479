"""Seeing memory: labelled snapshots and their report (Monitor), leak detection
(LeakDetector), the allocator's event history, a torch.cuda.memory_summary()-style
table, and the whole picture as JSON, as a Chrome trace, or as an HTML timeline.
All of it is the C++ observe layer's, on a device of the registry."""

from __future__ import annotations

import os
import sys
from types import TracebackType
from typing import Any, Optional

from npumem import _core
from npumem.devices import DeviceLike, device_index, existing_device, get_device


def _checked(value: Any, kind: type, what: str) -> Any:
    """`value` when it is a `kind`; else a TypeError naming `what` (the bindings' own
    listed their signatures)."""
    if not isinstance(value, kind):
        raise TypeError(f"{what} is a {kind.__name__}, not {value!r}")
    return value

# How Python marks iterations, for the planned report's reason no plan served.
_ITERATION_MARKS = (
    "optimizer.step() or npumem.torch.iteration() (or the device's mark_iteration())"
)


def memory_summary(device: DeviceLike = None, abbreviated: bool = False) -> str:
    """A table like torch.cuda.memory_summary(): current, peak, total allocated and
    freed bytes and counts, split by pool kind and tier, then one section per pool and,
    under strategy:planned, the planned report; one line for a device not made yet
    (making it would refuse a later init()). `abbreviated` is taken, as PyTorch's
    signature has it; the table is the same either way."""
    made = existing_device(device)
    if made is None:
        return f"npumem device {device_index(device)}: not made yet, no memory used"
    return _core.memory_summary(made, _ITERATION_MARKS)


def planned_report(device: DeviceLike = None) -> str:
    """Under strategy:planned, what the plans did, a line each: plans learned and the
    arena, hits and fallbacks, the steady overhead (or why no plan served: the iteration
    marks are optimizer.step() under npumem.torch, npumem.torch.iteration() and the
    device's mark_iteration()), and each plan, with why it was declined. Empty under
    other strategies or before the device is made."""
    made = existing_device(device)
    if made is None:
        return ""
    return _core.planned_report(made, _ITERATION_MARKS)


class Monitor:
    """Labelled snapshots of a device's memory and a report of them:

        monitor = npumem.Monitor()
        monitor.snapshot("start"); ...; monitor.snapshot("after forward")
        print(monitor.report())
    """

    def __init__(self, device: DeviceLike = None):
        self.device = get_device(device)
        self._monitor = _core.Monitor(self.device)

    def snapshot(self, label: str) -> dict[str, Any]:
        """Records allocated, reserved and their peaks now (in all and per tier)."""
        return self._monitor.snapshot(_checked(label, str, "a snapshot label"))

    @property
    def snapshots(self) -> list[dict[str, Any]]:
        return self._monitor.snapshots()

    def report(self) -> str:
        """One row per snapshot: label, allocated, reserved, peak, seconds since the first."""
        return self._monitor.report()

    def memory_summary(self) -> str:
        return _core.memory_summary(self.device, _ITERATION_MARKS)

    def empty_cache(self) -> str:
        """Releases the device's cache; says what it gave back and the fragmentation
        before and after."""
        return self._monitor.empty_cache()


def _library_folders() -> list[str]:
    """Where npumem's and PyTorch's Python code lies: frames there are not the caller's."""
    folders = [os.path.dirname(os.path.abspath(__file__)) + os.sep]
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        folders.append(os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
    return folders


class LeakDetector:
    """Watches a device from a baseline. Iterations end at tick() or at the device's
    iteration marks (npumem.torch.iteration(), optimizer.step() under npumem.torch);
    report() names the allocations made after `warmup_iterations` that stay alive
    iteration after iteration (a leak when they hold more than `threshold` of the
    steady-state allocated bytes; 0: any), and lists every survivor since it started
    (or since mark_baseline()) grouped by memory tag, pool (and native backtrace with
    `backtraces`, and the Python line that made them with `python_lines`, which takes
    each allocation's Python stack). The iteration in progress is never judged. Attached
    until close() or the end of its `with`. A device not made yet is made, as get_device(device) makes it."""

    def __init__(
        self,
        device: DeviceLike = None,
        threshold: float = 0.0,
        backtraces: bool = False,
        warmup_iterations: int = 1,
        python_lines: bool = False,
    ):
        if (
            isinstance(warmup_iterations, bool)
            or not isinstance(warmup_iterations, int)
            or warmup_iterations < 0
        ):
            raise ValueError(f"warmup_iterations is a count >= 0, not {warmup_iterations!r}")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise TypeError(f"threshold is a fraction of the allocated bytes, not {threshold!r}")
        _checked(backtraces, bool, "backtraces")
        _checked(python_lines, bool, "python_lines")
        self.device = get_device(device)
        self._detector: Optional[_core.LeakDetector] = _core.LeakDetector(
            self.device, threshold, backtraces, warmup_iterations, python_lines, _library_folders()
        )

    def mark_baseline(self) -> None:
        """Starts over: allocated bytes now are the baseline."""
        self._attached().mark_baseline()

    def tick(self) -> None:
        """An iteration boundary: samples allocated bytes."""
        self._attached().tick()

    def report(self) -> dict[str, Any]:
        """iterations, warmup_iterations, judged_iterations, baseline_bytes (where the
        steady state starts), final_bytes, growth, threshold, leaked_bytes, leaking,
        samples, survivors (groups: tag, pool, frames, count, bytes, requested_bytes,
        iterations, judged_iterations, recurring, site, ...) and text, the report as the
        C++ layer prints it. With python_lines, a group's site is the caller's line that
        made it (the innermost frame outside npumem and PyTorch), and groups are split by it."""
        return self._attached().report()

    def close(self) -> None:
        """Detaches from the device; the detector stops seeing allocations."""
        if self._detector is not None:
            self._detector.detach()
            self._detector = None

    def __enter__(self) -> "LeakDetector":
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close()

    def _attached(self) -> _core.LeakDetector:
        if self._detector is None:
            raise _core.Error("the leak detector is closed")
        return self._detector


class SizePatterns:
    """Counts the sizes a device is asked for until stop(): report() gives a power-of-two
    histogram, the most frequent sizes and, per iteration (ended by the device's
    iteration marks, npumem.torch.iteration() or tick()), the share of requests the
    previous iteration also made (1.0: a repeating loop, which a static plan fits)."""

    def __init__(self, device: DeviceLike = None):
        self.device = get_device(device)
        self._patterns = _core.SizePatterns(self.device)

    def tick(self) -> None:
        """Ends an iteration."""
        self._patterns.tick()

    def report(self, top: int = 10) -> dict[str, Any]:
        """allocations, distinct_sizes, histogram [(upper bound, count)], most_frequent
        [(size, count)], repetition [share per iteration] and text."""
        if isinstance(top, bool) or not isinstance(top, int) or top < 0:
            raise ValueError(f"top is a count of sizes >= 0, not {top!r}")
        return self._patterns.report(top)

    def stop(self) -> None:
        self._patterns.stop()


class MemoryHistory:
    """Records a device's allocator events (time, sizes, tier, pool, memory tag) in a
    ring of `max_entries`, like torch.cuda.memory._record_memory_history, until stop().
    Snapshots taken with it carry the history (the HTML timeline draws it)."""

    def __init__(
        self, device: DeviceLike = None, max_entries: int = 100_000, backtraces: bool = False
    ):
        # Checked here: past the bindings' unsigned 64 bits it was a TypeError naming
        # their signature; the recorder checks the rest (at most 10^9).
        if isinstance(max_entries, bool) or not isinstance(max_entries, int):
            raise TypeError(f"max_entries must be an int, not {type(max_entries).__name__}")
        _checked(backtraces, bool, "backtraces")
        if not 1 <= max_entries < 2**64:
            raise _core.ConfigError(f"history max_entries must be at least 1, got {max_entries}"
                                    if max_entries < 1 else
                                    f"history max_entries must be at most 1000000000, got "
                                    f"{max_entries}")
        self.device = get_device(device)
        self._recorder = _core.HistoryRecorder(self.device, max_entries, backtraces)

    def stop(self) -> None:
        self._recorder.stop()

    @property
    def recorded(self) -> int:
        return self._recorder.recorded

    @property
    def dropped(self) -> int:
        return self._recorder.dropped

    def snapshot_json(self) -> str:
        return snapshot_json(self.device, self)

    def chrome_trace(self) -> str:
        return chrome_trace(self.device, self)

    def html_timeline(self, title: str) -> str:
        return html_timeline(self.device, self, title)


def _device_and_recorder(device: DeviceLike, history: Optional[MemoryHistory]):
    """The device and the history's recorder, which must be the device's own: another
    device's events beside this one's segments would draw a timeline of neither."""
    made = get_device(device)
    if history is None:
        return made, None
    _checked(history, MemoryHistory, "history")
    if history.device.index != made.index:
        raise _core.ConfigError(
            f"the history records device {history.device.index}, not device {made.index}; "
            f"pass device={history.device.index} (or the history of device {made.index})"
        )
    return made, history._recorder


def snapshot_json(device: DeviceLike = None, history: Optional[MemoryHistory] = None) -> str:
    """The device's stats, pools, segments and blocks (and history) as one JSON object,
    the format `npumem viz` reads (docs/OBSERVABILITY.md)."""
    return _core.snapshot_json(*_device_and_recorder(device, history))


def chrome_trace(device: DeviceLike = None, history: Optional[MemoryHistory] = None) -> str:
    """Chrome Trace Event JSON (Perfetto, chrome://tracing): allocated and reserved bytes
    per tier over the history, with OOMs, reclaims and spills as instant events."""
    return _core.chrome_trace(*_device_and_recorder(device, history))


def html_timeline(
    device: DeviceLike = None, history: Optional[MemoryHistory] = None, title: str = "npumem"
) -> str:
    """The HTML timeline `npumem viz` draws, as one self-contained page. Raises Error
    when npumem was built without the tools layer, which renders it."""
    _checked(title, str, "a title")
    if not hasattr(_core, "html_timeline"):
        raise _core.Error(
            "this npumem was built without the HTML timeline (NPUMEM_BUILD_TOOLS=OFF)"
        )
    return _core.html_timeline(snapshot_json(device, history), title)
