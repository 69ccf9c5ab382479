"""_record_memory_history records the Python stack of each allocation (innermost frame
first, the memory tag as the outermost), and _snapshot() hands it out per block."""

from __future__ import annotations

import inspect
import os
import unittest

import npumem
from support import fresh_device, run_python

MiB = 1 << 20


def allocate_here(device, size):
    return npumem.caching_allocator_alloc(size, device)


def lines_of(function):
    source, first = inspect.getsourcelines(function)
    return range(first, first + len(source))


def history_frames(device, address):
    for segment in npumem._snapshot(device.index):
        for block in segment["blocks"]:
            if block["address"] == address:
                return block["history"][0]["frames"]
    raise AssertionError(f"no block at {address:#x}")


def same_file(path, expected):
    return os.path.realpath(path) == os.path.realpath(expected)


class PythonFramesTest(unittest.TestCase):
    def setUp(self):
        self.device = fresh_device()
        self.addCleanup(npumem._record_memory_history, False, self.device.index)

    def test_frames_name_the_code_that_allocated(self):
        npumem._record_memory_history(True, self.device.index)
        ptr = allocate_here(self.device, MiB)
        self.addCleanup(npumem.caching_allocator_delete, ptr, self.device)
        frames = history_frames(self.device, ptr)
        # Innermost first, from the caller's line: npumem's own Python wrapper is left
        # out, as PyTorch's C++ caching_allocator_alloc has no frame.
        package = os.path.dirname(os.path.realpath(npumem.__file__))
        self.assertFalse(any(os.path.realpath(frame["filename"]).startswith(package)
                             for frame in frames), frames)
        mine = [frame for frame in frames if same_file(frame["filename"], __file__)]
        self.assertEqual([frame["name"] for frame in mine[:2]],
                         ["allocate_here", "test_frames_name_the_code_that_allocated"])
        self.assertIn(mine[0]["line"], lines_of(allocate_here))
        self.assertIn(mine[1]["line"], lines_of(self.test_frames_name_the_code_that_allocated))
        self.assertEqual(frames.index(mine[0]), 0)

    def test_the_tag_is_the_outermost_frame(self):
        npumem._record_memory_history(True, self.device.index)
        with npumem.tag("Model.encoder"):
            ptr = allocate_here(self.device, MiB)
        self.addCleanup(npumem.caching_allocator_delete, ptr, self.device)
        frames = history_frames(self.device, ptr)
        tag_frame = {"filename": "<npumem tag>", "line": 0, "name": "Model.encoder"}
        self.assertEqual(frames[-1], tag_frame)
        self.assertEqual(frames[0]["name"], "allocate_here")

    def test_a_reused_address_takes_its_new_stack(self):
        npumem._record_memory_history(True, self.device.index)
        first = allocate_here(self.device, MiB)
        npumem.caching_allocator_delete(first, self.device)
        second = npumem.caching_allocator_alloc(MiB, self.device)
        self.addCleanup(npumem.caching_allocator_delete, second, self.device)
        self.assertEqual(second, first)  # the freed block is served again
        names = [frame["name"] for frame in history_frames(self.device, second)]
        self.assertNotIn("allocate_here", names)
        self.assertIn("test_a_reused_address_takes_its_new_stack", names)

    def test_stacks_none_records_tags_alone(self):
        npumem._record_memory_history(True, self.device.index, stacks=None)
        with npumem.tag("head"):
            tagged = allocate_here(self.device, MiB)
        untagged = allocate_here(self.device, MiB)
        for ptr in (tagged, untagged):
            self.addCleanup(npumem.caching_allocator_delete, ptr, self.device)
        self.assertEqual(history_frames(self.device, tagged),
                         [{"filename": "<npumem tag>", "line": 0, "name": "head"}])
        self.assertEqual(history_frames(self.device, untagged), [])

    def test_allocations_before_recording_have_no_stack(self):
        before = allocate_here(self.device, MiB)
        self.addCleanup(npumem.caching_allocator_delete, before, self.device)
        npumem._record_memory_history(True, self.device.index)
        self.assertEqual(history_frames(self.device, before), [])

    def test_a_bad_stacks_value_is_rejected(self):
        with self.assertRaisesRegex(ValueError, "stacks must be 'python' or None"):
            npumem._record_memory_history(True, self.device.index, stacks="all")

    def test_enabled_is_pytorch_s_bool_or_its_later_spelling(self):
        # Any value read as its truth: "no" started recording.
        for bad in ("no", "yes", 1):
            with self.assertRaisesRegex(ValueError, "enabled is True, False, 'state', 'all'"):
                npumem._record_memory_history(bad, self.device.index)
        npumem._record_memory_history("all", self.device.index)
        before = npumem.caching_allocator_alloc(64, self.device)
        self.assertNotEqual(history_frames(self.device, before), [])
        npumem._record_memory_history(None, self.device.index)  # stops, as in PyTorch 2
        self.assertFalse(any("history" in block for segment in npumem._snapshot(self.device.index)
                             for block in segment["blocks"]))


class RecordingBeforeTheDeviceTest(unittest.TestCase):
    def printed(self, code: str) -> list[str]:
        """What `code` prints in a fresh process, word by word."""
        result = run_python(code)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout.split()

    def test_recording_asked_first_starts_when_init_makes_the_device(self):
        # It made device 0 with the default settings, and the init() after was refused.
        printed = self.printed(
            "import npumem\n"
            "npumem._record_memory_history(True)\n"
            "assert not npumem.is_initialized(0)\n"
            "device = npumem.init('sim:hbm=1GiB,ddr=0')\n"
            "ptr = npumem.caching_allocator_alloc(1 << 20)\n"
            "block = [b for s in npumem._snapshot() for b in s['blocks'] if b['address'] == ptr]\n"
            "print(device.spec, block[0]['history'][0]['frames'][0]['name'])\n"
        )
        self.assertEqual(printed, ["sim:hbm=1GiB,ddr=0", "<module>"])

    def test_turned_off_for_one_device_before_it_is_made_it_stays_off_there(self):
        printed = self.printed(
            "import npumem\n"
            "npumem._record_memory_history(True)\n"
            "npumem._record_memory_history(False, device=0)\n"
            "npumem.init('sim:hbm=1GiB,ddr=0')\n"
            "npumem.init('sim:hbm=1GiB,ddr=0', device=1)\n"
            "for device in (0, 1):\n"
            "    ptr = npumem.caching_allocator_alloc(1 << 20, device)\n"
            "    blocks = [b for s in npumem._snapshot(device) for b in s['blocks']\n"
            "              if b['address'] == ptr]\n"
            "    print(bool(blocks[0].get('history')))\n"
        )
        self.assertEqual(printed, ["False", "True"])


if __name__ == "__main__":
    unittest.main()
