"""Runs one workload of torch_workloads in this process and saves its results:

    run_workload.py WORKLOAD default|npumem OUT.pt [DEVICE_SPEC]

With npumem, npumem serves every CPU tensor from before the workload starts, and the
saved file also holds npumem's statistics."""

from __future__ import annotations

import sys

import torch

import npumem
import npumem.torch
from torch_workloads import WORKLOADS


def main(workload: str, allocator: str, output: str, spec: str | None = None) -> None:
    if allocator not in ("default", "npumem"):
        raise SystemExit(f"allocator must be default or npumem, not {allocator!r}")
    if allocator == "npumem":
        npumem.torch.install(spec)
    results = WORKLOADS[workload]()
    stats = npumem.memory_stats() if allocator == "npumem" else {}
    torch.save({"results": results, "stats": stats}, output)


if __name__ == "__main__":
    main(*sys.argv[1:])
