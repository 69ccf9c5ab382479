"""Captures small PyTorch workloads unlike the shared traces (gradient accumulation,
activation checkpointing, a GAN, LSTMs and a GRU, segmentation, token-by-token decoding,
variable sequence lengths, two models served in turn, a small GPT, MLPs under Adam, a
U-Net, encoder inference at two batch sizes, training with evaluation between steps,
a small ViT with gradient clipping, convolutional inference at several batch sizes, an
autoencoder on three image sizes, a transformer decoder, a 1-D CNN, DenseNet,
EfficientNet, MobileNetV3, SqueezeNet and ShuffleNet) with `python3 -m npumem.torch
capture`, then prints every strategy's overhead ratio (peak reserved / peak requested)
from `npumem compare` beside the model of PyTorch's caching policy in
../shared/tools/torch_policy_sim.py, and whether planned is at most the best of caching
and expandable. The last line sums, per strategy, the 2 MiB granules each peak reserved
holds above the fewest whole granules that hold the peak requested. Random weights and
inputs (no download), CPU tensors.

    /usr/bin/python3 bench/torch_workloads_bench.py [--npumem build/bin/npumem] [--keep DIR]
        [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def accum_train() -> None:
    """A CNN trained with three micro-batches per optimizer step."""
    import torch
    from torch import nn

    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64),
                          nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
    optimizer = torch.optim.AdamW(model.parameters(), 1e-3)
    for _ in range(6):
        for _ in range(3):
            x, y = torch.randn(16, 3, 64, 64), torch.randint(0, 10, (16,))
            (nn.functional.cross_entropy(model(x), y) / 3).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def ckpt_train() -> None:
    """Residual MLP blocks under activation checkpointing."""
    import torch
    from torch import nn
    from torch.utils.checkpoint import checkpoint

    blocks = nn.ModuleList([nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512))
                            for _ in range(6)])
    optimizer = torch.optim.SGD(blocks.parameters(), 0.01, momentum=0.9)
    for _ in range(6):
        h = torch.randn(64, 32, 512)
        for block in blocks:
            h = h + checkpoint(block, h, use_reentrant=False)
        h.pow(2).mean().backward()
        optimizer.step()
        optimizer.zero_grad()


def gan_train() -> None:
    """Discriminator and generator steps in turn; the generator's output spans both."""
    import torch
    from torch import nn

    generator = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1024), nn.ReLU(),
                              nn.Linear(1024, 784), nn.Tanh())
    discriminator = nn.Sequential(nn.Linear(784, 512), nn.LeakyReLU(0.2), nn.Linear(512, 256),
                                  nn.LeakyReLU(0.2), nn.Linear(256, 1))
    g_optimizer = torch.optim.Adam(generator.parameters(), 2e-4)
    d_optimizer = torch.optim.Adam(discriminator.parameters(), 2e-4)
    loss = nn.BCEWithLogitsLoss()
    for _ in range(6):
        fake = generator(torch.randn(64, 64))
        d_loss = (loss(discriminator(torch.randn(64, 784)), torch.ones(64, 1)) +
                  loss(discriminator(fake.detach()), torch.zeros(64, 1)))
        d_optimizer.zero_grad()
        d_loss.backward()
        d_optimizer.step()
        g_loss = loss(discriminator(fake), torch.ones(64, 1))
        g_optimizer.zero_grad()
        g_loss.backward()
        g_optimizer.step()


def lstm_train() -> None:
    """A two-layer LSTM language model."""
    import torch
    from torch import nn

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = nn.Embedding(5000, 128)
            self.lstm = nn.LSTM(128, 256, 2, batch_first=True)
            self.out = nn.Linear(256, 5000)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.out(self.lstm(self.embedding(x))[0])

    model = Model()
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)
    for _ in range(6):
        x, y = torch.randint(0, 5000, (16, 48)), torch.randint(0, 5000, (16, 48))
        loss = nn.functional.cross_entropy(model(x).reshape(-1, 5000), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def seg_infer() -> None:
    """FCN-ResNet50 inference on two input heights in turn."""
    import torch
    import torchvision

    import npumem.torch as npumem_torch

    model = torchvision.models.segmentation.fcn_resnet50(weights=None, weights_backbone=None,
                                                         num_classes=5).eval()
    with torch.no_grad():
        for step in range(4):
            npumem_torch.iteration()
            model(torch.randn(1, 3, 160 + 32 * (step % 2), 160))["out"].argmax(1)


def decode_infer() -> None:
    """Token-by-token decoding with a transformer decoder: every step is longer."""
    import torch
    from torch import nn

    import npumem.torch as npumem_torch

    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(256, 4, 1024, batch_first=True),
                                    3).eval()
    embedding, head = nn.Embedding(1000, 256), nn.Linear(256, 1000)
    with torch.no_grad():
        memory, tokens = torch.randn(2, 16, 256), torch.randint(0, 1000, (2, 1))
        for _ in range(12):
            npumem_torch.iteration()
            hidden = decoder(embedding(tokens), memory)
            tokens = torch.cat([tokens, head(hidden[:, -1]).argmax(-1, keepdim=True)], 1)


def varlen_train() -> None:
    """A transformer encoder trained on batches of varying sequence length."""
    import torch
    from torch import nn

    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True), 2)
    head = nn.Linear(256, 2)
    optimizer = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), 1e-4)
    for length in [32, 64, 48, 32, 96, 64, 32, 48]:
        x, y = torch.randn(8, length, 256), torch.randint(0, 2, (8,))
        nn.functional.cross_entropy(head(encoder(x).mean(1)), y).backward()
        optimizer.step()
        optimizer.zero_grad()


def two_models() -> None:
    """ResNet-18 and MobileNetV3-small served in turn, each request an iteration."""
    import torch
    import torchvision

    import npumem.torch as npumem_torch

    first = torchvision.models.resnet18(weights=None).eval()
    second = torchvision.models.mobilenet_v3_small(weights=None).eval()
    with torch.no_grad():
        for _ in range(6):
            npumem_torch.iteration()
            first(torch.randn(2, 3, 128, 128))
            npumem_torch.iteration()
            second(torch.randn(4, 3, 128, 128))


def gpt_train() -> None:
    """A small causal transformer language model trained with AdamW."""
    import torch
    from torch import nn

    width, vocabulary, length = 512, 4000, 64
    embedding, head = nn.Embedding(vocabulary, width), nn.Linear(width, vocabulary)
    encoder = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(width, 8, 4 * width, batch_first=True), 4)
    parameters = [*embedding.parameters(), *encoder.parameters(), *head.parameters()]
    optimizer = torch.optim.AdamW(parameters, 1e-4)
    mask = torch.triu(torch.full((length, length), float("-inf")), 1)
    for _ in range(4):
        tokens = torch.randint(0, vocabulary, (8, length))
        logits = head(encoder(embedding(tokens), mask=mask))
        nn.functional.cross_entropy(logits.reshape(-1, vocabulary), tokens.reshape(-1)).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def mlp_adam_train() -> None:
    """An MLP of 1024-wide layers under Adam: weights and activations of whole granules."""
    import torch
    from torch import nn

    model = nn.Sequential(*[nn.Sequential(nn.Linear(1024, 1024), nn.ReLU()) for _ in range(8)],
                          nn.Linear(1024, 10))
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)
    for _ in range(5):
        x, y = torch.randn(512, 1024), torch.randint(0, 10, (512,))
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()


def unet_train() -> None:
    """A small U-Net: encoder outputs kept for the decoder's skip connections."""
    import torch
    from torch import nn

    def block(inputs: int, outputs: int) -> nn.Module:
        return nn.Sequential(nn.Conv2d(inputs, outputs, 3, padding=1), nn.BatchNorm2d(outputs),
                             nn.ReLU(), nn.Conv2d(outputs, outputs, 3, padding=1), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.down1, self.down2, self.bottom = block(3, 32), block(32, 64), block(64, 128)
            self.up2, self.merge2 = nn.ConvTranspose2d(128, 64, 2, 2), block(128, 64)
            self.up1, self.merge1 = nn.ConvTranspose2d(64, 32, 2, 2), block(64, 32)
            self.out = nn.Conv2d(32, 2, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            first = self.down1(x)
            second = self.down2(nn.functional.max_pool2d(first, 2))
            bottom = self.bottom(nn.functional.max_pool2d(second, 2))
            second = self.merge2(torch.cat([self.up2(bottom), second], 1))
            return self.out(self.merge1(torch.cat([self.up1(second), first], 1)))

    model = UNet()
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)
    for _ in range(4):
        x, y = torch.randn(4, 3, 96, 96), torch.randint(0, 2, (4, 96, 96))
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()


def encoder_infer() -> None:
    """BERT-base-sized encoder layers serving batches of 4 and 8 in turn."""
    import torch
    from torch import nn

    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True),
                                    4).eval()
    with torch.no_grad():
        for batch in (4, 8, 4, 8, 4, 8):
            encoder(torch.randn(batch, 128, 768))


def vision_steps(model, optimizer, steps: int, batch: int, side: int) -> None:
    """Classification steps (10 classes) on random side x side images."""
    import torch

    for _ in range(steps):
        x, y = torch.randn(batch, 3, side, side), torch.randint(0, 10, (batch,))
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()


def vision_infer(model, batches: list[int], side: int) -> None:
    """Inference on random side x side images, one iteration per batch."""
    import torch

    import npumem.torch as npumem_torch

    with torch.no_grad():
        for batch in batches:
            npumem_torch.iteration()
            model(torch.randn(batch, 3, side, side))


def train_eval() -> None:
    """ResNet-18 SGD steps with an evaluation batch every third step."""
    import torch
    import torchvision

    model = torchvision.models.resnet18(num_classes=10)
    optimizer = torch.optim.SGD(model.parameters(), 0.05, momentum=0.9)
    for step in range(9):
        model.train()
        vision_steps(model, optimizer, 1, 4, 64)
        if step % 3 == 2:
            model.eval()
            with torch.no_grad():
                model(torch.randn(8, 3, 64, 64))


def gru_varlen_train() -> None:
    """A two-layer GRU under Adam on sequences of three lengths."""
    import torch

    rnn, head = torch.nn.GRU(64, 128, num_layers=2, batch_first=True), torch.nn.Linear(128, 32)
    optimizer = torch.optim.Adam([*rnn.parameters(), *head.parameters()], 1e-3)
    for step in range(10):
        x = torch.randn(8, [20, 35, 50, 35, 20][step % 5], 64)
        loss = head(rnn(x)[0]).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def vit_tiny_train() -> None:
    """A four-layer ViT on 64x64 images, AdamW with gradient clipping."""
    import torch
    from torch import nn

    class ViT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.patches = nn.Conv2d(3, 192, 8, 8)
            self.cls = nn.Parameter(torch.zeros(1, 1, 192))
            self.encoder = nn.TransformerEncoder(
                nn.TransformerEncoderLayer(192, 3, 768, batch_first=True), 4)
            self.head = nn.Linear(192, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            tokens = self.patches(x).flatten(2).transpose(1, 2)
            tokens = torch.cat([self.cls.expand(x.shape[0], -1, -1), tokens], 1)
            return self.head(self.encoder(tokens)[:, 0])

    model = ViT()
    optimizer = torch.optim.AdamW(model.parameters(), 1e-3)
    for _ in range(6):
        x, y = torch.randn(8, 3, 64, 64), torch.randint(0, 10, (8,))
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()


def batches_infer() -> None:
    """ResNet-18 inference at batch sizes 1, 2, 4 and 8 in turn, each an iteration."""
    import torchvision

    vision_infer(torchvision.models.resnet18().eval(), [1, 2, 4, 8] * 3, 96)


def autoencoder_train() -> None:
    """A convolutional autoencoder under Adam on images of three sizes in turn."""
    import torch
    from torch import nn

    encoder = nn.Sequential(nn.Conv2d(1, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1),
                            nn.ReLU())
    decoder = nn.Sequential(nn.ConvTranspose2d(32, 16, 4, 2, 1), nn.ReLU(),
                            nn.ConvTranspose2d(16, 1, 4, 2, 1))
    optimizer = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], 1e-3)
    for step in range(8):
        side = [64, 96, 128][step % 3]
        x = torch.randn(6, 1, side, side)
        optimizer.zero_grad()
        (decoder(encoder(x)) - x).pow(2).mean().backward()
        optimizer.step()


def mobilenet_v3_train() -> None:
    """MobileNetV3-small SGD steps on 64x64 images."""
    import torch
    import torchvision

    model = torchvision.models.mobilenet_v3_small(num_classes=10)
    vision_steps(model, torch.optim.SGD(model.parameters(), 0.05, momentum=0.9), 6, 8, 64)


def efficientnet_infer() -> None:
    """EfficientNet-B0 inference, each batch an iteration."""
    import torchvision

    vision_infer(torchvision.models.efficientnet_b0().eval(), [2] * 5, 96)


def lstm_adam_train() -> None:
    """A two-layer LSTM language model on a 2,000-word vocabulary, next-token loss."""
    import torch
    from torch import nn

    embedding, rnn = nn.Embedding(2000, 128), nn.LSTM(128, 256, 2, batch_first=True)
    head = nn.Linear(256, 2000)
    optimizer = torch.optim.Adam([*embedding.parameters(), *rnn.parameters(),
                                  *head.parameters()], 1e-3)
    for _ in range(6):
        tokens = torch.randint(0, 2000, (16, 33))
        hidden = rnn(embedding(tokens[:, :-1]))[0]
        loss = nn.functional.cross_entropy(head(hidden).reshape(-1, 2000),
                                           tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def decoder_train() -> None:
    """A three-layer transformer decoder with a causal mask, AdamW."""
    import torch
    from torch import nn

    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(128, 4, 512, batch_first=True), 3)
    head = nn.Linear(128, 500)
    optimizer = torch.optim.AdamW([*decoder.parameters(), *head.parameters()], 1e-3)
    mask = nn.Transformer.generate_square_subsequent_mask(48)
    for _ in range(6):
        target, memory = torch.randn(8, 48, 128), torch.randn(8, 40, 128)
        loss = head(decoder(target, memory, tgt_mask=mask)).logsumexp(-1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def resnet_adam_train() -> None:
    """ResNet-18 steps under Adam: two moments per parameter."""
    import torch
    import torchvision

    model = torchvision.models.resnet18(num_classes=10)
    vision_steps(model, torch.optim.Adam(model.parameters(), 1e-3), 5, 4, 64)


def mlp_norm_accum_train() -> None:
    """An MLP with LayerNorm and dropout, AdamW, two micro-batches per step."""
    import torch
    from torch import nn

    model = nn.Sequential(nn.Linear(256, 1024), nn.LayerNorm(1024), nn.GELU(), nn.Dropout(0.1),
                          nn.Linear(1024, 1024), nn.LayerNorm(1024), nn.GELU(),
                          nn.Linear(1024, 10))
    optimizer = torch.optim.AdamW(model.parameters(), 1e-3)
    for _ in range(6):
        for _ in range(2):
            x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
            (nn.functional.cross_entropy(model(x), y) / 2).backward()
        optimizer.step()
        optimizer.zero_grad()


def conv1d_train() -> None:
    """A 1-D CNN on 8,000-sample signals (audio-like), Adam."""
    import torch
    from torch import nn

    model = nn.Sequential(nn.Conv1d(1, 32, 9, 2, 4), nn.BatchNorm1d(32), nn.ReLU(),
                          nn.Conv1d(32, 64, 9, 2, 4), nn.BatchNorm1d(64), nn.ReLU(),
                          nn.Conv1d(64, 128, 9, 2, 4), nn.ReLU(), nn.AdaptiveAvgPool1d(1),
                          nn.Flatten(), nn.Linear(128, 12))
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)
    for _ in range(6):
        x, y = torch.randn(16, 1, 8000), torch.randint(0, 12, (16,))
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()


def densenet_infer() -> None:
    """DenseNet-121 inference (every layer's output concatenated), each batch an iteration."""
    import torchvision

    vision_infer(torchvision.models.densenet121().eval(), [2] * 4, 64)


def squeezenet_train() -> None:
    """SqueezeNet 1.1 SGD steps on 96x96 images."""
    import torch
    import torchvision

    model = torchvision.models.squeezenet1_1(num_classes=10)
    vision_steps(model, torch.optim.SGD(model.parameters(), 0.01, momentum=0.9), 6, 8, 96)


def shufflenet_infer() -> None:
    """ShuffleNetV2 x0.5 inference at batch sizes 1, 3 and 5 in turn, each an iteration."""
    import torchvision

    vision_infer(torchvision.models.shufflenet_v2_x0_5().eval(), [1, 3, 5] * 3, 112)


WORKLOADS = {f.__name__: f for f in (accum_train, ckpt_train, gan_train, lstm_train, seg_infer,
                                     decode_infer, varlen_train, two_models, gpt_train,
                                     mlp_adam_train, unet_train, encoder_infer, train_eval,
                                     gru_varlen_train, vit_tiny_train, batches_infer,
                                     autoencoder_train, mobilenet_v3_train, efficientnet_infer,
                                     lstm_adam_train, decoder_train, resnet_adam_train,
                                     mlp_norm_accum_train, conv1d_train, densenet_infer,
                                     squeezenet_train, shufflenet_infer)}
GRANULE = 2 << 20  # the expandable strategy's default
STRATEGIES = ("caching", "expandable", "static", "planned")


def run(command: list[str], env: dict[str, str] | None = None) -> str:
    """The command's output; its error output in a RuntimeError when it fails."""
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed (exit {done.returncode}): "
                           f"{done.stderr.strip()}")
    return done.stdout


def capture(name: str, trace: str, python_path: str) -> None:
    run([sys.executable, "-m", "npumem.torch", "capture", "-o", trace, os.path.abspath(__file__),
         "--run", name], env=dict(os.environ, PYTHONPATH=python_path))


def pytorch_policy_ratio(trace: str, shared: str) -> float | None:
    simulator = os.path.join(shared, "tools", "torch_policy_sim.py")
    if not os.path.exists(simulator):
        return None
    return json.loads(run([sys.executable, simulator, trace]))["ratio"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workloads", nargs="*", default=list(WORKLOADS), metavar="NAME")
    parser.add_argument("--npumem", default=os.path.join(ROOT, "build", "bin", "npumem"))
    parser.add_argument("--python-path", default=os.path.join(ROOT, "build", "python"),
                        help="where the npumem Python module is built")
    parser.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"),
                        help="the shared folder holding tools/torch_policy_sim.py")
    parser.add_argument("--keep", metavar="DIR",
                        help="write the captured traces to DIR (kept) instead of a temporary folder")
    parser.add_argument("--run", choices=list(WORKLOADS), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.run:  # inside `npumem.torch capture`
        WORKLOADS[arguments.run]()
        return 0
    unknown = [name for name in arguments.workloads if name not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
    if arguments.keep and os.path.exists(arguments.keep) and not os.path.isdir(arguments.keep):
        parser.error(f"--keep {arguments.keep}: not a folder")
    if not os.access(arguments.npumem, os.X_OK):
        parser.error(f"no npumem command at {arguments.npumem} (build it, or give --npumem)")
    try:
        return report(arguments)
    except RuntimeError as error:
        print(f"torch_workloads_bench: {error}", file=sys.stderr)
        return 2


def report(arguments: argparse.Namespace) -> int:
    """Captures each workload and prints its row."""
    print(f"{'workload':<22}{'peak req':>12}" + "".join(f"{s:>12}" for s in STRATEGIES) +
          f"{'pytorch':>10}  planned <= best of caching, expandable")
    over_floor = dict.fromkeys(STRATEGIES, 0)
    with tempfile.TemporaryDirectory() as scratch:
        directory = arguments.keep or scratch
        os.makedirs(directory, exist_ok=True)
        for name in arguments.workloads:
            trace = os.path.join(directory, f"{name}.trace")
            capture(name, trace, arguments.python_path)
            compared = json.loads(run([arguments.npumem, "compare", trace, "--json"]))
            rows = {row["strategy"]: row for row in compared["strategies"]}
            ratios = {s: rows[s]["overhead_ratio"] for s in STRATEGIES if s in rows}
            pytorch = pytorch_policy_ratio(trace, arguments.shared)
            best = min(ratios["caching"], ratios["expandable"])
            peak = next(iter(rows.values()))["peak_requested_bytes"]
            print(f"{name:<22}{peak / 2**20:>9.1f} MiB" +
                  "".join(f"{ratios.get(s, float('nan')):>12.3f}" for s in STRATEGIES) +
                  (f"{pytorch:>10.3f}" if pytorch is not None else f"{'-':>10}") +
                  f"  {'yes' if ratios['planned'] <= best + 1e-9 else 'no'}", flush=True)
            floor = -(-peak // GRANULE)
            for strategy in over_floor:
                if strategy in rows:
                    over_floor[strategy] += round(rows[strategy]["peak_reserved_bytes"] / GRANULE) - floor
    print(f"{'granules over floor':<22}{'':>12}" +
          "".join(f"{over_floor[s]:>12}" for s in STRATEGIES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
