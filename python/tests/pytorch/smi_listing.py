"""`npumem smi --json` ($NPUMEM_CLI) once it lists every pid wanted, for the child
scripts of test_torch_distributed.py (their own folder is on sys.path)."""

import json
import os
import subprocess
import time


def smi_listing(pids: set, timeout: float = 30) -> dict:
    """The listing that shows every pid in `pids`, or the last one taken after `timeout`
    seconds: stats pages are refreshed every 250 ms."""
    deadline = time.monotonic() + timeout
    while True:
        smi = json.loads(subprocess.run([os.environ["NPUMEM_CLI"], "smi", "--json"],
                                        capture_output=True, text=True, check=True).stdout)
        listed = {p["pid"] for d in smi["devices"] for p in d["processes"]}
        if pids <= listed or time.monotonic() > deadline:
            return smi
        time.sleep(0.1)
