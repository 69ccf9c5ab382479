"""The commands of `python3 -m npumem.torch`: run (report at exit) and capture."""

from __future__ import annotations

import os
import shlex
import sys
from typing import Optional

import npumem
from npumem import _core
from npumem.devices import settings
from npumem.torch import install, mark_optimizer_steps, record, tag_modules
from npumem.torch import script_runner
from npumem.torch import trace as trace_module
from npumem.torch.script_runner import run_script
from npumem.torch.trace import check_pool_names, quota_excesses
from npumem.torch_children import serve_children


# `run`'s exit status when the script succeeded but leaked (as `npumem replay --leak-check`).
EXIT_LEAK = 4



def _count(number: int, noun: str) -> str:
    """"1 allocation", "2 allocations": a capture of one read "1 allocations"."""
    return f"{number:,} {noun}" + ("" if number == 1 else "s")

def run(
    script: str,
    args: list[str],
    spec: Optional[str],
    conf: Optional[str],
    html: Optional[str],
    history_entries: int = 1_000_000,
    leak_threshold: float = 0.0,
) -> int:
    """Runs the script with npumem behind its CPU tensors; prints the monitor report,
    the peaks, what the plans did under strategy:planned, and a leak check (and writes
    the HTML timeline); returns its status, or EXIT_LEAK when it exited 0 and the leak
    check found a leak above `leak_threshold`. The timeline keeps the last
    `history_entries` events (it says so when it dropped older ones). Every
    optimizer.step() is an iteration boundary, and memory is tagged with the module that
    made it."""
    if conf:
        _core.check_config(conf, "--conf")
    if html:
        html = _writable_path(html, "--html", script)
    page = None
    try:
        device = install(spec, conf)
        serve_children(device.spec, conf)
        monitor = npumem.Monitor(device)
        history = npumem.MemoryHistory(device, history_entries) if html else None
        mark_optimizer_steps()
        # Python lines: a leak made outside any module (a list of losses, a cache) is named
        # by the line that made it, not one "untagged" group.
        with npumem.LeakDetector(
            device, threshold=leak_threshold, python_lines=True
        ) as leaks, tag_modules():
            monitor.snapshot("start")
            script_runner.running = True
            reports = []
            try:
                status = run_script(script, args, on_end=lambda: reports.append(leaks.report()))
            finally:
                script_runner.running = False
            monitor.snapshot("end")
            leak_report = reports[0]
        mark_optimizer_steps(False)
        if history is not None:
            history.stop()
        out = sys.stdout
        out.write(
            f"\nnpumem: {script} exited with status {status} on {device.name} ({device.spec})\n"
        )
        out.write(_hbm_limit_text(device))
        out.write(monitor.report())
        # The job's peaks: a script that resets them (each epoch) must not hide them.
        out.write(peaks_text(device.stats_since_start()))
        out.write(pools_text(npumem.pools(device, removed=True)))
        planned = npumem.planned_report(device)
        if planned:
            out.write("planned strategy\n" + planned)
        out.write(leak_report["text"])
        if history is not None:
            page = open(html, "w", encoding="utf-8")  # noqa: SIM115 - closed below
            page.write(history.html_timeline(title=f"npumem run {script}"))
            out.write(f"timeline written to {html}\n")
            if history.dropped:
                out.write(
                    f"npumem: the timeline dropped the {history.dropped:,} oldest events; "
                    f"--history-entries {history.recorded} keeps them all\n"
                )
        out.flush()
    finally:
        if page is not None:
            page.close()
    return EXIT_LEAK if status == 0 and leak_report["leaking"] else status


def capture(script: str, args: list[str], output: str) -> int:
    """Runs the script under PyTorch's own allocator, recording every CPU allocation
    and free, an `i` line at every optimizer.step() and npumem.torch.iteration(), and
    `p`/`t` lines where the pool scope or the memory tag (the module, as under `run`)
    changes; writes the trace (allocations alive at the end stay unfreed in it)."""
    output = _writable_path(output, "-o", script)
    mark_optimizer_steps()
    trace_module.capturing = True
    try:
        # Module tags, as `run` gives them: a leak check of the trace groups by tag, and
        # untagged, a model's weights and the outputs it leaked were one group.
        with record() as recording, tag_modules():
            status = run_script(script, args)
    finally:
        trace_module.capturing = False
        mark_optimizer_steps(False)
    if recording.allocations == 0:
        # Nothing to capture is the input's fault (exit 2), not npumem's (1).
        sys.stderr.write(f"npumem: no trace written to {output}: the script made no "
                         f"allocation (it exited with status {status})\n")
        return status if status != 0 else 2
    check_pool_names(recording.pools)
    # Said when it replaces a file: a default path (SCRIPT's name .trace) overwrote an
    # earlier capture without a word.
    replaced = " (replacing the file that was there)" if os.path.exists(output) else ""
    with open(output, "w", encoding="utf-8") as trace:
        recording.write(
            trace, what=" ".join(shlex.quote(part) for part in ["python3", script, *args])
        )
    sys.stdout.write(
        f"npumem: wrote {output}{replaced}: {_count(recording.allocations, 'allocation')}, "
        f"{_count(recording.memory_events, 'event')}, "
        f"peak live {_core.format_bytes(recording.peak_live_bytes())} "
        f"({recording.peak_live_bytes()} bytes)\n"
    )
    for pool, peak, quota in quota_excesses(recording.events, recording.pools):
        sys.stderr.write(
            f"npumem: warning: pool {pool!r} held {_core.format_bytes(peak)} live, past its "
            f"quota of {_core.format_bytes(quota)}: npumem would have raised OutOfMemoryError "
            f"there (the capture ran on PyTorch's own allocator); the replay stops there "
            f"unless --quota {pool}=SIZE gives it more\n"
        )
    return status


def _writable_path(path: str, option: str, script: str) -> str:
    """`path`, absolute (the script may change directory before it is written), checked
    before the script runs, so a bad path costs nothing. A file there keeps what it holds
    until the end (opened for writing at once, a failed run emptied it); nothing is
    created to check a new one; the script itself is refused."""
    absolute = os.path.abspath(path)
    exists = os.path.exists(absolute)
    if exists and os.path.exists(script) and os.path.samefile(absolute, script):
        raise OSError(f"{option}: {path} is the script: writing it would destroy the script")
    folder = os.path.dirname(absolute)
    try:
        if exists:
            with open(absolute, "a", encoding="utf-8"):
                pass
        elif not os.path.isdir(folder):
            raise FileNotFoundError(2, "No such file or directory")
        elif not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as problem:
        raise OSError(f"{option}: cannot write {path}: {problem.strerror}") from None
    return absolute


def pools_text(pools: list[dict]) -> str:
    """With named pools, each pool's peaks and quota, as `npumem replay` prints them: what
    sizing the quotas of models served together needs ("" with the default pool alone)."""
    if len(pools) < 2:
        return ""
    lines = [f"  {'pool':<16}{'peak requested':>16}{'peak allocated':>16}"
             f"{'peak reserved':>16}{'quota':>12}\n"]
    for pool in pools:
        stats = pool["stats"]
        quota = pool["quota_bytes"]
        lines.append(
            f"  {pool['name']:<16}"
            + "".join(
                f"{_core.format_bytes(stats[key]):>16}"
                for key in (
                    "requested_bytes.all.peak",
                    "allocated_bytes.all.peak",
                    "reserved_bytes.all.peak",
                )
            )
            + f"{_core.format_bytes(quota) if quota else 'none':>12}\n"
        )
    return "pools\n" + "".join(lines)


def _hbm_limit_text(device: _core.Device) -> str:
    """A line when the HBM the run could reserve was below the tier's capacity (a memory
    fraction, an `hbm` setting): spills to DDR read as unexplained beside the spec."""
    capacity = device.tier_info("hbm")["capacity_bytes"]
    _, total = npumem.mem_get_info(device)
    if total >= capacity:
        return ""
    because = []
    if device.memory_fraction < 1.0:
        because.append(f"memory fraction {device.memory_fraction:g}")
    if int(settings(device).get("hbm", "0")):
        because.append("the hbm setting")
    return (
        f"HBM limit {_core.format_bytes(total)} of {_core.format_bytes(capacity)} "
        f"({', '.join(because)}): past it, memory spills to DDR or runs out\n"
    )


def peaks_text(stats: dict[str, int]) -> str:
    """The peaks since the start (reset_peak_memory_stats() in the script lowers none), in
    all and per tier, with exact bytes."""

    def figure(name: str, key: str) -> str:
        value = stats[key]
        return f"  {name:<24}{_core.format_bytes(value):>12}  ({value:,} bytes)\n"

    lines = ["peaks (since the start, whatever the script reset)\n"]
    lines.append(figure("peak allocated", "allocated_bytes.all.peak"))
    lines.append(figure("peak requested", "requested_bytes.all.peak"))
    lines.append(figure("peak reserved", "reserved_bytes.all.peak"))
    for tier in ("hbm", "ddr"):
        lines.append(figure(f"{tier} peak allocated", f"allocated_bytes.{tier}.peak"))
        lines.append(figure(f"{tier} peak reserved", f"reserved_bytes.{tier}.peak"))
    reclaims = stats["num_reclaims"]
    # As replay says it: most reclaims are routine, only those after a refusal are pressure.
    routine = (
        f" ({stats['num_alloc_retries']:,} made room a request needed; the rest gave cached "
        "memory back before growing past the reserved peak)"
        if reclaims
        else ""
    )
    lines.append(
        f"  spills {stats['num_spills']:,}, reclaims {reclaims:,}{routine}, "
        f"out-of-memory errors {stats['num_ooms']:,}\n"
    )
    return "".join(lines)
