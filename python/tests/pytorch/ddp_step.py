"""One data-parallel training step on two gloo ranks, started by torchrun: each rank
saves its parameters after the step to OUT/rank<N>.pt. Under `python3 -m npumem.torch
run` (the children's environment says so) each rank also saves whether npumem serves
its tensors and on which device, and rank 0 saves `npumem smi --json` ($NPUMEM_CLI)
taken while both ranks are alive. Used by test_torch_distributed.py."""

import json
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from smi_listing import smi_listing

out = sys.argv[1]
on_npumem = "NPUMEM_TORCH_CHILD_DEVICE" in os.environ
dist.init_process_group("gloo")
rank = dist.get_rank()

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
ddp = DistributedDataParallel(model)
optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
data = torch.Generator().manual_seed(1 + rank)  # each rank its own batch
x = torch.randn(32, 64, generator=data)
y = torch.randint(0, 10, (32,), generator=data)
torch.nn.functional.cross_entropy(ddp(x), y).backward()
optimizer.step()
torch.save(model.state_dict(), os.path.join(out, f"rank{rank}.pt"))

if on_npumem:
    import npumem
    import npumem.torch

    device = npumem.torch.installed_device()
    mine = {"pid": os.getpid(), "installed": npumem.torch.is_installed(),
            "device": device.index, "name": device.name,
            "allocated_bytes": npumem.memory_allocated(device=device.index)}
    ranks = [None, None]
    dist.all_gather_object(ranks, mine)
    if rank == 0:
        smi = smi_listing({r["pid"] for r in ranks})
        with open(os.path.join(out, "npumem.json"), "w", encoding="utf-8") as result:
            json.dump({"ranks": ranks, "smi": smi}, result)
    dist.barrier()  # rank 1 stays alive until rank 0 has read smi
dist.destroy_process_group()
