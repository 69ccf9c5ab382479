"""Pools with quotas and memory tags as per-thread `with` blocks."""

from __future__ import annotations

import threading
import unittest
import warnings

import npumem
from support import fresh_device

MiB = 1 << 20


def pool_stats(device, name: str) -> dict[str, int]:
    (info,) = [info for info in npumem.pools(device) if info["name"] == name]
    return info["stats"]


def pool_of(device, ptr: int) -> str:
    for segment in device.snapshot():
        if any(block["address"] == ptr for block in segment["blocks"]):
            return segment["pool"]
    raise AssertionError(f"{ptr:#x} is in no segment")


class PoolTest(unittest.TestCase):
    def test_allocations_in_the_block_go_to_the_pool(self):
        device = fresh_device()
        with npumem.pool("model_a", device=device) as scope:
            inside = npumem.caching_allocator_alloc(1000, device)
            self.assertEqual(scope.stats()["requested_bytes.all.current"], 1000)
        outside = npumem.caching_allocator_alloc(1000, device)
        self.assertEqual(pool_of(device, inside), "model_a")
        self.assertEqual(pool_of(device, outside), "default")
        self.assertEqual(pool_stats(device, "default")["requested_bytes.all.current"], 1000)

    def test_quota_refuses_beyond_it(self):
        device = fresh_device()
        with npumem.pool("capped", quota="4MiB", device=device):
            for _ in range(4):
                npumem.caching_allocator_alloc(1 * MiB, device)
            with self.assertRaises(npumem.OutOfMemoryError) as raised:
                npumem.caching_allocator_alloc(1 * MiB, device)
        self.assertEqual(raised.exception.pool, "capped")
        self.assertIn("quota", str(raised.exception))
        npumem.caching_allocator_alloc(1 * MiB, device)  # the default pool has no quota

    def test_an_existing_pool_keeps_its_quota(self):
        device = fresh_device()
        npumem.create_pool("fixed", quota=8 * MiB, device=device)
        with npumem.pool("fixed", device=device):
            pass
        with npumem.pool("fixed", quota="8MiB", device=device):
            pass
        with self.assertRaisesRegex(
            npumem.ConfigError,
            r"exists with quota 8.00 MiB \(8388608 bytes\), not quota 16.0 MiB \(16777216 bytes\)",
        ):
            with npumem.pool("fixed", quota="16MiB", device=device):
                pass
        npumem.create_pool("open", device=device)
        with self.assertRaisesRegex(npumem.ConfigError, "pool 'open' exists with no quota, not"):
            with npumem.pool("open", quota="16MiB", device=device):
                pass
        with self.assertRaisesRegex(npumem.ConfigError, "exists already"):
            npumem.create_pool("fixed", device=device)

    def test_a_devices_warning_points_at_the_users_line_whatever_the_way_in(self):
        # Made through fresh_device (a helper outside npumem), then npumem.init: the
        # warning names the helper's line, the first outside npumem, not npumem's.
        with self.assertWarnsRegex(RuntimeWarning, "hbm:1.00 GiB is more than the HBM") as warned:
            fresh_device("sim:hbm=64MiB,ddr=0", "hbm:1GiB")
        self.assertTrue(warned.filename.endswith("support.py"), warned.filename)

    def test_a_pool_named_like_another_but_for_case_warns_where_it_is_made(self):
        device = fresh_device()
        npumem.create_pool("Encoder", quota="8MiB", device=device)
        with self.assertWarnsRegex(
            RuntimeWarning, "pool 'encoder' is made, with no quota, beside pool 'Encoder': a typo"
        ) as warned:
            with npumem.pool("encoder", device=device):
                pass
        self.assertEqual(warned.filename, __file__)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with npumem.pool("decoder", device=device):
                pass

    def test_a_quota_not_in_whole_granules_warns_where_the_pool_is_made(self):
        # A 5 MiB quota held 4 MiB (2 MiB granules), said only by its out-of-memory error.
        device = fresh_device()
        with self.assertWarnsRegex(
            RuntimeWarning, "quota of 5.00 MiB .* the pool holds at most 4.00 MiB"
        ) as warned:
            npumem.create_pool("odd", quota="5MiB", device=device)
        self.assertEqual(warned.filename, __file__)
        with self.assertWarnsRegex(RuntimeWarning, "pool 'scoped': a quota of 3.00 MiB") as warned:
            with npumem.pool("scoped", quota=3 * MiB, device=device):
                pass
        self.assertEqual(warned.filename, __file__)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            npumem.create_pool("whole", quota="4MiB", device=device)
            with npumem.pool("scoped", quota=3 * MiB, device=device):  # made already
                pass

    def test_a_tier_that_is_no_string_is_named(self):
        device = fresh_device()
        for call in (
            lambda: npumem.create_pool("t", tier=1, device=device),
            lambda: npumem.pool("t", tier=1, device=device),
        ):
            with self.assertRaisesRegex(TypeError, "a tier is 'hbm', 'ddr' or None, not 1"):
                call()
        self.assertEqual([info["name"] for info in npumem.pools(device)], ["default"])

    def test_a_removed_pool_gives_back_its_memory_and_takes_another_quota(self):
        device = fresh_device()
        reserved = npumem.memory_reserved(device)
        with npumem.pool("model_a", quota="64MiB", device=device):
            ptr = npumem.caching_allocator_alloc(3 * MiB, device)
            with self.assertRaisesRegex(npumem.ConfigError, "a pool scope routes"):
                npumem.remove_pool("model_a", device)
        with self.assertRaisesRegex(npumem.ConfigError, r"holds 1 live allocation \(3.00 MiB\)"):
            npumem.remove_pool("model_a", device)
        npumem.caching_allocator_delete(ptr, device)
        self.assertGreater(npumem.remove_pool("model_a", device), 0)
        self.assertEqual(npumem.memory_reserved(device), reserved)
        self.assertEqual([info["name"] for info in npumem.pools(device)], ["default"])
        with npumem.pool("model_a", quota="32MiB", device=device):
            npumem.caching_allocator_delete(npumem.caching_allocator_alloc(MiB, device), device)
        self.assertEqual(npumem.pools(device)[1]["quota_bytes"], 32 * MiB)
        # A report of the whole run keeps the first model's figures (`run` prints them).
        listed = npumem.pools(device, removed=True)
        self.assertEqual(
            [info["name"] for info in listed], ["default", "model_a (removed)", "model_a"]
        )
        self.assertEqual(listed[1]["quota_bytes"], 64 * MiB)
        self.assertEqual(listed[1]["stats"]["requested_bytes.all.peak"], 3 * MiB)
        with self.assertRaisesRegex(npumem.ConfigError, "the default pool cannot be removed"):
            npumem.remove_pool("default", device)
        with self.assertRaisesRegex(TypeError, "a pool name is a string"):
            npumem.remove_pool(3, device)

    def test_nested_pools_restore_the_outer_one(self):
        device = fresh_device()
        with npumem.pool("outer", device=device):
            with npumem.pool("inner", device=device):
                in_inner = npumem.caching_allocator_alloc(64, device)
            in_outer = npumem.caching_allocator_alloc(64, device)
        self.assertEqual(pool_of(device, in_inner), "inner")
        self.assertEqual(pool_of(device, in_outer), "outer")

    def test_other_threads_keep_the_default_pool(self):
        device = fresh_device()
        from_thread: list[int] = []
        with npumem.pool("main_only", device=device):
            worker = threading.Thread(
                target=lambda: from_thread.append(npumem.caching_allocator_alloc(64, device))
            )
            worker.start()
            worker.join()
            from_main = npumem.caching_allocator_alloc(64, device)
        self.assertEqual(pool_of(device, from_thread[0]), "default")
        self.assertEqual(pool_of(device, from_main), "main_only")

    def test_scopes_close_in_reverse_order_only(self):
        device = fresh_device()
        first = npumem.pool("first", device=device)
        second = npumem.pool("second", device=device)
        first.__enter__()
        second.__enter__()
        with self.assertRaisesRegex(npumem.Error, "exits before a scope entered after it"):
            first.__exit__(None, None, None)
        second.__exit__(None, None, None)
        first.__exit__(None, None, None)
        with self.assertRaisesRegex(npumem.Error, "not active"):
            first.__exit__(None, None, None)
        with first:
            with self.assertRaisesRegex(npumem.Error, "active already"):
                first.__enter__()

    def test_a_pool_and_a_tag_close_in_reverse_order_of_each_other(self):
        # A pool closed inside a tag's scope was not refused: the next allocations went to
        # 'default' under the tag, and the pool's own exit then said it was not active.
        device = fresh_device()
        outer = npumem.pool("outer", device=device)
        inner = npumem.tag("inner")
        outer.__enter__()
        inner.__enter__()
        refused = r"pool scope 'outer' exits before .*\(tag 'inner'\)"
        with self.assertRaisesRegex(npumem.Error, refused):
            outer.__exit__(None, None, None)
        self.assertEqual(pool_of(device, npumem.caching_allocator_alloc(64, device)), "outer")
        inner.__exit__(None, None, None)
        outer.__exit__(None, None, None)
        # And a tag closed inside a pool's scope.
        with npumem.tag("t") as outer_tag:
            with npumem.pool("p", device=device):
                refused = r"tag scope 't' exits before .*\(pool 'p'\)"
                with self.assertRaisesRegex(npumem.Error, refused):
                    outer_tag.__exit__(None, None, None)


class TagTest(unittest.TestCase):
    def test_blocks_carry_the_tag_of_their_block(self):
        device = fresh_device()
        with npumem.tag("encoder"):
            with npumem.tag("attention"):
                inner = npumem.caching_allocator_alloc(64, device)
            outer = npumem.caching_allocator_alloc(64, device)
        untagged = npumem.caching_allocator_alloc(64, device)
        tags = {
            block["address"]: block["tag"]
            for segment in device.snapshot()
            for block in segment["blocks"]
        }
        self.assertEqual(tags[inner], "attention")
        self.assertEqual(tags[outer], "encoder")
        self.assertEqual(tags[untagged], "")

    def test_a_tag_scope_enters_once_and_exits_in_order(self):
        # Unchecked, a second exit or one out of order put back a tag not this thread's.
        outer, inner = npumem.tag("outer"), npumem.tag("inner")
        with outer:
            inner.__enter__()
            with self.assertRaisesRegex(npumem.Error, "'inner' is active already"):
                inner.__enter__()
            with self.assertRaisesRegex(npumem.Error, "'outer' exits before a scope entered"):
                outer.__exit__(None, None, None)
            self.assertEqual(npumem._core.memory_tag(), "inner")
            inner.__exit__(None, None, None)
            with self.assertRaisesRegex(npumem.Error, "'inner' is not active"):
                inner.__exit__(None, None, None)
            self.assertEqual(npumem._core.memory_tag(), "outer")
            errors: list[str] = []

            def exit_elsewhere() -> None:
                try:
                    outer.__exit__(None, None, None)
                except npumem.Error as error:
                    errors.append(str(error))

            worker = threading.Thread(target=exit_elsewhere)
            worker.start()
            worker.join()
            self.assertEqual(errors, ["tag scope 'outer' must exit on the thread that entered it"])
        self.assertEqual(npumem._core.memory_tag(), "")

    def test_a_tag_stays_on_its_thread(self):
        device = fresh_device()
        from_thread: list[int] = []
        with npumem.tag("main"):
            worker = threading.Thread(
                target=lambda: from_thread.append(npumem.caching_allocator_alloc(64, device))
            )
            worker.start()
            worker.join()
        (block,) = [
            block
            for segment in device.snapshot()
            for block in segment["blocks"]
            if block["address"] == from_thread[0]
        ]
        self.assertEqual(block["tag"], "")


if __name__ == "__main__":
    unittest.main()
