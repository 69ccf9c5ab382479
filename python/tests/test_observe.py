"""Monitor, LeakDetector, history, memory_summary and the snapshot exports, over
devices of the registry."""

from __future__ import annotations

import json
import unittest

import npumem
from support import fresh_device

MiB = 1 << 20


class MonitorTest(unittest.TestCase):
    def test_labelled_snapshots_and_report(self):
        device = fresh_device()
        monitor = npumem.Monitor(device)
        start = monitor.snapshot("start")
        ptr = npumem.caching_allocator_alloc(3 * MiB, device)
        loaded = monitor.snapshot("loaded")
        npumem.caching_allocator_delete(ptr, device)
        monitor.snapshot("freed")

        self.assertEqual(start["allocated_bytes"], 0)
        self.assertEqual(loaded["allocated_bytes"], 3 * MiB)
        self.assertEqual(loaded["tiers"]["hbm"]["allocated_bytes"], 3 * MiB)
        self.assertEqual(loaded["tiers"]["ddr"]["allocated_bytes"], 0)
        self.assertEqual([s["label"] for s in monitor.snapshots], ["start", "loaded", "freed"])
        self.assertEqual(monitor.snapshots[2]["peak_allocated_bytes"], 3 * MiB)
        report = monitor.report()
        self.assertIn(device.name, report)
        self.assertRegex(report, r"(?m)^loaded +3\.00 MiB")

        released = monitor.empty_cache()
        self.assertIn("released", released)
        self.assertEqual(npumem.memory_reserved(device), 0)

    def test_memory_summary_has_pytorchs_rows_and_each_pool(self):
        device = fresh_device()
        npumem.create_pool("model_b", device=device)
        with npumem.pool("model_b", device=device):
            npumem.caching_allocator_alloc(MiB, device)
        summary = npumem.memory_summary(device)
        self.assertEqual(summary, npumem.Monitor(device).memory_summary())
        for row in ("Allocated memory", "Reserved memory", "model_b"):
            self.assertIn(row, summary)


class LeakDetectorTest(unittest.TestCase):
    def test_growth_and_survivors_by_tag(self):
        device = fresh_device()
        with npumem.LeakDetector(device) as leaks:
            npumem.caching_allocator_alloc(MiB, device)
            leaks.mark_baseline()
            for _ in range(4):
                transient = npumem.caching_allocator_alloc(MiB, device)
                with npumem.tag("history buffer"):
                    npumem.caching_allocator_alloc(64 * 1024, device)
                npumem.caching_allocator_delete(transient, device)
                leaks.tick()
            report = leaks.report()
        self.assertTrue(report["leaking"])
        self.assertEqual(report["iterations"], 4)
        self.assertEqual(report["judged_iterations"], 2)  # after warm-up, before the last
        self.assertEqual(report["baseline_bytes"], MiB + 2 * 64 * 1024)
        self.assertEqual(report["leaked_bytes"], 2 * 64 * 1024)
        self.assertEqual(report["final_bytes"], MiB + 4 * 64 * 1024)
        (group,) = report["survivors"]
        self.assertEqual(group["tag"], "history buffer")
        self.assertEqual(group["count"], 4)
        self.assertTrue(group["recurring"])
        self.assertIn("LEAK SUSPECTED", report["text"])
        with self.assertRaisesRegex(npumem.Error, "closed"):
            leaks.tick()

    def test_python_lines_split_untagged_leaks_by_the_line_that_made_them(self):
        device = fresh_device()
        with npumem.LeakDetector(device, python_lines=True) as leaks:
            for step in range(6):
                npumem.caching_allocator_alloc(512, device)  # line A: a loss kept
                if step % 2 == 0:
                    npumem.caching_allocator_alloc(64 * 1024, device)  # line B: a cache entry
                leaks.tick()
            report = leaks.report()
        line_a = next(i for i, text in enumerate(open(__file__, encoding="utf-8"), 1)
                      if text.rstrip().endswith("# line A: a loss kept"))
        sites = {group["site"]: group for group in report["survivors"]}
        here = f"{__file__}:{line_a}"
        name = "test_python_lines_split_untagged_leaks_by_the_line_that_made_them"
        self.assertIn(f"{here} in {name}", sites)
        self.assertEqual(len(sites), 2, report["text"])
        self.assertTrue(all(group["recurring"] for group in sites.values()))
        self.assertIn(f"      made at {here} in ", report["text"])
        with npumem.LeakDetector(device) as plain:
            npumem.caching_allocator_alloc(512, device)
            self.assertEqual(plain.report()["survivors"][0]["site"], "")

    def test_no_leak_when_memory_returns(self):
        device = fresh_device()
        with npumem.LeakDetector(device) as leaks:
            for _ in range(3):
                npumem.caching_allocator_delete(npumem.caching_allocator_alloc(MiB, device), device)
                leaks.tick()
            report = leaks.report()
        self.assertFalse(report["leaking"])
        self.assertEqual(report["survivors"], [])

    def test_a_negative_threshold_is_refused(self):
        with self.assertRaises(npumem.ConfigError):
            npumem.LeakDetector(fresh_device(), threshold=-0.5)


class SizePatternsAndResizeTest(unittest.TestCase):
    def test_sizes_and_repetition_per_iteration_mark(self):
        device = fresh_device()
        patterns = npumem.SizePatterns(device)
        for size in (4096, 4096, 100):
            npumem.caching_allocator_delete(npumem.caching_allocator_alloc(size, device), device)
            if size == 4096:
                device.mark_iteration()
        report = patterns.report()
        patterns.stop()
        npumem.caching_allocator_alloc(1, device)  # not counted after stop()
        self.assertEqual(report["allocations"], 3)
        self.assertEqual(report["most_frequent"][0], (4096, 2))
        self.assertEqual(report["repetition"], [1.0])
        self.assertIn("most frequent sizes", report["text"])
        self.assertEqual(patterns.report()["allocations"], 3)

    def test_resize_in_place(self):
        device = fresh_device()
        ptr = npumem.caching_allocator_alloc(MiB, device)
        self.assertTrue(npumem.caching_allocator_resize(ptr, MiB + MiB // 2, device))
        self.assertEqual(device.allocation_size(ptr), MiB + MiB // 2)
        self.assertFalse(npumem.caching_allocator_resize(ptr, 1 << 40, device))
        npumem.caching_allocator_delete(ptr, device)
        with self.assertRaises(npumem.InvalidPointerError):
            npumem.caching_allocator_resize(ptr, 10, device)


class ExportTest(unittest.TestCase):
    def test_a_history_size_out_of_range_is_a_config_error(self):
        # -1 and 2**64 reached the bindings as a TypeError naming their signature.
        device = fresh_device()
        for entries in (0, -1, 2**64, 10**9 + 1):
            with self.subTest(entries=entries):
                with self.assertRaisesRegex(npumem.ConfigError, "max_entries"):
                    npumem.MemoryHistory(device, max_entries=entries)
        with self.assertRaisesRegex(TypeError, "max_entries"):
            npumem.MemoryHistory(device, max_entries=1.5)

    def test_history_goes_into_the_snapshot_json_chrome_trace_and_timeline(self):
        device = fresh_device("sim:hbm=16MiB,ddr=64MiB")
        history = npumem.MemoryHistory(device, max_entries=1000)
        first = npumem.caching_allocator_alloc(12 * MiB, device)
        spilled = npumem.caching_allocator_alloc(12 * MiB, device)
        npumem.caching_allocator_delete(first, device)
        history.stop()
        npumem.caching_allocator_delete(spilled, device)  # after stop: not recorded

        snapshot = json.loads(history.snapshot_json())
        self.assertEqual(snapshot["format"], "npumem.snapshot")
        kinds = [entry["kind"] for entry in snapshot["history"]["entries"]]
        self.assertEqual(kinds.count("alloc"), 2)
        self.assertEqual(kinds.count("free"), 1)
        self.assertIn("spill", kinds)
        self.assertEqual(history.recorded, len(kinds))
        self.assertEqual(history.dropped, 0)

        trace = json.loads(history.chrome_trace())
        self.assertTrue(any(event.get("name") == "spill" for event in trace["traceEvents"]))

        page = history.html_timeline("spills")
        self.assertIn("<html", page.lower())
        self.assertIn("spills", page)

    def test_another_devices_history_is_refused(self):
        recorded = fresh_device()
        other = fresh_device()
        history = npumem.MemoryHistory(recorded, max_entries=10)
        for export in (npumem.snapshot_json, npumem.chrome_trace, npumem.html_timeline):
            with self.assertRaisesRegex(npumem.ConfigError,
                                        f"the history records device {recorded.index}, "
                                        f"not device {other.index}"):
                export(other, history)
        history.stop()

    def test_arguments_of_the_wrong_type_are_named(self):
        # The bindings' TypeError listed their signature ("incompatible function
        # arguments"), or an AttributeError came from inside.
        device = fresh_device()
        calls = {
            "a snapshot label": lambda: npumem.Monitor(device).snapshot(None),
            "threshold": lambda: npumem.LeakDetector(device, threshold="x"),
            "backtraces": lambda: npumem.LeakDetector(device, backtraces="yes"),
            "history": lambda: npumem.snapshot_json(device, history="x"),
            "a title": lambda: npumem.html_timeline(device, title=None),
            "an address": lambda: npumem.caching_allocator_resize("x", 10, device),
            "a pool name": lambda: npumem.create_pool(5, device=device),
        }
        for what, call in calls.items():
            with self.subTest(what):
                with self.assertRaisesRegex(TypeError, what):
                    call()
        with self.assertRaisesRegex(ValueError, "top is a count"):
            npumem.SizePatterns(device).report(top=-1)
        with self.assertRaisesRegex(ValueError, "address -1"):
            npumem.caching_allocator_resize(-1, 10, device)

    def test_snapshot_without_history(self):
        device = fresh_device()
        npumem.caching_allocator_alloc(100, device)
        snapshot = json.loads(npumem.snapshot_json(device))
        self.assertFalse(snapshot["history"]["recorded"])
        self.assertEqual(snapshot["stats"]["requested_bytes.all.current"], 100)


if __name__ == "__main__":
    unittest.main()
