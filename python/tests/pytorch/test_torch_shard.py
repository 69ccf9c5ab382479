"""npumem.torch.shard: a model whose weights are 3x the HBM budget runs shard by shard
from DDR master weights, with the outputs and gradients of the plain run."""

from __future__ import annotations

import gc
import unittest
import warnings

import torch

import npumem
import npumem.torch

MiB = 1 << 20
BUDGET = 16 * MiB
WIDTH = 1024  # 12 layers of 4 MiB weights: 48 MiB, 3x the budget


def mlp(seed: int) -> torch.nn.Sequential:
    torch.manual_seed(seed)
    layers = []
    for _ in range(12):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


def setUpModule():
    npumem.torch.install("sim:hbm=256MiB,ddr=1GiB,backing=host")


def reference_copy(model: torch.nn.Module) -> torch.nn.Module:
    """The plain model beside the sharded one, in DDR so HBM figures stay the runner's."""
    with npumem.pool("reference", tier="ddr"):
        twin = mlp(0)
        twin.load_state_dict(model.state_dict())
    return twin


class ShardInferenceTest(unittest.TestCase):
    def setUp(self):
        gc.collect()  # other tests' models (errors' frames hold them in cycles)

    def test_outputs_equal_the_plain_run_within_the_hbm_budget(self):
        model = mlp(0)
        x = torch.randn(8, WIDTH)
        with torch.no_grad():
            expected = model(x)
        runner = npumem.torch.shard(model, hbm_budget=BUDGET, example_input=x)
        self.assertGreater(runner.report().shard_count, 2)
        hbm_before = npumem.memory_stats()["allocated_bytes.hbm.current"]
        copied_before = npumem.memory_stats()["copy_bytes.ddr_to_hbm"]  # other tests' runs
        copy_ms_before = npumem.memory_stats()["copy_modelled_ns.ddr_to_hbm"] / 1e6
        with torch.no_grad():
            output = runner(x)
        self.assertTrue(torch.equal(output, expected))
        # The shards' HBM copies and activations are gone: only the output stays.
        self.assertEqual(npumem.memory_stats()["allocated_bytes.hbm.current"],
                         hbm_before + output.numel() * output.element_size())

        report = runner.report()
        self.assertLessEqual(report.measured_hbm_peak_bytes, BUDGET)
        self.assertEqual(report.weight_bytes_in_ddr, sum(
            t.numel() * t.element_size() for t in model.parameters()))
        device = npumem.torch.installed_device()
        for name, param in model.named_parameters():
            self.assertEqual(device.tier_of(param.data_ptr()), "ddr", name)
        # Every shard's weights went to HBM once, through npumem's timed copies.
        self.assertEqual(report.copy_bytes_ddr_to_hbm - copied_before, report.weight_bytes_in_ddr)
        self.assertAlmostEqual(report.copy_modelled_ms_ddr_to_hbm - copy_ms_before,
                               report.weight_bytes_in_ddr / 50e9 * 1000, places=3)
        for shard in report.shards:
            self.assertLessEqual(shard.measured_hbm_peak_bytes, BUDGET)
            self.assertGreater(shard.measured_compute_ms, 0)
        self.assertIn("shard", runner.report_text())

    def test_training_step_gives_the_plain_gradients_on_ddr(self):
        model = mlp(0)
        twin = reference_copy(model)
        x = torch.randn(8, WIDTH)
        twin(x).square().sum().backward()
        runner = npumem.torch.shard(model, hbm_budget=BUDGET, example_input=x)
        self.assertTrue(runner.report().planned_for_training)
        runner(x).square().sum().backward()
        device = npumem.torch.installed_device()
        for (name, param), plain in zip(model.named_parameters(), twin.parameters()):
            self.assertTrue(torch.equal(param.grad, plain.grad), name)
            self.assertEqual(device.tier_of(param.grad.data_ptr()), "ddr", name)
        # Planned with each shard's weight gradients beside its weights, and the shards'
        # inputs kept in DDR, the backward stays within the budget too.
        report = runner.report()
        self.assertGreater(report.measured_backward_hbm_peak_bytes, 0)
        self.assertLessEqual(report.measured_backward_hbm_peak_bytes, BUDGET)
        # A second step accumulates, as .backward() does.
        twin(x).sum().backward()
        runner(x).sum().backward()
        for (name, param), plain in zip(model.named_parameters(), twin.parameters()):
            self.assertTrue(torch.equal(param.grad, plain.grad), name)

    def test_a_training_shard_of_several_layers_keeps_its_backward_within_the_budget(self):
        # 25 MiB puts three 4 MiB Linear layers in a shard: their gradients, made at once
        # beside their weights, took the backward to 32.2 MiB.
        model = mlp(0)
        twin = reference_copy(model)
        x = torch.randn(8, WIDTH)
        twin(x).square().sum().backward()
        budget = 25 * MiB
        runner = npumem.torch.shard(model, hbm_budget=budget, example_input=x)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            runner(x).square().sum().backward()
        for (name, param), plain in zip(model.named_parameters(), twin.parameters()):
            self.assertTrue(torch.equal(param.grad, plain.grad), name)
        report = runner.report()
        self.assertGreater(max(len(s.layers) for s in runner.shards), 4)
        self.assertLessEqual(report.measured_backward_hbm_peak_bytes, budget)

    def test_a_model_that_begins_without_weights_trains(self):
        # The first stretch of the first shard (a Flatten) has nothing to differentiate
        # when the input needs no gradient.
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Flatten(), *mlp(0))
        with npumem.pool("reference", tier="ddr"):
            twin = torch.nn.Sequential(torch.nn.Flatten(), *mlp(0))
        x = torch.randn(8, 2, WIDTH // 2)
        twin(x).square().sum().backward()
        runner = npumem.torch.shard(model, hbm_budget=BUDGET, example_input=x)
        runner(x).square().sum().backward()
        for (name, param), plain in zip(model.named_parameters(), twin.parameters()):
            self.assertTrue(torch.equal(param.grad, plain.grad), name)

    def test_moving_the_weights_to_ddr_takes_one_tensor_beside_the_model(self):
        # Built in DDR, as LARGE_MODELS.md does it: every master made before any old
        # weight went took twice the model's DDR (a 192 MiB model ran out of 300 MiB).
        with npumem.pool("build", tier="ddr"):
            model = mlp(0)
        largest = max(p.numel() * p.element_size() for p in model.parameters())
        x = torch.randn(8, WIDTH)
        before = npumem.memory_stats()["allocated_bytes.ddr.current"]
        npumem.reset_peak_memory_stats()
        npumem.torch.shard(model, hbm_budget=BUDGET, example_input=x)
        peak = npumem.memory_stats()["allocated_bytes.ddr.peak"]
        self.assertLessEqual(peak - before, largest)

    def test_training_moves_batch_norm_statistics_once_per_step(self):
        def normed(seed: int) -> torch.nn.Sequential:
            torch.manual_seed(seed)
            layers = []
            for _ in range(6):
                layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.BatchNorm1d(WIDTH),
                           torch.nn.ReLU()]
            return torch.nn.Sequential(*layers)

        model = normed(0)
        with npumem.pool("reference", tier="ddr"):
            twin = normed(0)
        x = torch.randn(8, WIDTH)
        runner = npumem.torch.shard(model, hbm_budget=BUDGET, example_input=x)
        self.assertGreater(runner.report().shard_count, 1)
        for _ in range(2):
            twin(x).sum().backward()
            runner(x).sum().backward()
        for (name, buffer), plain in zip(model.named_buffers(), twin.buffers()):
            self.assertTrue(torch.equal(buffer, plain), name)
        model.eval()
        twin.eval()
        with torch.no_grad():
            self.assertTrue(torch.equal(runner(x), twin(x)))


class ShardBudgetTest(unittest.TestCase):
    def setUp(self):
        gc.collect()

    def test_memory_held_outside_the_run_is_not_counted_in_its_peaks(self):
        model = mlp(3).eval()
        x = torch.randn(8, WIDTH)
        held = torch.empty(24 * MiB // 4)  # in HBM beside the run: more than the budget
        runner = npumem.torch.shard(model, hbm_budget=BUDGET, example_input=x)
        with torch.no_grad():
            runner(x)
        self.assertLessEqual(runner.report().measured_hbm_peak_bytes, BUDGET)
        self.assertGreater(runner.report().measured_hbm_peak_bytes, 0)
        del held

    def test_an_input_larger_than_the_example_warns_that_it_passed_the_budget(self):
        model = mlp(4).eval()
        runner = npumem.torch.shard(model, hbm_budget=BUDGET, example_input=torch.randn(8, WIDTH))
        with torch.no_grad(), self.assertWarnsRegex(
                RuntimeWarning, "allocated .* of HBM, past the budget of 16.0 MiB"):
            runner(torch.randn(2048, WIDTH))
        self.assertIn("OVER the budget", runner.report_text())
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("error")
            runner(torch.randn(2048, WIDTH))  # once per runner

    def test_a_second_backward_through_a_retained_graph_is_refused_clearly(self):
        model = mlp(5)
        x = torch.randn(8, WIDTH)
        runner = npumem.torch.shard(model, hbm_budget=BUDGET, example_input=x)
        loss = runner(x).sum()
        loss.backward(retain_graph=True)
        with self.assertRaisesRegex(npumem.Error, "backward goes once"):
            loss.backward()


class ShardErrorTest(unittest.TestCase):
    def tearDown(self):
        gc.collect()  # the errors' frames hold the models in reference cycles

    def assert_nothing_changed(self, model, before: int):
        """The model's weights stay where they were and nothing else is allocated."""
        gc.collect()
        self.assertEqual(npumem.memory_allocated(), before)
        device = npumem.torch.installed_device()
        for param in model.parameters():
            self.assertEqual(device.tier_of(param.data_ptr()), "hbm")

    def test_budget_below_the_largest_layer_names_the_layer(self):
        model = mlp(1).eval()
        x = torch.randn(8, WIDTH)
        before = npumem.memory_allocated()
        with self.assertRaisesRegex(npumem.OutOfMemoryError, "layer 0 '0' needs 4.07 MiB .weights 4.00 MiB"):
            npumem.torch.shard(model, hbm_budget="2MiB", example_input=x)
        self.assert_nothing_changed(model, before)
        # In training mode a layer's weight gradients count with its activations.
        model.train()
        with self.assertRaisesRegex(npumem.OutOfMemoryError,
                                    "needs 8.07 MiB .*the model is in training mode") as refused:
            npumem.torch.shard(model, hbm_budget="6MiB", example_input=x)
        self.assert_nothing_changed(model, before)
        # The budget to give, as checkpoint() names it: the largest layer's, which fits.
        smallest = refused.exception.requested_bytes
        self.assertIn("the smallest budget that fits is", str(refused.exception))
        self.assertGreaterEqual(smallest, 8 * 1024 * 1024)
        runner = npumem.torch.shard(model, hbm_budget=smallest, example_input=x)
        self.assertTrue(runner.report().shards)

    def test_a_runner_of_a_model_sharded_again_refuses_to_run(self):
        model = mlp(2).eval()
        x = torch.randn(8, WIDTH)
        first = npumem.torch.shard(model, hbm_budget=BUDGET, example_input=x)
        second = npumem.torch.shard(model, hbm_budget=2 * BUDGET, example_input=x)
        with torch.no_grad():
            second(x)
            with self.assertRaisesRegex(npumem.Error, "sharded again"):
                first(x)

    def test_a_budget_past_the_devices_hbm_is_refused(self):
        model = mlp(1)
        x = torch.randn(8, WIDTH)
        gc.collect()  # earlier tests' graphs
        before = npumem.memory_allocated()
        with self.assertRaisesRegex(npumem.ConfigError,
                                    "hbm_budget 1.00 GiB is more than device 0's HBM .256 MiB"):
            npumem.torch.shard(model, "1GiB", x)
        self.assert_nothing_changed(model, before)

    def test_device_index_out_of_range(self):
        model = mlp(1)
        x = torch.randn(8, WIDTH)
        before = npumem.memory_allocated()
        with self.assertRaisesRegex(npumem.ConfigError, "device index 3 is out of range"):
            npumem.torch.shard(model, BUDGET, x, devices=[3])
        self.assert_nothing_changed(model, before)

    def test_model_that_cannot_be_traced(self):
        class Branchy(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(WIDTH, WIDTH)

            def forward(self, x):
                if x.sum() > 0:  # data-dependent control flow: torch.fx cannot trace it
                    return self.linear(x)
                return x

        model = Branchy()
        x = torch.randn(8, WIDTH)
        before = npumem.memory_allocated()
        with self.assertRaisesRegex(npumem.Error, "Branchy cannot be traced with torch.fx"):
            npumem.torch.shard(model, BUDGET, x)
        self.assert_nothing_changed(model, before)

    def test_model_that_is_not_a_chain(self):
        class Residual(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(WIDTH, WIDTH)

            def forward(self, x):
                return x + self.linear(x)

        with self.assertRaisesRegex(npumem.Error, "not a chain of layers: step 'add'"):
            npumem.torch.shard(Residual(), BUDGET, torch.randn(8, WIDTH))


if __name__ == "__main__":
    unittest.main()
