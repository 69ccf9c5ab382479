"""Seeded PyTorch workloads for the tests: each returns its results by name, so two
runs (PyTorch's allocator, npumem) can be compared tensor by tensor."""

from __future__ import annotations

import torch
import torchvision

import npumem.torch


def resnet18_training_step(batch: int = 2, size: int = 64) -> dict[str, torch.Tensor]:
    """One SGD step of torchvision's resnet18: logits, loss, every gradient and every
    updated parameter."""
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    images = torch.randn(batch, 3, size, size)
    labels = torch.randint(0, 10, (batch,))
    model.train()
    logits = model(images)
    loss = torch.nn.functional.cross_entropy(logits, labels)
    loss.backward()
    results = {"logits": logits.detach(), "loss": loss.detach()}
    for name, parameter in model.named_parameters():
        results[f"grad.{name}"] = parameter.grad.clone()
    optimizer.step()
    for name, parameter in model.named_parameters():
        results[f"param.{name}"] = parameter.detach().clone()
    return results


def transformer_dynamic_lengths(
    lengths: tuple[int, ...] = (7, 33, 18, 64, 5, 41)
) -> dict[str, torch.Tensor]:
    """A 2-layer TransformerEncoder (d_model 64) on batches whose sequence length changes
    every time, with padding masks: eval forwards (PyTorch's fast path) and one
    training forward and backward per length."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(
        d_model=64, nhead=4, dim_feedforward=128, dropout=0.1, batch_first=True
    )
    encoder = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=True)
    results: dict[str, torch.Tensor] = {}
    for step, length in enumerate(lengths):
        tokens = torch.randn(3, length, 64)
        padding = torch.zeros(3, length, dtype=torch.bool)
        padding[1, length // 2 :] = True  # the second sequence is half as long
        encoder.eval()
        with torch.no_grad():
            results[f"eval.{step}"] = encoder(tokens, src_key_padding_mask=padding)
        encoder.train()
        output = encoder(tokens, src_key_padding_mask=padding)
        loss = output.square().mean()
        loss.backward()
        results[f"train.{step}"] = output.detach()
    for name, parameter in encoder.named_parameters():
        results[f"grad.{name}"] = parameter.grad.clone()
    return results


def resnet18_training_loop(
    steps: int = 5, batch: int = 2, size: int = 64
) -> dict[str, torch.Tensor]:
    """SGD steps of resnet18, each optimizer.step() an iteration boundary
    (npumem.torch.mark_optimizer_steps): every loss, then every updated parameter."""
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model.train()
    results: dict[str, torch.Tensor] = {}
    npumem.torch.mark_optimizer_steps()
    try:
        for step in range(steps):
            images = torch.randn(batch, 3, size, size)
            labels = torch.randint(0, 10, (batch,))
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            results[f"loss.{step}"] = loss.detach()
    finally:
        npumem.torch.mark_optimizer_steps(False)
    for name, parameter in model.named_parameters():
        results[f"param.{name}"] = parameter.detach().clone()
    return results


def mlp_adamw_loop(steps: int = 4) -> dict[str, torch.Tensor]:
    """AdamW steps of a small MLP that marks no iteration itself: under
    strategy:planned, npumem.torch.install() makes each optimizer.step() a boundary.
    Every loss, then every updated parameter."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    results: dict[str, torch.Tensor] = {}
    for step in range(steps):
        loss = torch.nn.functional.cross_entropy(
            model(torch.randn(32, 256)), torch.randint(0, 10, (32,))
        )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        results[f"loss.{step}"] = loss.detach()
    for name, parameter in model.named_parameters():
        results[f"param.{name}"] = parameter.detach().clone()
    return results


def transformer_inference_loop(batches: int = 6) -> dict[str, torch.Tensor]:
    """Inference batches of one shape through a 2-layer TransformerEncoder, each batch
    an iteration (npumem.torch.iteration()): every batch's output."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(
        d_model=64, nhead=4, dim_feedforward=128, batch_first=True
    )
    encoder = torch.nn.TransformerEncoder(layer, num_layers=2)
    encoder.eval()
    results: dict[str, torch.Tensor] = {}
    with torch.no_grad():
        for step in range(batches):
            npumem.torch.iteration()
            results[f"output.{step}"] = encoder(torch.randn(4, 32, 64))
    return results


WORKLOADS = {
    "resnet18_training_step": resnet18_training_step,
    "transformer_dynamic_lengths": transformer_dynamic_lengths,
    "resnet18_training_loop": resnet18_training_loop,
    "transformer_inference_loop": transformer_inference_loop,
    "mlp_adamw_loop": mlp_adamw_loop,
}
