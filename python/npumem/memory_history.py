"""torch.cuda.memory's private snapshot API on npumem devices: _record_memory_history,
_snapshot and _dump_snapshot, in the shape torch 1.13's torch.cuda._memory_viz reads
(stats, segments, memory, compare): a list of segments with "stream" and blocks whose
"history" lists where each allocation came from.

A block's history frames are, as in PyTorch 1.13, the Python stack that allocated it
(innermost first; taken for caching_allocator_alloc and for PyTorch's tensors through
npumem.torch, none for threads running no Python code), followed by its memory tag
(npumem.tag, or the module path npumem.torch.tag_modules gives it) as the outermost
frame {"filename": "<npumem tag>", "line": 0, "name": tag}, so the flame graphs group
memory by tag and module, then by code. stacks=None records the tags alone. Blocks
with neither have no frames ("<non-python>" in the graphs)."""

from __future__ import annotations

import os
import pickle
from typing import Any, Optional, Union

from npumem import _core
from npumem.devices import (
    DeviceLike,
    device_index,
    existing_device,
    initialized_devices,
    when_made,
)

# The devices recording history: their Python stack recorder (None: tags alone).
_recording: dict[int, Optional[_core.FrameRecorder]] = {}
# Recording asked for before its device was made, by index (None: every device), with
# its stacks setting: it starts when the device is made. (Asking first made device 0
# with the default settings, and the init() that followed was refused.) _OFF: recording
# for every device was asked for, then turned off for this one.
_OFF = "off"
_waiting: dict[Optional[int], Optional[str]] = {}

_STACKS = ("python", None)


def _start(made: _core.Device, stacks: Optional[str]) -> None:
    _stop(made.index)
    _recording[made.index] = _core.FrameRecorder(made) if stacks == "python" else None


def _start_waiting(made: _core.Device) -> None:
    if made.index in _waiting:
        stacks = _waiting.pop(made.index)
        if stacks != _OFF:
            _start(made, stacks)
    elif None in _waiting:
        _start(made, _waiting[None])


when_made(_start_waiting)


def _stop(index: int) -> None:
    recorder = _recording.pop(index, None)
    if recorder is not None:
        recorder.stop()


def _record_memory_history(
    enabled: Union[bool, str, None], device: DeviceLike = None, *, stacks: Optional[str] = "python"
) -> None:
    """From now on (until called with False), _snapshot() gives each allocated block of
    `device` (None: every device made so far) a history entry. `enabled` as PyTorch 1.13
    (a bool) or 2.x ("state" or "all" to record, None to stop) spells it. stacks="python"
    records the Python stack of each allocation made from now on; None records tags alone."""
    if stacks not in _STACKS:
        raise ValueError(f"stacks must be 'python' or None, got {stacks!r}")
    # Any other value read as its truth: "no" started recording.
    if not (enabled is None or isinstance(enabled, bool) or enabled in ("state", "all")):
        raise ValueError(f"enabled is True, False, 'state', 'all' or None, not {enabled!r}")
    indices = [device_index(device)] if device is not None else None
    if not enabled:
        for index in list(_recording) if indices is None else indices:
            _stop(index)
        if indices is None:
            _waiting.clear()
        for index in indices or []:
            if None in _waiting:
                _waiting[index] = _OFF
            else:
                _waiting.pop(index, None)
        return
    if indices is None:
        indices = [made.index for made in initialized_devices()]
        if not indices:
            _waiting[None] = stacks
    for index in indices:
        chosen = existing_device(index)
        if chosen is None:
            _waiting[index] = stacks
        else:
            _start(chosen, stacks)


# npumem's own Python code: its innermost frames are left out, so that a block's first
# frame is the caller's line, as in PyTorch, whose caching_allocator_alloc is C++.
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _frames(block: dict[str, Any], recorder: Optional[_core.FrameRecorder]) -> list[dict[str, Any]]:
    frames = recorder.frames(block["address"]) if recorder is not None else []
    while frames and os.path.abspath(frames[0]["filename"]).startswith(_PACKAGE):
        frames.pop(0)
    if block["tag"]:
        frames.append({"filename": "<npumem tag>", "line": 0, "name": block["tag"]})
    return frames


def _snapshot(device: DeviceLike = None) -> list[dict[str, Any]]:
    """The segments of `device` (None: every device) as torch.cuda.memory._snapshot()
    gives them in PyTorch 1.13, plus npumem's tier, pool and tags (none for a device not
    made yet)."""
    if device is None:
        devices = initialized_devices()
    else:
        made = existing_device(device)
        devices = [made] if made is not None else []
    segments: list[dict[str, Any]] = []
    for made in devices:
        recording = made.index in _recording
        recorder = _recording.get(made.index)
        for segment in made.snapshot():
            # PyTorch keeps a segment per stream; npumem's hold blocks of any stream.
            segment["stream"] = 0
            for block in segment["blocks"]:
                if recording and block["state"] == "active_allocated":
                    block["history"] = [
                        {
                            "addr": block["address"],
                            "real_size": block["requested_size"],
                            "frames": _frames(block, recorder),
                        }
                    ]
            segments.append(segment)
    return segments


def _dump_snapshot(filename: str = "dump_snapshot.pickle", device: DeviceLike = None) -> None:
    """Pickles _snapshot() to `filename`, the input of
    `python3 -m torch.cuda._memory_viz stats|segments|memory FILE`."""
    with open(filename, "wb") as out:
        pickle.dump(_snapshot(device), out)


__all__ = ["_dump_snapshot", "_record_memory_history", "_snapshot"]
