"""`python3 -m npumem.torch run` carries npumem to the script's children: torchrun's
ranks (each on its local rank's virtual NPU), torch.multiprocessing spawn and fork. A
two-rank gloo data-parallel step gives the parameters it gives without npumem, and
`npumem smi --json` lists every process while they run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TORCHRUN = os.path.join(os.path.dirname(torch.__file__), "distributed", "run.py")
SPEC = "sim:hbm=256MiB,ddr=1GiB,backing=host"


def run(command: list[str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NPUMEM_STATS_PAGE"}
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)


def smi_pids(smi: dict) -> dict[int, list[str]]:
    """pid -> the names of the devices smi lists it on."""
    found: dict[int, list[str]] = {}
    for device in smi["devices"]:
        for process in device["processes"]:
            found.setdefault(process["pid"], []).append(device["name"])
    return found


@unittest.skipUnless(os.environ.get("NPUMEM_CLI"), "NPUMEM_CLI is not set")
class ChildProcessesTest(unittest.TestCase):
    def test_two_rank_gloo_step_equals_the_plain_run_and_smi_lists_both_ranks(self):
        # Debian's torch 1.13 on Python 3.11: torchrun's default --redirects and --tee
        # ("0") parse to None (enum.Flag no longer lists Std.NONE), so both name a local
        # rank that does not exist; ranks 0 and 1 then get Std.NONE.
        launch = [TORCHRUN, "--redirects", "9:0", "--tee", "9:0", "--standalone", "--nnodes=1",
                  "--nproc_per_node=2", os.path.join(HERE, "ddp_step.py")]
        with tempfile.TemporaryDirectory() as plain, tempfile.TemporaryDirectory() as ours:
            result = run([sys.executable, *launch, plain])
            self.assertEqual(result.returncode, 0, result.stderr[-3000:])
            result = run([sys.executable, "-m", "npumem.torch", "run", "--device", SPEC,
                          *launch, ours])
            self.assertEqual(result.returncode, 0, result.stdout[-2000:] + result.stderr[-3000:])
            for rank in (0, 1):
                expected = torch.load(os.path.join(plain, f"rank{rank}.pt"))
                found = torch.load(os.path.join(ours, f"rank{rank}.pt"))
                self.assertEqual(expected.keys(), found.keys())
                for name, value in expected.items():
                    self.assertTrue(torch.equal(found[name], value), f"rank {rank}: {name}")
            with open(os.path.join(ours, "npumem.json"), encoding="utf-8") as saved:
                report = json.load(saved)
        listed = smi_pids(report["smi"])
        for rank, seen in enumerate(report["ranks"]):
            self.assertTrue(seen["installed"])
            self.assertEqual(seen["device"], rank)  # its local rank's virtual NPU
            self.assertGreater(seen["allocated_bytes"], 0)
            self.assertIn(seen["name"], listed.get(seen["pid"], []), f"smi lists {listed}")

    def test_spawned_and_forked_children_run_on_npumem_and_show_in_smi(self):
        for method in ("spawn", "fork"):
            with self.subTest(method=method), tempfile.TemporaryDirectory() as out:
                result = run([sys.executable, "-m", "npumem.torch", "run", "--device", SPEC,
                              os.path.join(HERE, "mp_children.py"), method, out])
                self.assertEqual(result.returncode, 0,
                                 result.stdout[-2000:] + result.stderr[-3000:])
                with open(os.path.join(out, "children.json"), encoding="utf-8") as saved:
                    report = json.load(saved)
                listed = smi_pids(report["smi"])
                self.assertEqual(len(report["children"]), 2)
                for child in report["children"]:
                    self.assertTrue(child["installed"], child)
                    self.assertEqual(child["grew_by"], 4 << 20, child)  # its tensor, on npumem
                    self.assertIn(child["pid"], listed, f"smi lists {listed}")
                self.assertIn(report["parent"], listed)


if __name__ == "__main__":
    unittest.main()
