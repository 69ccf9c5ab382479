"""npumem.advise_buckets: `npumem advise buckets --json` from Python, and its errors."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import unittest

import npumem

MiB = 1 << 20


def batches_trace() -> str:
    """Iterations of one 1, 4 or 5 MiB request, twice each."""
    lines = []
    for n, size in enumerate([1, 4, 5, 1, 4, 5]):
        lines += ["i", f"a {n} {size * MiB}", f"f {n}"]
    return "\n".join(lines) + "\n"


class AdviseBuckets(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name: str, text: str) -> str:
        path = os.path.join(self.dir.name, name)
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        return path

    def test_choices_per_k_and_the_recommendation(self) -> None:
        advice = npumem.advise_buckets(self.write("b.trace", batches_trace()), max_buckets=3)
        self.assertEqual(advice["iterations"], 6)
        self.assertEqual(advice["shapes"], 3)
        self.assertEqual(len(advice["choices"]), 3)
        one, two, three = advice["choices"]
        self.assertEqual(one["arena_bytes"], 5 * MiB)
        self.assertEqual([b["iterations"] for b in two["bucket_list"]], [[0, 3], [1, 2, 4, 5]])
        self.assertEqual(three["waste_bytes"], 0)
        self.assertEqual(advice["recommended_buckets"], 3)
        self.assertGreaterEqual(advice["caching_peak_reserved_bytes"], 5 * MiB)

    def test_same_figures_as_the_command(self) -> None:
        path = self.write("b.trace", batches_trace())
        done = subprocess.run(
            [os.environ["NPUMEM_CLI"], "advise", "buckets", path, "--max-buckets", "2", "--json"],
            capture_output=True, text=True, check=True)
        self.assertEqual(npumem.advise_buckets(path, max_buckets=2), json.loads(done.stdout))

    def test_a_wide_tolerance_takes_fewer_buckets(self) -> None:
        advice = npumem.advise_buckets(self.write("b.trace", batches_trace()), tolerance=50)
        self.assertEqual(advice["recommended_buckets"], 1)
        self.assertEqual(advice["tolerance_percent"], 50)

    def test_bad_input_names_the_problem(self) -> None:
        # What the file lacks is an input's problem, whichever it is.
        with self.assertRaisesRegex(npumem.ParseError, "flat.trace:2: no `i` lines"):
            npumem.advise_buckets(self.write("flat.trace", "a 0 10\nf 0\n"))
        with self.assertRaisesRegex(npumem.ParseError, "empty.trace:1: no allocations"):
            npumem.advise_buckets(self.write("empty.trace", ""))
        with self.assertRaisesRegex(npumem.ParseError, "broken.trace:2"):
            npumem.advise_buckets(self.write("broken.trace", "i\na 0 ten\n"))
        with self.assertRaisesRegex(npumem.ConfigError, "max_buckets"):
            npumem.advise_buckets(self.write("b.trace", batches_trace()), max_buckets=0)
        with self.assertRaisesRegex(FileNotFoundError, "no trace file: '.*missing.trace'"):
            npumem.advise_buckets(os.path.join(self.dir.name, "missing.trace"))


if __name__ == "__main__":
    unittest.main()
