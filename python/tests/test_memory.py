"""The torch.cuda.memory-style API on npumem devices: statistics, peaks, snapshots,
cache release, errors and device creation."""

from __future__ import annotations

import re
import unittest

import npumem
from support import fresh_device, run_python

MiB = 1 << 20


def run_two_tensor_steps(device, steps: int) -> None:
    """`steps` iterations, each marked, of a 4 MiB and a 6 MiB tensor live together."""
    for _ in range(steps):
        npumem.get_device(device).mark_iteration()
        blocks = [npumem.caching_allocator_alloc(size, device) for size in (4 * MiB, 6 * MiB)]
        for ptr in blocks:
            npumem.caching_allocator_delete(ptr, device)


class StatsTest(unittest.TestCase):
    def test_a_device_shows_its_index_name_and_strategy(self):
        device = fresh_device(conf="strategy:expandable")
        self.assertEqual(repr(device), f"<npumem.Device {device.index}: sim:{device.index}, expandable>")

    def test_keys_are_pytorch_memory_stats_keys(self):
        stats = npumem.memory_stats(fresh_device())
        for key in (
            "allocated_bytes.all.current",
            "allocated_bytes.small_pool.peak",
            "reserved_bytes.large_pool.freed",
            "requested_bytes.all.allocated",
            "active_bytes.all.current",
            "segment.all.current",
            "allocation.all.peak",
            "num_alloc_retries",
            "num_ooms",
            "inactive_split.all.current",
            "inactive_split.large_pool.peak",
            "inactive_split_bytes.small_pool.freed",
            "oversize_allocations.current",
            "oversize_segments.peak",
            "max_split_size",
        ):
            self.assertIn(key, stats)
        self.assertIn("reserved_bytes.hbm.peak", stats)
        self.assertIn("allocated_bytes.ddr.current", stats)
        pattern = re.compile(
            r"^([a-z_]+\.(all|small_pool|large_pool|hbm|ddr)\.(current|peak|allocated|freed)"
            r"|oversize_(allocations|segments)\.(current|peak|allocated|freed)"
            r"|num_[a-z_]+|max_split_size"
            # npumem's own: copies between tiers per direction (npumem.copy)
            r"|(num_copies|copy_bytes|copy_modelled_ns)\.(hbm|ddr)_to_(hbm|ddr))$"
        )
        for key in stats:
            self.assertRegex(key, pattern)
        self.assertEqual(list(stats), sorted(stats))

    def test_allocated_reserved_and_peaks_follow_allocations(self):
        device = fresh_device(conf="granule:512")
        first = npumem.caching_allocator_alloc(1000, device)
        second = npumem.caching_allocator_alloc(3 * MiB, device)
        self.assertEqual(npumem.memory_allocated(device), 1024 + 3 * MiB)
        self.assertEqual(npumem.memory_stats(device)["requested_bytes.all.current"], 1000 + 3 * MiB)
        self.assertGreaterEqual(npumem.memory_reserved(device), npumem.memory_allocated(device))

        npumem.caching_allocator_delete(second, device)
        self.assertEqual(npumem.memory_allocated(device), 1024)
        self.assertEqual(npumem.max_memory_allocated(device), 1024 + 3 * MiB)

        npumem.reset_peak_memory_stats(device)
        self.assertEqual(npumem.max_memory_allocated(device), 1024)
        self.assertEqual(npumem.max_memory_reserved(device), npumem.memory_reserved(device))
        npumem.caching_allocator_delete(first, device)
        self.assertEqual(npumem.memory_allocated(device), 0)

    def test_iteration_keys_give_each_shape_its_plan(self):
        # Two shapes alike in their first 16 requests: keys tell them apart.
        device = fresh_device(spec="sim:hbm=1GiB", conf="strategy:planned")
        for step in range(8):
            shape = step % 2
            npumem.get_device(device).mark_iteration(key=shape)
            previous = None
            for request in range(21):
                size = MiB if request < 16 else (4 if shape == 0 else 8) * MiB
                ptr = npumem.caching_allocator_alloc(size, device)
                if previous is not None:
                    npumem.caching_allocator_delete(previous, device)
                previous = ptr
            npumem.caching_allocator_delete(previous, device)
        stats = npumem.memory_stats(device)
        self.assertEqual(stats["planned.fallbacks"], 0)
        self.assertEqual(stats["planned.plans_kept"], 2)
        self.assertEqual(stats["planned.hits"], 6 * 21)

    def test_planned_strategy_figures_join_memory_stats(self):
        device = fresh_device(spec="sim:hbm=1GiB", conf="strategy:planned")
        run_two_tensor_steps(device, 3)
        stats = npumem.memory_stats(device)
        self.assertEqual(stats["planned.plans_learned"], 1)
        self.assertEqual(stats["planned.learning"], 2, "the first iteration is learned")
        self.assertEqual(stats["planned.hits"], 4, "the next two are served from the plan")
        self.assertEqual(stats["planned.fallbacks"], 0)
        self.assertEqual(stats["planned.arena_bytes"], 10 * MiB)
        self.assertEqual(stats["reserved_bytes.all.current"], 10 * MiB)
        self.assertEqual(stats["planned.iterations"], 3)
        self.assertEqual(list(stats), sorted(stats))
        self.assertNotIn("planned.hits", npumem.memory_stats(fresh_device()))

    def test_planned_report_says_what_the_plans_did_or_why_none_served(self):
        device = fresh_device(spec="sim:hbm=1GiB", conf="strategy:planned")
        self.assertIn(
            "no iterations were marked with optimizer.step() or npumem.torch.iteration() "
            "(or the device's mark_iteration())",
            npumem.planned_report(device),
        )
        run_two_tensor_steps(device, 3)
        report = npumem.planned_report(device)
        self.assertRegex(report, r"(?m)^  plans learned +1 \(1 kept\), arena 10.0 MiB now$")
        self.assertRegex(
            report, r"(?m)^  planned requests +4 hits \(20.0 MiB; 66.7% of the requests\), 0 fallbacks"
        )
        self.assertRegex(
            report,
            r"(?m)^  steady overhead +1.000 \(.*from iteration 2; "
            r"whole granules of 2.00 MiB allow 1.000 at least\)",
        )
        self.assertRegex(report, r"(?m)^  plan 0 +2 of 2 requests, arena 10.0 MiB")
        self.assertEqual(npumem.planned_report(fresh_device()), "")

    def test_memory_summary_shows_the_planned_report_in_its_table(self):
        device = fresh_device(spec="sim:hbm=1GiB", conf="strategy:planned")
        words = " ".join(w for w in npumem.memory_summary(device).split() if w != "|")
        self.assertIn(
            "no iterations were marked with optimizer.step() or npumem.torch.iteration() "
            "(or the device's mark_iteration())",
            words,
        )
        self.assertEqual(npumem.Monitor(device).memory_summary(), npumem.memory_summary(device))
        run_two_tensor_steps(device, 3)
        summary = npumem.memory_summary(device)
        self.assertRegex(summary, r"(?m)^\| plans learned: 1 \(1 kept\), arena 10.0 MiB now +\|$")
        self.assertRegex(summary, r"(?m)^\| steady overhead: 1.000 \(")

    def test_empty_cache_returns_free_segments_to_the_device(self):
        device = fresh_device()
        ptr = npumem.caching_allocator_alloc(5 * MiB, device)
        npumem.caching_allocator_delete(ptr, device)
        reserved = npumem.memory_reserved(device)
        self.assertGreater(reserved, 0)
        self.assertEqual(npumem.empty_cache(device), reserved)
        self.assertEqual(npumem.memory_reserved(device), 0)
        self.assertEqual(device.tier_info("hbm")["used_bytes"], 0)

    def test_a_size_that_is_no_byte_count_is_named(self):
        device = fresh_device()
        with self.assertRaisesRegex(ValueError, r"size -1 is not a byte count"):
            npumem.caching_allocator_alloc(-1, device)
        with self.assertRaisesRegex(ValueError, r"size 1180591620717411303424 is not"):
            npumem.caching_allocator_alloc(2**70, device)
        with self.assertRaisesRegex(TypeError, r"a size is an int number of bytes, not 1.5"):
            npumem.caching_allocator_alloc(1.5, device)
        self.assertEqual(npumem.memory_allocated(device), 0)
        ptr = npumem.caching_allocator_alloc(4096, device)
        with self.assertRaisesRegex(ValueError, r"size -1 is not a byte count"):
            npumem.copy(ptr, ptr, -1, device)
        with self.assertRaisesRegex(ValueError, r"does not fit in 64 bits"):
            npumem.create_pool("huge", quota=2**70, device=device)
        npumem.caching_allocator_delete(ptr, device)

    def test_allocations_spill_to_ddr_when_hbm_is_full(self):
        device = fresh_device("sim:hbm=16MiB,ddr=64MiB", conf="spill_to_ddr:true")
        in_hbm = npumem.caching_allocator_alloc(12 * MiB, device)
        spilled = npumem.caching_allocator_alloc(12 * MiB, device)
        self.assertEqual(device.tier_of(in_hbm), "hbm")
        self.assertEqual(device.tier_of(spilled), "ddr")
        stats = npumem.memory_stats(device)
        self.assertEqual(stats["num_spills"], 1)
        self.assertEqual(stats["allocated_bytes.ddr.current"], 12 * MiB)


class CachedMemoryStatsTest(unittest.TestCase):
    def inactive_split_in_snapshot(self, device):
        """(count, bytes) of free blocks sharing their segment, from the snapshot."""
        count = size = 0
        for segment in device.snapshot():
            if len(segment["blocks"]) > 1:
                for block in segment["blocks"]:
                    if block["state"] == "inactive":
                        count += 1
                        size += block["size"]
        return count, size

    def test_inactive_split_counts_free_blocks_sharing_a_segment(self):
        device = fresh_device("sim:hbm=256MiB,ddr=0")
        ptrs = [npumem.caching_allocator_alloc(2 * MiB, device) for _ in range(4)]
        npumem.caching_allocator_delete(ptrs[1], device)
        stats = npumem.memory_stats(device)
        # One 20 MiB segment: a free hole of 2 MiB and a free tail of 12 MiB.
        self.assertEqual(stats["inactive_split.all.current"], 2)
        self.assertEqual(stats["inactive_split.large_pool.current"], 2)
        self.assertEqual(stats["inactive_split.small_pool.current"], 0)
        self.assertEqual(stats["inactive_split_bytes.all.current"], 14 * MiB)
        self.assertEqual(self.inactive_split_in_snapshot(device), (2, 14 * MiB))
        for ptr in ptrs[:1] + ptrs[2:]:
            npumem.caching_allocator_delete(ptr, device)
        stats = npumem.memory_stats(device)
        self.assertEqual(stats["inactive_split.all.current"], 0)
        self.assertEqual(stats["inactive_split_bytes.all.current"], 0)
        self.assertEqual(self.inactive_split_in_snapshot(device), (0, 0))
        self.assertGreaterEqual(stats["inactive_split_bytes.all.peak"], 14 * MiB)

    def test_oversize_counts_follow_max_split_size(self):
        self.assertEqual(npumem.memory_stats(fresh_device())["max_split_size"], -1)
        device = fresh_device("sim:hbm=256MiB,ddr=0", "max_split_size:32MiB")
        big = npumem.caching_allocator_alloc(40 * MiB, device)
        small = npumem.caching_allocator_alloc(4 * MiB, device)
        stats = npumem.memory_stats(device)
        self.assertEqual(stats["max_split_size"], 32 * MiB)
        self.assertEqual(stats["oversize_allocations.current"], 1)
        self.assertEqual(stats["oversize_segments.current"], 1)
        npumem.caching_allocator_delete(big, device)
        npumem.empty_cache(device)
        stats = npumem.memory_stats(device)
        self.assertEqual(stats["oversize_allocations.current"], 0)
        self.assertEqual(stats["oversize_allocations.peak"], 1)
        self.assertEqual(stats["oversize_segments.current"], 0)
        self.assertEqual(stats["oversize_segments.freed"], 1)
        npumem.caching_allocator_delete(small, device)

    def test_reset_accumulated_memory_stats_keeps_current_and_peak(self):
        device = fresh_device()
        kept = npumem.caching_allocator_alloc(3 * MiB, device)
        npumem.caching_allocator_delete(npumem.caching_allocator_alloc(MiB, device), device)
        before = npumem.memory_stats(device)
        self.assertGreater(before["allocated_bytes.all.freed"], 0)
        self.assertGreater(before["num_device_alloc"], 0)
        npumem.reset_accumulated_memory_stats(device)
        after = npumem.memory_stats(device)
        for key in ("allocated_bytes.all.allocated", "allocated_bytes.all.freed",
                    "allocation.large_pool.allocated", "reserved_bytes.hbm.allocated",
                    "num_device_alloc"):
            self.assertEqual(after[key], 0, key)
        for key in ("allocated_bytes.all.current", "allocated_bytes.all.peak",
                    "reserved_bytes.all.current"):
            self.assertEqual(after[key], before[key], key)
        npumem.caching_allocator_delete(kept, device)
        self.assertEqual(npumem.memory_stats(device)["allocated_bytes.all.freed"], 3 * MiB)


class MemoryFractionTest(unittest.TestCase):
    def test_the_fraction_caps_hbm_and_the_error_names_it(self):
        device = fresh_device("sim:hbm=64MiB,ddr=0")
        npumem.set_per_process_memory_fraction(0.25, device)
        self.assertEqual(device.memory_fraction, 0.25)
        self.assertEqual(npumem.mem_get_info(device), (16 * MiB, 16 * MiB))
        first = npumem.caching_allocator_alloc(10 * MiB, device)
        with self.assertRaisesRegex(npumem.OutOfMemoryError, r"memory fraction 0\.25"):
            npumem.caching_allocator_alloc(10 * MiB, device)
        npumem.set_per_process_memory_fraction(1.0, device)
        second = npumem.caching_allocator_alloc(10 * MiB, device)
        for ptr in (first, second):
            npumem.caching_allocator_delete(ptr, device)

    def test_bad_fractions_are_rejected_and_change_nothing(self):
        device = fresh_device()
        npumem.set_per_process_memory_fraction(0.5, device)
        for bad in (-0.5, 1.01, float("nan")):
            with self.assertRaisesRegex(ValueError, "between 0 and 1"):
                npumem.set_per_process_memory_fraction(bad, device)
        for bad in ("0.5", None, True):
            with self.assertRaisesRegex(TypeError, "fraction must be a float"):
                npumem.set_per_process_memory_fraction(bad, device)
        self.assertEqual(device.memory_fraction, 0.5)


class SnapshotTest(unittest.TestCase):
    def test_snapshot_lists_segments_and_blocks_with_tier_pool_and_tag(self):
        device = fresh_device()
        with npumem.tag("weights"):
            ptr = npumem.caching_allocator_alloc(4096 + 100, device)
        segments = [s for s in npumem.memory_snapshot() if s["device"] == device.index]
        self.assertEqual(len(segments), 1)
        segment = segments[0]
        self.assertEqual(segment["tier"], "hbm")
        self.assertEqual(segment["pool"], "default")
        self.assertEqual(segment["segment_type"], "small")
        self.assertEqual(segment["requested_size"], 4196)
        self.assertEqual(sum(b["size"] for b in segment["blocks"]), segment["total_size"])
        (block,) = [b for b in segment["blocks"] if b["state"] == "active_allocated"]
        self.assertEqual(block["address"], ptr)
        self.assertEqual(block["requested_size"], 4196)
        self.assertEqual(block["tag"], "weights")
        self.assertEqual(segment["allocated_size"], block["size"])

    def test_expandable_segments_count_their_mapped_runs_only(self):
        device = fresh_device("sim:hbm=64MiB,ddr=0", "strategy:expandable")
        first = npumem.caching_allocator_alloc(3 * MiB, device)
        second = npumem.caching_allocator_alloc(5 * MiB, device)
        npumem.caching_allocator_delete(first, device)
        npumem.empty_cache(device)  # unmaps the first block's whole granule
        segments = [s for s in npumem.memory_snapshot() if s["device"] == device.index]
        self.assertEqual(
            sum(s["total_size"] for s in segments),
            npumem.memory_stats(device)["reserved_bytes.all.current"],
        )
        for segment in segments:
            self.assertEqual(sum(b["size"] for b in segment["blocks"]), segment["total_size"])
            self.assertEqual(segment["address"], segment["blocks"][0]["address"])
        self.assertIn(second, [b["address"] for s in segments for b in s["blocks"]])
        npumem.caching_allocator_delete(second, device)

    def test_snapshot_covers_every_device_made(self):
        first, second = fresh_device(), fresh_device()
        npumem.caching_allocator_alloc(64, first)
        npumem.caching_allocator_alloc(64, second)
        devices = {segment["device"] for segment in npumem.memory_snapshot()}
        self.assertLessEqual({first.index, second.index}, devices)


class ErrorTest(unittest.TestCase):
    def test_out_of_memory_explains_and_counts(self):
        device = fresh_device("sim:hbm=4MiB,ddr=0")
        with self.assertRaises(npumem.OutOfMemoryError) as raised:
            npumem.caching_allocator_alloc(16 * MiB, device)
        error = raised.exception
        self.assertIsInstance(error, RuntimeError)
        self.assertIsInstance(error, npumem.Error)
        self.assertEqual(error.requested_bytes, 16 * MiB)
        self.assertEqual(error.pool, "default")
        self.assertIn("out of memory", str(error))
        self.assertIn("hbm", str(error))
        self.assertEqual(npumem.memory_stats(device)["num_ooms"], 1)

    def test_double_free_raises_and_changes_nothing(self):
        device = fresh_device()
        ptr = npumem.caching_allocator_alloc(100, device)
        npumem.caching_allocator_delete(ptr, device)
        # The check returns blocks this thread's front cache keeps to the pools (moving
        # them into inactive_split), as a snapshot does.
        device.snapshot()
        before = npumem.memory_stats(device)
        with self.assertRaises(npumem.InvalidPointerError):
            npumem.caching_allocator_delete(ptr, device)
        self.assertEqual(npumem.memory_stats(device), before)

    def test_an_unsupported_feature_warns(self):
        with self.assertWarnsRegex(RuntimeWarning, "expandable_segments feature is not supported"):
            device = fresh_device("sim:hbm=64MiB,vmm=false", "expandable_segments:true")
        self.assertEqual(len(device.warnings), 1)
        self.assertIn("falling back to the caching strategy", device.warnings[0])
        self.assertIn("strategy:caching,", device.config)
        with self.assertWarnsRegex(RuntimeWarning, "falling back to the static strategy"):
            arena = fresh_device(
                "sim:hbm=64MiB,vmm=false", "expandable_segments:true,static_size:32MiB"
            )
        self.assertIn("strategy:static,", arena.config)

    def test_bad_spec_and_config_name_the_problem(self):
        with self.assertRaisesRegex(npumem.ConfigError, "unknown key 'hmb'"):
            npumem.init("sim:hmb=1GiB", device=60)
        with self.assertRaisesRegex(npumem.ConfigError, "granularity|granule"):
            npumem.init("sim", "granule:100", device=61)
        with self.assertRaisesRegex(npumem.ConfigError, "not_a_device"):
            npumem.init("not_a_device", device=62)
        with self.assertRaisesRegex(npumem.ConfigError, "'lots'"):
            npumem.create_pool("p", quota="lots", device=fresh_device())

    def test_devices_are_named_by_their_index(self):
        self.assertEqual(npumem.init("sim:hbm=1GiB", device=7).name, "sim:7")
        self.assertEqual(npumem.init("sim:hbm=1GiB,id=3", device=8).name, "sim:3")

    def test_a_device_is_made_once(self):
        device = fresh_device()
        with self.assertRaisesRegex(npumem.ConfigError, "exists already"):
            npumem.init("sim", device=device.index)

    def test_bad_device_arguments(self):
        with self.assertRaises(TypeError):
            npumem.memory_allocated("cuda:0")
        with self.assertRaises(TypeError):
            npumem.memory_allocated(True)
        with self.assertRaises(ValueError):
            npumem.memory_allocated(-1)
        with self.assertRaisesRegex(npumem.ConfigError, "unknown tier 'l2'"):
            fresh_device().largest_free_block("l2")

    def test_wrong_arguments_are_named_not_read_as_a_signature_mismatch(self):
        # Each reached pybind11, which answered "incompatible function arguments" with
        # the C++ signatures.
        device = fresh_device()
        with self.assertRaisesRegex(ValueError, "address -1 is not one an allocation returned"):
            npumem.caching_allocator_delete(-1, device)
        with self.assertRaisesRegex(TypeError, "an address is an int, not 'x'"):
            npumem.record_stream("x", 0, device)
        with self.assertRaisesRegex(TypeError, "a device spec is a string such as 'sim', not 123"):
            npumem.init(123, device=40)
        with self.assertRaisesRegex(TypeError, "a config is a string .*, not 5"):
            npumem.init("sim", 5, device=40)
        self.assertFalse(npumem.is_initialized(40))
        with self.assertRaisesRegex(TypeError, "a memory tag is a string, not 5"):
            npumem.tag(5)
        with self.assertRaisesRegex(ValueError, "warmup_iterations is a count >= 0, not -1"):
            npumem.LeakDetector(device, warmup_iterations=-1)
        with self.assertRaisesRegex(ValueError, "a memory tag is text UTF-8 can hold"):
            npumem.tag("\udcff")
        made = npumem.get_device(device)
        for key in (-1, 2**64):
            with self.assertRaisesRegex(ValueError, "an iteration key is an int from 0 to 2"):
                made.mark_iteration(key=key)
        with self.assertRaisesRegex(TypeError, "an iteration key is an int"):
            made.mark_iteration(key="3")
        made.mark_iteration(key=2**64 - 1)


class StreamTest(unittest.TestCase):
    """Streams as PyTorch passes them (the ordering itself is tested in C++, where the
    virtual NPU can keep a kernel running: tests/core/stream_order_test.cc)."""

    def test_allocations_take_a_stream_and_record_stream_adds_one(self):
        device = fresh_device()

        class Stream:  # torch_npu.npu.Stream carries its aclrtStream as npu_stream
            npu_stream = 0x5000

        ptr = npumem.caching_allocator_alloc(MiB, device, stream=Stream())
        npumem.record_stream(ptr, 0x6000, device)
        npumem.caching_allocator_delete(ptr, device)
        self.assertEqual(npumem.memory_allocated(device), 0)
        with self.assertRaisesRegex(npumem.InvalidPointerError,
                                    "invalid record_stream: pointer .* was already freed"):
            npumem.record_stream(ptr, 0x6000, device)

    def test_bad_streams_are_named(self):
        with self.assertRaisesRegex(TypeError, "not 'compute'"):
            npumem.caching_allocator_alloc(64, fresh_device(), stream="compute")
        with self.assertRaisesRegex(ValueError, "got -1"):
            npumem.caching_allocator_alloc(64, fresh_device(), stream=-1)


class TorchCudaNamesTest(unittest.TestCase):
    def test_mem_get_info_is_free_and_total_hbm(self):
        device = fresh_device("sim:hbm=64MiB,ddr=128MiB")
        self.assertEqual(npumem.mem_get_info(device), (64 * MiB, 64 * MiB))
        ptr = npumem.caching_allocator_alloc(MiB, device)
        reserved = npumem.memory_reserved(device)
        self.assertGreater(reserved, 0)
        self.assertEqual(npumem.mem_get_info(device), (64 * MiB - reserved, 64 * MiB))
        npumem.caching_allocator_delete(ptr, device)
        limited = fresh_device("sim:hbm=64MiB,ddr=128MiB", "hbm:16MiB")
        self.assertEqual(npumem.mem_get_info(limited), (16 * MiB, 16 * MiB))

    def test_nested_stats_and_the_older_reset_name(self):
        device = fresh_device()
        ptr = npumem.caching_allocator_alloc(3 * MiB, device)
        nested = npumem.memory_stats_as_nested_dict(device)
        self.assertEqual(nested["allocated_bytes"]["all"]["current"], 3 * MiB)
        self.assertEqual(nested["reserved_bytes"]["hbm"]["peak"], npumem.max_memory_reserved(device))
        self.assertEqual(nested["num_ooms"], 0)
        npumem.caching_allocator_delete(ptr, device)
        self.assertEqual(npumem.max_memory_allocated(device), 3 * MiB)
        npumem.reset_max_memory_allocated(device)
        self.assertEqual(npumem.max_memory_allocated(device), 0)
        # torch.cuda's older names, and memory_summary's abbreviated argument.
        self.assertEqual(npumem.memory_cached(device), npumem.memory_reserved(device))
        self.assertEqual(npumem.max_memory_cached(device), npumem.max_memory_reserved(device))
        npumem.reset_max_memory_cached(device)
        self.assertEqual(npumem.max_memory_reserved(device), npumem.memory_reserved(device))
        self.assertEqual(
            npumem.memory_summary(device, abbreviated=True), npumem.memory_summary(device)
        )

    def test_zero_bytes_give_address_zero_and_allocate_nothing(self):
        # As torch.cuda.caching_allocator_alloc(0): a 512-byte block was allocated.
        device = fresh_device()
        self.assertEqual(npumem.caching_allocator_alloc(0, device), 0)
        self.assertEqual(npumem.memory_allocated(device), 0)
        self.assertEqual(npumem.memory_stats(device)["allocation.all.allocated"], 0)
        npumem.caching_allocator_delete(0, device)
        with self.assertRaises(TypeError):
            npumem.caching_allocator_alloc(0, device, stream="s")

    def test_list_gpu_processes_names_this_process(self):
        # A fresh process: a stats page has places for 8 devices, fewer than this one made.
        result = run_python(
            "import os, npumem\n"
            "device = npumem.init('sim:hbm=64MiB,ddr=0', device=2)\n"
            "print(os.getpid())\n"
            "print(npumem.list_gpu_processes(2))\n"
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        pid, listing = result.stdout.split("\n", 1)
        self.assertTrue(listing.startswith("NPU:2 (sim:2)"), listing)
        self.assertRegex(listing, rf"process +{pid} uses +0\.000 MB NPU memory \(python3")
        hidden = run_python(
            "import npumem\n"
            "npumem.init('sim:hbm=64MiB,ddr=0', device=2)\n"
            "print(npumem.list_gpu_processes(2))\n",
            {"NPUMEM_STATS_PAGE": "0"},
        )
        self.assertEqual(hidden.returncode, 0, hidden.stderr)
        # Off the page, this process still uses the device: "no processes are running"
        # was said beside its own memory.
        self.assertRegex(
            hidden.stdout, r"uses +0\.000 MB NPU memory \(this process, not on the stats page"
        )
        # Its own line is the device's now: the page's lagged an allocation just made.
        fresh = run_python(
            "import npumem\n"
            "npumem.init('sim:hbm=64MiB,ddr=0', device=2)\n"
            "kept = npumem.caching_allocator_alloc(4 << 20, 2)\n"
            "print(npumem.memory_reserved(2) / (1 << 20))\n"
            "print(npumem.list_gpu_processes(2))\n"
        )
        self.assertEqual(fresh.returncode, 0, fresh.stderr)
        reserved, listing = fresh.stdout.split("\n", 1)
        self.assertGreater(float(reserved), 0)
        self.assertRegex(listing, rf"uses +{float(reserved):.3f} MB NPU memory \(python3")


class DefaultDeviceTest(unittest.TestCase):
    def test_device_zero_comes_from_the_environment_on_first_use(self):
        result = run_python(
            "import npumem\n"
            "assert not npumem.is_initialized()\n"
            "ptr = npumem.caching_allocator_alloc(1)\n"
            "device = npumem.get_device()\n"
            "print(device.spec, npumem.memory_allocated(), device.tier_info('ddr')['present'])\n",
            {"NPUMEM_DEVICE": "sim:hbm=1GiB,ddr=0", "NPUMEM_ALLOC_CONF": "granule:4096"},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["sim:hbm=1GiB,ddr=0", "4096", "False"])

    def test_reading_statistics_makes_no_device(self):
        # As torch.cuda.memory_stats() before CUDA is initialized: {} and zeros, so an
        # init() with the intended settings can still follow.
        result = run_python(
            "import npumem\n"
            "assert npumem.memory_stats(5) == {}\n"
            "assert npumem.memory_allocated(5) == 0 and npumem.max_memory_reserved(5) == 0\n"
            "assert npumem.memory_stats_as_nested_dict(5) == {}\n"
            "npumem.reset_peak_memory_stats(5)\n"
            "npumem.reset_accumulated_memory_stats(5)\n"
            "assert npumem.empty_cache(5) == 0\n"
            "assert 'not made yet' in npumem.memory_summary(5)\n"
            "assert npumem.pools(5) == []\n"
            "assert npumem.list_gpu_processes(5).splitlines() == ['NPU:5 (not made yet)', "
            "'no processes are running']\n"
            "assert npumem._snapshot(5) == []\n"
            "assert not npumem.is_initialized(5)\n"
            "npumem.init('sim:hbm=1GiB', conf='granule:1024', device=5)\n"
            "npumem.caching_allocator_alloc(1, 5)\n"
            "print(npumem.memory_allocated(5))\n"
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["1024"])

    def test_a_device_index_past_the_last_is_refused_by_every_call(self):
        for call in (npumem.memory_stats, npumem.memory_allocated, npumem.empty_cache,
                     npumem.reset_peak_memory_stats, npumem.get_device, npumem.is_initialized):
            with self.assertRaisesRegex(ValueError, "device index 64 is out of range \\[0, 64\\)",
                                        msg=call.__name__):
                call(64)

    def test_init_config_overrides_the_environment(self):
        result = run_python(
            "import npumem\n"
            "npumem.init('sim', conf='granule:1024')\n"
            "npumem.caching_allocator_alloc(1)\n"
            "print(npumem.memory_allocated(), npumem.get_device().config)\n",
            {"NPUMEM_ALLOC_CONF": "granule:bogus,spill_to_ddr:false"},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        allocated, config = result.stdout.split()
        self.assertEqual(allocated, "1024")
        self.assertIn("spill_to_ddr:false", config)

    def test_a_bad_spec_from_the_environment_is_named(self):
        result = run_python(
            "import npumem\n"
            "for make in (npumem.get_device, npumem.init, lambda: npumem.Monitor(3)):\n"
            "    try:\n"
            "        make()\n"
            "    except npumem.ConfigError as problem:\n"
            "        print(str(problem).startswith(\"NPUMEM_DEVICE: bad device spec 'bogus'\"))\n"
            "print(npumem.init('sim', device=1).spec)\n",
            {"NPUMEM_DEVICE": "bogus"},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["True", "True", "True", "sim"])

    def test_a_bad_environment_setting_init_does_not_replace_is_named(self):
        result = run_python("import npumem\nnpumem.init('sim', conf='granule:1024')\n",
                            {"NPUMEM_ALLOC_CONF": "granule:4096,strategy:bogus"})
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("NPUMEM_ALLOC_CONF: bad value 'bogus' for key 'strategy'", result.stderr)

    def test_a_static_strategy_without_its_size_names_where_it_was_set(self):
        # "static strategy needs static_size" did not say that NPUMEM_ALLOC_CONF set it.
        for env, conf, source in (({"NPUMEM_ALLOC_CONF": "strategy:static"}, None,
                                   "NPUMEM_ALLOC_CONF"),
                                  ({}, "'strategy:static'", "conf")):
            with self.subTest(source):
                result = run_python(f"import npumem\nnpumem.init('sim', conf={conf})\n", env)
                self.assertNotEqual(result.returncode, 0)
                self.assertIn(f"ConfigError: {source}: strategy:static needs static_size",
                              result.stderr)

    def test_torch_install_names_npumem_device_for_its_spec(self):
        for spec, problem in (("sim:hbm=1GiB,backing=host,hbm=2GiB", "given twice"),
                              ("sim:hbm=1GiB", "has no host memory")):
            with self.subTest(spec):
                result = run_python("import npumem.torch\nnpumem.torch.install()\n",
                                    {"NPUMEM_DEVICE": spec})
                self.assertNotEqual(result.returncode, 0)
                self.assertRegex(result.stderr, f"ConfigError: NPUMEM_DEVICE: .*{problem}")


if __name__ == "__main__":
    unittest.main()
