"""`pip install .` works offline with Debian's pip, setuptools and pybind11, and the
installed package imports and runs on its own (not from the build tree)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.environ.get(
    "NPUMEM_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
)

CHECK = """
import os, sys
import npumem
assert npumem.__file__.startswith(sys.argv[1]), npumem.__file__
ptr = npumem.caching_allocator_alloc(1000, device=1)
assert npumem.memory_allocated(1) == 1024, npumem.memory_allocated(1)
npumem.caching_allocator_delete(ptr, device=1)
import npumem.onnx_lifetimes  # what `npumem plan memory --onnx` runs with -m
assert npumem.onnx_lifetimes.__file__.startswith(sys.argv[1]), npumem.onnx_lifetimes.__file__
try:
    import torch
except ImportError:
    print("installed without torch")
else:
    import npumem.torch
    npumem.torch.install("sim:hbm=256MiB,ddr=0,backing=host", device=0)
    tensor = torch.ones(1000)
    assert npumem.memory_stats(0)["requested_bytes.all.current"] == 4000
    print("installed with torch")
"""


class PipInstallTest(unittest.TestCase):
    def test_pip_install_into_a_target_then_import(self):
        with tempfile.TemporaryDirectory() as target:
            install = subprocess.run(
                [
                    sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                    "--no-build-isolation", "--disable-pip-version-check", "--target", target,
                    SOURCE_DIR,
                ],
                capture_output=True,
                text=True,
                timeout=1800,
                check=False,
            )
            self.assertEqual(install.returncode, 0, install.stdout[-4000:] + install.stderr[-4000:])
            environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            environment["PYTHONPATH"] = target
            check = subprocess.run(
                [sys.executable, "-c", CHECK, target],
                cwd=target,
                env=environment,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
        self.assertEqual(check.returncode, 0, check.stderr)
        self.assertIn("installed with", check.stdout)


if __name__ == "__main__":
    unittest.main()
