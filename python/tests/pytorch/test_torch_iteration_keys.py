"""npumem.torch.iteration(key=...): the key reaches the devices and the recording."""

from __future__ import annotations

import os
import tempfile
import unittest

import torch

import npumem
import npumem.torch
from support import fresh_device, run_python


class IterationKeysTest(unittest.TestCase):
    def test_a_recording_writes_the_key_on_its_i_line(self):
        with npumem.torch.record() as recording:
            npumem.torch.iteration(key=384)
            torch.ones(1000).sum()
            npumem.torch.iteration()
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "keys.trace")
            recording.write(path, "iteration keys")
            with open(path, encoding="ascii") as trace:
                marks = [line.strip() for line in trace if line.startswith("i")]
        self.assertEqual(marks, ["i 384", "i"])

    def test_the_key_reaches_a_device(self):
        device = fresh_device(spec="sim:hbm=1GiB", conf="strategy:planned")
        for _ in range(3):
            npumem.torch.iteration(device, key=7)
            ptr = npumem.caching_allocator_alloc(1 << 20, device)
            npumem.caching_allocator_delete(ptr, device)
        stats = npumem.memory_stats(device)
        self.assertEqual(stats["planned.hits"], 2)
        self.assertEqual(stats["planned.plans_kept"], 1)
        self.assertEqual(stats["planned.plans.0.key"], 7)
        self.assertEqual(stats["planned.plans.0.lower_bound_bytes"], 1 << 20)
        self.assertEqual(stats["planned.plans.0.iterations_served"], 2, "the running third included")

    def test_marking_a_device_not_made_yet_makes_none(self):
        result = run_python(
            "import npumem, npumem.torch\n"
            "npumem.torch.iteration(device=3, key=2)\n"
            "assert not npumem.is_initialized(3)\n"
            "npumem.init('sim:hbm=1GiB', conf='strategy:planned', device=3)\n"
            "print(npumem.get_device(3).config.split(',')[0])\n"
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.split(), ["strategy:planned"])

    @staticmethod
    def planned_iterations_of_a_training_loop(steps: int, mark: str) -> str:
        """planned.iterations of device 0 after `steps` SGD steps, each beginning with
        the statement `mark` (a fresh process)."""
        result = run_python(
            "import torch, npumem, npumem.torch\n"
            "device = npumem.torch.install('sim:hbm=1GiB,backing=host', 'strategy:planned')\n"
            "model = torch.nn.Linear(64, 64)\n"
            "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            f"for _ in range({steps}):\n"
            f"    {mark}\n"
            "    model(torch.ones(8, 64)).sum().backward()\n"
            "    optimizer.step()\n"
            "print(npumem.memory_stats(device)['planned.iterations'])\n"
        )
        if result.returncode != 0:
            raise AssertionError(result.stderr)
        return result.stdout.strip()

    def test_a_script_that_marks_its_iterations_gets_no_second_mark_at_each_step(self):
        # Both made two iterations of each step under strategy:planned: its learning
        # doubled and the first served iteration came later (a cold trial).
        self.assertEqual(self.planned_iterations_of_a_training_loop(6, "npumem.torch.iteration()"),
                         "6")

    def test_marking_one_device_leaves_the_step_marks_of_the_others(self):
        # iteration(device=1) stopped the marks at optimizer.step() on every device: the
        # plans of device 0 learned nothing.
        self.assertEqual(
            self.planned_iterations_of_a_training_loop(5, "npumem.torch.iteration(device=1)"), "5")

    def test_marking_optimizer_steps_takes_a_bool(self):
        with self.assertRaisesRegex(TypeError, "takes True or False, not 'no'"):
            npumem.torch.mark_optimizer_steps("no")

    def test_a_key_is_a_64_bit_unsigned_int(self):
        # As Device.mark_iteration: a wrong type is a TypeError, a wrong int a ValueError.
        for bad in (-1, 1 << 64):
            with self.assertRaisesRegex(ValueError, "an iteration key is an int from 0"):
                npumem.torch.iteration(key=bad)
        for bad in (1.5, "3", True):
            with self.assertRaisesRegex(TypeError, "an iteration key is an int", msg=repr(bad)):
                npumem.torch.iteration(key=bad)


if __name__ == "__main__":
    unittest.main()
