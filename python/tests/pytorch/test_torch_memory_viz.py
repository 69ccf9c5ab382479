"""torch 1.13's own viewer code, torch.cuda._memory_viz, reads npumem's _snapshot()
and _dump_snapshot() output."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
import unittest

import torch.cuda._memory_viz as memory_viz

import npumem
from support import fresh_device

MiB = 1 << 20


def flamegraph_lines(lines: str) -> str:
    """Stands in for flamegraph.pl (which _memory_viz would download): the folded lines."""
    return lines


class MemoryVizTest(unittest.TestCase):
    def setUp(self):
        self.device = fresh_device()
        npumem._record_memory_history(True, self.device.index, stacks=None)
        self.addCleanup(npumem._record_memory_history, False, self.device.index)
        with npumem.tag("Model.encoder"):
            self.tagged = npumem.caching_allocator_alloc(3 * MiB, self.device)
        self.untagged = npumem.caching_allocator_alloc(1000, self.device)

    def tearDown(self):
        npumem.caching_allocator_delete(self.tagged, self.device)
        npumem.caching_allocator_delete(self.untagged, self.device)

    def test_stats_segments_and_memory_run_on_a_snapshot(self):
        snapshot = npumem._snapshot(self.device.index)
        stats = memory_viz.stats(snapshot)
        self.assertEqual(stats["segments"], len(snapshot))
        self.assertEqual(stats["total_size"].value, npumem.memory_reserved(self.device))
        self.assertEqual(stats["active_allocated"].value, npumem.memory_allocated(self.device))
        memory = memory_viz.memory(snapshot, format_flamegraph=flamegraph_lines)
        self.assertIn("stream_0;active_allocated;<npumem tag>:0:Model.encoder 3145728", memory)
        self.assertIn("stream_0;active_allocated;<non-python> 1000", memory)
        segments = memory_viz.segments(snapshot, format_flamegraph=flamegraph_lines)
        self.assertIn(";inactive ", segments)
        self.assertIn("only_after", memory_viz.compare([], snapshot, flamegraph_lines))

    def test_dump_snapshot_is_read_by_the_memory_viz_command(self):
        with tempfile.TemporaryDirectory() as folder:
            dump = os.path.join(folder, "dump.pickle")
            npumem._dump_snapshot(dump, self.device.index)
            with open(dump, "rb") as file:
                self.assertEqual(pickle.load(file), npumem._snapshot(self.device.index))
            result = subprocess.run(
                [sys.executable, "-m", "torch.cuda._memory_viz", "stats", dump],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("'active_allocated'", result.stdout)

    def test_python_stacks_reach_the_flame_graph(self):
        npumem._record_memory_history(True, self.device.index)
        ptr = npumem.caching_allocator_alloc(5000, self.device)
        self.addCleanup(npumem.caching_allocator_delete, ptr, self.device)
        memory = memory_viz.memory(npumem._snapshot(self.device.index), flamegraph_lines)
        self.assertRegex(
            memory,
            r"stream_0;active_allocated;.*test_torch_memory_viz\.py:\d+:"
            r"test_python_stacks_reach_the_flame_graph 5000",
        )

    def test_without_recording_blocks_have_no_history(self):
        npumem._record_memory_history(False, self.device.index)
        for segment in npumem._snapshot(self.device.index):
            for block in segment["blocks"]:
                self.assertNotIn("history", block)


class TorchStacksTest(unittest.TestCase):
    """Tensors PyTorch allocates through npumem.torch carry the Python stack that made
    them and, under tag_modules, the module path as the outermost frame."""

    def test_a_forward_tensor_names_the_module_and_the_code(self):
        import torch

        import npumem.torch

        device = npumem.torch.install("sim:hbm=256MiB,ddr=0,backing=host", device=0)
        npumem._record_memory_history(True, device.index)
        self.addCleanup(npumem._record_memory_history, False, device.index)
        model = torch.nn.Sequential(torch.nn.Linear(256, 1024))
        with npumem.torch.tag_modules():
            output = model(torch.ones(64, 256))
        frames = None
        for segment in npumem._snapshot(device.index):
            for block in segment["blocks"]:
                if block["address"] == output.data_ptr():
                    frames = block["history"][0]["frames"]
        self.assertIsNotNone(frames, "the output tensor's block is in the snapshot")
        self.assertEqual(frames[-1]["name"], "Sequential.0")
        names = [(os.path.basename(frame["filename"]), frame["name"]) for frame in frames]
        self.assertIn(("linear.py", "forward"), names)
        self.assertIn(
            ("test_torch_memory_viz.py", "test_a_forward_tensor_names_the_module_and_the_code"),
            names,
        )


if __name__ == "__main__":
    unittest.main()
