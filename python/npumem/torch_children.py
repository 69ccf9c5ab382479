"""Child processes of `python3 -m npumem.torch run` on npumem too.

run() calls serve_children(): the folder child_startup/ (a sitecustomize) goes first on
PYTHONPATH and the device spec and config go into the environment, so every Python
interpreter the script starts (torch.multiprocessing spawn, torchrun's ranks, a
subprocess) serves its CPU tensors from npumem as soon as it imports torch: on device
LOCAL_RANK (torchrun's rank on this node) or else 0, each process with its own stats
page for `npumem smi`. Forked children need nothing: they inherit the installed
allocator, and npumem publishes their page after the fork.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
from typing import Optional

SPEC_VARIABLE = "NPUMEM_TORCH_CHILD_DEVICE"
CONF_VARIABLE = "NPUMEM_TORCH_CHILD_CONF"
STARTUP_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child_startup")


def serve_children(spec: str, conf: Optional[str]) -> None:
    """Makes the Python children this process starts from now on install npumem.torch
    with `spec` and `conf` (on device LOCAL_RANK, else 0)."""
    os.environ[SPEC_VARIABLE] = spec
    os.environ[CONF_VARIABLE] = conf or ""
    path = os.environ.get("PYTHONPATH", "")
    if STARTUP_FOLDER not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (STARTUP_FOLDER, path) if p)


def child_device_index() -> int:
    """torchrun's LOCAL_RANK, else 0. Raises ValueError for a LOCAL_RANK that is not an index."""
    text = os.environ.get("LOCAL_RANK", "0")
    if not text.isdigit():
        raise ValueError(f"LOCAL_RANK={text!r} is not a device index")
    return int(text)


def install_in_child() -> None:
    """Installs npumem.torch in this child as its parent asked (see serve_children)."""
    from npumem.torch import install

    install(os.environ[SPEC_VARIABLE], os.environ.get(CONF_VARIABLE) or None,
            device=child_device_index())


class _InstallAfterTorch(importlib.abc.MetaPathFinder):
    """Finds torch as the other finders do and installs npumem right after it loads, so a
    child that never imports torch pays nothing."""

    def find_spec(self, name, path, target=None):  # noqa: ANN001 - the finder protocol
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module):  # noqa: ANN001 - the loader protocol
            load(module)
            install_in_child()

        spec.loader.exec_module = exec_module
        return spec


def start_child() -> None:
    """Called at interpreter start-up by child_startup/sitecustomize.py."""
    if os.environ.get(SPEC_VARIABLE) is None:
        return
    if "torch" in sys.modules:
        install_in_child()
    else:
        sys.meta_path.insert(0, _InstallAfterTorch())
