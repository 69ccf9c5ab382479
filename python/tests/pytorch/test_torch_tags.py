"""npumem.torch.tag_modules: memory tagged by the module that made it, in forward and
backward, and the caller's tag back afterwards."""

from __future__ import annotations

import json
import unittest

import torch

import npumem
import npumem.torch


class ModuleTagsTest(unittest.TestCase):
    def test_forward_and_backward_allocations_carry_the_module_path(self):
        npumem.torch.install("sim:hbm=256MiB,ddr=0,backing=host", device=0)
        device = npumem.get_device(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)
        )
        data = torch.randn(16, 32)
        history = npumem.MemoryHistory(device)
        with npumem.tag("caller"), npumem.torch.tag_modules():
            loss = model(data).square().mean()
            loss.backward()
            after_backward = npumem._core.memory_tag()
        history.stop()
        snapshot = json.loads(npumem.snapshot_json(device, history))
        tags = {e["tag"] for e in snapshot["history"]["entries"] if e["kind"] == "alloc"}
        self.assertEqual(after_backward, "caller")
        self.assertIn("Sequential.0", tags)
        self.assertIn("Sequential.2", tags)
        self.assertIn("caller", tags)  # square() and mean() ran outside any module
        backward = {tag for tag in tags if tag.endswith(" (backward)")}
        self.assertTrue(backward, tags)
        self.assertTrue(backward <= {f"Sequential.{i} (backward)" for i in range(3)}, backward)
        self.assertEqual(npumem._core.memory_tag(), "")

    def test_lone_modules_of_one_class_are_told_apart(self):
        # Submodules called directly, never through their parent, were all "Linear": a
        # leak report's leaking group and an unrelated one read alike.
        tagger = npumem.torch.tag_modules()
        first, second = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
        self.assertEqual(tagger.name_of(first), "Linear")
        self.assertEqual(tagger.name_of(second), "Linear#2")
        self.assertEqual(tagger.name_of(first), "Linear")
        model = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(2, 2))
        self.assertEqual(tagger.name_of(model[1]), "Linear#3")
        # Named under its parent once the parent is seen.
        self.assertEqual(tagger.name_of(model), "Sequential")
        self.assertEqual(tagger.name_of(model[1]), "Sequential.1")


if __name__ == "__main__":
    unittest.main()
