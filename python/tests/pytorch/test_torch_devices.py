"""Several virtual NPUs serving PyTorch in one process: install(devices=2), per-thread
routing with npumem.torch.device(i), frees found by address, statistics per device,
and a model sharded across both devices."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading
import unittest

import torch

import npumem
import npumem.torch

MiB = 1 << 20
SPEC = "sim:hbm=128MiB,ddr=512MiB,backing=host"


def setUpModule():
    npumem.torch.install(SPEC, devices=2)


def allocated(device: int) -> int:
    return npumem.memory_allocated(device=device)


class DevicesTest(unittest.TestCase):
    def setUp(self):
        gc.collect()

    def test_install_makes_two_devices_and_zero_is_the_default(self):
        self.assertEqual(npumem.torch.installed_device().index, 0)
        self.assertEqual(npumem.torch.installed_device(1).index, 1)
        self.assertEqual(npumem.get_device(1).spec, SPEC)
        before = allocated(0), allocated(1)
        kept = torch.empty(MiB // 4)
        self.assertEqual((allocated(0), allocated(1)), (before[0] + MiB, before[1]))
        del kept

    def test_a_refused_install_makes_no_device(self):
        # Devices live until the process exits: devices=65 made 0..63 before refusing the
        # 65th, and a conflict with device 0 found after device 2 was made kept it.
        with self.assertRaisesRegex(ValueError, "devices=65 is more than the 64"):
            npumem.torch.install(SPEC, devices=65)
        self.assertFalse(npumem.is_initialized(2))
        with self.assertRaisesRegex(npumem.ConfigError, "device 0 exists already with spec"):
            npumem.torch.install("sim:hbm=64MiB,backing=host", devices=3)
        self.assertFalse(npumem.is_initialized(2))

    def test_device_scope_routes_this_threads_tensors_and_frees_find_their_device(self):
        before = allocated(0), allocated(1)
        with npumem.torch.device(1) as device:
            self.assertEqual(device.index, 1)
            self.assertEqual(npumem.torch.installed_device().index, 1)
            on_one = torch.ones(MiB // 4)
            with npumem.torch.device(0):
                on_zero = torch.ones(MiB // 2)
            also_on_one = torch.ones(MiB // 4)
        self.assertEqual(allocated(1), before[1] + 2 * MiB)
        self.assertEqual(allocated(0), before[0] + 2 * MiB)
        self.assertEqual(npumem.get_device(1).tier_of(on_one.data_ptr()), "hbm")
        # Freed outside any scope, each returns to its own device.
        del on_one, also_on_one
        self.assertEqual(allocated(1), before[1])
        del on_zero
        self.assertEqual(allocated(0), before[0])
        self.assertGreaterEqual(npumem.max_memory_allocated(device=1), 2 * MiB)

    def test_calls_without_a_device_follow_the_device_scope(self):
        # As torch.cuda.device sets the current device: pool(), memory_allocated() and
        # empty_cache() used device 0 inside device(1), and a pool's quota never applied.
        self.assertEqual(npumem.current_device(), 0)
        with npumem.torch.device(1):
            self.assertEqual(npumem.current_device(), 1)
            with npumem.pool("scoped_quota", quota="4MiB"):
                with self.assertRaises(torch.cuda.OutOfMemoryError):
                    torch.empty(64 * MiB, dtype=torch.uint8)
            kept = torch.empty(MiB // 4)
            self.assertEqual(npumem.memory_allocated(), allocated(1))
            self.assertIn("scoped_quota", [p["name"] for p in npumem.pools()])
        self.assertEqual(npumem.current_device(), 0)
        self.assertNotIn("scoped_quota", [p["name"] for p in npumem.pools()])
        self.assertEqual(npumem.memory_allocated(), allocated(0))
        del kept

    def test_routing_is_per_thread(self):
        before = allocated(0), allocated(1)
        ready = threading.Barrier(2)
        made = {}

        def on(index: int) -> None:
            with npumem.torch.device(index):
                ready.wait()
                made[index] = [torch.ones(MiB // 4) for _ in range(8)]

        threads = [threading.Thread(target=on, args=(i,)) for i in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(allocated(0), before[0] + 8 * MiB)
        self.assertEqual(allocated(1), before[1] + 8 * MiB)
        made.clear()
        self.assertEqual((allocated(0), allocated(1)), before)

    def test_smi_lists_this_process_on_each_device(self):
        pid = os.getpid()
        for index in (0, 1):
            listing = npumem.list_gpu_processes(device=index)  # the pages npumem smi reads
            self.assertTrue(listing.startswith(f"NPU:{index} (sim:{index})"), listing)
            # On the page (not the line a process off the page gets from its device).
            self.assertRegex(listing, rf"process +{pid} uses .*\((?!this process)")

    def test_device_index_out_of_range(self):
        with self.assertRaisesRegex(npumem.ConfigError,
                                    r"device index 2 is out of range: .* devices 0, 1"):
            npumem.torch.device(2)
        with self.assertRaisesRegex(npumem.ConfigError, "device index 3 is out of range"):
            npumem.torch.install(SPEC, device=3, devices=2)

    def test_a_refused_install_makes_no_device(self):
        # Refused for want of host memory, it had made the device already, with the
        # refused spec: every later install on that index failed.
        with self.assertRaisesRegex(npumem.ConfigError, "device 5 .* has no host memory behind"):
            npumem.torch.install("sim:hbm=64MiB", device=5)
        self.assertFalse(npumem.is_initialized(5))
        self.assertEqual(npumem.torch.installed_device().index, 0)

    def test_a_spec_that_does_not_parse_is_named_as_such(self):
        # Every bad spec was refused as one "without host memory", even one that said
        # backing=host.
        for spec, problem in (
            ("simx:hbm=1GiB,backing=host", "unknown device 'simx'"),
            ("sim:hbm=1GiB,backing=hots", "'hots' is not one of none, host"),
        ):
            with self.assertRaisesRegex(npumem.ConfigError, problem):
                npumem.torch.install(spec, device=6)
        self.assertFalse(npumem.is_initialized(6))

    def test_an_optimizer_step_marks_the_devices_holding_its_parameters(self):
        # A model per device, each with its optimizer: every step marked every device,
        # so each device counted 12 iterations for its 6 steps. A fresh process, for
        # strategy:planned, whose statistics count the marks.
        script = textwrap.dedent(
            """
            import torch
            import npumem, npumem.torch
            npumem.torch.install("sim:hbm=256MiB,ddr=512MiB,backing=host",
                                 "strategy:planned", devices=2)
            models, optimizers = [], []
            for index in range(2):
                with npumem.torch.device(index):
                    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                                torch.nn.Linear(128, 8))
                    models.append(model)
                    optimizers.append(torch.optim.SGD(model.parameters(), lr=0.1))
            for step in range(6):
                for index in range(2):
                    with npumem.torch.device(index):
                        optimizers[index].zero_grad(set_to_none=True)
                        models[index](torch.randn(16, 64)).sum().backward()
                        optimizers[index].step()
            print([npumem.memory_stats(i)["planned.iterations"] for i in range(2)])
            """
        )
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                timeout=300, check=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "[6, 6]")

    def test_model_sharded_across_two_devices_equals_the_plain_run(self):
        torch.manual_seed(0)
        # The plain run's tensors stay in DDR: HBM figures are then the runner's own.
        with npumem.pool("reference", tier="ddr", device=0):
            model = torch.nn.Sequential(
                *[m for _ in range(8) for m in (torch.nn.Linear(512, 512), torch.nn.Tanh())]
            )
            x = torch.randn(4, 512)
            with torch.no_grad():
                expected = model(x)
            plain_grads = torch.autograd.grad(model(x).sum(), list(model.parameters()))

        runner = npumem.torch.shard(model, hbm_budget="3MiB", example_input=x, devices=[0, 1])
        report = runner.report()
        self.assertEqual(sorted({shard.device for shard in report.shards}), [0, 1])
        # The text says which device each shard runs on, as report() does.
        rows = [line.split() for line in runner.report_text().splitlines()[2:-1]]
        self.assertEqual([int(row[1]) for row in rows], [shard.device for shard in report.shards])
        with torch.no_grad():
            self.assertTrue(torch.equal(runner(x), expected))
        for shard in runner.report().shards:
            self.assertLessEqual(shard.measured_hbm_peak_bytes, 3 * MiB)
        for index in (0, 1):
            self.assertGreater(npumem.memory_stats(index)["copy_bytes.ddr_to_hbm"], 0)
        runner(x).sum().backward()
        for param, grad in zip(model.parameters(), plain_grads):
            self.assertTrue(torch.equal(param.grad, grad))


if __name__ == "__main__":
    unittest.main()
