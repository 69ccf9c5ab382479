"""Activation checkpointing chosen by the recompute planner (seed 000 §4.2).

    model = npumem.torch.checkpoint(model, budget="64MiB", example_input=x)
    loss = model(x).sum(); loss.backward()     # gradients equal to the plain run's
    print(model.report_text())

checkpoint() measures, on npumem's allocator, the bytes each layer's forward leaves for
the backward pass and its forward time, and runs one training step (forward, backward
with a gradient of ones) plainly. The budget is for a step's activation peak: the most
bytes allocated in npumem's default pool above what was there before the step, with the
parameters' gradients held in a pool of their own for the measurement (so the figure is
activations and their gradients, what checkpointing changes). What the plain step's
peak holds beyond the layers' activations (the gradients being back-propagated, the
workspaces of the backward kernels: on a CPU without AVX-512, oneDNN's convolution
backward took 41 MiB beside resnet18's 31 MiB of activations) is taken to be needed
beside any plan; the recompute plan (npumem.plan.recompute) gets the rest of the
budget. The result is a module that runs the chain with every run of dropped layers,
together with the kept layer after it, inside torch.utils.checkpoint (non-reentrant,
random-number state preserved): their activations are recomputed in the backward pass
instead of kept. One checkpointed step is measured too. The user's gradients, buffers
and random-number state are put back afterwards.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, Callable

import torch
import torch.utils.checkpoint

import npumem.plan
from npumem import _core
from npumem.scopes import Size, pool, to_bytes
from npumem.torch.chain import ChainLayer, chain_layers, measure_layers, model_json
from npumem.user_frame import user_stacklevel

GRADIENT_POOL = "npumem.checkpoint.gradients"  # holds .grad while checkpoint() measures


class CheckpointedModel(torch.nn.Module):
    """The model's chain with the planned segments under torch.utils.checkpoint."""

    def __init__(self, model: torch.nn.Module, segments: list[tuple[list[ChainLayer], bool]]):
        super().__init__()
        self.model = model  # registered: parameters(), train() and state_dict() reach it
        self._segments = segments
        self.plan: Any = None
        self._report: dict[str, Any] = {}
        # Saved and loaded under the model's own keys ("0.weight", not "model.0.weight"):
        # a checkpoint saved through the wrapper loads into the plain model, and back.
        self._register_state_dict_hook(_without_model_prefix)
        self._register_load_state_dict_pre_hook(_with_model_prefix)

    # The wrapper's mode is its model's: model.train() after checkpoint() must not leave
    # wrapper.training stale (the forward runs the model's layers in the model's mode).
    @property
    def training(self) -> bool:
        model = self.__dict__.get("_modules", {}).get("model")
        return model.training if model is not None else self.__dict__.get("_mode", True)

    @training.setter
    def training(self, mode: bool) -> None:
        model = self.__dict__.get("_modules", {}).get("model")
        if model is None:  # Module.__init__, before the model is registered
            self.__dict__["_mode"] = mode
        else:
            model.training = mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layers, recomputed in self._segments:
            if recomputed and torch.is_grad_enabled():
                x = torch.utils.checkpoint.checkpoint(
                    _StatisticsOnce(layers), x, use_reentrant=False, preserve_rng_state=True
                )
            else:
                x = _run_layers(layers, x)
        return x

    def report(self) -> npumem.plan.Plan:
        """budget_bytes, planned_peak_bytes (the planner's activation peak plus
        step_overhead_bytes, what the plain step held beyond the activations),
        plain_peak_bytes and measured_peak_bytes (the activation peaks of a plain and a
        checkpointed training step), planned_recompute_ms, plain_step_ms,
        checkpointed_step_ms and extra_compute_ms (their difference), and the layers:
        kept_layers and recomputed_segments (layer names)."""
        return npumem.plan.Plan(self._report)

    def report_text(self) -> str:
        r = self.report()
        fmt = _core.format_bytes
        return (
            f"npumem checkpointing: budget {fmt(r.budget_bytes)}, "
            f"{len(r.recomputed_segments)} recomputed segments\n"
            f"  activation peak: plain {fmt(r.plain_peak_bytes)}, planned "
            f"{fmt(r.planned_peak_bytes)} (of it {fmt(r.step_overhead_bytes)} beside the "
            f"activations), measured {fmt(r.measured_peak_bytes)}"
            f"{', OVER the budget' if r.measured_peak_bytes > r.budget_bytes else ''}\n"
            f"  step ms: plain {r.plain_step_ms:.3f}, checkpointed {r.checkpointed_step_ms:.3f} "
            f"({_extra_text(r)}; planned recompute {r.planned_recompute_ms:.3f})\n"
        )


def _without_model_prefix(
    module: torch.nn.Module, state: dict[str, Any], prefix: str, metadata: Any
) -> None:
    inner = prefix + "model."
    for key in [k for k in state if k.startswith(inner)]:
        state[prefix + key[len(inner):]] = state.pop(key)


def _with_model_prefix(state: dict[str, Any], prefix: str, *unused: Any) -> None:
    inner = prefix + "model."
    for key in [k for k in state if k.startswith(prefix) and not k.startswith(inner)]:
        state[inner + key[len(prefix):]] = state.pop(key)


def _extra_text(r: npumem.plan.Plan) -> str:
    """The measured extra time; a step with nothing recomputed, or one measured faster
    than the plain one, differs from it by timing noise alone."""
    if not r.recomputed_segments:
        return "extra none: no segment is recomputed"
    if r.extra_compute_ms < 0:
        return f"extra within timing noise: measured {r.extra_compute_ms:.3f}"
    return f"extra {r.extra_compute_ms:.3f}"


def _run_layers(layers: list[ChainLayer], x: torch.Tensor) -> torch.Tensor:
    for layer in layers:
        x = layer.run(x)
    return x


class _StatisticsOnce:
    """A recomputed segment's layers, for one torch.utils.checkpoint call: it runs them
    for the forward pass and again in the backward pass. The second run puts back the
    buffers it changed, so batch-norm statistics move once per step, as in a plain run
    (torch.utils.checkpoint alone moved them twice: num_batches_tracked 2 after a step)."""

    def __init__(self, layers: list[ChainLayer]):
        self.layers = layers
        self.ran = False

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if not self.ran:
            self.ran = True
            return _run_layers(self.layers, x)
        saved = [
            (tensor, tensor.detach().clone())
            for layer in self.layers
            for tensor in layer.tensors()
            if not isinstance(tensor, torch.nn.Parameter)
        ]
        try:
            return _run_layers(self.layers, x)
        finally:
            with torch.no_grad():
                for buffer, value in saved:
                    buffer.copy_(value)


def _segments(layers: list[ChainLayer], keep: list[bool]) -> list[tuple[list[ChainLayer], bool]]:
    """Each run of dropped outputs, with the layer after it (which reads the last dropped
    output), becomes one recomputed segment; the other layers run plainly."""
    segments: list[tuple[list[ChainLayer], bool]] = []
    i = 0
    while i < len(layers):
        if keep[i]:
            segments.append(([layers[i]], False))
            i += 1
            continue
        end = i
        while end < len(layers) and not keep[end]:
            end += 1
        end = min(end + 1, len(layers))  # the kept layer that reads the dropped output
        segments.append((layers[i:end], True))
        i = end
    return segments


class _Measurement:
    """Runs training steps on the example for measuring, then puts back the model's
    gradients, buffers and the random-number state."""

    def __init__(self, model: torch.nn.Module, device: Any):
        self.model = model
        self.device = device
        self.params = [p for p in model.parameters() if p.requires_grad]

    def __enter__(self) -> "_Measurement":
        self._grads = [p.grad for p in self.params]
        self._buffers = [(b, b.detach().clone()) for b in self.model.buffers()]
        self._rng = torch.get_rng_state()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        for param, grad in zip(self.params, self._grads):
            param.grad = grad
        with torch.no_grad():
            for buffer, saved in self._buffers:
                buffer.copy_(saved)
        torch.set_rng_state(self._rng)

    def step(self, run: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor):
        """Activation peak (bytes) and time (seconds) of forward + backward."""
        with pool(GRADIENT_POOL, device=self.device):
            for param in self.params:
                param.grad = torch.zeros_like(param)
        rng = torch.get_rng_state()
        self.device.reset_peak_stats()
        base = _default_pool(self.device)["allocated_bytes.all.current"]
        start = time.perf_counter()
        output = run(x)
        torch.autograd.backward(output, torch.ones_like(output))
        seconds = time.perf_counter() - start
        del output
        peak = _default_pool(self.device)["allocated_bytes.all.peak"] - base
        torch.set_rng_state(rng)
        for param in self.params:
            param.grad = None
        return peak, seconds


def _default_pool(device: Any) -> dict[str, int]:
    for info in device.pools():
        if info["name"] == "default":
            return info["stats"]
    raise _core.Error("npumem device has no default pool")


# A budget no model reaches: the plan that keeps every activation.
_UNBOUNDED = 1 << 62


def _plan_within(
    description: dict[str, Any], budget_bytes: int, step_bytes: int, hbm_bandwidth: float
) -> npumem.plan.Plan:
    """The recompute plan for the activations that fit beside `step_bytes` in the
    budget; OutOfMemoryError naming the smallest budget that fits when none does."""
    try:
        return npumem.plan.recompute(
            description, budget=max(budget_bytes - step_bytes, 0), hbm_bandwidth=hbm_bandwidth
        )
    except npumem.OutOfMemoryError as error:
        fmt = _core.format_bytes
        least = error.requested_bytes + step_bytes
        refusal = npumem.OutOfMemoryError(
            f"no recompute plan fits a budget of {fmt(budget_bytes)}: a training step "
            f"needs {fmt(step_bytes)} beside the activations it keeps (measured: the "
            f"backward's gradients and workspaces), and the leanest plan needs "
            f"{fmt(error.requested_bytes)} of activations, {fmt(least)} in all"
        )
        refusal.requested_bytes = least
        refusal.pool = error.pool
        raise refusal from None


def _plain_step_refused(error: Exception, device: Any) -> npumem.OutOfMemoryError:
    """The measurement's out-of-memory error, led by what to do: the plain step is run once
    to measure it, and must fit (its own advice, to free tensors, did not help)."""
    way_out = (
        "give the device DDR to spill to (a ddr= size in its spec), or measure with a "
        "smaller example_input (activations grow with the batch)"
        if not device.tier_info("ddr")["capacity_bytes"]
        else "measure with a smaller example_input (activations grow with the batch)"
    )
    refusal = npumem.OutOfMemoryError(
        "npumem.torch.checkpoint: the plain training step it measures before planning ran out "
        f"of memory; that step must fit once: {way_out}.\n{error}"
    )
    refusal.requested_bytes = getattr(error, "requested_bytes", 0)
    refusal.pool = getattr(error, "pool", "")
    return refusal


def checkpoint(
    model: torch.nn.Module, budget: Size, example_input: torch.Tensor
) -> CheckpointedModel:
    """Plans which activations a training step keeps under `budget` (bytes of
    activations) and returns the model with the rest recomputed; see the module's
    description. Needs npumem.torch.install() first. Raises OutOfMemoryError naming the
    smallest budget any plan fits when none fits this one, npumem.Error for a model that
    is not a traceable chain of layers; nothing is left allocated."""
    from npumem.torch import installed_device

    device = installed_device()
    budget_bytes = to_bytes(budget)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"npumem.torch.checkpoint plans a torch.nn.Module, not {model!r}")
    if not any(p.requires_grad for p in model.parameters()):
        raise _core.Error(
            "npumem.torch.checkpoint plans a training step: the model has no parameter "
            "that requires grad"
        )
    layers = chain_layers(model)
    with _Measurement(model, device) as measurement:
        try:
            costs = measure_layers(layers, example_input, device, training=True)
            plain_peak, plain_seconds = measurement.step(model, example_input)
        except (npumem.OutOfMemoryError, torch.cuda.OutOfMemoryError) as error:
            # torch's error where PyTorch's own allocation ran out (npumem serves it).
            raise _plain_step_refused(error, device) from None
        description = model_json(
            type(model).__name__, example_input.numel() * example_input.element_size(), costs
        )
        hbm_bw = device.tier_info("hbm")["bandwidth_bytes_per_s"] or 1.2e12
        keep_all = npumem.plan.recompute(description, budget=_UNBOUNDED, hbm_bandwidth=hbm_bw)
        step_bytes = max(0, plain_peak - keep_all.peak_bytes)
        plan = _plan_within(description, budget_bytes, step_bytes, hbm_bw)
        keep = [cost.name in set(plan.kept_layers) for cost in costs]
        wrapped = CheckpointedModel(model, _segments(layers, keep))
        peak, seconds = measurement.step(wrapped, example_input)
    if peak > budget_bytes:
        warnings.warn(
            f"npumem.torch.checkpoint: the checkpointed step held {_core.format_bytes(peak)} "
            f"of activations, past the budget of {_core.format_bytes(budget_bytes)} (planned "
            f"{_core.format_bytes(plan.peak_bytes + step_bytes)}): a recomputed segment's "
            "activations sit beside the memory the step holds at its peak; give a larger budget",
            RuntimeWarning, stacklevel=user_stacklevel(),
        )
    wrapped.plan = plan
    wrapped._report = {
        "budget_bytes": budget_bytes,
        "planned_peak_bytes": plan.peak_bytes + step_bytes,
        "step_overhead_bytes": step_bytes,
        "plain_peak_bytes": plain_peak,
        "measured_peak_bytes": peak,
        "planned_recompute_ms": plan.recompute_ms,
        "plain_step_ms": plain_seconds * 1000.0,
        "checkpointed_step_ms": seconds * 1000.0,
        "extra_compute_ms": (seconds - plain_seconds) * 1000.0,
        "kept_layers": list(plan.kept_layers),
        "recomputed_segments": [
            [layer.name for layer in segment] for segment, recomputed in wrapped._segments
            if recomputed
        ],
    }
    return wrapped
