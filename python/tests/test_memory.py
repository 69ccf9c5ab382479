"""The torch.cuda.memory-style API on npumem devices: statistics, peaks, snapshots,
cache release, errors and device creation."""

from __future__ import annotations

import re
import unittest

import npumem
from support import fresh_device, run_python

MiB = 1 << 20


class StatsTest(unittest.TestCase):
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
        ):
            self.assertIn(key, stats)
        self.assertIn("reserved_bytes.hbm.peak", stats)
        self.assertIn("allocated_bytes.ddr.current", stats)
        pattern = re.compile(
            r"^([a-z_]+\.(all|small_pool|large_pool|hbm|ddr)\.(current|peak|allocated|freed)"
            r"|num_[a-z_]+)$"
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

    def test_empty_cache_returns_free_segments_to_the_device(self):
        device = fresh_device()
        ptr = npumem.caching_allocator_alloc(5 * MiB, device)
        npumem.caching_allocator_delete(ptr, device)
        reserved = npumem.memory_reserved(device)
        self.assertGreater(reserved, 0)
        self.assertEqual(npumem.empty_cache(device), reserved)
        self.assertEqual(npumem.memory_reserved(device), 0)
        self.assertEqual(device.tier_info("hbm")["used_bytes"], 0)

    def test_allocations_spill_to_ddr_when_hbm_is_full(self):
        device = fresh_device("sim:hbm=16MiB,ddr=64MiB", conf="spill_to_ddr:true")
        in_hbm = npumem.caching_allocator_alloc(12 * MiB, device)
        spilled = npumem.caching_allocator_alloc(12 * MiB, device)
        self.assertEqual(device.tier_of(in_hbm), "hbm")
        self.assertEqual(device.tier_of(spilled), "ddr")
        stats = npumem.memory_stats(device)
        self.assertEqual(stats["num_spills"], 1)
        self.assertEqual(stats["allocated_bytes.ddr.current"], 12 * MiB)


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
        before = npumem.memory_stats(device)
        with self.assertRaises(npumem.InvalidPointerError):
            npumem.caching_allocator_delete(ptr, device)
        self.assertEqual(npumem.memory_stats(device), before)

    def test_an_unsupported_feature_warns(self):
        with self.assertWarnsRegex(RuntimeWarning, "expandable_segments is not supported"):
            device = fresh_device("sim:hbm=64MiB,vmm=false", "expandable_segments:true")
        self.assertEqual(len(device.warnings), 1)
        self.assertIn("caching", device.warnings[0])

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
        self.assertIn("no processes are running", hidden.stdout)


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

    def test_init_config_overrides_the_environment(self):
        result = run_python(
            "import npumem\n"
            "npumem.init('sim', conf='granule:1024')\n"
            "npumem.caching_allocator_alloc(1)\n"
            "print(npumem.memory_allocated(), npumem.get_device().config)\n",
            {"NPUMEM_ALLOC_CONF": "granule:4096,spill_to_ddr:false"},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        allocated, config = result.stdout.split()
        self.assertEqual(allocated, "1024")
        self.assertIn("spill_to_ddr:false", config)


if __name__ == "__main__":
    unittest.main()
