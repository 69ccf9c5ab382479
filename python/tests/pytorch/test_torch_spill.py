"""A virtual NPU whose HBM is smaller than a training step needs: tensors spill to DDR
and training completes with the results of PyTorch's own allocator."""

from __future__ import annotations

import unittest

import torch

import npumem
import npumem.torch
from torch_workloads import resnet18_training_step

HBM_BYTES = 48 << 20
SPEC = f"sim:hbm={HBM_BYTES},ddr=2GiB,backing=host"


class SpillTest(unittest.TestCase):
    def test_training_spills_to_ddr_and_completes(self):
        expected = resnet18_training_step()  # PyTorch's allocator: nothing installed yet
        device = npumem.torch.install(SPEC, conf="spill_to_ddr:true")
        served = resnet18_training_step()

        stats = npumem.memory_stats()
        self.assertGreater(stats["num_spills"], 0)
        self.assertGreater(stats["allocated_bytes.ddr.peak"], 0)
        self.assertLessEqual(stats["reserved_bytes.hbm.peak"], HBM_BYTES)
        self.assertGreater(stats["requested_bytes.all.peak"], HBM_BYTES)
        self.assertEqual(stats["num_ooms"], 0)
        in_ddr = [
            name for name, tensor in served.items() if device.tier_of(tensor.data_ptr()) == "ddr"
        ]
        self.assertTrue(in_ddr, "some results live in DDR")
        for name, tensor in expected.items():
            with self.subTest(tensor=name):
                self.assertTrue(torch.equal(tensor, served[name]), name)


if __name__ == "__main__":
    unittest.main()
