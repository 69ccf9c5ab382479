"""Put first on PYTHONPATH by `python3 -m npumem.torch run` so that the script's Python
children run on npumem too (npumem.torch_children); then runs the sitecustomize this
one hides, if there is one."""

import importlib.machinery
import importlib.util
import os
import sys


def _run_hidden_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


try:
    from npumem.torch_children import start_child
except ImportError as problem:  # npumem not importable here: the child runs plainly
    print(f"npumem: a child of `npumem.torch run` cannot import npumem: {problem}",
          file=sys.stderr)
else:
    start_child()
_run_hidden_sitecustomize()
