"""The torch.cuda.memory API on npumem devices: statistics under PyTorch's keys,
peaks, snapshots, cache release, raw allocations, free memory, the per-process memory
fraction and the processes using a device."""

from __future__ import annotations

import os
from typing import Any, Union

from npumem import _core
from npumem.devices import (
    DeviceLike,
    device_index,
    existing_device,
    get_device,
    initialized_devices,
    settings,
)

# A stream: None (the default stream), its handle as an int, or a Stream object
# (torch_npu.npu.Stream, torch.cuda.Stream) carrying the handle.
StreamLike = Union[int, Any, None]


def memory_stats(device: DeviceLike = None) -> dict[str, int]:
    """Every statistic of the device's allocator under torch.cuda.memory_stats() keys,
    sorted: "allocated_bytes.all.current", "reserved_bytes.hbm.peak", "num_ooms", ...
    {} for a device not made yet, as torch.cuda.memory_stats() before CUDA starts."""
    made = existing_device(device)
    return made.stats() if made is not None else {}


def memory_allocated(device: DeviceLike = None) -> int:
    """Bytes in blocks handed out now (rounded block sizes)."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device: DeviceLike = None) -> int:
    """The peak of memory_allocated() since the start or the last reset."""
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device: DeviceLike = None) -> int:
    """Bytes held from the device (segments), cached free blocks included."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device: DeviceLike = None) -> int:
    """The peak of memory_reserved() since the start or the last reset."""
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    """Sets every peak to its current value, on the device and each of its pools."""
    made = existing_device(device)
    if made is not None:
        made.reset_peak_stats()


def reset_max_memory_allocated(device: DeviceLike = None) -> None:
    """PyTorch's older name for reset_peak_memory_stats()."""
    reset_peak_memory_stats(device)


def memory_cached(device: DeviceLike = None) -> int:
    """PyTorch's older name for memory_reserved()."""
    return memory_reserved(device)


def max_memory_cached(device: DeviceLike = None) -> int:
    """PyTorch's older name for max_memory_reserved()."""
    return max_memory_reserved(device)


def reset_max_memory_cached(device: DeviceLike = None) -> None:
    """PyTorch's older name for reset_peak_memory_stats()."""
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device: DeviceLike = None) -> None:
    """Zeroes what accumulates: each statistic's "allocated" and "freed" totals and the
    num_ counts (num_ooms, num_alloc_retries, ...), on the device and each of its
    pools; current values and peaks stay."""
    made = existing_device(device)
    if made is not None:
        made.reset_accumulated_stats()


def set_per_process_memory_fraction(fraction: float, device: DeviceLike = None) -> None:
    """Caps the HBM the device's allocator may reserve at `fraction` (0 to 1) of the
    tier's capacity (within any `hbm` setting), like
    torch.cuda.set_per_process_memory_fraction(): growth past it spills to DDR when
    spill_to_ddr allows, else raises OutOfMemoryError naming the fraction. Memory
    reserved already stays. Raises TypeError for a non-number, ValueError outside [0, 1]."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
        raise TypeError(f"fraction must be a float between 0 and 1, got {fraction!r}")
    if not 0 <= fraction <= 1:  # NaN fails this too
        raise ValueError(f"fraction must be between 0 and 1, got {fraction}")
    get_device(device).set_memory_fraction(float(fraction))


def memory_stats_as_nested_dict(device: DeviceLike = None) -> dict[str, Any]:
    """memory_stats() with its dotted keys as nested dicts, as PyTorch gives it:
    {"allocated_bytes": {"all": {"current": ...}}, "num_ooms": ...}."""
    nested: dict[str, Any] = {}
    for key, value in memory_stats(device).items():
        *path, leaf = key.split(".")
        node = nested
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    return nested


def mem_get_info(device: DeviceLike = None) -> tuple[int, int]:
    """(free, total) bytes of the device's HBM for this process, like
    torch.cuda.mem_get_info(): total is the HBM its allocator may reserve (the `hbm`
    setting, else the tier's capacity, and at most its set_per_process_memory_fraction),
    free is total less what it has reserved."""
    chosen = get_device(device)
    capacity = chosen.tier_info("hbm")["capacity_bytes"]
    total = int(chosen.memory_fraction * capacity)
    limit = int(settings(chosen).get("hbm", "0"))
    if limit:
        total = min(total, limit)
    reserved = chosen.stats()["reserved_bytes.hbm.current"]
    return max(total - reserved, 0), total


def list_gpu_processes(device: DeviceLike = None) -> str:
    """The processes using the device (every process allocating through npumem
    publishes its stats, see npumem smi), as torch.cuda.list_gpu_processes() prints
    them: a header line, then one line per process with its reserved memory. A device
    not made yet in this process has no name to find it by: the header says so."""
    chosen = existing_device(device)
    if chosen is None:
        return f"NPU:{device_index(device)} (not made yet)\nno processes are running"
    lines = [f"NPU:{chosen.index} ({chosen.name})"]
    # This process's line is read from the device itself: the page lagged its latest
    # allocations (0 MB right after 56 MiB), and a device past the 8 a process publishes,
    # or with NPUMEM_STATS_PAGE=0, read "no processes are running" beside its own memory.
    own_pid = os.getpid()
    own_megabytes = chosen.stats()["reserved_bytes.all.current"] / (1 << 20)
    own_listed = False
    for process in _core.stats_pages():
        for published in process["devices"]:
            if published["name"] != chosen.name:
                continue
            megabytes = published["reserved_bytes"] / (1 << 20)
            if process["pid"] == own_pid:
                if own_listed:
                    continue
                own_listed = True
                megabytes = own_megabytes
            lines.append(
                f"process {process['pid']:>10d} uses {megabytes:12.3f} MB NPU memory "
                f"({process['name']})"
            )
    if not own_listed:
        lines.append(
            f"process {own_pid:>10d} uses {own_megabytes:12.3f} MB NPU memory (this process, "
            "not on the stats page: NPUMEM_STATS_PAGE=0, or past the 8 devices a process "
            "publishes)"
        )
    return "\n".join(lines)


def empty_cache(device: DeviceLike = None) -> int:
    """Releases every cached free segment to the device; returns the bytes released
    (0 for a device not made yet)."""
    made = existing_device(device)
    return made.empty_cache() if made is not None else 0


def memory_snapshot() -> list[dict[str, Any]]:
    """The segments of every device made so far, as torch.cuda.memory_snapshot() gives
    them (device, address, total_size, allocated_size, active_size, requested_size,
    segment_type, blocks with size, requested_size and state), plus each segment's
    tier and pool and each block's memory tag."""
    segments: list[dict[str, Any]] = []
    for device in initialized_devices():
        segments.extend(device.snapshot())
    return segments


def caching_allocator_alloc(
    size: int, device: DeviceLike = None, stream: StreamLike = None
) -> int:
    """Allocates `size` bytes on the device (this thread's pool) for work on `stream`
    (see stream_id); returns the address, or 0 for 0 bytes, which hold no memory (as
    torch.cuda.caching_allocator_alloc(0) gives). Raises OutOfMemoryError with the
    allocator's explanation; TypeError for a size that is no int, ValueError for one
    below 0 or past 64 bits."""
    if _byte_count(size) == 0:
        stream_id(stream)
        return 0
    return get_device(device).allocate(size, stream_id(stream))


def _byte_count(size: int) -> int:
    """`size` checked here, so that a bad one is not read as a mismatched signature."""
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError(f"a size is an int number of bytes, not {size!r}")
    if size < 0 or size >= 1 << 64:
        raise ValueError(f"size {size} is not a byte count (0 to 2**64 - 1)")
    return size


def record_stream(ptr: int, stream: StreamLike, device: DeviceLike = None) -> None:
    """tensor.record_stream(stream) for an address caching_allocator_alloc() returned:
    `stream` uses it too, so once freed it serves no stream until the work queued on
    all its streams by then has run. Raises InvalidPointerError for an address the
    device does not hold."""
    get_device(device).record_stream(_address(ptr), stream_id(stream))


def stream_id(stream: StreamLike) -> int:
    """The stream as the allocator knows it: None is the default stream (0); an int is
    the stream's handle; a torch_npu or torch.cuda Stream gives its `npu_stream` or
    `cuda_stream` handle."""
    if stream is None:
        return 0
    for attribute in ("npu_stream", "cuda_stream"):
        handle = getattr(stream, attribute, None)
        if handle is not None:
            stream = handle
            break
    if isinstance(stream, bool) or not isinstance(stream, int):
        raise TypeError(
            "a stream is None, an int handle or a Stream with npu_stream/cuda_stream, "
            f"not {stream!r}"
        )
    if stream < 0:
        raise ValueError(f"a stream handle is not negative, got {stream}")
    return stream


def caching_allocator_resize(ptr: int, size: int, device: DeviceLike = None) -> bool:
    """Grows or shrinks an allocation of caching_allocator_alloc() in place (the seed's
    aclrtMemReuse: growing needs a free neighbour); False, changing nothing, when it
    cannot. Raises InvalidPointerError for an address the device does not hold."""
    return get_device(device).resize(_address(ptr), _byte_count(size))


def caching_allocator_delete(ptr: int, device: DeviceLike = None) -> None:
    """Frees an address caching_allocator_alloc() returned; 0 (what 0 bytes gave) frees
    nothing. Raises InvalidPointerError for an address the device does not hold."""
    if _address(ptr) != 0:
        get_device(device).deallocate(ptr)


def _address(ptr: int) -> int:
    """`ptr` checked here, as sizes are (_byte_count)."""
    if isinstance(ptr, bool) or not isinstance(ptr, int):
        raise TypeError(f"an address is an int, not {ptr!r}")
    if ptr < 0 or ptr >= 1 << 64:
        raise ValueError(f"address {ptr} is not one an allocation returned (0 to 2**64 - 1)")
    return ptr


def copy(dst: int, src: int, nbytes: int, device: DeviceLike = None) -> float:
    """Copies `nbytes` between two live allocations of the device (the addresses it
    returned; either tier) and returns the transfer time of the device's bandwidth
    model in seconds. memory_stats() counts copies per direction: num_copies.ddr_to_hbm,
    copy_bytes.ddr_to_hbm, copy_modelled_ns.ddr_to_hbm, ... Raises InvalidPointerError
    for an address that is not live, Error when nbytes overruns either allocation."""
    return get_device(device).copy(_address(dst), _address(src), _byte_count(nbytes))
