"""Pools pinned to a tier and copies between tiers with the modelled transfer time."""

from __future__ import annotations

import ctypes
import unittest

import npumem
from support import fresh_device

MiB = 1 << 20


class TierPoolTest(unittest.TestCase):
    def test_ddr_pool_allocates_from_ddr_while_hbm_has_room(self):
        device = fresh_device("sim:hbm=64MiB,ddr=128MiB")
        with npumem.pool("weights", tier="ddr", device=device):
            weight = npumem.caching_allocator_alloc(8 * MiB, device)
        activation = npumem.caching_allocator_alloc(8 * MiB, device)
        self.assertEqual(device.tier_of(weight), "ddr")
        self.assertEqual(device.tier_of(activation), "hbm")
        stats = npumem.memory_stats(device)
        self.assertEqual(stats["num_spills"], 0)
        self.assertEqual(stats["allocated_bytes.ddr.current"], 8 * MiB)
        tiers = {info["name"]: info["tier"] for info in npumem.pools(device)}
        self.assertEqual(tiers, {"default": None, "weights": "ddr"})
        npumem.caching_allocator_delete(weight, device)
        npumem.caching_allocator_delete(activation, device)

    def test_pinned_pool_raises_out_of_memory_instead_of_spilling(self):
        device = fresh_device("sim:hbm=32MiB,ddr=128MiB")
        with npumem.pool("shard", tier="hbm", device=device):
            first = npumem.caching_allocator_alloc(24 * MiB, device)
            with self.assertRaises(npumem.OutOfMemoryError) as raised:
                npumem.caching_allocator_alloc(24 * MiB, device)
        self.assertIn("pinned to hbm", str(raised.exception))
        self.assertEqual(npumem.memory_allocated(device), 24 * MiB)
        npumem.caching_allocator_delete(first, device)

    def test_a_tier_the_device_lacks_is_a_config_error(self):
        device = fresh_device("sim:hbm=64MiB,ddr=0")
        with self.assertRaisesRegex(npumem.ConfigError, "has no ddr tier"):
            npumem.create_pool("weights", tier="ddr", device=device)
        with self.assertRaisesRegex(npumem.ConfigError, "unknown tier 'l3'"):
            npumem.create_pool("weights", tier="l3", device=device)
        self.assertEqual([info["name"] for info in npumem.pools(device)], ["default"])

    def test_reopening_a_pool_with_another_tier_is_refused(self):
        device = fresh_device()
        npumem.create_pool("weights", tier="ddr", device=device)
        with self.assertRaisesRegex(npumem.ConfigError, "pinned to ddr, not hbm"):
            with npumem.pool("weights", tier="hbm", device=device):
                pass


class TierCopyTest(unittest.TestCase):
    def test_copy_moves_bytes_and_counts_modelled_time_per_direction(self):
        device = fresh_device("sim:hbm=64MiB,ddr=128MiB,ddr_bw=10GB/s,backing=host")
        with npumem.pool("weights", tier="ddr", device=device):
            master = npumem.caching_allocator_alloc(4 * MiB, device)
        ctypes.memset(master, 0x5A, 4 * MiB)
        copy = npumem.caching_allocator_alloc(4 * MiB, device)
        seconds = npumem.copy(copy, master, 4 * MiB, device)
        self.assertAlmostEqual(seconds, 4 * MiB / 10e9, places=12)
        self.assertEqual(ctypes.string_at(copy + 4 * MiB - 1, 1), b"\x5a")
        stats = npumem.memory_stats(device)
        self.assertEqual(stats["num_copies.ddr_to_hbm"], 1)
        self.assertEqual(stats["copy_bytes.ddr_to_hbm"], 4 * MiB)
        self.assertEqual(stats["copy_modelled_ns.ddr_to_hbm"], round(seconds * 1e9))
        self.assertEqual(stats["copy_bytes.hbm_to_ddr"], 0)
        with self.assertRaisesRegex(npumem.Error, "overruns"):
            npumem.copy(copy, master, 8 * MiB, device)
        with self.assertRaises(npumem.InvalidPointerError):
            npumem.copy(copy + 64, master, MiB, device)
        self.assertEqual(npumem.memory_stats(device)["num_copies.ddr_to_hbm"], 1)
        npumem.caching_allocator_delete(copy, device)
        npumem.caching_allocator_delete(master, device)


if __name__ == "__main__":
    unittest.main()
