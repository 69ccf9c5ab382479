"""Where npumem's warnings point: the first frame outside npumem and PyTorch, the line
of the user's program that led to them (a fixed stacklevel named npumem's own lines when
reached another way, or torch's autograd for a warning raised in a backward)."""

from __future__ import annotations

import os
import sys

_NPUMEM_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _torch_dir() -> str:
    torch = sys.modules.get("torch")
    path = getattr(torch, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) + os.sep if path else "\0"


def user_stacklevel() -> int:
    """The stacklevel for warnings.warn, called where warn is called, that names the first
    frame outside npumem and torch (1: that caller, when none is outside)."""
    internal = (_NPUMEM_DIR, _torch_dir())
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(
        internal
    ):
        frame = frame.f_back
        level += 1
    return level
