"""Two torch.multiprocessing children (start method argv[1]) each make a 4 MiB tensor
and report whether npumem serves it; while they wait, the parent saves their reports
and `npumem smi --json` ($NPUMEM_CLI) to OUT/children.json. Run by
test_torch_distributed.py under `python3 -m npumem.torch run`."""

import json
import os
import sys

import torch
import torch.multiprocessing as mp

from smi_listing import smi_listing


def child(reports, done) -> None:
    import npumem
    import npumem.torch

    before = npumem.memory_allocated()
    tensor = torch.ones(1 << 20)  # 4 MiB
    reports.put({"pid": os.getpid(), "installed": npumem.torch.is_installed(),
                 "grew_by": npumem.memory_allocated() - before})
    done.wait()
    del tensor


def main() -> None:
    method, out = sys.argv[1], sys.argv[2]
    context = mp.get_context(method)
    reports, done = context.Queue(), context.Event()
    children = [context.Process(target=child, args=(reports, done)) for _ in range(2)]
    for process in children:
        process.start()
    found = [reports.get(timeout=120) for _ in children]
    smi = smi_listing({report["pid"] for report in found} | {os.getpid()})
    done.set()
    for process in children:
        process.join()
        assert process.exitcode == 0, process.exitcode
    with open(os.path.join(out, "children.json"), "w", encoding="utf-8") as result:
        json.dump({"parent": os.getpid(), "children": found, "smi": smi}, result)


if __name__ == "__main__":
    main()
