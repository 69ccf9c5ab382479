"""Large models on npumem's virtual NPU: the figures of docs/LARGE_MODELS.md.

1. A 12-layer MLP of ~192 MiB of weights run sharded on a 64 MiB HBM budget (3x over):
   outputs torch.equal to the plain run, npumem's HBM peak, weights in DDR; the same
   on 2 virtual NPUs; a training step whose gradients equal the plain run's.
2. resnet18 training checkpointed on a budget halfway between the leanest plan's and the
   plain peak: gradients equal to the plain run's, the planned and the measured peak, the
   extra compute time.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/large_models.py
"""

import argparse
import copy

import torch
import torchvision

import npumem
import npumem.torch
from npumem._core import format_bytes, parse_size


def mlp(width: int, layers: int) -> torch.nn.Sequential:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        *[m for _ in range(layers) for m in (torch.nn.Linear(width, width), torch.nn.ReLU())]
    )


def tier_of(tensor: torch.Tensor, devices: list[int]) -> str:
    """The tier of the served device that holds the tensor's memory."""
    for index in devices:
        try:
            return npumem.torch.installed_device(index).tier_of(tensor.data_ptr())
        except npumem.InvalidPointerError:
            continue
    return "not on npumem"


def sharded(width: int, layers: int, budget: int, devices: list[int]) -> None:
    with npumem.pool("plain", tier="ddr"):  # the plain twin stays out of the HBM figures
        plain = mlp(width, layers)
        x = torch.randn(16, width)
        with torch.no_grad():
            expected = plain(x)
        plain(x).square().sum().backward()
    model = mlp(width, layers)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    runner = npumem.torch.shard(model, hbm_budget=budget, example_input=x, devices=devices)
    with torch.no_grad():
        output = runner(x)
    inference = runner.report()
    runner(x).square().sum().backward()
    grads_equal = all(torch.equal(p.grad, q.grad)
                      for p, q in zip(model.parameters(), plain.parameters()))
    print(f"\n== sharded MLP on devices {devices}: {layers} x Linear({width}, {width}), "
          f"weights {format_bytes(weights)} = {weights / budget:.1f}x the HBM budget "
          f"{format_bytes(budget)}")
    in_ddr = all(tier_of(t, devices) == "ddr"
                 for p in model.parameters() for t in (p, p.grad))
    print(f"outputs torch.equal plain: {torch.equal(output, expected)}; "
          f"gradients torch.equal plain: {grads_equal}; weights and grads in DDR: {in_ddr}")
    print(f"measured HBM peak {format_bytes(inference.measured_hbm_peak_bytes)} "
          f"({inference.measured_hbm_peak_bytes:,} B) <= budget {budget:,} B: "
          f"{inference.measured_hbm_peak_bytes <= budget}")
    print(runner.report_text())


def checkpointed(batch: int, size: int) -> None:
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    plain = copy.deepcopy(model)
    images = torch.randn(batch, 3, size, size)
    labels = torch.randint(0, 10, (batch,))
    torch.nn.functional.cross_entropy(plain(images), labels).backward()
    probe = npumem.torch.checkpoint(model, budget="64GiB", example_input=images)
    try:
        npumem.torch.checkpoint(model, budget=1, example_input=images)
    except npumem.OutOfMemoryError as refusal:
        leanest = refusal.requested_bytes
    budget = (leanest + probe.report().plain_peak_bytes) // 2
    wrapped = npumem.torch.checkpoint(model, budget=budget, example_input=images)
    torch.nn.functional.cross_entropy(wrapped(images), labels).backward()
    grads_equal = all(torch.equal(p.grad, q.grad)
                      for p, q in zip(model.parameters(), plain.parameters()))
    report = wrapped.report()
    print(f"\n== checkpointed resnet18 training, batch {batch} of {size}x{size}, budget halfway "
          f"between the leanest plan's and the plain peak = {format_bytes(budget)}")
    print(f"gradients torch.equal plain: {grads_equal}; measured peak / budget: "
          f"{report.measured_peak_bytes / budget:.3f}")
    print(wrapped.report_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--budget", default="64MiB")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=64)
    options = parser.parse_args()
    npumem.torch.install("sim:hbm=1GiB,ddr=4GiB,backing=host", devices=2)
    budget = parse_size(options.budget)
    sharded(options.width, options.layers, budget, [0])
    sharded(options.width, options.layers, budget, [0, 1])
    checkpointed(options.batch, options.size)


if __name__ == "__main__":
    main()
