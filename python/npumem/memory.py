"""The torch.cuda.memory API on npumem devices: statistics under PyTorch's keys,
peaks, snapshots, cache release and raw allocations."""

from __future__ import annotations

from typing import Any

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


def caching_allocator_delete(ptr: int, device: DeviceLike = None) -> None:
    """Frees an address caching_allocator_alloc() returned. Raises InvalidPointerError
    for an address the device does not hold."""
    get_device(device).deallocate(ptr)


def copy(dst: int, src: int, nbytes: int, device: DeviceLike = None) -> float:
    """Copies `nbytes` between two live allocations of the device (the addresses it
    returned; either tier) and returns the transfer time of the device's bandwidth
    model in seconds. memory_stats() counts copies per direction: num_copies.ddr_to_hbm,
    copy_bytes.ddr_to_hbm, copy_modelled_ns.ddr_to_hbm, ... Raises InvalidPointerError
    for an address that is not live, Error when nbytes overruns either allocation."""
    return get_device(device).copy(dst, src, nbytes)
