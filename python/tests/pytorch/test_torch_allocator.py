"""npumem behind PyTorch's CPU tensors (npumem.torch.install): what it serves, its
peaks against live bytes recorded independently, pools, tags, quotas, the profiler,
zero-size tensors, threads, and installing and uninstalling."""

from __future__ import annotations

import gc
import threading
import unittest

import torch
from torch.profiler import ProfilerActivity, profile

import npumem
import npumem.torch
from torch_workloads import resnet18_training_step

SPEC = "sim:hbm=2GiB,ddr=4GiB,backing=host"
MiB = 1 << 20


def granule(device) -> int:
    settings = dict(item.split(":") for item in device.config.split(","))
    return int(settings["granule"])


def block_of(ptr: int) -> tuple[dict, dict]:
    """The (segment, block) of the snapshot that holds `ptr`."""
    for segment in npumem.memory_snapshot():
        for block in segment["blocks"]:
            if block["address"] == ptr:
                return segment, block
    raise AssertionError(f"{ptr:#x} is not a block of npumem")


class TorchAllocatorTest(unittest.TestCase):
    device: npumem._core.Device

    @classmethod
    def setUpClass(cls):
        cls.device = npumem.torch.install(SPEC)

    def setUp(self):
        self.assertTrue(npumem.torch.is_installed())
        gc.collect()

    def test_tensors_live_in_the_device(self):
        before = npumem.memory_stats()["allocation.all.allocated"]
        tensor = torch.empty(1000, dtype=torch.float32)
        self.assertEqual(self.device.allocation_size(tensor.data_ptr()), 4000)
        self.assertEqual(self.device.tier_of(tensor.data_ptr()), "hbm")
        self.assertEqual(npumem.memory_stats()["allocation.all.allocated"], before + 1)
        tensor.fill_(3.0)  # real memory: written and read back
        self.assertEqual(float(tensor.sum()), 3000.0)

    def test_peaks_match_live_bytes_recorded_independently(self):
        # The recorder wraps npumem at PyTorch's allocator hook and keeps its own
        # sizes; npumem's peaks come from its core's statistics.
        baseline = npumem.memory_stats()
        npumem.reset_peak_memory_stats()
        with npumem.torch.record() as recording:
            results = resnet18_training_step()
            del results
            gc.collect()
        round_to = granule(self.device)
        rounded = [
            (kind, ident, (size + round_to - 1) // round_to * round_to)
            for kind, ident, size in recording.events
        ]
        stats = npumem.memory_stats()
        self.assertGreater(recording.allocations, 500)
        self.assertEqual(
            stats["requested_bytes.all.peak"],
            baseline["requested_bytes.all.current"] + recording.peak_live_bytes(),
        )
        self.assertEqual(
            npumem.max_memory_allocated(),
            baseline["allocated_bytes.all.current"] + npumem.torch.trace.peak_live_bytes(rounded),
        )
        self.assertEqual(npumem.memory_allocated(), baseline["allocated_bytes.all.current"])

    def test_profiler_sees_npumem_allocations(self):
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as profiler:
            tensor = torch.ones(1000)
            del tensor
        rows = {row.key: row for row in profiler.key_averages()}
        self.assertEqual(rows["aten::empty"].self_cpu_memory_usage, 4000)
        self.assertEqual(rows["[memory]"].self_cpu_memory_usage, -4000)

    def test_pools_and_tags_apply_to_tensors(self):
        with npumem.pool("activations", device=self.device), npumem.tag("layer1"):
            tensor = torch.empty(256, 256)
        segment, block = block_of(tensor.data_ptr())
        self.assertEqual(segment["pool"], "activations")
        self.assertEqual(block["tag"], "layer1")
        self.assertEqual(block["requested_size"], 256 * 256 * 4)

    def test_quota_raises_pytorchs_out_of_memory_error_cleanly(self):
        model = torch.nn.Sequential(
            torch.nn.Linear(512, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10)
        )
        inputs = torch.randn(256, 512)
        allocated = npumem.memory_allocated()
        ooms = npumem.memory_stats()["num_ooms"]
        with self.assertRaises(torch.cuda.OutOfMemoryError) as raised:
            with npumem.pool("capped", quota="2MiB", device=self.device):
                model(inputs)
        message = str(raised.exception)
        self.assertIsInstance(raised.exception, RuntimeError)
        self.assertIn("npumem: out of memory", message)
        self.assertIn("pool 'capped'", message)
        self.assertIn("quota", message)
        self.assertEqual(npumem.memory_stats()["num_ooms"], ooms + 1)
        self.assertEqual(npumem.memory_allocated(), allocated)  # nothing half-made survives
        self.assertEqual(tuple(model(inputs).shape), (256, 10))  # and the model still runs

    def test_zero_size_tensors_take_no_memory(self):
        stats = npumem.memory_stats()
        empty = torch.empty(0)
        also_empty = torch.zeros(0, 128)
        self.assertEqual(empty.data_ptr(), 0)
        self.assertEqual(also_empty.data_ptr(), 0)
        self.assertEqual(torch.cat([empty, torch.ones(3)]).tolist(), [1.0, 1.0, 1.0])
        del empty, also_empty
        after = npumem.memory_stats()
        self.assertEqual(after["allocation.all.allocated"], stats["allocation.all.allocated"] + 2)

    def test_threads_allocate_and_free_concurrently(self):
        allocated = npumem.memory_allocated()
        failures: list[BaseException] = []

        def work(seed: int) -> None:
            try:
                generator = torch.Generator().manual_seed(seed)
                for step in range(50):
                    matrix = torch.randn(64 + step, 128, generator=generator)
                    product = matrix @ matrix.T
                    if not torch.allclose(product, product.T, rtol=1e-4, atol=1e-4):
                        raise AssertionError("a product of a matrix and its transpose is symmetric")
            except BaseException as failure:  # noqa: BLE001 - handed to the main thread
                failures.append(failure)

        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(failures, [])
        self.assertEqual(npumem.memory_allocated(), allocated)

    def test_uninstall_restores_pytorchs_allocator_and_old_tensors_free_to_npumem(self):
        kept = torch.empty(MiB)
        allocated = npumem.memory_allocated()
        npumem.torch.uninstall()
        try:
            self.assertFalse(npumem.torch.is_installed())
            count = npumem.memory_stats()["allocation.all.allocated"]
            outside = torch.empty(MiB)
            self.assertEqual(npumem.memory_stats()["allocation.all.allocated"], count)
            del kept, outside
            self.assertEqual(npumem.memory_allocated(), allocated - 4 * MiB)
        finally:
            npumem.torch.install()
        self.assertTrue(npumem.torch.is_installed())

    def test_install_refuses_devices_without_host_memory_or_with_another_spec(self):
        npumem.init("sim:hbm=1GiB", device=5)  # backing=none: addresses without pages
        with self.assertRaisesRegex(npumem.ConfigError, "backing=host"):
            npumem.torch.install(device=5)
        with self.assertRaisesRegex(npumem.ConfigError, "exists already with spec .*--device"):
            npumem.torch.install("sim:hbm=8GiB,backing=host")
        with self.assertRaisesRegex(npumem.ConfigError, "an empty device spec names no device"):
            npumem.torch.install("", device=7)
        # As init says it: pybind11's list of overloads named no setting.
        with self.assertRaisesRegex(TypeError, "a device spec is a string such as 'sim', not 5"):
            npumem.torch.install(5)
        with self.assertRaisesRegex(TypeError, "a config is a string .*, not 3"):
            npumem.torch.install("sim:backing=host", 3)

    def test_install_again_with_the_same_settings_is_no_change(self):
        # A notebook cell run twice: the same config was refused as a change.
        spec = "sim:hbm=1GiB,backing=host"
        first = npumem.torch.install(spec, "strategy:expandable", device=6)
        try:
            self.assertIs(npumem.torch.install(spec, "strategy:expandable", device=6), first)
            with self.assertRaisesRegex(npumem.ConfigError, "cannot change to 'granule:1024'"):
                npumem.torch.install(spec, "granule:1024", device=6)
        finally:
            npumem.torch.install()


if __name__ == "__main__":
    unittest.main()
