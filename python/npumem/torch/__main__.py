"""python3 -m npumem.torch: run a PyTorch script on npumem, or capture its trace.

  run [--device SPEC] [--conf CONF] [--html OUT.html [--history-entries N]]
      [--leak-threshold F] SCRIPT.py [ARGS...]
      Serves the script's CPU tensors from npumem, then prints the monitor report
      (snapshots start and end), the peaks, and a leak check: iterations end at each
      optimizer.step() (and npumem.torch.iteration()), memory is tagged with the
      module that made it. Exits with the script's status, or 4 when it exited 0 and
      leaked more than F of the bytes allocated after warm-up (default 0: any).
      Ctrl-C ends the script and still prints the report.
  capture [-o OUT.trace] SCRIPT.py [ARGS...]
      Records every CPU allocation and free of the script (PyTorch's own allocator)
      as an allocation trace in the shared format, for `npumem replay`, with an `i`
      line at each optimizer.step() and npumem.torch.iteration().
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

from npumem import _core
from npumem.torch.commands import capture, run


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python3 -m npumem.torch",
        description="Run PyTorch scripts with npumem behind their CPU tensors.",
    )
    commands = top.add_subparsers(dest="command", required=True)

    run_parser = commands.add_parser(
        "run", help="run a script on npumem; report peaks, snapshots and leaks at exit"
    )
    run_parser.add_argument(
        "--device", help="device spec with host backing (default: NPUMEM_DEVICE, else "
        "sim:hbm=4GiB,ddr=16GiB,backing=host)"
    )
    run_parser.add_argument("--conf", help="settings 'key:value,...' over NPUMEM_ALLOC_CONF")
    run_parser.add_argument("--html", metavar="OUT.html", help="also write the memory timeline")
    run_parser.add_argument(
        "--history-entries",
        type=int,
        metavar="N",
        help="events the timeline keeps (the oldest are dropped; default 1000000)",
    )
    run_parser.add_argument(
        "--leak-threshold",
        type=float,
        default=0.0,
        metavar="F",
        help="survivors above this fraction of the bytes allocated after warm-up are a leak "
        "(exit 4); default 0: any (a kept loss of 512 B a step counts)",
    )
    run_parser.add_argument("script", help="the Python script")
    _script_arguments(run_parser)

    capture_parser = commands.add_parser(
        "capture", help="record a script's CPU allocations as an allocation trace"
    )
    capture_parser.add_argument(
        "-o", "--output", metavar="OUT.trace", help="trace file (default: SCRIPT's name .trace)"
    )
    capture_parser.add_argument("script", help="the Python script")
    _script_arguments(capture_parser)
    return top


def _script_arguments(command: argparse.ArgumentParser) -> None:
    """The script's arguments, everything after it. argparse counts a REMAINDER as
    required, and a missing script was reported as "required: script, args"."""
    arguments = command.add_argument(
        "args", nargs=argparse.REMAINDER, help="the script's arguments"
    )
    arguments.required = False


def main(argv: Optional[list[str]] = None) -> int:
    """Returns the script's exit status, or 2 when npumem cannot run it."""
    options = parser().parse_args(argv)
    try:
        if options.command == "run":
            # Without --html nothing records: the option did nothing, without a word (replay
            # refuses it likewise).
            if options.history_entries is not None and options.html is None:
                raise _core.ConfigError(
                    "--history-entries sizes the --html timeline; give --html OUT.html too"
                )
            if options.history_entries is None:
                options.history_entries = 1_000_000
            # The recorder refuses more than 10^9; past 2^64 the bindings' TypeError would
            # end in a traceback.
            if not 1 <= options.history_entries < 2**64:
                raise _core.ConfigError(
                    f"--history-entries must be from 1 to 10^9, not {options.history_entries}"
                )
            return run(
                options.script,
                options.args,
                options.device,
                options.conf,
                options.html,
                options.history_entries,
                options.leak_threshold,
            )
        output = options.output or os.path.splitext(os.path.basename(options.script))[0] + ".trace"
        return capture(options.script, options.args, output)
    except (_core.Error, OSError, ValueError) as problem:
        print(f"python3 -m npumem.torch: error: {problem}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
