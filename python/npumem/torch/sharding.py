"""Sharded execution of a model larger than HBM (seed 000 §4.1), on npumem's tiers.

    runner = npumem.torch.shard(model, hbm_budget="64MiB", example_input=x)
    y = runner(x)                 # shard by shard; equal to model(x)
    loss = y.sum(); loss.backward()   # gradients land on the DDR master weights
    print(runner.report_text())

shard() measures each layer (weights, activations, forward time), makes the shard plan
(npumem.plan.shard) for the budget and moves every weight into a pool pinned to DDR (the
parameters keep their identity; their data now lives in DDR). A run copies a shard's
weights into a pool pinned to HBM through npumem.copy (the device's bandwidth model
times it), runs the shard's layers on those copies and frees them. When the plan says
so, the next shard's weights are copied before the current shard computes (prefetch);
the overlap is modelled from the copies' modelled time and the measured compute time.

Training: with autograd on, the forward keeps each shard's input only; the backward
walks the shards in reverse, copies each shard's weights into HBM again, recomputes its
forward from the kept input (with the random-number state of the first run) and
back-propagates through it. Weight gradients are copied to DDR and accumulate in the
parameters' .grad as a plain run would. Buffers a training forward moves (batch-norm
statistics) are copied back to their masters after it; the recomputation's are dropped.
"""

from __future__ import annotations

import time
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import torch

import npumem.plan
from npumem import _core
from npumem.scopes import Size, pool, to_bytes
from npumem.torch.chain import ChainLayer, chain_layers, measure_layers, model_json
from npumem.user_frame import user_stacklevel

WEIGHT_POOL = "npumem.shard.weights"  # pinned to DDR: the master weights and gradients
HBM_POOL = "npumem.shard.hbm"  # pinned to HBM: the running shards' weight copies


@dataclass
class _Shard:
    layers: list[ChainLayer]
    tensors: list[torch.Tensor]  # distinct parameters and buffers, master data in DDR
    planned: Any  # the plan's shard (npumem.plan.Plan)
    device: Any  # the npumem device it runs on (weights, copies, activations)
    measured_hbm_peak: int = 0
    measured_backward_hbm_peak: int = 0  # of the last backward through it; 0: none yet
    modelled_load_seconds: float = 0.0
    measured_compute_seconds: float = 0.0


@dataclass
class _Timeline:
    """Modelled times of the last run, with the planner's rules (one copy engine, two
    weight buffers)."""

    load_start: list[float] = field(default_factory=list)
    compute_start: list[float] = field(default_factory=list)
    stall: list[float] = field(default_factory=list)
    total: float = 0.0


class ShardedModel:
    """Runs a model shard by shard under an HBM budget; see the module's description."""

    def __init__(
        self,
        model: torch.nn.Module,
        hbm_budget: Size,
        example_input: torch.Tensor,
        devices: Sequence[int] = (0,),
    ):
        placed = _served_devices(devices)
        self.device = placed[0]  # measures the model
        budget = to_bytes(hbm_budget)
        _check_budget_fits(budget, placed)
        layers = chain_layers(model)
        was_training = model.training
        model.eval()  # measuring must not move batch-norm statistics
        try:
            with _routed(self.device):
                costs = measure_layers(layers, example_input, self.device, training=False)
        finally:
            model.train(was_training)
        self.model_json = model_json(
            type(model).__name__, example_input.numel() * example_input.element_size(), costs
        )
        # A training step's backward holds a layer's weight gradients beside its weights
        # while it computes: a model in training mode is planned with them counted among
        # the layer's activations (held while it computes; not loaded, so the planned load
        # times stay the weights').
        self.trains = was_training
        self._warned_untrained = False
        self._warned_over_budget = False
        planned_json = self.model_json
        if was_training:
            planned_json = dict(self.model_json, layers=[
                dict(layer, activation_bytes=layer["activation_bytes"] + layer["weight_bytes"])
                for layer in self.model_json["layers"]
            ])
        hbm_bw = self.device.tier_info("hbm")["bandwidth_bytes_per_s"]
        ddr_bw = self.device.tier_info("ddr")["bandwidth_bytes_per_s"]

        def plan_for(hbm: int) -> Any:
            return npumem.plan.shard(
                planned_json, hbm=hbm, bandwidth=min(hbm_bw, ddr_bw) or 50e9,
                hbm_bandwidth=hbm_bw or 1.2e12,
            )

        # Raises OutOfMemoryError naming the layer when one layer alone exceeds the budget.
        try:
            self.plan = plan_for(budget)
        except npumem.OutOfMemoryError as error:
            # The error names the first layer past the budget and, as the bytes it asks
            # for, the smallest budget that fits (the most any layer needs).
            training = (
                " (the model is in training mode: the activations include the weights' "
                "gradients; shard it in eval mode to plan for inference)"
                if was_training
                else ""
            )
            refusal = npumem.OutOfMemoryError(f"{error}{training}")
            refusal.requested_bytes = error.requested_bytes
            refusal.pool = error.pool
            raise refusal from None
        self.hbm_budget_bytes = budget
        self.model = model
        count = len(self.plan.shards)
        self.shards = [
            _Shard(
                layers[planned.first_layer : planned.last_layer + 1],
                _distinct(t for layer in layers[planned.first_layer : planned.last_layer + 1]
                          for t in layer.tensors()),
                planned,
                # Consecutive shards share a device: activations cross devices least.
                placed[k * len(placed) // count],
            )
            for k, planned in enumerate(self.plan.shards)
        ]
        self._move_weights_to_ddr()
        self.timeline = _Timeline()
        # A later shard() of the model moves its weights again: this runner's masters are
        # then stale, and running would point the parameters back at them.
        model._npumem_shard_runner = weakref.ref(self)

    # ------------------------------------------------------------------ running

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        current = getattr(self.model, "_npumem_shard_runner", None)
        if current is None or current() is not self:
            raise _core.Error(
                "npumem.torch.shard: the model was sharded again after this runner was made; "
                "run it through the newest runner"
            )
        params = [t for shard in self.shards for t in shard.tensors if t.requires_grad]
        if torch.is_grad_enabled() and (x.requires_grad or params):
            return _ShardedForward.apply(self, x, *params)
        output, _ = self._forward(x, keep_inputs=False)
        return output

    def _forward(self, x: torch.Tensor, keep_inputs: bool):
        """Runs every shard; returns the output and, when asked, each shard's input and
        random-number state (for the backward pass)."""
        kept: list[tuple[torch.Tensor, torch.Tensor]] = []
        # The runs' HBM: above what each device held when the run began.
        held = {d.index: d.stats()["allocated_bytes.hbm.current"]
                for d in _distinct_devices(self.shards)}
        loaded = self._fetch(0)
        try:
            for k, shard in enumerate(self.shards):
                following = k + 1 < len(self.shards)
                shard.device.reset_peak_stats()
                upcoming = None
                if following and shard.planned.prefetches_next:
                    upcoming = self._fetch(k + 1)
                if k > 0 and shard.device is not self.shards[k - 1].device:
                    x = _copy_to(x, shard.device)  # the pipeline's hand-over
                if keep_inputs:
                    # In DDR until the backward: kept in HBM, every shard's input added up.
                    kept.append((self._to_ddr(x.detach(), shard.device), torch.get_rng_state()))
                start = time.perf_counter()
                x = self._run(shard, loaded, x)
                shard.measured_compute_seconds = time.perf_counter() - start
                loaded = None  # the shard's HBM copies go now
                if following and upcoming is None:
                    upcoming = self._fetch(k + 1)
                shard.measured_hbm_peak = (
                    shard.device.stats()["allocated_bytes.hbm.peak"] - held[shard.device.index]
                )
                loaded = upcoming
        finally:
            loaded = None
        self._model_timeline()
        self._warn_over_budget("forward", "measured_hbm_peak")
        return x, kept

    def _backward(self, kept, grad_output: torch.Tensor, wants_input_grad: bool):
        """Back-propagates shard by shard, last first; returns the input's gradient and
        each parameter's gradient (in DDR) by id."""
        if not self.trains and not self._warned_untrained:
            self._warned_untrained = True
            warnings.warn(
                "npumem.torch.shard: the model was in eval mode when sharded, so its shards "
                "were planned for inference; a backward pass also holds each shard's weight "
                "gradients in HBM and may pass the budget (shard the model in training mode)",
                RuntimeWarning, stacklevel=user_stacklevel(),
            )
        grads: dict[int, torch.Tensor] = {}
        grad = grad_output
        for k in reversed(range(len(self.shards))):
            shard = self.shards[k]
            kept_input, rng_state = kept[k]
            kept[k] = None
            needs_input = k > 0 or wants_input_grad
            shard.device.reset_peak_stats()
            # The backward's own HBM: above what was allocated when it began (the
            # gradient it receives, and whatever else the program holds there).
            base = shard.device.stats()["allocated_bytes.hbm.current"]
            x = _copy_to(kept_input, shard.device).requires_grad_(needs_input)
            del kept_input
            self._swap(shard, self._fetch(k))
            try:
                with _routed(shard.device), torch.random.fork_rng(devices=[]), \
                        torch.enable_grad():
                    torch.set_rng_state(rng_state)
                    grad = self._backward_layers(shard, x, grad, needs_input, grads)
            finally:
                self._swap(shard, None)  # frees the HBM copies
            shard.measured_backward_hbm_peak = (
                shard.device.stats()["allocated_bytes.hbm.peak"] - base
            )
        self._warn_over_budget("backward", "measured_backward_hbm_peak")
        return grad, grads

    def _backward_layers(self, shard: _Shard, x: torch.Tensor, grad: Optional[torch.Tensor],
                         needs_input: bool, grads: dict[int, torch.Tensor]) -> Optional[torch.Tensor]:
        """Re-runs the shard's layers, then back-propagates them a stretch at a time, last
        first, each stretch's weight gradients going to DDR (into `grads`) before the next
        one's are made, as the plan counts them: the whole shard's at once passed the
        budget (three Linear layers' gradients beside their weights, 96.4 MiB of 96 MiB).
        A stretch begins at a layer with weights, at its input, which that layer keeps for
        its backward anyway; not where a later layer changed that input in place (a
        ReLU(inplace=True) makes its input its output). Returns the input's gradient."""
        trains = [any(t.requires_grad for t in layer.tensors()) for layer in shard.layers]
        starts = [(0, x, x._version)]  # (first layer, its input, the input's version)
        y = x
        for j, layer in enumerate(shard.layers):
            if j > 0 and trains[j]:
                starts.append((j, y, y._version))
            y = layer.run(y)
        starts = [starts[0]] + [s for s in starts[1:] if s[1]._version == s[2]]
        end = y
        for number in reversed(range(len(starts))):
            first, begin, _ = starts[number]
            last = starts[number + 1][0] if number + 1 < len(starts) else len(shard.layers)
            wants_input = (number > 0 or needs_input) and begin.requires_grad
            trainable = [t for t in _distinct(t for layer in shard.layers[first:last]
                                              for t in layer.tensors()) if t.requires_grad]
            wanted = ([begin] if wants_input else []) + trainable
            if grad is not None and end.requires_grad and wanted:
                found = torch.autograd.grad(end, wanted, grad, allow_unused=True)
                grad = found[0] if wants_input else None
                for tensor, tensor_grad in zip(trainable, found[1:] if wants_input else found):
                    if tensor_grad is not None:
                        self._keep_grad(grads, tensor, tensor_grad, shard.device)
                del found
            else:
                grad = None  # nothing flows back through this stretch, or nothing wants it
            end = begin
        return grad if needs_input else None

    def _keep_grad(self, grads: dict[int, torch.Tensor], tensor: torch.Tensor,
                   tensor_grad: torch.Tensor, device: Any) -> None:
        """Adds a weight's gradient, copied to DDR, to what `grads` holds for it."""
        in_ddr = self._to_ddr(tensor_grad, device)
        if id(tensor) in grads:
            grads[id(tensor)] += in_ddr
        else:
            grads[id(tensor)] = in_ddr

    def _warn_over_budget(self, run: str, figure: str) -> None:
        """Warns, once per runner, when a shard's measured HBM passed the budget: an input
        larger than the example, or a backward holding more than the plan counts."""
        over = [(k, getattr(s, figure)) for k, s in enumerate(self.shards)
                if getattr(s, figure) > self.hbm_budget_bytes]
        if not over or self._warned_over_budget:
            return
        self._warned_over_budget = True
        k, peak = max(over, key=lambda item: item[1])
        warnings.warn(
            f"npumem.torch.shard: the {run} of shard {k} allocated "
            f"{_core.format_bytes(peak)} of HBM, past the budget of "
            f"{_core.format_bytes(self.hbm_budget_bytes)} ({len(over)} of "
            f"{len(self.shards)} shards passed it); the plan was made for the example "
            "input's shape"
            + (" and a training step's weight gradients; the backward's saved activations "
               "may hold more" if run == "backward" else
               ": a larger input needs a shard() with it as the example"),
            RuntimeWarning, stacklevel=user_stacklevel(),
        )

    def _run(self, shard: _Shard, loaded: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        self._swap(shard, loaded)
        try:
            with _routed(shard.device):
                output = _run_layers(shard, x)
            if self.model.training:
                self._keep_buffers(shard, loaded)
            return output
        finally:
            self._swap(shard, None)

    def _keep_buffers(self, shard: _Shard, loaded: list[torch.Tensor]) -> None:
        """Copies the buffers a training forward moved (batch-norm statistics) from the
        shard's HBM copies back to their masters; the backward's recomputation does not,
        so they move once per step, as in a plain run."""
        for tensor, copy in zip(shard.tensors, loaded):
            if isinstance(tensor, torch.nn.Parameter) or copy.numel() == 0:
                continue
            master = self._masters[id(tensor)]
            shard.device.copy(master.data_ptr(), copy.data_ptr(),
                              copy.numel() * copy.element_size())

    # ------------------------------------------------------------------ memory

    def _move_weights_to_ddr(self) -> None:
        # Tensor by tensor, each one's old memory freed as its master takes its place: all
        # the masters made first needed twice the model in DDR (a 192 MiB model built in a
        # DDR pool ran out of 300 MiB). Should DDR run out part way, the tensors moved
        # already keep their masters' memory, and every one keeps its values.
        self._masters: dict[int, torch.Tensor] = {}
        for shard in self.shards:
            with _routed(shard.device), pool(WEIGHT_POOL, device=shard.device, tier="ddr"):
                for tensor in shard.tensors:
                    if id(tensor) in self._masters:
                        continue  # shared with an earlier shard
                    master = torch.empty_like(tensor.data)
                    master.copy_(tensor.data)
                    self._masters[id(tensor)] = master
                    tensor.data = master

    def _fetch(self, k: int) -> list[torch.Tensor]:
        """Copies shard k's weights into HBM; the modelled copy time adds to the shard's."""
        shard = self.shards[k]
        copies = []
        seconds = 0.0
        with _routed(shard.device), pool(HBM_POOL, device=shard.device, tier="hbm"):
            for tensor in shard.tensors:
                master = self._masters[id(tensor)]
                copy = torch.empty_like(master)
                if master.numel() > 0:
                    seconds += shard.device.copy(
                        copy.data_ptr(), master.data_ptr(), master.numel() * master.element_size()
                    )
                copies.append(copy)
        shard.modelled_load_seconds = seconds
        return copies

    def _swap(self, shard: _Shard, loaded: Optional[list[torch.Tensor]]) -> None:
        """Points the shard's parameters at their HBM copies, or back at the masters."""
        for i, tensor in enumerate(shard.tensors):
            tensor.data = self._masters[id(tensor)] if loaded is None else loaded[i]

    @staticmethod
    def _to_ddr(tensor: torch.Tensor, device: Any) -> torch.Tensor:
        with _routed(device), pool(WEIGHT_POOL, device=device, tier="ddr"):
            copy = torch.empty_like(tensor, memory_format=torch.contiguous_format)
            source = tensor.contiguous()
        if source.numel() > 0:
            device.copy(copy.data_ptr(), source.data_ptr(), source.numel() * source.element_size())
        return copy

    # ------------------------------------------------------------------ report

    def _model_timeline(self) -> None:
        timeline = _Timeline()
        engine_free = 0.0
        compute_done = 0.0
        for k, shard in enumerate(self.shards):
            if k == 0:
                load_start = 0.0
            elif self.shards[k - 1].planned.prefetches_next:
                buffer_free = (
                    timeline.compute_start[k - 2] + self.shards[k - 2].measured_compute_seconds
                    if k >= 2 else 0.0
                )
                load_start = max(engine_free, buffer_free)
            else:
                load_start = compute_done
            engine_free = load_start + shard.modelled_load_seconds
            compute_start = max(engine_free, compute_done)
            timeline.load_start.append(load_start)
            timeline.compute_start.append(compute_start)
            timeline.stall.append(compute_start - compute_done)
            compute_done = compute_start + shard.measured_compute_seconds
        timeline.total = compute_done
        self.timeline = timeline

    def report(self) -> npumem.plan.Plan:
        """Per shard, the plan beside the last run: planned_peak_bytes and
        measured_hbm_peak_bytes (npumem's HBM allocated peak while the shard ran, its
        prefetch included, above what the device held when the run began: tensors
        held outside the run do not count), measured_backward_hbm_peak_bytes (the HBM the last
        backward through it allocated above what was allocated when it began; 0
        before one), planned and modelled load_ms, planned and
        measured compute_ms, planned and modelled stall_ms; totals, whether the plan
        was made for training (the model was in training mode), and where the weights
        live."""
        shards = []
        for k, shard in enumerate(self.shards):
            planned = shard.planned
            ran = k < len(self.timeline.stall)
            shards.append({
                "device": shard.device.index,
                "first_layer": planned.first_layer,
                "last_layer": planned.last_layer,
                "weight_bytes": planned.weight_bytes,
                "prefetches_next": planned.prefetches_next,
                "planned_peak_bytes": planned.peak_bytes,
                "measured_hbm_peak_bytes": shard.measured_hbm_peak,
                "measured_backward_hbm_peak_bytes": shard.measured_backward_hbm_peak,
                "planned_load_ms": planned.load_ms,
                "modelled_load_ms": shard.modelled_load_seconds * 1000.0,
                "planned_compute_ms": planned.compute_ms,
                "measured_compute_ms": shard.measured_compute_seconds * 1000.0,
                "planned_stall_ms": planned.stall_ms,
                "modelled_stall_ms": self.timeline.stall[k] * 1000.0 if ran else None,
            })
        stats = [device.stats() for device in _distinct_devices(self.shards)]
        return npumem.plan.Plan({
            "hbm_budget_bytes": self.hbm_budget_bytes,
            "shard_count": len(self.shards),
            "planned_total_ms": self.plan.total_ms,
            "modelled_total_ms": self.timeline.total * 1000.0,
            "measured_hbm_peak_bytes": max(s.measured_hbm_peak for s in self.shards),
            "measured_backward_hbm_peak_bytes": max(
                s.measured_backward_hbm_peak for s in self.shards
            ),
            "planned_for_training": self.trains,
            "weight_bytes_in_ddr": sum(
                m.numel() * m.element_size() for m in self._masters.values()
            ),
            "devices": [device.index for device in _distinct_devices(self.shards)],
            "copy_bytes_ddr_to_hbm": sum(s["copy_bytes.ddr_to_hbm"] for s in stats),
            "copy_modelled_ms_ddr_to_hbm": sum(s["copy_modelled_ns.ddr_to_hbm"] for s in stats)
            / 1e6,
            "shards": shards,
        })

    def report_text(self) -> str:
        report = self.report()
        lines = [
            f"npumem sharded run: {report.shard_count} shards, HBM budget "
            f"{_core.format_bytes(report.hbm_budget_bytes)}, weights in DDR "
            f"{_core.format_bytes(report.weight_bytes_in_ddr)}",
            "  shard  device  layers   planned peak  measured peak  load ms (plan/model)  "
            "compute ms (plan/measured)  stall ms (plan/model)",
        ]
        # The device column: a run over several devices showed no shard's in the text.
        for k, s in enumerate(report.shards):
            stall = "-" if s.modelled_stall_ms is None else f"{s.modelled_stall_ms:.3f}"
            lines.append(
                f"  {k:5}  {s.device:6}  {s.first_layer:>2}..{s.last_layer:<3} "
                f"{_core.format_bytes(s.planned_peak_bytes):>13}  "
                f"{_core.format_bytes(s.measured_hbm_peak_bytes):>13}  "
                f"{s.planned_load_ms:9.3f} / {s.modelled_load_ms:<9.3f}  "
                f"{s.planned_compute_ms:11.3f} / {s.measured_compute_ms:<11.3f}  "
                f"{s.planned_stall_ms:8.3f} / {stall}"
            )
        backward = report.measured_backward_hbm_peak_bytes
        over = max(report.measured_hbm_peak_bytes, backward) > report.hbm_budget_bytes
        lines.append(
            f"  total ms: planned {report.planned_total_ms:.3f}, modelled "
            f"{report.modelled_total_ms:.3f}; HBM peak "
            f"{_core.format_bytes(report.measured_hbm_peak_bytes)}"
            + (f", backward {_core.format_bytes(backward)}" if backward else "")
            + (" (planned for training: with the weights' gradients)"
               if report.planned_for_training else "")
            + (", OVER the budget" if over else "")
        )
        return "\n".join(lines) + "\n"


class _ShardedForward(torch.autograd.Function):
    """The sharded run as one autograd step: backward re-runs the shards in reverse."""

    @staticmethod
    def forward(ctx, runner: ShardedModel, x: torch.Tensor, *params: torch.Tensor):
        output, kept = runner._forward(x, keep_inputs=True)
        ctx.runner = runner
        ctx.kept = kept
        ctx.params = params
        ctx.wants_input_grad = x.requires_grad
        return output

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        if ctx.kept is None:
            raise _core.Error(
                "npumem.torch.shard: a sharded run's backward goes once (the shards' inputs "
                "it keeps are freed by it, whether or not retain_graph=True kept the rest of "
                "the graph); run the sharded model forward again for another backward"
            )
        grad_input, grads = ctx.runner._backward(ctx.kept, grad_output, ctx.wants_input_grad)
        ctx.kept = None
        param_grads = [grads.pop(id(p), None) for p in ctx.params]
        return (None, grad_input, *param_grads)


def _run_layers(shard: _Shard, x: torch.Tensor) -> torch.Tensor:
    for layer in shard.layers:
        x = layer.run(x)
    return x


def _distinct(tensors) -> list[torch.Tensor]:
    seen: dict[int, torch.Tensor] = {}
    for tensor in tensors:
        seen.setdefault(id(tensor), tensor)
    return list(seen.values())


def _check_budget_fits(budget: int, devices: list[Any]) -> None:
    for device in devices:
        capacity = device.tier_info("hbm")["capacity_bytes"]
        if budget > capacity:
            raise _core.ConfigError(
                f"npumem.torch.shard: hbm_budget {_core.format_bytes(budget)} is more than "
                f"device {device.index}'s HBM ({_core.format_bytes(capacity)}); the plan "
                "would put shards there that cannot fit"
            )


def _served_devices(devices: Sequence[int]) -> list[Any]:
    from npumem.torch import installed_device

    indices = list(devices)
    if not indices:
        raise ValueError("devices is empty; name npumem device indices, e.g. devices=[0]")
    if len(set(indices)) != len(indices):
        raise ValueError(f"devices {indices} names a device twice")
    return [installed_device(index) for index in indices]


def _distinct_devices(shards: list[_Shard]) -> list[Any]:
    found: dict[int, Any] = {}
    for shard in shards:
        found.setdefault(shard.device.index, shard.device)
    return list(found.values())


def _routed(device: Any):
    from npumem.torch import device as torch_device

    return torch_device(device.index)


def _copy_to(x: torch.Tensor, device: Any) -> torch.Tensor:
    """x in a tensor of `device` (default pool: HBM first)."""
    with _routed(device):
        moved = torch.empty_like(x)
    moved.copy_(x)
    return moved


def shard(
    model: torch.nn.Module,
    hbm_budget: Size,
    example_input: torch.Tensor,
    devices: Sequence[int] = (0,),
) -> ShardedModel:
    """Measures the model on `example_input`, plans its shards for `hbm_budget` (per
    device) and returns the runner; the model's weights move to DDR. With several
    `devices` (served by npumem.torch.install(devices=N)), consecutive shards are
    spread over them in order, a pipeline whose activations are copied from one device
    to the next. Needs npumem.torch.install() first. Errors (nothing moved, nothing
    left allocated): OutOfMemoryError when one layer does not fit the budget,
    ConfigError for a device index that PyTorch's tensors are not served by,
    npumem.Error for a model that is not a traceable chain of layers."""
    return ShardedModel(model, hbm_budget, example_input, devices)
