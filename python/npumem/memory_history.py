"""torch.cuda.memory's private snapshot API on npumem devices: _record_memory_history,
_snapshot and _dump_snapshot, in the shape torch 1.13's torch.cuda._memory_viz reads
(stats, segments, memory, compare): a list of segments with "stream" and blocks whose
"history" lists where each allocation came from.

npumem records no native stacks per allocation here; a block's history frame is its
memory tag (npumem.tag, or the module path npumem.torch.tag_modules gives it), as
{"filename": "<npumem tag>", "line": 0, "name": tag}, so the flame graphs group memory
by tag and module. Untagged blocks have no frames ("<non-python>" in the graphs)."""

from __future__ import annotations

import pickle
from typing import Any

from npumem.devices import DeviceLike, device_index, get_device, initialized_devices

_recording: set[int] = set()


def _record_memory_history(enabled: bool, device: DeviceLike = None) -> None:
    """From now on (until called with False), _snapshot() gives each allocated block of
    `device` (None: every device) a history entry."""
    indices = [device_index(device)] if device is not None else None
    if enabled:
        if indices is None:
            indices = [made.index for made in initialized_devices()] or [0]
        for index in indices:
            get_device(index)
            _recording.add(index)
    elif indices is None:
        _recording.clear()
    else:
        _recording.difference_update(indices)


def _frames(tag: str) -> list[dict[str, Any]]:
    return [{"filename": "<npumem tag>", "line": 0, "name": tag}] if tag else []


def _snapshot(device: DeviceLike = None) -> list[dict[str, Any]]:
    """The segments of `device` (None: every device) as torch.cuda.memory._snapshot()
    gives them in PyTorch 1.13, plus npumem's tier, pool and tags."""
    devices = [get_device(device)] if device is not None else initialized_devices()
    segments: list[dict[str, Any]] = []
    for made in devices:
        recording = made.index in _recording
        for segment in made.snapshot():
            segment["stream"] = 0  # npumem blocks are not stream-ordered
            for block in segment["blocks"]:
                if recording and block["state"] == "active_allocated":
                    block["history"] = [
                        {
                            "addr": block["address"],
                            "real_size": block["requested_size"],
                            "frames": _frames(block["tag"]),
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
