"""npumem.plan: the planners from Python give the fields (and figures) of `npumem plan
... --json`, as objects."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import unittest

import npumem
import npumem.plan

MiB = 1 << 20

MODEL = {
    "model": "chain",
    "input_bytes": 1 * MiB,
    "layers": [
        {"name": f"layer{i}", "weight_bytes": (4 + i % 3) * MiB, "activation_bytes": 2 * MiB,
         "compute_ms": 0.5}
        for i in range(8)
    ],
}


def cli_json(*args: str) -> dict:
    done = subprocess.run(
        [os.environ["NPUMEM_CLI"], *args], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def without_timing(fields: dict) -> dict:
    fields = dict(fields)
    fields.pop("plan_ms", None)
    return fields


@unittest.skipUnless(os.environ.get("NPUMEM_CLI"), "needs the npumem command (NPUMEM_CLI)")
class PlanTest(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.model_path = os.path.join(self.directory.name, "model.json")
        with open(self.model_path, "w", encoding="utf-8") as file:
            json.dump(MODEL, file)

    def tearDown(self):
        self.directory.cleanup()

    def test_shard_plan_has_the_cli_fields_and_figures(self):
        plan = npumem.plan.shard(self.model_path, hbm="16MiB", bandwidth="10GB/s")
        expected = cli_json("plan", "shard", self.model_path, "--hbm", "16MiB",
                            "--bandwidth", "10GB/s", "--json")
        self.assertEqual(plan.to_dict(), expected)
        self.assertEqual(plan.shard_count, len(plan.shards))
        self.assertEqual(plan.shards[0].first_layer, 0)
        self.assertEqual(plan.shards[-1].last_layer, 7)
        self.assertTrue(all(shard.peak_bytes <= 16 * MiB for shard in plan.shards))
        from_dict = npumem.plan.shard(MODEL, hbm=16 * MiB, bandwidth=10e9)
        self.assertEqual(from_dict.shards[0].to_dict(), plan.shards[0].to_dict())

    def test_recompute_plan_has_the_cli_fields_and_figures(self):
        plan = npumem.plan.recompute(self.model_path, budget="9MiB")
        expected = cli_json("plan", "recompute", self.model_path, "--budget", "9MiB", "--json")
        self.assertEqual(plan.to_dict(), expected)
        self.assertTrue(plan.fits)
        self.assertLess(len(plan.kept_layers), 8)

    def test_memory_plan_from_triples_matches_the_records_file(self):
        triples = [(4096, 0, 2), (8192, 1, 3), (4096, 3, 4), (100, 0, 4)]
        records = os.path.join(self.directory.name, "records.txt")
        with open(records, "w", encoding="utf-8") as file:
            file.writelines(f"{b} {first} {last}\n" for b, first, last in triples)
        plan = npumem.plan.memory(triples, iterations=100, offsets=True)
        expected = cli_json("plan", "memory", records, "--iterations", "100", "--offsets", "--json")
        self.assertEqual(without_timing(plan.to_dict()) | {"records": records},
                         without_timing(expected))
        self.assertEqual(len(plan.offsets), 4)
        self.assertGreaterEqual(plan.arena_bytes, plan.lower_bound_bytes)

    def test_bad_inputs_name_the_problem(self):
        with self.assertRaisesRegex(npumem.OutOfMemoryError, "layer 0 'layer0' needs"):
            npumem.plan.shard(MODEL, hbm="1MiB")
        with self.assertRaisesRegex(npumem.Error, r"layers\[0\].weight_bytes is missing"):
            npumem.plan.shard({"layers": [{"name": "x", "activation_bytes": 1}]}, hbm="1MiB")
        with self.assertRaisesRegex(npumem.OutOfMemoryError, "leanest plan needs 8.00 MiB"):
            npumem.plan.recompute(MODEL, budget=1000)
        with self.assertRaisesRegex(npumem.ParseError, "<records>"):
            npumem.plan.memory("12 3\n")
        # As `npumem plan memory` says of an empty records file.
        for empty in ("", "# only a comment\n", []):
            with self.assertRaisesRegex(npumem.Error, "<records>: no tensor"):
                npumem.plan.memory(empty)
        self.assertEqual(npumem.plan.memory([(10, 0, 1)], time_limit=float("inf")).tensors, 1)
        for bad in (float("nan"), -1.0):
            with self.assertRaisesRegex(ValueError, "time_limit is a number of seconds"):
                npumem.plan.memory([(10, 0, 1)], time_limit=bad)
        with self.assertRaisesRegex(IsADirectoryError, "is a directory"):
            npumem.plan.memory(os.path.dirname(os.path.abspath(__file__)))

    def test_a_misspelt_file_name_is_named_as_missing(self):
        # It was read as the records' (or model's) text: "expected 3 fields, found 1".
        with self.assertRaisesRegex(FileNotFoundError, "no file 'rec_okk.records'"):
            npumem.plan.memory("rec_okk.records")
        with self.assertRaisesRegex(FileNotFoundError, "no file 'models/modell.json'"):
            npumem.plan.shard("models/modell.json", hbm="1MiB")
        self.assertEqual(npumem.plan.memory("# nothing but a comment\n100 0 1").tensors, 1)


if __name__ == "__main__":
    unittest.main()
