"""A counter pass's files read as what they are: input another process could have written.

Why: a pass folder (``counting.CountingPlan``, kept by the sweep's ``Record``) holds the unit's
manifest (``manifest.json``: one entry per configuration, the launches it made, an in-process
backend's counters) and how the backend ran (``backend.json``), beside the profiler's raw output.
The counting unit's worker runs the user's kernel, which can write any file its user can, and a
recorded folder (``collect``) may come from anyone. They were read with ``json.loads`` and indexed as if they were ours: a forged
manifest was a ``KeyError`` traceback, a 2 GB one was read whole, ``NaN`` read as a count. Here a
file is read up to ``MAX_BYTES``, parsed with ``untrusted.load_json`` (bounded depth, 64-bit
integers, finite numbers; a counter that was not a number is written as ``null``), and every key
the pass uses is checked for its type; keys it does not use (older recordings have some) are left
alone. Every failure is one ``CounterError`` line naming the file.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...untrusted import check_name, load_json, shown
from .backends import CounterError

MAX_BYTES = 1 << 26
MAX_ENTRIES = 1 << 16
MAX_LAUNCHES = 1 << 20
#: the keys every entry must have, and their types
ENTRY = {
    "kernel": str,
    "entry": str,
    "size_bytes": int,
    "rotating_requested": str,
    "flush": str,
    "rotating": int,
    "warmup": int,
    "count": int,
    "input_bytes": int,
}
#: keys an entry may have (older recordings lack them)
OPTIONAL = {"plan_note": str, "marker_status": str, "marker": str, "n": int, "timed": int, "footprint_bytes": int}


def read_json(path: str | Path, what: str) -> Any:
    """A JSON file another process may have written: at most ``MAX_BYTES``, parsed bounded."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise CounterError(f"no {what} at {path} ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:
        raise CounterError(f"{path}: the {what} is over {MAX_BYTES} bytes; a counter pass writes far less")
    try:
        return load_json(data.decode("utf-8"), str(path))
    except UnicodeDecodeError:
        raise CounterError(f"{path}: the {what} is not UTF-8 text") from None
    except ConfigError as exc:
        raise CounterError(str(exc)) from None


def _typed(value: Any, kind: type, where: str) -> Any:
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 62:
            raise CounterError(f"{where} must be an integer in [0, 2**62); got {shown(value)}")
        return value
    try:
        return check_name(value, where, allow_empty=True, limit=4096)
    except ConfigError as exc:
        raise CounterError(str(exc)) from None


def _entry(e: Any, where: str, required: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(e, dict):
        raise CounterError(f"{where} must be an object; got {shown(e)}")
    missing = [k for k in required if k not in e]
    if missing:
        raise CounterError(f"{where} lacks {missing}; a manifest entry has {sorted(required)}")
    out = dict(e)
    for k, kind in ((k, t) for k, t in {**ENTRY, **OPTIONAL}.items() if k in e):
        out[k] = _typed(e[k], kind, f"{where}: {k}")
    if "launches" in e:
        pairs = e["launches"]
        if (
            not isinstance(pairs, list)
            or len(pairs) > MAX_LAUNCHES
            or not all(
                isinstance(p, list)
                and len(p) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) and -1 <= x < 1 << 31 for x in p)
                for p in pairs
            )
        ):
            raise CounterError(
                f"{where}: launches must be a list of [buffer set, position] integer pairs; got {shown(pairs)}"
            )
    if "values" in e:
        out["values"] = _values(e["values"], where)
    return out


def _values(values: Any, where: str) -> list[dict[str, float]]:
    """An in-process backend's counters per launch: names to numbers (``null``: not a number)."""
    if not isinstance(values, list) or len(values) > MAX_LAUNCHES:
        raise CounterError(f"{where}: values must be a list of per-launch counters; got {shown(values)}")
    out = []
    for v in values:
        if not isinstance(v, dict) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) or x is None for x in v.values()
        ):
            raise CounterError(f"{where}: a launch's values must map counter names to numbers; got {shown(v)}")
        out.append(
            {_typed(k, str, f"{where}: a counter's name"): math.nan if x is None else float(x) for k, x in v.items()}
        )
    return out


def read_manifest(
    path: str | Path, required: tuple[str, ...] = tuple(ENTRY), what: str = "counter manifest"
) -> dict[str, Any]:
    """A counting unit's ``manifest.json``, checked (module docstring); ``required``: the keys each
    entry must have (a backend that reads only some asks for those)."""
    m = read_json(path, what)
    if not isinstance(m, dict) or not isinstance(m.get("entries"), list) or len(m["entries"]) > MAX_ENTRIES:
        raise CounterError(
            f"{path}: a counter manifest is an object whose entries are a list of at most {MAX_ENTRIES}; got {shown(m)}"
        )
    if "marker_status" in m:
        _typed(m["marker_status"], str, f"{path}: marker_status")
    return {**m, "entries": [_entry(e, f"{path}: entry {i}", required) for i, e in enumerate(m["entries"])]}


def read_description(path: str | Path) -> dict[str, Any]:
    """A pass folder's ``backend.json``: the backend's name and options, each of its type."""
    d = read_json(path, "counter backend description")
    if not isinstance(d, dict) or not isinstance(d.get("name"), str):
        raise CounterError(f"{path}: a backend description is an object with a name; got {shown(d)}")
    for k in ("name", "label", "arch", "replay", "path"):
        if k in d:
            _typed(d[k], str, f"{path}: {k}")
    lists = {"metrics": d.get("metrics", []), **{f"groups[{i}]": g for i, g in enumerate(d.get("groups", []))}}
    if not isinstance(d.get("groups", []), list) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in lists.values()
    ):
        raise CounterError(f"{path}: metrics and groups must be lists of counter names")
    if "profiler_range" in d and not isinstance(d["profiler_range"], bool):
        raise CounterError(f"{path}: profiler_range must be true or false; got {shown(d['profiler_range'])}")
    return d


def manifest_json(manifest: dict[str, Any]) -> str:
    """A manifest as ``read_manifest`` takes it back: a counter that is not a number written as null."""
    import json

    def finite(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: finite(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [finite(x) for x in v]
        return v

    return json.dumps(finite(manifest), indent=1, default=str, allow_nan=False)


__all__ = ["MAX_BYTES", "manifest_json", "read_description", "read_json", "read_manifest"]
