"""One npumem per process, seen from outside: the Python module and libnpumem.so's
npumem_malloc share one allocator per device, and every process allocating through
npumem (Python on npumem.torch, a C program on libnpumem.so) appears in
`npumem smi --json` unless NPUMEM_STATS_PAGE=0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import unittest

from support import run_python

MiB = 1 << 20

HOLD_TENSOR = """
import sys, torch, npumem, npumem.torch
npumem.torch.install("sim:hbm=256MiB,ddr=0,backing=host")
tensor = torch.ones(3 * 1024 * 1024 // 4)
print("ready", flush=True)
sys.stdin.read()
"""

SHARED_ALLOCATOR = """
import ctypes, npumem
# The libnpumem.so npumem._core loaded, by its path, so ctypes gets that same copy.
with open("/proc/self/maps") as maps:
    path = next(line.split()[-1] for line in maps if "/libnpumem.so" in line)
library = ctypes.CDLL(path)
library.npumem_malloc.restype = ctypes.c_void_p
library.npumem_malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
library.npumem_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
npumem.init("sim:hbm=1GiB,ddr=0", device=3)
from_c = library.npumem_malloc(4096, 3, None)
assert npumem.memory_allocated(3) == 4096, npumem.memory_allocated(3)
from_python = npumem.caching_allocator_alloc(8192, device=3)
assert npumem.memory_allocated(3) == 4096 + 8192
library.npumem_free(from_python, 8192, 3, None)
npumem.caching_allocator_delete(from_c, device=3)
assert npumem.memory_allocated(3) == 0
# A device npumem_malloc made first is the module's device too.
library.npumem_malloc(1024, 4, None)
assert npumem.is_initialized(4) and npumem.memory_allocated(4) == 1024
print("shared")
"""


def page_path(pid: int) -> str:
    return f"/dev/shm/npumem.{pid}"


class SharedAllocatorTest(unittest.TestCase):
    def test_npumem_malloc_and_the_module_use_one_allocator(self):
        result = run_python(SHARED_ALLOCATOR)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "shared")


class SmiTest(unittest.TestCase):
    def setUp(self):
        self.cli = os.environ.get("NPUMEM_CLI")
        self.holder = os.environ.get("NPUMEM_HOLD_ALLOCATION")
        if not self.cli or not self.holder:
            self.skipTest("NPUMEM_CLI and NPUMEM_HOLD_ALLOCATION are not set")
        self.children: list[subprocess.Popen] = []

    def tearDown(self):
        for child in self.children:
            if child.poll() is None:
                child.kill()
            child.wait(timeout=60)

    def start(self, command: list[str], env: dict[str, str]) -> subprocess.Popen:
        child = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        self.children.append(child)
        self.assertEqual(child.stdout.readline().strip(), "ready")
        return child

    def smi_processes(self) -> dict[int, int]:
        """pid -> allocated bytes, over every device `npumem smi --json` lists."""
        smi = subprocess.run(
            [self.cli, "smi", "--json"], capture_output=True, text=True, timeout=60, check=True
        )
        found: dict[int, int] = {}
        for device in json.loads(smi.stdout)["devices"]:
            for process in device["processes"]:
                found[process["pid"]] = found.get(process["pid"], 0) + process["allocated_bytes"]
        return found

    def test_a_python_process_and_a_c_program_appear_in_smi(self):
        env = {k: v for k, v in os.environ.items() if k != "NPUMEM_STATS_PAGE"}
        python = self.start([sys.executable, "-c", HOLD_TENSOR], env)
        c_program = self.start([self.holder, str(5 * MiB)], env)
        expected = {python.pid: 3 * MiB, c_program.pid: 5 * MiB}
        deadline = time.monotonic() + 30
        while True:  # pages are refreshed every 250 ms
            found = self.smi_processes()
            if all(found.get(pid) == size for pid, size in expected.items()):
                break
            self.assertLess(time.monotonic(), deadline, f"smi shows {found}, not {expected}")
            time.sleep(0.1)
        for child in (python, c_program):
            child.stdin.close()
            self.assertEqual(child.wait(timeout=60), 0)
            self.assertFalse(os.path.exists(page_path(child.pid)), "the page outlived its process")

    def test_npumem_stats_page_0_keeps_a_process_off_the_pages(self):
        env = dict(os.environ, NPUMEM_STATS_PAGE="0")
        c_program = self.start([self.holder, str(MiB)], env)
        self.assertFalse(os.path.exists(page_path(c_program.pid)))
        self.assertNotIn(c_program.pid, self.smi_processes())
        c_program.stdin.close()
        self.assertEqual(c_program.wait(timeout=60), 0)


if __name__ == "__main__":
    unittest.main()
