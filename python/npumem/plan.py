"""`npumem plan`'s planners from Python: each returns a Plan whose fields are those the
command's --json prints (docs/PLANNING.md), as attributes.

    import npumem.plan
    shards = npumem.plan.shard({"layers": [...]}, hbm="64MiB")
    print(shards.shard_count, [s.first_layer for s in shards.shards])
    keep = npumem.plan.recompute("model.json", budget="1GiB").kept_layers
    arena = npumem.plan.memory([(4096, 0, 2), (8192, 1, 3)]).arena_bytes

A model is a dict, a JSON string or the path of a model file (npumem-extract-model
writes them); records are (bytes, first_op, last_op) triples, lifetime-records text or
the path of a records file. Bad input raises ParseError or Error naming the field.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Union

from npumem import _core
from npumem.scopes import Size, to_bytes

Model = Union[dict, str, os.PathLike]
Records = Union[Iterable[tuple[int, int, int]], str, os.PathLike]
Bandwidth = Union[int, float, str]


class Plan:
    """A plan's JSON object with its keys as attributes (nested objects are Plans too);
    to_dict() gives the JSON object itself."""

    def __init__(self, fields: dict[str, Any]):
        self._fields = fields
        for key, value in fields.items():
            setattr(self, key, _wrap(value))

    def to_dict(self) -> dict[str, Any]:
        return self._fields

    def __repr__(self) -> str:
        return f"Plan({json.dumps(self._fields)})"


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return Plan(value)
    if isinstance(value, list):
        return [_wrap(item) for item in value]
    return value


def _text_and_source(source: Any, what: str) -> tuple[str, str]:
    """The input's text and the name errors give it."""
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        raise IsADirectoryError(f"{os.fspath(source)!r} is a directory, not a {what} file")
    if isinstance(source, os.PathLike) or (
        isinstance(source, str) and os.path.isfile(source)
    ):
        path = os.fspath(source)
        with open(path, encoding="utf-8") as file:
            return file.read(), path
    if isinstance(source, str):
        # One word that no file holds: a misspelt path, not text (records need three
        # fields a line, a model is a JSON object).
        if source and not source.lstrip().startswith(("{", "#")) and len(source.split()) == 1:
            raise FileNotFoundError(
                f"no file {source!r} (a str is a path when such a file exists, else the "
                f"text of the {what})"
            )
        return source, f"<{what}>"
    raise TypeError(f"expected a path or the text of the {what}, not {type(source).__name__}")


def _model_text(model: Model) -> tuple[str, str]:
    if isinstance(model, dict):
        return json.dumps(model), "<model>"
    return _text_and_source(model, "model")


def _bandwidth(value: Bandwidth) -> float:
    if isinstance(value, str):
        return float(_core.parse_bandwidth(value))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"a bandwidth is a positive number of bytes per second or "
                         f"a string such as '50GB/s', not {value!r}")
    return float(value)


def memory(
    records: Records,
    alignment: Size = 64,
    time_limit: float = 1.0,
    iterations: int = 2**64 - 1,
    seed: int = 1,
    offsets: bool = True,
) -> Plan:
    """The static memory plan (`npumem plan memory --json`): arena_bytes,
    lower_bound_bytes, naive_bytes, ratio, algorithm, proven_optimal, ... and, unless
    offsets=False, each tensor's offset."""
    if isinstance(records, (str, os.PathLike)):
        text, source = _text_and_source(records, "records")
    else:
        text = "".join(f"{int(b)} {int(first)} {int(last)}\n" for b, first, last in records)
        source = "<records>"
    # math.inf is no limit, as `--time-limit inf` is.
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) or not (
        time_limit >= 0
    ):
        raise ValueError(f"time_limit is a number of seconds >= 0, not {time_limit!r}")
    return Plan(
        json.loads(
            _core.plan_memory(
                text, source, to_bytes(alignment), float(time_limit), iterations, seed, offsets
            )
        )
    )


def shard(
    model: Model,
    hbm: Size,
    bandwidth: Bandwidth = "50GB/s",
    hbm_bandwidth: Bandwidth = "1.2TB/s",
) -> Plan:
    """The shard plan (`npumem plan shard --json`) for an HBM budget: shards (first_layer,
    last_layer, weight_bytes, peak_bytes, prefetches_next, load_ms, compute_ms, ...),
    total_ms and the fewest_shards baseline. Raises OutOfMemoryError naming the layer
    when one layer alone exceeds the budget."""
    text, source = _model_text(model)
    return Plan(
        json.loads(
            _core.plan_shard(
                text, source, to_bytes(hbm), _bandwidth(bandwidth), _bandwidth(hbm_bandwidth)
            )
        )
    )


def recompute(model: Model, budget: Size, hbm_bandwidth: Bandwidth = "1.2TB/s") -> Plan:
    """The recompute plan (`npumem plan recompute --json`) for an activation budget:
    kept_layers, peak_bytes, recompute_ms, fits, and keep_all and sqrt_n beside it.
    Raises OutOfMemoryError with the least peak any plan reaches when none fits."""
    text, source = _model_text(model)
    return Plan(
        json.loads(_core.plan_recompute(text, source, to_bytes(budget), _bandwidth(hbm_bandwidth)))
    )


__all__ = ["Plan", "memory", "recompute", "shard"]
