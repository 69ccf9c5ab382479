"""Plans torchvision models exported to ONNX with `npumem plan memory --onnx` and prints,
per model, the arena beside the lower bound and the sum of all tensors (no reuse), the
weights kept outside the arena, and the time the command took (reading the model with
npumem.onnx_lifetimes included). Weights are random (no download); batch 1, float32.

    /usr/bin/python3 bench/onnx_plan_bench.py [--npumem build/bin/npumem] [MODEL ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

DEFAULT_MODELS = ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large",
                  "efficientnet_b0", "googlenet", "inception_v3", "squeezenet1_0", "vit_b_16"]


def export(name: str, path: str) -> float:
    """Exports torchvision's `name` to `path`; returns the seconds it took."""
    import torch
    import torchvision

    size = 299 if name == "inception_v3" else 224
    options = {"aux_logits": False, "init_weights": True} if name in (
        "inception_v3", "googlenet") else {}
    model = getattr(torchvision.models, name)(**options).eval()
    start = time.perf_counter()
    torch.onnx.export(model, torch.randn(1, 3, size, size), path, opset_version=13)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=DEFAULT_MODELS)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--npumem", default=os.path.join(root, "build", "bin", "npumem"))
    arguments = parser.parse_args()
    print(f"{'model':<20}{'tensors':>8}{'lower_bound_B':>15}{'arena_B':>15}{'ratio':>8}"
          f"{'sum_B':>15}{'weights_B':>15}{'export_s':>10}{'command_s':>11}{'plan_ms':>9}")
    with tempfile.TemporaryDirectory() as directory:
        for name in arguments.models:
            path = os.path.join(directory, f"{name}.onnx")
            export_s = export(name, path)
            start = time.perf_counter()
            done = subprocess.run([arguments.npumem, "plan", "memory", "--onnx", path, "--json"],
                                  capture_output=True, text=True, check=False)
            command_s = time.perf_counter() - start
            if done.returncode != 0:
                print(f"{name:<20}failed (exit {done.returncode}): {done.stderr.strip()}")
                continue
            plan = json.loads(done.stdout)
            print(f"{name:<20}{plan['tensors']:>8}{plan['lower_bound_bytes']:>15}"
                  f"{plan['arena_bytes']:>15}{plan['ratio']:>8.4f}{plan['naive_bytes']:>15}"
                  f"{plan['outside_arena']['weights']['bytes']:>15}{export_s:>10.1f}"
                  f"{command_s:>11.2f}{plan['plan_ms']:>9.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
