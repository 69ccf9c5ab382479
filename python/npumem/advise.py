"""`npumem advise buckets` from Python: bucket sizes for a workload whose iterations vary
in size, from its allocation trace (docs/PLANNING.md, "Buckets for dynamic shapes").

    import npumem
    advice = npumem.advise_buckets("bert.trace", max_buckets=4)
    print(advice["recommended_buckets"], advice["caching_peak_reserved_bytes"])
    for choice in advice["choices"]:
        if choice["possible"]:
            print(choice["buckets"], choice["arena_bytes"], choice["waste_bytes"])

The dict has the keys the command's --json prints. A malformed trace, or one without
allocations or `i` lines, raises ParseError naming the line; a bad argument raises
ConfigError; a path to no file, FileNotFoundError.
"""

from __future__ import annotations

import errno
import json
import os
from typing import Any, Union

from npumem import _core
from npumem._core import ConfigError


def advise_buckets(
    trace: Union[str, os.PathLike],
    max_buckets: int = 8,
    tolerance: float = 1.0,
    device: str = "sim",
) -> dict[str, Any]:
    """For k = 1 .. max_buckets: the k buckets of least planned arena plus padding waste,
    and the recommendation: the fewest buckets within `tolerance` percent of the least."""
    if isinstance(max_buckets, bool) or not isinstance(max_buckets, int) or max_buckets < 1:
        raise ConfigError(f"max_buckets must be an integer >= 1, not {max_buckets!r}")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not tolerance >= 0:
        raise ConfigError(f"tolerance must be a percentage >= 0, not {tolerance!r}")
    if not hasattr(_core, "advise_buckets"):
        raise ConfigError("npumem was built without its tools (NPUMEM_BUILD_TOOLS=OFF)")
    path = os.fspath(trace)
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, "no trace file", path)
    text = _core.advise_buckets(path, max_buckets, tolerance / 100.0, device)
    return json.loads(text)
