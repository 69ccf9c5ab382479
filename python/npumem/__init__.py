"""npumem: the tiered caching allocator for AI accelerators (HBM first, then DDR, then
reclaim, then an OutOfMemoryError that explains itself), with the torch.cuda.memory
API on npumem devices. Without an accelerator, devices are virtual NPUs ("sim").

    import npumem
    npumem.init("sim:hbm=1GiB,ddr=4GiB", conf="spill_to_ddr:true")
    ptr = npumem.caching_allocator_alloc(1 << 20)
    print(npumem.memory_allocated(), npumem.max_memory_reserved())
    with npumem.pool("model_a", quota="256MiB"), npumem.tag("weights"):
        ...

npumem.torch puts npumem behind PyTorch's CPU tensors.
"""

from npumem._core import ConfigError, Error, InvalidPointerError, OutOfMemoryError, ParseError
from npumem.advise import advise_buckets
from npumem.devices import current_device, get_device, init, initialized_devices, is_initialized
from npumem.memory import (
    caching_allocator_alloc,
    caching_allocator_delete,
    caching_allocator_resize,
    copy,
    empty_cache,
    list_gpu_processes,
    max_memory_allocated,
    max_memory_cached,
    max_memory_reserved,
    memory_allocated,
    memory_cached,
    memory_reserved,
    mem_get_info,
    memory_snapshot,
    memory_stats,
    memory_stats_as_nested_dict,
    record_stream,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_max_memory_cached,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from npumem.memory_history import _dump_snapshot, _record_memory_history, _snapshot
from npumem.observe import (
    LeakDetector,
    MemoryHistory,
    Monitor,
    SizePatterns,
    chrome_trace,
    html_timeline,
    memory_summary,
    planned_report,
    snapshot_json,
)
from npumem.scopes import create_pool, pool, pools, remove_pool, tag

from npumem import plan  # noqa: E402 - npumem.plan.memory/shard/recompute after `import npumem`
from npumem import onnx_lifetimes  # noqa: E402 - npumem.onnx_lifetimes.read; onnx loads on use

__all__ = [
    "ConfigError",
    "Error",
    "InvalidPointerError",
    "LeakDetector",
    "MemoryHistory",
    "Monitor",
    "SizePatterns",
    "OutOfMemoryError",
    "ParseError",
    "advise_buckets",
    "caching_allocator_alloc",
    "caching_allocator_delete",
    "caching_allocator_resize",
    "chrome_trace",
    "copy",
    "create_pool",
    "current_device",
    "empty_cache",
    "get_device",
    "html_timeline",
    "init",
    "initialized_devices",
    "is_initialized",
    "list_gpu_processes",
    "max_memory_allocated",
    "max_memory_cached",
    "max_memory_reserved",
    "memory_allocated",
    "memory_cached",
    "memory_reserved",
    "mem_get_info",
    "memory_snapshot",
    "memory_stats",
    "memory_stats_as_nested_dict",
    "record_stream",
    "memory_summary",
    "planned_report",
    "pool",
    "pools",
    "remove_pool",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_cached",
    "reset_peak_memory_stats",
    "set_per_process_memory_fraction",
    "snapshot_json",
    "tag",
]
