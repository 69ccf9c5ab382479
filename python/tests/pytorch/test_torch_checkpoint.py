"""npumem.torch.checkpoint: resnet18 training with a budget halfway between the leanest
plan's and keeping every activation gives the plain gradients, within the budget (plus a
stated margin)."""

from __future__ import annotations

import copy
import gc
import subprocess
import sys
import textwrap
import unittest

import torch
import torchvision

import npumem
import npumem.torch

# The planner counts what each layer's forward keeps for backward, and checkpoint() adds
# what the plain step held beyond that (gradients being back-propagated, backward
# workspaces) as if it were needed at the step's peak, whatever the plan. Where it is
# needed, a recomputed segment's activations may sit beside it; this bounds that at 15 %
# of the budget.
MARGIN = 0.15


def setUpModule():
    npumem.torch.install("sim:hbm=1GiB,ddr=2GiB,backing=host")


def resnet18() -> torch.nn.Module:
    torch.manual_seed(0)
    return torchvision.models.resnet18(num_classes=10)


def step(model: torch.nn.Module, images, labels) -> dict[str, torch.Tensor]:
    loss = torch.nn.functional.cross_entropy(model(images), labels)
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}


class CheckpointTest(unittest.TestCase):
    def setUp(self):
        gc.collect()
        torch.manual_seed(1)
        self.images = torch.randn(16, 3, 64, 64)
        self.labels = torch.randint(0, 10, (16,))

    def test_a_budget_below_keeping_all_gives_the_plain_gradients(self):
        model = resnet18()
        plain = copy.deepcopy(model)
        expected = step(plain, self.images, self.labels)

        roomy = npumem.torch.checkpoint(model, budget="1GiB", example_input=self.images)
        probe = roomy.report()
        self.assertEqual(probe.recomputed_segments, [])
        self.assertIn("extra none: no segment is recomputed", roomy.report_text())
        self.assertEqual(probe.planned_peak_bytes, probe.plain_peak_bytes)
        with self.assertRaises(npumem.OutOfMemoryError) as refusal:
            npumem.torch.checkpoint(model, budget="64KiB", example_input=self.images)
        leanest = refusal.exception.requested_bytes
        self.assertLess(leanest, probe.plain_peak_bytes)
        budget = (leanest + probe.plain_peak_bytes) // 2

        wrapped = npumem.torch.checkpoint(model, budget=budget, example_input=self.images)
        report = wrapped.report()
        self.assertTrue(report.recomputed_segments)
        self.assertLessEqual(report.planned_peak_bytes, budget)
        self.assertLessEqual(report.measured_peak_bytes, budget * (1 + MARGIN))
        self.assertLess(report.measured_peak_bytes, report.plain_peak_bytes)
        self.assertGreater(report.planned_recompute_ms, 0)
        self.assertIn("extra", wrapped.report_text())

        self.assertTrue(all(p.grad is None for p in model.parameters()), "measuring left grads")
        got = step(wrapped, self.images, self.labels)
        for name, grad in expected.items():
            self.assertTrue(torch.equal(got[f"model.{name}"], grad), name)
        # Batch-norm statistics move once per step, recomputed segments included.
        for (name, buffer), plain_buffer in zip(model.named_buffers(), plain.buffers()):
            self.assertTrue(torch.equal(buffer, plain_buffer), name)

    def test_its_state_dict_is_the_models_own(self):
        torch.manual_seed(2)
        model = torch.nn.Sequential(
            torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 2)
        )
        wrapped = npumem.torch.checkpoint(model, budget="1MiB", example_input=torch.randn(4, 8))
        saved = wrapped.state_dict()
        self.assertEqual(list(saved), list(model.state_dict()))
        plain = copy.deepcopy(model)
        with torch.no_grad():
            for parameter in plain.parameters():
                parameter.zero_()
        plain.load_state_dict(saved)  # strict: every key found
        for (name, got), want in zip(plain.state_dict().items(), model.state_dict().values()):
            self.assertTrue(torch.equal(got, want), name)
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(1)
        wrapped.load_state_dict(plain.state_dict())
        self.assertTrue(torch.equal(model[0].weight, plain[0].weight))
        outer = torch.nn.Sequential(wrapped)
        self.assertEqual(list(outer.state_dict())[0], "0.0.weight")
        outer.load_state_dict(outer.state_dict())

    def test_the_wrapper_follows_its_models_mode(self):
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
        wrapped = npumem.torch.checkpoint(model, budget="1MiB", example_input=torch.randn(2, 8))
        self.assertFalse(wrapped.training)
        self.assertFalse(model.training)
        model.train()  # on the model, after checkpoint(): the wrapper reads it
        self.assertTrue(wrapped.training)
        wrapped.eval()
        self.assertFalse(model.training)
        self.assertFalse(model[0].training)

    def test_a_step_past_its_budget_warns_and_the_report_says_so(self):
        # At the leanest budget of this MLP, a recomputed segment's activations sit beside
        # what the step holds at its peak: measured above the plan (a cold trial: 1.6x).
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(64, 128), torch.nn.BatchNorm1d(128), torch.nn.ReLU(),
            torch.nn.Linear(128, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
            torch.nn.ReLU(), torch.nn.Linear(512, 8))
        x = torch.randn(256, 64)
        with self.assertRaises(npumem.OutOfMemoryError) as refusal:
            npumem.torch.checkpoint(model, budget="64KiB", example_input=x)
        with self.assertWarnsRegex(RuntimeWarning, "past the budget"):
            wrapped = npumem.torch.checkpoint(
                model, budget=refusal.exception.requested_bytes, example_input=x)
        report = wrapped.report()
        self.assertGreater(report.measured_peak_bytes, report.budget_bytes)
        self.assertIn("OVER the budget", wrapped.report_text())

    def test_a_model_with_nothing_to_train_is_refused(self):
        frozen = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
        for param in frozen.parameters():
            param.requires_grad_(False)
        with self.assertRaisesRegex(npumem.Error, "no parameter that requires grad"):
            npumem.torch.checkpoint(frozen, budget="1MiB", example_input=torch.randn(2, 8))

    def test_what_is_not_a_module_is_refused_by_type(self):
        # A raw AttributeError: 'int' object has no attribute 'parameters'.
        with self.assertRaisesRegex(TypeError, "plans a torch.nn.Module, not 42"):
            npumem.torch.checkpoint(42, budget="1MiB", example_input=torch.randn(2, 8))

    def test_too_small_a_budget_names_the_smallest_that_fits(self):
        model = resnet18()
        before = npumem.memory_allocated()
        with self.assertRaisesRegex(
            npumem.OutOfMemoryError, r"no recompute plan fits .* the leanest plan needs \d"
        ):
            npumem.torch.checkpoint(model, budget="64KiB", example_input=self.images)
        gc.collect()
        self.assertEqual(npumem.memory_allocated(), before)
        self.assertTrue(all(p.grad is None for p in model.parameters()))

    def test_a_plain_step_past_a_device_without_ddr_says_what_to_give(self):
        # Run apart: its device has no DDR. The error was the allocator's alone, advising
        # to free tensors or empty the cache; the way out is DDR to spill to.
        script = textwrap.dedent("""
            import torch, npumem, npumem.torch
            npumem.torch.install("sim:hbm=64MiB,ddr=0,backing=host")
            layers = []
            for _ in range(4):
                layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
            model = torch.nn.Sequential(*layers)
            try:
                npumem.torch.checkpoint(model, budget="16MiB",
                                        example_input=torch.randn(4096, 1024))
            except npumem.OutOfMemoryError as error:
                print(str(error).splitlines()[0])
        """)
        child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                               check=False, timeout=300)
        self.assertEqual(child.returncode, 0, child.stderr)
        self.assertIn("the plain training step it measures before planning ran out of memory; "
                      "that step must fit once: give the device DDR to spill to", child.stdout)


if __name__ == "__main__":
    unittest.main()
