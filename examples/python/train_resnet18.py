"""A small torchvision training run: resnet18, SGD with momentum, random data.

Plain PyTorch: run it as `python3 train_resnet18.py`, or with npumem behind every CPU
tensor and a memory report at exit:

    PYTHONPATH=build/python /usr/bin/python3 -m npumem.torch run \
        examples/python/train_resnet18.py --steps 3
"""

import argparse

import torch
import torchvision


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--size", type=int, default=112, help="image height and width")
    options = parser.parse_args()

    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    images = torch.randn(options.batch, 3, options.size, options.size)
    labels = torch.randint(0, 10, (options.batch,))
    model.train()
    for step in range(options.steps):
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
