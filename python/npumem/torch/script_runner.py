"""Runs a Python script as `python3 SCRIPT.py args` would, inside this process."""

from __future__ import annotations

import gc
import os
import runpy
import signal
import sys
import threading
import traceback
from typing import Callable, Optional

# True while `python3 -m npumem.torch run` runs a script: the device run made is the
# script's, whatever spec its own npumem.torch.install() names.
running = False


class _Terminated(BaseException):
    """SIGTERM during the script: ends it as Ctrl-C does, so that the report follows."""


def run_script(path: str, args: list[str], on_end: Optional[Callable[[], None]] = None) -> int:
    """Runs the script as __main__ with sys.argv = [path, *args] and its folder first on
    sys.path; returns its exit status (1 after an uncaught exception, whose traceback
    goes to stderr). The script's globals are dropped and garbage collected before
    returning, so only what something else keeps alive survives it. Ctrl-C ends the
    script with status 130 and returns, SIGTERM with 143 (a job scheduler's stop lost
    the whole report). `on_end` runs when the script has ended, its globals still alive
    when it returned (a leak report's Python lines need the leaked blocks' addresses)."""
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path} is a directory, not a script")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no script {path}")
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    saved_term = _on_sigterm()
    namespace = None
    try:
        namespace = runpy.run_path(path, run_name="__main__")
        status = 0
    except SystemExit as exit_request:
        status = _exit_status(exit_request.code)
    except KeyboardInterrupt:
        # Ctrl-C ends the script, not the report that follows it (status as a shell's).
        print("\nKeyboardInterrupt: the script was interrupted", file=sys.stderr)
        status = 130
    except _Terminated:
        print("\nSIGTERM: the script was terminated", file=sys.stderr)
        status = 143
    except Exception as error:  # noqa: BLE001 - the script's failure, reported as python3 does
        _print_from_script(error, path)
        status = 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        if saved_term is not None:
            signal.signal(signal.SIGTERM, saved_term)
    if on_end is not None:
        on_end()
    del namespace
    gc.collect()
    return status


def _on_sigterm():
    """Makes SIGTERM end the script with _Terminated; returns the handler it replaced
    (None where signals cannot be handled: off the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def terminate(_signum, _frame):
        raise _Terminated()

    return signal.signal(signal.SIGTERM, terminate)


def _print_from_script(error: Exception, path: str) -> None:
    """The traceback from the script's own first frame on, as `python3 SCRIPT.py` prints
    it: run_script's and runpy's frames above it are npumem's, not the user's. An error
    before the script ran a line (a SyntaxError) names its place itself."""
    script = os.path.abspath(path)
    frames = error.__traceback__
    while frames is not None and os.path.abspath(frames.tb_frame.f_code.co_filename) != script:
        frames = frames.tb_next
    traceback.print_exception(type(error), error, frames)


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1
