"""python3 -m npumem.torch run and capture, on real scripts in fresh processes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import unittest

from npumem.torch.trace import peak_live_bytes

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("NPUMEM_SOURCE_DIR", os.path.join(HERE, "..", "..", ".."))
EXAMPLE = os.path.join(SOURCE_DIR, "examples", "python", "train_resnet18.py")
GRANULE = 512  # the default config's


def rounded(size: int) -> int:
    return (size + GRANULE - 1) // GRANULE * GRANULE


class CliTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.addCleanup(self.folder.cleanup)

    def script(self, name: str, code: str) -> str:
        path = os.path.join(self.folder.name, name)
        with open(path, "w", encoding="utf-8") as file:
            file.write(textwrap.dedent(code))
        return path

    def npumem_torch(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "npumem.torch", *args],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )

    def replay_json(self, trace: str, *options: str) -> dict:
        """`npumem replay --json` of the trace, completed (skipped without the command)."""
        cli = os.environ.get("NPUMEM_CLI")
        if not cli:
            self.skipTest("NPUMEM_CLI (the npumem command) is not set")
        replay = subprocess.run(
            [cli, "replay", "--json", *options, trace],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        self.assertEqual(replay.returncode, 0, replay.stderr)
        report = json.loads(replay.stdout)
        self.assertTrue(report["completed"])
        return report

    @staticmethod
    def figure(output: str, name: str) -> int:
        match = re.search(rf"^  {name} +\S+ \S+  \(([\d,]+) bytes\)$", output, re.MULTILINE)
        if match is None:
            raise AssertionError(f"no '{name}' in:\n{output}")
        return int(match.group(1).replace(",", ""))

    def test_run_reports_exact_peaks_snapshots_and_no_leak(self):
        script = self.script(
            "known_sizes.py",
            """
            import sys
            import torch
            first = torch.empty(3_000_000, dtype=torch.uint8)
            second = torch.empty(5_000_000, dtype=torch.uint8)
            del first
            third = torch.empty(1_000_000, dtype=torch.uint8)
            print("script args:", sys.argv[1:])
            """,
        )
        spec = "sim:hbm=1GiB,ddr=1GiB,backing=host"
        result = self.npumem_torch("run", "--device", spec, script, "--flag", "x")
        self.assertEqual(result.returncode, 0, result.stderr)
        out = result.stdout
        self.assertIn("script args: ['--flag', 'x']", out)
        self.assertEqual(self.figure(out, "peak requested"), 8_000_000)
        self.assertEqual(
            self.figure(out, "peak allocated"), rounded(3_000_000) + rounded(5_000_000)
        )
        self.assertEqual(self.figure(out, "ddr peak allocated"), 0)
        self.assertRegex(out, r"(?m)^start +0 B +0 B +0 B ")
        self.assertRegex(out, r"(?m)^end +0 B ")
        self.assertIn("verdict: not judged", out)  # no optimizer step, no iteration()
        # Read as the script ends, its globals alive: what they hold, by the line that made it.
        self.assertIn(f"made before any iteration mark\n      made at {script}:5 in <module>", out)
        self.assertIn(f"made at {script}:7 in <module>", out)
        self.assertNotIn(f"{script}:4", out)  # `first`, deleted

    def test_run_reports_the_jobs_peak_though_the_script_reset_it(self):
        script = self.script(
            "resets.py",
            """
            import npumem
            import torch
            big = torch.empty(32_000_000, dtype=torch.uint8)
            del big
            npumem.reset_peak_memory_stats()
            small = torch.empty(4_000_000, dtype=torch.uint8)
            assert npumem.max_memory_allocated() < 32_000_000  # the script's own view
            """,
        )
        result = self.npumem_torch("run", "--device", "sim:hbm=1GiB,ddr=1GiB,backing=host", script)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("peaks (since the start, whatever the script reset)", result.stdout)
        self.assertEqual(self.figure(result.stdout, "peak requested"), 32_000_000)
        self.assertEqual(self.figure(result.stdout, "peak allocated"), rounded(32_000_000))

    def test_run_names_the_line_that_made_a_leak_outside_any_module(self):
        script = self.script(
            "losses.py",
            """
            import npumem.torch
            import torch

            def main():  # the leaks die with main: their lines are taken as they are freed
                losses, cache = [], {}
                for step in range(14):
                    losses.append(torch.ones(100).sum())
                    if step % 3 == 0:
                        cache[step] = torch.ones(65536)
                    npumem.torch.iteration()

            main()
            """,
        )
        result = self.npumem_torch("run", script)
        self.assertEqual(result.returncode, 4, result.stdout + result.stderr)
        # Two groups, not one untagged: each named by its line, each recurring (the cache
        # of every third step too).
        self.assertIn(f"made at {script}:8 in main", result.stdout)  # the losses
        self.assertIn(f"made at {script}:10 in main", result.stdout)  # the cache
        self.assertEqual(result.stdout.count("<- left behind in"), 2, result.stdout)

    def test_run_reports_after_sigterm(self):
        # A job scheduler stops with SIGTERM: the report follows, status 143 as a shell's.
        script = self.script(
            "waits.py",
            """
            import time
            import torch
            kept = torch.empty(1_000_000, dtype=torch.uint8)
            print("ready", flush=True)
            time.sleep(60)
            """,
        )
        child = subprocess.Popen(
            [sys.executable, "-m", "npumem.torch", "run", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.assertEqual(child.stdout.readline().strip(), "ready")
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=120)
        self.assertEqual(child.returncode, 143, err)
        self.assertIn("SIGTERM: the script was terminated", err)
        self.assertIn("exited with status 143", out)
        self.assertEqual(self.figure(out, "peak requested"), 1_000_000)

    def test_run_serves_a_script_that_installs_its_own_device(self):
        # The script's install() is for its runs without `run`: run's device serves it.
        script = self.script(
            "installs.py",
            """
            import npumem.torch
            import torch
            device = npumem.torch.install("sim:hbm=1GiB,ddr=0,backing=host")
            kept = torch.empty(2_000_000, dtype=torch.uint8)
            print("device", device.spec)
            """,
        )
        spec = "sim:hbm=2GiB,ddr=1GiB,backing=host"
        result = self.npumem_torch("run", "--device", spec, script)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"device {spec}", result.stdout)
        self.assertIn("npumem: run: the script's npumem.torch.install() asks for device 0 as "
                      "'sim:hbm=1GiB,ddr=0,backing=host'", result.stderr)
        self.assertEqual(self.figure(result.stdout, "peak requested"), 2_000_000)

    def test_run_peak_of_torchvision_training_equals_the_peak_captured_without_npumem(self):
        # capture runs the same script on PyTorch's own allocator: the peak of live
        # bytes it records owes nothing to npumem's statistics.
        trace = os.path.join(self.folder.name, "example.trace")
        example_args = ("--steps", "2", "--batch", "2", "--size", "64")
        captured = self.npumem_torch("capture", "-o", trace, EXAMPLE, *example_args)
        self.assertEqual(captured.returncode, 0, captured.stderr)
        captured_peak = int(re.search(r"\((\d+) bytes\)", captured.stdout).group(1))

        result = self.npumem_torch("run", EXAMPLE, *example_args)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("step 1: loss", result.stdout)
        self.assertEqual(self.figure(result.stdout, "peak requested"), captured_peak)
        self.assertGreater(self.figure(result.stdout, "peak allocated"), captured_peak)
        self.assertNotIn("LEAK", result.stdout)

    TRAINING_LOOP = """
        import torch
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
        )
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        validation = torch.randn(32, 64)
        kept = []
        for step in range(8):
            optimizer.zero_grad(set_to_none=True)
            loss = model(torch.randn(32, 64)).square().mean()
            loss.backward()
            optimizer.step()
            if KEEP:
                kept.append(model(validation))  # the validation graph, kept every step
        print("trained")
        """

    def test_run_fires_on_a_tensor_kept_every_step_naming_the_module(self):
        script = self.script("leaky.py", "KEEP = True\n" + textwrap.dedent(self.TRAINING_LOOP))
        result = self.npumem_torch("run", script)
        self.assertEqual(result.returncode, 4, result.stdout + result.stderr)
        self.assertIn("trained", result.stdout)
        self.assertIn("leak check over 8 iteration marks (iterations 0 to 8, 0 before the first "
                      "mark, 8 in progress; warm-up 1, judged 6)", result.stdout)
        self.assertIn("verdict: LEAK SUSPECTED", result.stdout)
        # The graph's saved activations, named by the module whose forward made them.
        self.assertRegex(
            result.stdout,
            r"tag 'Sequential\.\d', pool 'default': \d+ allocations, .* made in \d+ of 9 "
            r"iterations .*left behind in 6 iterations after warm-up",
        )

    def test_a_leak_threshold_lets_a_run_keep_a_little(self):
        script = self.script("leaky.py", "KEEP = True\n" + textwrap.dedent(self.TRAINING_LOOP))
        result = self.npumem_torch("run", "--leak-threshold", "10", script)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("verdict: no leak above the threshold", result.stdout)
        refused = self.npumem_torch("run", "--leak-threshold", "-1", script)
        self.assertEqual(refused.returncode, 2, refused.stdout + refused.stderr)
        self.assertIn("threshold", refused.stderr)

    def test_run_is_silent_on_the_same_loop_without_the_kept_tensor(self):
        script = self.script("clean.py", "KEEP = False\n" + textwrap.dedent(self.TRAINING_LOOP))
        result = self.npumem_torch("run", script)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("verdict: no leak", result.stdout)

    def test_run_lists_what_a_script_leaves_behind_by_tag(self):
        script = self.script(
            "leftovers.py",
            """
            import builtins
            import torch
            import npumem
            with npumem.tag("forgotten cache"):
                builtins.kept = [torch.empty(1_000_000, dtype=torch.uint8) for _ in range(3)]
            """,
        )
        result = self.npumem_torch("run", script)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout, r"tag 'forgotten cache', pool 'default': 3 allocations")

    def test_run_names_a_memory_fraction_that_caps_the_hbm(self):
        # Spills to DDR beside a 4 GiB device read as unexplained: the cap was not said.
        script = self.script(
            "capped.py",
            """
            import npumem
            import torch
            npumem.set_per_process_memory_fraction(0.25)
            kept = torch.empty(1000, dtype=torch.uint8)
            """,
        )
        spec = "sim:hbm=64MiB,ddr=64MiB,backing=host"
        result = self.npumem_torch("run", "--device", spec, script)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("HBM limit 16.0 MiB of 64.0 MiB (memory fraction 0.25)", result.stdout)
        plain = self.script("plain.py", "import torch\nkept = torch.empty(1000)\n")
        result = self.npumem_torch("run", "--device", spec, plain)
        self.assertNotIn("HBM limit", result.stdout)

    def test_run_says_when_the_timeline_dropped_events(self):
        script = self.script("many.py", "import torch\nfor _ in range(50):\n    torch.ones(100)\n")
        page = os.path.join(self.folder.name, "t.html")
        result = self.npumem_torch("run", "--html", page, "--history-entries", "10", script)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stdout, r"the timeline dropped the \d+ oldest events")
        with open(page, encoding="utf-8") as file:
            self.assertIn('"max_entries":10', file.read().replace(" ", ""))

    def test_run_reports_what_the_plans_did_under_the_planned_strategy(self):
        loop = self.script(
            "steps.py",
            """
            import torch
            model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                        torch.nn.Linear(256, 10))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(5):
                optimizer.zero_grad()
                model(torch.randn(32, 64)).sum().backward()
                optimizer.step()
            """,
        )
        result = self.npumem_torch("run", "--conf", "strategy:planned", loop)
        self.assertEqual(result.returncode, 0, result.stderr)
        out = result.stdout
        self.assertIn("planned strategy\n", out)
        learned = re.search(r"(?m)^  plans learned +([\d,]+) \(", out)
        self.assertIsNotNone(learned, out)
        self.assertGreaterEqual(int(learned.group(1)), 1)
        hits = re.search(r"(?m)^  planned requests +([\d,]+) hits", out)
        self.assertIsNotNone(hits, out)
        self.assertGreater(int(hits.group(1).replace(",", "")), 0)
        self.assertRegex(out, r"(?m)^  steady overhead +\d\.\d{3} \(peak reserved")
        self.assertRegex(out, r"(?m)^  plan 0 +[\d,]+ of [\d,]+ requests")

        unmarked = self.script("no_steps.py", "import torch\nx = torch.ones(1000)\n")
        result = self.npumem_torch("run", "--conf", "strategy:planned", unmarked)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(
            "no plan served, it ran as its fallback (no iterations were marked with "
            "optimizer.step() or npumem.torch.iteration() (or the device's mark_iteration()))",
            result.stdout,
        )
        result = self.npumem_torch("run", loop)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("planned strategy", result.stdout)

    def test_run_refuses_a_history_size_out_of_range(self):
        script = self.script("never_runs.py", "print('ran')\n")
        page = os.path.join(self.folder.name, "t.html")
        for entries in ("99999999999999999999", "0"):
            result = self.npumem_torch("run", "--html", page, "--history-entries", entries, script)
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertIn("--history-entries", result.stderr)
            self.assertNotIn("Traceback", result.stderr)
            self.assertNotIn("ran", result.stdout)

    def test_run_refuses_a_history_size_without_a_timeline(self):
        # Accepted, it did nothing: without --html nothing records.
        script = self.script("never_runs.py", "print('ran')\n")
        result = self.npumem_torch("run", "--history-entries", "100", script)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("--history-entries sizes the --html timeline", result.stderr)
        self.assertNotIn("ran", result.stdout)

    def test_run_checks_html_and_conf_before_running(self):
        script = self.script("never_runs.py", "print('ran')\n")
        missing = os.path.join(self.folder.name, "no", "such", "folder", "t.html")
        result = self.npumem_torch("run", "--html", missing, script)
        self.assertEqual(result.returncode, 2)
        self.assertIn(f"--html: cannot write {missing}", result.stderr)
        self.assertNotIn("ran", result.stdout)
        result = self.npumem_torch("run", "--conf", "granule:x", script)
        self.assertEqual(result.returncode, 2)
        self.assertIn("--conf: bad value 'x' for key 'granule'", result.stderr)
        self.assertNotIn("ran", result.stdout)

    def test_capture_checks_its_output_before_running(self):
        script = self.script("never_runs.py", "print('ran')\n")
        missing = os.path.join(self.folder.name, "no", "such", "folder", "t.trace")
        result = self.npumem_torch("capture", "-o", missing, script)
        self.assertEqual(result.returncode, 2)
        self.assertIn(f"-o: cannot write {missing}", result.stderr)
        self.assertNotIn("ran", result.stdout)

    def test_capture_of_a_script_that_allocates_nothing_exits_two(self):
        # It exited 1, which the docs keep for npumem's own failures, saying so on stdout.
        script = self.script("hello.py", "print('hi')\n")
        out = os.path.join(self.folder.name, "hello.trace")
        result = self.npumem_torch("capture", "-o", out, script)
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn(f"npumem: no trace written to {out}: the script made no allocation",
                      result.stderr)
        self.assertFalse(os.path.exists(out))

    def test_capture_says_when_it_replaces_a_trace(self):
        # The default output (the script's name .trace) overwrote an earlier capture
        # without a word.
        script = self.script("small.py", "import torch\nkept = torch.ones(1000)\n")
        here = os.getcwd()
        os.chdir(self.folder.name)
        self.addCleanup(os.chdir, here)
        first = self.npumem_torch("capture", script)
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertRegex(first.stdout, r"npumem: wrote \S*small.trace: ")
        again = self.npumem_torch("capture", script)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertRegex(again.stdout,
                         r"npumem: wrote \S*small.trace \(replacing the file that was there\): ")

    def test_outputs_of_a_run_that_stops_before_the_script_keep_what_they_held(self):
        # The page and the trace were opened for writing at once: a run that stopped on
        # a bad device, or a missing script, left the last run's file empty.
        kept = os.path.join(self.folder.name, "kept.html")
        with open(kept, "w", encoding="utf-8") as file:
            file.write("last run")
        missing = os.path.join(self.folder.name, "absent.py")
        for args in (["run", "--html", kept, missing],
                     ["run", "--html", kept, "--device", "sim:hbm=1GiB", missing],
                     ["capture", "-o", kept, missing]):
            with self.subTest(args[0]):
                result = self.npumem_torch(*args)
                self.assertEqual(result.returncode, 2, result.stderr)
                with open(kept, encoding="utf-8") as file:
                    self.assertEqual(file.read(), "last run")
        fresh = os.path.join(self.folder.name, "fresh.html")
        self.assertEqual(self.npumem_torch("run", "--html", fresh, missing).returncode, 2)
        self.assertFalse(os.path.exists(fresh), "the check of a new path leaves no file")

    def test_outputs_stay_where_they_were_named_and_are_never_the_script(self):
        # Opened after the script, they followed its os.chdir (or were lost with it);
        # and `-o script.py script.py` replaced the script.
        script = self.script("moves.py", "import os, torch\nkept = torch.ones(100)\n"
                                         "os.chdir(os.path.dirname(os.getcwd()))\n")
        trace = os.path.join(self.folder.name, "moved.trace")
        page = os.path.join(self.folder.name, "moved.html")
        here = os.getcwd()
        os.chdir(self.folder.name)
        self.addCleanup(os.chdir, here)
        self.assertEqual(self.npumem_torch("capture", "-o", "moved.trace", script).returncode, 0)
        self.assertTrue(os.path.exists(trace))
        self.assertEqual(self.npumem_torch("run", "--html", "moved.html", script).returncode, 0)
        self.assertTrue(os.path.exists(page))
        for args in (["capture", "-o", script, script], ["run", "--html", script, script]):
            with self.subTest(args[0]):
                result = self.npumem_torch(*args)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertIn("is the script: writing it would destroy the script", result.stderr)
        with open(script, encoding="utf-8") as file:
            self.assertIn("os.chdir", file.read())

    def test_capture_of_a_script_that_installs_npumem_records_pytorchs_allocator(self):
        # A serving script calls install() itself: capture stopped it there ("npumem
        # cannot be installed while ... records"), so it could not be captured as it is.
        trace = os.path.join(self.folder.name, "installs.trace")
        script = self.script(
            "installs.py",
            "import npumem.torch\nimport torch\nnpumem.torch.install('sim:backing=host')\n"
            "kept = torch.empty(1000, dtype=torch.uint8)\n",
        )
        result = self.npumem_torch("capture", "-o", trace, script)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("install() leaves PyTorch's allocator in place", result.stderr)
        with open(trace, encoding="utf-8") as file:
            self.assertIn("a 0 1000", file.read().splitlines())
        # Its installed_device() said "call install() first", though the script had.
        reads = self.script(
            "reads.py",
            "import npumem.torch\nnpumem.torch.install('sim:backing=host')\n"
            "npumem.torch.installed_device()\n",
        )
        result = self.npumem_torch("capture", "-o", trace, reads)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("does not serve PyTorch's tensors under `capture`", result.stderr)

    def test_capture_header_stays_one_comment_line_whatever_the_arguments(self):
        # An argument with a line break, or not ASCII, was written into the header as is:
        # a trace replay refused ("unknown op"), or no trace at all.
        trace = os.path.join(self.folder.name, "args.trace")
        script = self.script("argv.py", "import torch\nkept = torch.ones(10)\n")
        result = self.npumem_torch("capture", "-o", trace, script, "two\nlines", "caf\u00e9")
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(trace, encoding="ascii") as file:
            lines = file.read().splitlines()
        self.assertTrue(lines[0].startswith("# what: python3 "), lines[0])
        self.assertIn("two\\nlines", lines[0])
        self.assertTrue(all(line.startswith(("#", "a ", "f ", "i")) for line in lines), lines)

    def test_ctrl_c_ends_the_script_and_keeps_the_report(self):
        script = self.script(
            "interrupted.py",
            """
            import torch
            kept = torch.ones(1000)
            raise KeyboardInterrupt
            """,
        )
        result = self.npumem_torch("run", script)
        self.assertEqual(result.returncode, 130, result.stderr)
        self.assertIn("KeyboardInterrupt", result.stderr)
        self.assertIn("exited with status 130", result.stdout)
        self.assertIn("peak requested", result.stdout)

    def test_run_passes_on_the_exit_status_and_writes_the_timeline(self):
        script = self.script(
            "fails.py",
            """
            import sys
            import torch
            kept = torch.ones(1000)
            sys.exit(3)
            """,
        )
        page = os.path.join(self.folder.name, "timeline.html")
        result = self.npumem_torch("run", "--html", page, script)
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertIn("exited with status 3", result.stdout)
        with open(page, encoding="utf-8") as file:
            html = file.read()
        self.assertTrue(html.lstrip().lower().startswith("<!doctype html"))
        self.assertIn('"format":"npumem.snapshot"', html.replace(" ", ""))

    def test_run_prints_each_pool_s_peaks_and_quota(self):
        # Only the device's totals were printed: no figure to size a model's quota by.
        script = self.script(
            "pools.py",
            """
            import npumem
            import torch
            with npumem.pool("model_a", quota="16MiB"):
                a = torch.empty(5_000_000, dtype=torch.uint8)
            with npumem.pool("model_b"):
                b = torch.empty(3_000_000, dtype=torch.uint8)
            """,
        )
        result = self.npumem_torch("run", script)
        self.assertEqual(result.returncode, 0, result.stderr)
        table = result.stdout[result.stdout.index("pools\n"):]
        self.assertRegex(table, r"\n  model_a +4\.77 MiB +4\.77 MiB +\S+ MiB +16\.0 MiB\n")
        self.assertRegex(table, r"\n  model_b +2\.86 MiB .* none\n")

    def test_a_failing_script_s_traceback_starts_at_the_script(self):
        # It began in npumem's script_runner and went through runpy.
        script = self.script(
            "fails_deep.py",
            """
            def inner():
                raise ValueError("the script's own error")
            inner()
            """,
        )
        trace = os.path.join(self.folder.name, "f.trace")
        for args in (["run", script], ["capture", "-o", trace, script]):
            with self.subTest(command=args[0]):
                result = self.npumem_torch(*args)
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertIn(
                    f'Traceback (most recent call last):\n  File "{script}", line 4, in <module>',
                    result.stderr,
                )
                self.assertIn("ValueError: the script's own error", result.stderr)
                self.assertNotIn("runpy", result.stderr)
                self.assertNotIn("script_runner", result.stderr)

    def test_run_refuses_a_device_without_host_memory(self):
        script = self.script("never_runs.py", "raise SystemExit('must not run')\n")
        result = self.npumem_torch("run", "--device", "sim:hbm=1GiB", script)
        self.assertEqual(result.returncode, 2)
        self.assertIn("backing=host", result.stderr)
        self.assertNotIn("Traceback", result.stderr)

    def test_run_names_a_missing_script(self):
        result = self.npumem_torch("run")
        self.assertEqual(result.returncode, 2)
        self.assertIn("the following arguments are required: script\n", result.stderr)
        result = self.npumem_torch("run", os.path.join(self.folder.name, "absent.py"))
        self.assertEqual(result.returncode, 2)
        self.assertIn("no script", result.stderr)
        result = self.npumem_torch("run", self.folder.name)
        self.assertEqual(result.returncode, 2)
        self.assertIn(f"{self.folder.name} is a directory, not a script", result.stderr)

    def test_capture_writes_a_trace_that_replays_to_the_same_peak(self):
        trace = os.path.join(self.folder.name, "resnet18.trace")
        script = self.script(
            "train.py",
            f"""
            import sys
            sys.path.insert(0, {HERE!r})
            from torch_workloads import resnet18_training_step
            results = resnet18_training_step()
            """,
        )
        result = self.npumem_torch("capture", "-o", trace, script)
        self.assertEqual(result.returncode, 0, result.stderr)
        events = []
        with open(trace, encoding="ascii") as file:
            lines = file.read().splitlines()
        self.assertTrue(lines[0].startswith("# what: python3 "))
        iterations = 0
        tags = set()
        for line in lines:
            if line.startswith("#"):
                continue
            if line.startswith("t"):  # the module that allocates, as under `run`
                tags.add(line[2:])
                continue
            if line == "i":  # optimizer.step()
                iterations += 1
                continue
            fields = line.split()
            events.append((fields[0], int(fields[1]), int(fields[2]) if fields[0] == "a" else 0))
        self.assertEqual(iterations, 1)
        self.assertIn("ResNet.layer1.0.conv1", tags)
        self.assertIn("ResNet.fc_(backward)", tags)
        peak = peak_live_bytes(events)
        self.assertGreater(peak, 44 << 20)  # resnet18's weights alone
        self.assertIn(f"({peak} bytes)", result.stdout)

        report = self.replay_json(trace)
        self.assertEqual(report["peak_requested_bytes"], peak)
        self.assertEqual(report["allocations"], sum(1 for kind, _, _ in events if kind == "a"))
        self.assertEqual(report["iterations"], 1)

    def test_capture_writes_the_pools_that_replay_takes_quotas_for(self):
        # Multi-model serving captured without `p` lines replayed as one pool: --quota
        # for a model's pool was refused as a pool the trace does not name. Without the
        # quotas, the replay needed --quota again for each.
        trace = os.path.join(self.folder.name, "pools.trace")
        script = self.script(
            "two_models.py",
            """
            import npumem
            import torch
            first = torch.empty(3_000_000, dtype=torch.uint8)
            with npumem.pool("model_a", quota="16MiB"):
                second = torch.empty(5_000_000, dtype=torch.uint8)
                with npumem.pool("model_b"):
                    third = torch.empty(7_000_000, dtype=torch.uint8)
                fourth = torch.empty(2_000_000, dtype=torch.uint8)
            fifth = torch.empty(1_000_000, dtype=torch.uint8)
            """,
        )
        result = self.npumem_torch("capture", "-o", trace, script)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(trace, encoding="utf-8") as file:
            lines = [line for line in file.read().splitlines() if not line.startswith("#")]
        self.assertEqual(
            [line for line in lines if line.startswith("p ") or line.split()[-1][-6:] == "000000"],
            [
                "a 0 3000000",
                "p model_a 16777216",
                "a 1 5000000",
                "p model_b",
                "a 2 7000000",
                "p model_a",
                "a 3 2000000",
                "p default",
                "a 4 1000000",
            ],
        )
        # The quota the script gave, unless --quota gives another.
        self.assertEqual(self.replay_json(trace)["pools"]["model_a"]["quota_bytes"], 16 << 20)
        pools = self.replay_json(trace, "--quota", "model_a=32MiB")["pools"]
        self.assertEqual(pools["model_a"]["quota_bytes"], 32 << 20)
        self.assertEqual(pools["model_b"]["peak_requested_bytes"], 7_000_000)
        self.assertEqual(pools["default"]["peak_requested_bytes"], 4_000_000)

    def test_capture_keeps_a_pool_removed_and_made_anew_and_refuses_as_npumem(self):
        # A served model unloaded and another loaded in its pool's name: the capture had
        # no `r` line and no new quota (replay ran the second model in the first quota),
        # removed the pool with tensors live (npumem refuses that), and stopped at the
        # script's own install().
        trace = os.path.join(self.folder.name, "unload.trace")
        script = self.script(
            "unload.py",
            """
            import npumem
            import npumem.torch
            import torch
            npumem.torch.install()
            with npumem.pool("model", quota="8MiB"):
                weights = torch.empty(6_000_000, dtype=torch.uint8)
            try:
                npumem.remove_pool("model")
            except npumem.ConfigError as error:
                print("refused:", error)
            del weights
            npumem.remove_pool("model")
            with npumem.pool("model", quota="4MiB"):
                weights = torch.empty(3_000_000, dtype=torch.uint8)
            with npumem.pool("small", quota="2MiB"):
                over = torch.empty(3_000_000, dtype=torch.uint8)
            """,
        )
        result = self.npumem_torch("capture", "-o", trace, script)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(
            "refused: pool 'model' holds 1 live allocation (5.72 MiB); free them before "
            "removing it",
            result.stdout,
        )
        self.assertIn("leaves PyTorch's allocator in place", result.stderr)
        self.assertIn("pool 'small' held 2.86 MiB live, past its quota of 2.00 MiB", result.stderr)
        with open(trace, encoding="utf-8") as file:
            lines = [line for line in file.read().splitlines() if line[0] in "apfr"]
        self.assertEqual(
            lines,
            [
                "p model 8388608",
                "a 0 6000000",
                "f 0",
                "r model",
                "p model 4194304",
                "a 1 3000000",
                "p small 2097152",
                "a 2 3000000",
                "f 1",  # the script's globals, freed as it ends
                "f 2",
            ],
        )
        pools = self.replay_json(trace, "--quota", "small=4MiB")["pools"]
        self.assertEqual(pools["model (removed)"]["quota_bytes"], 8 << 20)
        self.assertEqual(pools["model (removed)"]["peak_requested_bytes"], 6_000_000)
        self.assertEqual(pools["model"]["quota_bytes"], 4 << 20)
        self.assertEqual(pools["model"]["peak_requested_bytes"], 3_000_000)

    def test_a_leak_check_of_a_capture_names_the_leaking_module(self):
        # Captured without tags, the model's weights and the outputs it leaked were one
        # untagged group: replay blamed 3 MiB of weights where `run` named 80 KiB.
        trace = os.path.join(self.folder.name, "leak.trace")
        script = self.script(
            "leaky.py",
            """
            import npumem.torch
            import torch
            model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU())
            kept = []
            with torch.no_grad():
                for step in range(8):
                    npumem.torch.iteration()
                    kept.append(model(torch.randn(16, 512)))
            npumem.torch.iteration()
            """,
        )
        result = self.npumem_torch("capture", "-o", trace, script)
        self.assertEqual(result.returncode, 0, result.stderr)
        cli = os.environ.get("NPUMEM_CLI")
        if not cli:
            self.skipTest("NPUMEM_CLI (the npumem command) is not set")
        replay = subprocess.run(
            [cli, "replay", "--leak-check", trace], capture_output=True, text=True, check=False
        )
        self.assertEqual(replay.returncode, 4, replay.stdout + replay.stderr)
        self.assertRegex(replay.stdout, r"tag 'Sequential\.1', pool 'default': \d+ allocations, "
                         r"[^\n]*<- left behind")

    def test_capture_refuses_a_pool_name_a_trace_cannot_hold(self):
        trace = os.path.join(self.folder.name, "blank.trace")
        script = self.script(
            "blank_pool.py",
            """
            import npumem
            import torch
            with npumem.pool("model a"):
                kept = torch.empty(1000)
            """,
        )
        result = self.npumem_torch("capture", "-o", trace, script)
        # Refused where the scope is entered, not after the whole run.
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("pool 'model a' cannot be written in a trace", result.stderr)
        self.assertIn('blank_pool.py", line 4', result.stderr)
        self.assertFalse(os.path.exists(trace))


if __name__ == "__main__":
    unittest.main()
