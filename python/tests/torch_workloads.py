"""Seeded PyTorch workloads for the tests: each returns its results by name, so two
runs (PyTorch's allocator, npumem) can be compared tensor by tensor."""

from __future__ import annotations

import torch
import torchvision


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


WORKLOADS = {
    "resnet18_training_step": resnet18_training_step,
    "transformer_dynamic_lengths": transformer_dynamic_lengths,
}
