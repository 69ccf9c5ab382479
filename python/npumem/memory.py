"""The torch.cuda.memory API on npumem devices: statistics under PyTorch's keys,
peaks, snapshots, cache release, raw allocations, free memory and the processes
using a device."""

from __future__ import annotations

from typing import Any

from npumem import _core
from npumem.devices import DeviceLike, get_device, initialized_devices


def memory_stats(device: DeviceLike = None) -> dict[str, int]:
    """Every statistic of the device's allocator under torch.cuda.memory_stats() keys,
    sorted: "allocated_bytes.all.current", "reserved_bytes.hbm.peak", "num_ooms", ..."""
    return get_device(device).stats()


def memory_allocated(device: DeviceLike = None) -> int:
    """Bytes in blocks handed out now (rounded block sizes)."""
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device: DeviceLike = None) -> int:
    """The peak of memory_allocated() since the start or the last reset."""
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device: DeviceLike = None) -> int:
    """Bytes held from the device (segments), cached free blocks included."""
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device: DeviceLike = None) -> int:
    """The peak of memory_reserved() since the start or the last reset."""
    return memory_stats(device)["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    """Sets every peak to its current value, on the device and each of its pools."""
    get_device(device).reset_peak_stats()


def reset_max_memory_allocated(device: DeviceLike = None) -> None:
    """PyTorch's older name for reset_peak_memory_stats()."""
    reset_peak_memory_stats(device)


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
    setting, else the tier's capacity), free is total less what it has reserved."""
    chosen = get_device(device)
    total = chosen.tier_info("hbm")["capacity_bytes"]
    settings = dict(item.split(":", 1) for item in chosen.config.split(","))
    limit = int(settings.get("hbm", "0"))
    if limit:
        total = min(total, limit)
    reserved = chosen.stats()["reserved_bytes.hbm.current"]
    return max(total - reserved, 0), total


def list_gpu_processes(device: DeviceLike = None) -> str:
    """The processes using the device (every process allocating through npumem
    publishes its stats, see npumem smi), as torch.cuda.list_gpu_processes() prints
    them: a header line, then one line per process with its reserved memory."""
    chosen = get_device(device)
    lines = [f"NPU:{chosen.index} ({chosen.name})"]
    for process in _core.stats_pages():
        for published in process["devices"]:
            if published["name"] == chosen.name:
                megabytes = published["reserved_bytes"] / (1 << 20)
                lines.append(
                    f"process {process['pid']:>10d} uses {megabytes:12.3f} MB NPU memory "
                    f"({process['name']})"
                )
    if len(lines) == 1:
        lines.append("no processes are running")
    return "\n".join(lines)


def empty_cache(device: DeviceLike = None) -> int:
    """Releases every cached free segment to the device; returns the bytes released."""
    return get_device(device).empty_cache()


def memory_snapshot() -> list[dict[str, Any]]:
    """The segments of every device made so far, as torch.cuda.memory_snapshot() gives
    them (device, address, total_size, allocated_size, active_size, requested_size,
    segment_type, blocks with size, requested_size and state), plus each segment's
    tier and pool and each block's memory tag."""
    segments: list[dict[str, Any]] = []
    for device in initialized_devices():
        segments.extend(device.snapshot())
    return segments


def caching_allocator_alloc(size: int, device: DeviceLike = None) -> int:
    """Allocates `size` bytes on the device (this thread's pool); returns the address.
    Raises OutOfMemoryError with the allocator's explanation."""
    return get_device(device).allocate(size)


def caching_allocator_resize(ptr: int, size: int, device: DeviceLike = None) -> bool:
    """Grows or shrinks an allocation of caching_allocator_alloc() in place (the seed's
    aclrtMemReuse: growing needs a free neighbour); False, changing nothing, when it
    cannot. Raises InvalidPointerError for an address the device does not hold."""
    return get_device(device).resize(ptr, size)


def caching_allocator_delete(ptr: int, device: DeviceLike = None) -> None:
    """Frees an address caching_allocator_alloc() returned. Raises InvalidPointerError
    for an address the device does not hold."""
    get_device(device).deallocate(ptr)
