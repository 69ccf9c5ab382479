"""Helpers shared by the Python tests."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import npumem

# Devices live for the process, so each test takes a fresh index (below 64).
_indices = itertools.count(16)  # 0-15 are left to the tests that name one


def fresh_device(spec: str = "sim:hbm=64MiB,ddr=128MiB", conf: str = ""):
    """A new npumem device of its own, with `conf` over NPUMEM_ALLOC_CONF."""
    return npumem.init(spec, conf, device=next(_indices))


def run_python(code: str, env_overrides: dict[str, str] | None = None, timeout: int = 600):
    """Runs `code` in a fresh interpreter (this one) with this test's environment plus
    `env_overrides`; returns the completed process (text output)."""
    env = dict(os.environ)
    env.update(env_overrides or {})
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
