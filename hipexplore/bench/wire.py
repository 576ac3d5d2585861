"""What a process that runs a user's kernel may tell the process that trusts it: bounded frames
with a checked schema, never a pickle.

Why: a sweep worker (``bench.worker_main``) runs host kernels, user libraries and Python reference
functions, and its pipe to the parent was a pickle stream whose descriptor the worker's argv names.
A kernel that wrote its own frames there ran code in the parent (a ``__reduce__`` calling
``os.system``), ended a sweep as a success with nothing measured (a forged ``("done", False)``, an
``("error", SystemExit(0))``), or hung or crashed it (a length of -5 or 2**64-1, bytes that were no
pickle). A frame here is data only:

* a fixed prefix: the magic ``HXw1``, the header's length (at most ``MAX_HEADER``) and the body's
  (at most the reader's ``max_body``), both checked before a byte of either is taken;
* a JSON header read with ``untrusted.load_json`` (bounded depth, 64-bit integers, finite numbers):
  the message's ``kind`` and its fields, each of a declared type; text is printable (the writer
  escapes control characters, the reader refuses any: no terminal escape or second line gets through)
  and bounded;
* a body of raw little-endian arrays, the numeric columns of the tables the header declares:
  a table's columns, their order and dtypes must be exactly the schema's (``SAMPLE_TYPES`` over
  ``schema.SAMPLE_COLUMNS``), its row count bounded, the body exactly as long as the arrays it
  declares, booleans 0 or 1;
* a unit's result (``bench.outcome.ConfigurationResult``) as data: its configuration, and each of
  its parts (identity, plan, floor, bias, the named summaries) as an object of exactly that part's
  fields, each of its declared type (text, integer, number or null for NaN, boolean); its samples
  as a table; its ``Measurement`` made again from them by the reader.

Every failure is one ``WireError`` line saying what was wrong. What a message *means* (which
configurations a unit may report, when ``done`` is believed) is ``bench.guard``'s business; this
module only turns bytes into typed messages (``Start`` ... ``Failed``) and back (``encode``,
``FrameReader``, ``FrameWriter``, ``decode_all``).
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import threading
from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Sequence

from ..errors import BenchmarkError, ConfigError
from ..schema import CLUSTER_COLUMNS, SAMPLE_COLUMNS, Configuration, Timer
from ..untrusted import check_name, escaped, load_json, shown
from .outcome import (
    SUMMARIES,
    Bias,
    ConfigurationResult,
    CounterSummary,
    Floor,
    Identity,
    Part,
    Rebiased,
    Rotation,
    Samples,
)

MAGIC = b"HXw1"
#: magic, header bytes (u32), body bytes (u64), little-endian
PREFIX = struct.Struct("<4sIQ")
MAX_HEADER = 1 << 20
#: a body no reader is given a bound for may be this long (a unit's reader sets its own, from its spec)
DEFAULT_MAX_BODY = 1 << 28
DEFAULT_MAX_ROWS = 1 << 22
#: one text value (a warning, a metadata entry, an error message); a compiler log may be longer
MAX_TEXT = 1 << 16
MAX_LOG = 1 << 18
#: a name: a kernel's, a configuration's, a metadata key, a counter (a kernel may be named at length)
MAX_KEY = 4096
MAX_ITEMS = 4096

TEXT, INT, FLOAT, BOOL = "text", "<i8", "<f8", "|b1"
_ITEMSIZE = {INT: 8, FLOAT: 8, BOOL: 1}
_INTS = (
    "size_bytes",
    "footprint_bytes",
    "rotating",
    "iteration",
    "pass_index",
    "chunk",
    "position",
    "lead",
    "buffer_set",
)
#: the configuration key's columns are text but for its size (``size_bytes``, above)
_TEXTS = ("run_id", "device", "device_name", *(c for c in Configuration.COLUMNS if c != "size_bytes"), *CLUSTER_COLUMNS)
_BOOLS = ("throttled", "dropped")
_FLOATS = ("time_s", "flush_s", "gap_s", "clock_mhz", "temp_c", "power_w", "host_load", "host_busy", "host_steal")
#: a column of the schema none of the lists above names (a test fails on it: give it its type)
UNTYPED = "untyped"


def _types(columns: Sequence[str]) -> dict[str, str]:
    return {
        c: TEXT if c in _TEXTS else INT if c in _INTS else BOOL if c in _BOOLS else FLOAT if c in _FLOATS else UNTYPED
        for c in columns
    }


#: the declared type of every column of a sample frame (a unit's, and a cluster unit's); a summary's
#: columns are the fields of a result's parts (``bench.outcome``), typed there
SAMPLE_TYPES = _types(SAMPLE_COLUMNS)
CLUSTER_SAMPLE_TYPES = _types([*SAMPLE_COLUMNS, *CLUSTER_COLUMNS])


class WireError(BenchmarkError):
    """A frame that is not one this module writes (the message says what was wrong, in one line)."""


# -- the messages ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Start:
    """The unit began (kernel, configuration) — what a fault will name."""

    kernel: str
    configuration: str


@dataclass(frozen=True)
class Ask:
    """``stop_now()``: the parent answers with one byte."""


@dataclass(frozen=True)
class Meta:
    entries: dict[str, str]


@dataclass(frozen=True)
class Add:
    """A finished configuration: its result (``bench.outcome.ConfigurationResult``)."""

    result: ConfigurationResult


@dataclass(frozen=True)
class Update:
    """Results sent before, filled in again (their biases, once the reference is whole)."""

    rebiased: list[Rebiased]


@dataclass(frozen=True)
class Counted:
    """A counting unit's manifest entry of one configuration (``bench.counters``), and where the
    worker counted it itself, its ``CounterSummary`` (on the pipe: its fields by their declared
    types, as every part of a result; read back as a ``CounterSummary``, never a dict)."""

    entry: dict[str, Any]
    summary: CounterSummary | None = None


@dataclass(frozen=True)
class Warn:
    category: str
    message: str
    lineno: int = 0


@dataclass(frozen=True)
class Done:
    stopped: bool


@dataclass(frozen=True)
class Failed:
    """An exception in the worker, as data: its type's name, its message and what the project's
    own error types carry (a ``KernelFault``'s kernel, configuration and status; a compile log)."""

    type: str
    message: str
    kernel: str = ""
    configuration: str = ""
    status: str = ""
    log: str = ""


@dataclass(frozen=True)
class UnitEnd:
    """A cluster unit's last word (``bench.dask_executor``): where it ran and how long it took."""

    worker: str
    host: str
    gpu: str
    seconds: float
    extra: dict[str, str] = field(default_factory=dict)


Message = Start | Ask | Meta | Add | Update | Counted | Warn | Done | Failed | UnitEnd


# -- text -----------------------------------------------------------------------------------------
def clean(value: Any, limit: int = MAX_TEXT, lines: bool = False) -> str:
    """``value`` as text a reader takes: control characters escaped (newlines and tabs kept with
    ``lines``), cut to ``limit``. The writer's side of ``_text``."""
    text = escaped(str(value), keep="\n\t" if lines else "")
    return text if len(text) <= limit else text[: limit - 48] + f"... ({len(text)} characters)"


def _text(value: Any, what: str, limit: int = MAX_TEXT, *, lines: bool = False, empty: bool = True) -> str:
    """``value`` if it is printable text of at most ``limit`` characters (newlines and tabs too
    with ``lines``); else one ``WireError`` line naming it."""
    probe = value.replace("\n", "").replace("\t", "") if lines and isinstance(value, str) else value
    try:
        check_name(probe, what, allow_empty=empty, limit=limit)
    except ConfigError as exc:
        raise WireError(str(exc)) from None
    return value


def _int(value: Any, what: str, lo: int = -(1 << 63), hi: int = (1 << 63) - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise WireError(f"{what} must be an integer in [{lo}, {hi}]; got {shown(value)}")
    return value


def _number(value: Any, what: str) -> float:
    """A JSON number, or null for NaN (JSON has no NaN)."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WireError(f"{what} must be a number or null; got {shown(value)}")
    return float(value)


def _bool(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise WireError(f"{what} must be true or false; got {shown(value)}")
    return value


def _obj(value: Any, what: str, keys: Sequence[str], optional: Sequence[str] = ()) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise WireError(f"{what} must be an object; got {shown(value)}")
    missing = [k for k in keys if k not in value]
    extra = [k for k in value if k not in keys and k not in optional]
    if missing or extra:
        raise WireError(
            f"{what} has keys {shown(sorted(map(str, value)), 200)}; expected {list(keys)}"
            + (f" (optional {list(optional)})" if optional else "")
        )
    return value


def _list(value: Any, what: str, limit: int = MAX_ITEMS) -> list[Any]:
    if not isinstance(value, list) or len(value) > limit:
        raise WireError(f"{what} must be a list of at most {limit} items; got {shown(value)}")
    return value


def _strings(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or len(value) > MAX_ITEMS:
        raise WireError(f"{what} must be an object of at most {MAX_ITEMS} text entries; got {shown(value)}")
    return {_text(k, f"{what} key", MAX_KEY, empty=False): _text(v, f"{what} {shown(k)}") for k, v in value.items()}


# -- tables ---------------------------------------------------------------------------------------
def _encode_table(columns: Samples, types: Mapping[str, str]) -> tuple[dict[str, Any], list[bytes]]:
    """A result's samples as (header description, body arrays) of ``types``' columns."""
    import numpy as np

    n = columns.n
    text: dict[str, Any] = {}
    arrays, body = [], []
    for c, t in types.items():
        col = columns[c]
        if t == TEXT:
            values = [clean(v) for v in col.tolist()]
            text[c] = values[0] if n and all(v == values[0] for v in values) else values
        else:
            arrays.append([c, t])
            body.append(
                np.ascontiguousarray(
                    np.asarray(col, dtype=np.dtype(t).newbyteorder("<") if t != BOOL else bool)
                ).tobytes()
            )
    return {"rows": n, "text": text, "arrays": arrays}, body


def _decode_table(
    desc: Any, body: memoryview, offset: int, types: Mapping[str, str], what: str, max_rows: int
) -> tuple[dict[str, Any], int, int]:
    """(columns, rows, new offset) of a table ``_encode_table`` described, checked against ``types``."""
    import numpy as np

    desc = _obj(desc, what, ("rows", "text", "arrays"))
    n = _int(desc["rows"], f"{what} rows", 0, max_rows)
    texts = [c for c, t in types.items() if t == TEXT]
    want_arrays = [[c, t] for c, t in types.items() if t != TEXT]
    if not isinstance(desc["text"], dict) or sorted(desc["text"]) != sorted(texts):
        given = sorted(map(str, desc["text"])) if isinstance(desc["text"], dict) else desc["text"]
        raise WireError(f"{what} has text columns {shown(str(given), 200)}; expected {texts}")
    if desc["arrays"] != want_arrays:
        raise WireError(f"{what} declares arrays {shown(str(desc['arrays']), 200)}; expected {want_arrays}")
    out: dict[str, Any] = {}
    for c in texts:
        v = desc["text"][c]
        if isinstance(v, str):
            out[c] = [_text(v, f"{what} column {c}")] * n
        else:
            values = _list(v, f"{what} column {c}", max_rows)
            if len(values) != n:
                raise WireError(f"{what} column {c} has {len(values)} values for {n} rows")
            out[c] = [_text(x, f"{what} column {c}") for x in values]
    for c, t in want_arrays:
        size = n * _ITEMSIZE[t]
        if offset + size > len(body):
            raise WireError(f"{what} column {c} needs {size} bytes at {offset}; the body has {len(body)}")
        arr = np.frombuffer(body, dtype=np.dtype(t), count=n, offset=offset).copy()
        if t == BOOL and n and int(arr.view(np.uint8).max()) > 1:
            raise WireError(f"{what} column {c} holds a boolean that is neither 0 nor 1")
        out[c] = arr.astype(np.int64 if t == INT else np.float64 if t == FLOAT else bool)
        offset += size
    return out, n, offset


def _samples_of(columns: dict[str, Any], types: Mapping[str, str]) -> Samples:
    import numpy as np

    return Samples(
        {
            c: np.fromiter(columns[c], dtype=object, count=len(columns[c])) if t == TEXT else columns[c]
            for c, t in types.items()
        }
    )


# -- a result's parts -----------------------------------------------------------------------------
def _part_out(part: Part) -> dict[str, Any]:
    """A part's fields by their declared types (text cleaned, NaN as null)."""
    out: dict[str, Any] = {}
    for f in fields(part):  # type: ignore[arg-type]
        v = getattr(part, f.name)
        out[f.name] = (
            clean(v)
            if f.type == "str"
            else int(v)
            if f.type == "int"
            else bool(v)
            if f.type == "bool"
            else _finite(float(v))
        )
    return out


def _part_in(cls: type[Part], value: Any, what: str) -> Any:
    """A part from a frame: exactly its fields, each of its declared type."""
    names = cls.names()
    e = _obj(value, what, names)
    got: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        v, name = e[f.name], f"{what} {f.name}"
        got[f.name] = (
            _text(v, name)
            if f.type == "str"
            else _int(v, name)
            if f.type == "int"
            else _bool(v, name)
            if f.type == "bool"
            else _number(v, name)
        )
    return cls(**got)


def _configuration_out(c: Configuration) -> dict[str, Any]:
    return {
        "kernel": clean(c.kernel, MAX_KEY),
        "size": int(c.size),
        **{k: clean(getattr(c, k), MAX_KEY) for k in ("rotating", "flush", "timer")},
    }


def _configuration_in(value: Any, what: str) -> Configuration:
    e = _obj(value, what, ("kernel", "size", "rotating", "flush", "timer"))
    texts = {k: _text(e[k], f"{what} {k}", MAX_KEY) for k in ("kernel", "rotating", "flush", "timer")}
    try:
        timer = Timer.of(texts["timer"])
    except ConfigError as exc:
        raise WireError(str(exc)) from None
    return Configuration(texts["kernel"], _int(e["size"], f"{what} size", 0), texts["rotating"], texts["flush"], timer)


_RESULT_KEYS = ("configuration", "unit", "identity", "plan", "floor", "bias", "summaries", "warning")


def _result_out(r: ConfigurationResult) -> dict[str, Any]:
    return {
        "configuration": _configuration_out(r.configuration),
        "unit": int(r.unit),
        "identity": _part_out(r.identity),
        "plan": _part_out(r.plan),
        "floor": _part_out(r.floor),
        "bias": _part_out(r.bias),
        "summaries": {s.NAME: _part_out(s) for s in r.summaries},
        "warning": clean(r.warning),
    }


def _result_in(value: Any, samples: Samples) -> ConfigurationResult:
    what = "an add frame's result"
    e = _obj(value, what, _RESULT_KEYS)
    c = _configuration_in(e["configuration"], f"{what} configuration")
    named = e["summaries"]
    if not isinstance(named, dict) or any(k not in SUMMARIES for k in named):
        raise WireError(f"{what} has summaries {shown(named, 200)}; expected some of {sorted(SUMMARIES)}")
    summaries = tuple(_part_in(SUMMARIES[k], v, f"{what} summary {k}") for k, v in named.items())
    m = samples.measurement(" ".join(map(str, c))) if samples.n else None
    return ConfigurationResult(
        c,
        _int(e["unit"], f"{what} unit", 0),
        _part_in(Identity, e["identity"], f"{what} identity"),
        _part_in(Rotation, e["plan"], f"{what} plan"),
        samples,
        m,
        _part_in(Floor, e["floor"], f"{what} floor"),
        _part_in(Bias, e["bias"], f"{what} bias"),
        summaries,
        _text(e["warning"], f"{what} warning"),
    )


def _rebiased_in(value: Any, what: str = "an update frame's result") -> Rebiased:
    e = _obj(value, what, ("configuration", "bias", "warning"))
    return Rebiased(
        _configuration_in(e["configuration"], f"{what} configuration"),
        _part_in(Bias, e["bias"], f"{what} bias"),
        _text(e["warning"], f"{what} warning"),
    )


# -- encoding -------------------------------------------------------------------------------------
def _pack(header: dict[str, Any], body: Sequence[bytes] = ()) -> bytes:
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    size = sum(len(b) for b in body)
    if len(head) > MAX_HEADER:
        raise WireError(f"a {header.get('kind')} frame's header of {len(head)} bytes is over the {MAX_HEADER} limit")
    return b"".join([PREFIX.pack(MAGIC, len(head), size), head, *body])


def _finite(v: Any) -> Any:
    return None if isinstance(v, float) and not math.isfinite(v) else v


def encode(msg: Message, *, cluster: bool = False) -> bytes:
    """``msg`` as one frame (``cluster``: tables with the cluster columns, a cluster unit's)."""
    st = CLUSTER_SAMPLE_TYPES if cluster else SAMPLE_TYPES
    if isinstance(msg, Start):
        return _pack(
            {"kind": "start", "kernel": clean(msg.kernel, MAX_KEY), "configuration": clean(msg.configuration, MAX_KEY)}
        )
    if isinstance(msg, Ask):
        return _pack({"kind": "ask"})
    if isinstance(msg, Meta):
        return _pack({"kind": "meta", "entries": {clean(k, MAX_KEY): clean(v) for k, v in msg.entries.items()}})
    if isinstance(msg, Add):
        sd, sb = _encode_table(msg.result.samples, st)
        return _pack({"kind": "add", "samples": sd, "result": _result_out(msg.result)}, sb)
    if isinstance(msg, Update):
        return _pack(
            {
                "kind": "update",
                "rebiased": [
                    {
                        "configuration": _configuration_out(r.configuration),
                        "bias": _part_out(r.bias),
                        "warning": clean(r.warning),
                    }
                    for r in msg.rebiased
                ],
            }
        )
    if isinstance(msg, Counted):
        return _pack(
            {
                "kind": "counted",
                "entry": _counted_out(msg.entry),
                **({"summary": _part_out(msg.summary)} if msg.summary is not None else {}),
            }
        )
    if isinstance(msg, Warn):
        return _pack(
            {
                "kind": "warn",
                "category": clean(msg.category, 128),
                "message": clean(msg.message, lines=True),
                "lineno": int(msg.lineno) if 0 <= int(msg.lineno) < 1 << 31 else 0,
            }
        )
    if isinstance(msg, Done):
        return _pack({"kind": "done", "stopped": bool(msg.stopped)})
    if isinstance(msg, Failed):
        return _pack(
            {
                "kind": "error",
                "type": clean(msg.type, 128),
                "message": clean(msg.message, lines=True),
                "kernel": clean(msg.kernel, MAX_KEY),
                "configuration": clean(msg.configuration, MAX_KEY),
                "status": clean(msg.status, lines=True),
                "log": clean(msg.log, MAX_LOG, lines=True),
            }
        )
    if isinstance(msg, UnitEnd):
        return _pack(
            {
                "kind": "unit",
                "worker": clean(msg.worker, MAX_KEY),
                "host": clean(msg.host, MAX_KEY),
                "gpu": clean(msg.gpu, MAX_KEY),
                "seconds": float(msg.seconds) if math.isfinite(msg.seconds) else 0.0,
                "extra": {clean(k, MAX_KEY): clean(v) for k, v in msg.extra.items()},
            }
        )
    raise TypeError(f"not a wire message: {type(msg).__name__}")


# -- the counter entry ----------------------------------------------------------------------------
_COUNTED_INTS = ("size_bytes", "n", "rotating", "warmup", "count", "timed", "input_bytes", "footprint_bytes")
_COUNTED_TEXTS = ("kernel", "entry", "rotating_requested", "flush", "marker", "marker_status", "plan_note")


def _counted_out(entry: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: int(entry[k]) for k in _COUNTED_INTS}
    out.update({k: clean(entry[k], MAX_KEY) for k in _COUNTED_TEXTS})
    out["launches"] = [[int(s), int(p)] for s, p in entry["launches"]]
    if entry.get("values") is not None:
        out["values"] = [{clean(k, MAX_KEY): _finite(float(v)) for k, v in d.items()} for d in entry["values"]]
    return out


def _counted_in(value: Any) -> dict[str, Any]:
    e = _obj(value, "a counted entry", (*_COUNTED_INTS, *_COUNTED_TEXTS, "launches"), ("values",))
    out: dict[str, Any] = {k: _int(e[k], f"counted {k}", 0) for k in _COUNTED_INTS}
    out.update({k: _text(e[k], f"counted {k}", MAX_KEY) for k in _COUNTED_TEXTS})
    pairs = _list(e["launches"], "counted launches", 1 << 20)
    out["launches"] = [
        (_int(p[0], "a launch's set", -1), _int(p[1], "a launch's position", -1))
        if isinstance(p, list) and len(p) == 2
        else _int(None, "a launch (a [set, position] pair)")
        for p in pairs
    ]
    if "values" in e:
        out["values"] = [
            {
                _text(k, "a counter's name", MAX_KEY, empty=False): _number(v, f"counter {shown(k)}")
                for k, v in (d.items() if isinstance(d, dict) else _obj(d, "counted values", ()).items())
            }
            for d in _list(e["values"], "counted values", 1 << 20)
        ]
    return out


# -- decoding -------------------------------------------------------------------------------------
_KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "start": (("kernel", "configuration"), ()),
    "ask": ((), ()),
    "meta": (("entries",), ()),
    "add": (("samples", "result"), ()),
    "update": (("rebiased",), ()),
    "counted": (("entry",), ("summary",)),
    "warn": (("category", "message", "lineno"), ()),
    "done": (("stopped",), ()),
    "error": (("type", "message", "kernel", "configuration", "status", "log"), ()),
    "unit": (("worker", "host", "gpu", "seconds", "extra"), ()),
}


def decode(
    head: bytes, body: memoryview | bytes, *, max_rows: int = DEFAULT_MAX_ROWS, cluster: bool = False
) -> Message:
    """One frame's header and body as its message; ``WireError`` when either is not what ``encode`` writes."""
    try:
        text = bytes(head).decode("utf-8")
    except UnicodeDecodeError:
        raise WireError("a frame's header is not UTF-8") from None
    try:
        h = load_json(text, "a frame's header")
    except ConfigError as exc:
        raise WireError(str(exc)) from None
    if not isinstance(h, dict) or h.get("kind") not in _KINDS:
        raise WireError(
            f"a frame of unknown kind {shown(h.get('kind') if isinstance(h, dict) else h)}; expected one of {sorted(_KINDS)}"
        )
    kind = h.pop("kind")
    keys, optional = _KINDS[kind]
    h = _obj(h, f"a {kind} frame", keys, optional)
    body = memoryview(body)
    if kind != "add" and len(body):
        raise WireError(f"a {kind} frame carries a body of {len(body)} bytes; it has none")
    st = CLUSTER_SAMPLE_TYPES if cluster else SAMPLE_TYPES
    if kind == "add":
        cols, n, off = _decode_table(h["samples"], body, 0, st, "an add frame's samples", max_rows)
        msg: Message = Add(_result_in(h["result"], _samples_of(cols, st)))
    elif kind == "update":
        return Update([_rebiased_in(r) for r in _list(h["rebiased"], "an update frame's results")])
    else:
        return _plain(kind, h)
    if off != len(body):
        raise WireError(f"a {kind} frame's body has {len(body)} bytes; its tables declare {off}")
    return msg


def _plain(kind: str, h: dict[str, Any]) -> Message:
    """The messages without a body."""
    if kind == "start":
        return Start(
            _text(h["kernel"], "a start frame's kernel", MAX_KEY),
            _text(h["configuration"], "a start frame's configuration", MAX_KEY),
        )
    if kind == "ask":
        return Ask()
    if kind == "meta":
        return Meta(_strings(h["entries"], "a meta frame's entries"))
    if kind == "counted":
        return Counted(
            _counted_in(h["entry"]),
            _part_in(CounterSummary, h["summary"], "a counted summary") if "summary" in h else None,
        )
    if kind == "warn":
        return Warn(
            _text(h["category"], "a warning's category", 128),
            _text(h["message"], "a warning", lines=True),
            _int(h["lineno"], "a warning's line", 0, (1 << 31) - 1),
        )
    if kind == "done":
        return Done(_bool(h["stopped"], "a done frame's stopped"))
    if kind == "error":
        return Failed(
            _text(h["type"], "an error's type", 128, empty=False),
            _text(h["message"], "an error's message", lines=True),
            _text(h["kernel"], "an error's kernel", MAX_KEY),
            _text(h["configuration"], "an error's configuration", MAX_KEY),
            _text(h["status"], "an error's status", lines=True),
            _text(h["log"], "an error's log", MAX_LOG, lines=True),
        )
    seconds = _number(h["seconds"], "a unit's seconds")
    if not math.isfinite(seconds) or seconds < 0:
        raise WireError(f"a unit's seconds must be a finite number >= 0; got {shown(seconds)}")
    return UnitEnd(
        _text(h["worker"], "a unit's worker", MAX_KEY),
        _text(h["host"], "a unit's host", MAX_KEY),
        _text(h["gpu"], "a unit's gpu", MAX_KEY),
        seconds,
        _strings(h["extra"], "a unit's extra"),
    )


class FrameReader:
    """Frames from a byte stream fed in pieces (``feed``), taken one at a time (``next``): a frame
    is decoded only once all of it is in, and its lengths are checked against the bounds as soon
    as its prefix is, so nothing is read or held beyond ``MAX_HEADER`` + ``max_body``."""

    def __init__(
        self, *, max_body: int = DEFAULT_MAX_BODY, max_rows: int = DEFAULT_MAX_ROWS, cluster: bool = False
    ) -> None:
        self.max_body, self.max_rows, self.cluster = int(max_body), int(max_rows), cluster
        self.buf = bytearray()
        self.frames = 0

    def feed(self, data: bytes) -> None:
        self.buf += data

    def _lengths(self) -> tuple[int, int] | None:
        if len(self.buf) < PREFIX.size:
            if len(self.buf) >= len(MAGIC) and bytes(self.buf[: len(MAGIC)]) != MAGIC:
                raise WireError(self._not_a_frame())
            return None
        magic, head, body = PREFIX.unpack_from(self.buf)
        if magic != MAGIC:
            raise WireError(self._not_a_frame())
        if not 0 < head <= MAX_HEADER:
            raise WireError(f"frame {self.frames + 1} declares a header of {head} bytes; expected 1 to {MAX_HEADER}")
        if body > self.max_body:
            raise WireError(
                f"frame {self.frames + 1} declares a body of {body} bytes; expected at most {self.max_body}"
            )
        return head, body

    def _not_a_frame(self) -> str:
        return (
            f"frame {self.frames + 1} is not a frame: it starts with {shown(bytes(self.buf[:16]).decode('latin-1'), 40)}, "
            f"not {MAGIC.decode()}"
        )

    def next(self) -> Message | None:
        """The next whole frame's message, None until one is in; ``WireError`` at a bad one."""
        sizes = self._lengths()
        if sizes is None or len(self.buf) < PREFIX.size + sizes[0] + sizes[1]:
            return None
        head, body = sizes
        end = PREFIX.size + head + body
        # copies, not views of the buffer: a view still held (a profiler's sample of this frame's
        # locals, in a Dask worker) would forbid resizing it
        frame_head, frame_body = (
            bytes(self.buf[PREFIX.size : PREFIX.size + head]),
            bytes(self.buf[PREFIX.size + head : end]),
        )
        del self.buf[:end]
        msg = decode(frame_head, frame_body, max_rows=self.max_rows, cluster=self.cluster)
        self.frames += 1
        return msg

    @property
    def pending(self) -> int:
        """Bytes fed that are not a whole frame yet."""
        return len(self.buf)


def decode_all(blob: bytes, **bounds: Any) -> list[Message]:
    """Every frame of ``blob`` (a cluster unit's result), which must end where its last frame does."""
    if not isinstance(blob, (bytes, bytearray)):
        raise WireError(f"a unit's result must be bytes; got {type(blob).__name__}")
    reader = FrameReader(**bounds)
    reader.feed(blob)
    out = []
    while (msg := reader.next()) is not None:
        out.append(msg)
    if reader.pending:
        raise WireError(f"a unit's result ends inside a frame ({reader.pending} bytes left over)")
    return out


class FrameWriter:
    """The worker's end: whole frames to a descriptor, one at a time (a warning may come from another thread)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock = threading.Lock()

    def send(self, msg: Message) -> None:
        data = memoryview(encode(msg))
        with self.lock:
            while data:
                data = data[os.write(self.fd, data) :]


def limits(spec: Any) -> dict[str, int]:
    """The bounds a unit of ``spec`` is read with: rows a configuration's samples may hold (its
    stop rule's count or cap, its cold reference's samples, with room) and the body they need."""
    stop = getattr(spec, "stop", None)
    most = max(
        int(getattr(stop, "iterations", 0) or 0),
        int(getattr(stop, "max_samples", 0) or 0),
        int(getattr(spec, "reference_samples", 0) or 0),
    )
    rows = 2 * most + 65536
    per_row = sum(_ITEMSIZE.get(t, 0) for t in CLUSTER_SAMPLE_TYPES.values())
    return {"max_rows": rows, "max_body": rows * per_row + (1 << 20)}


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,127}")


def type_name(value: str) -> str:
    """An exception type's name as the parent shows it (an identifier, else ``?``)."""
    return value if _IDENT.fullmatch(value) else "?"


__all__ = [
    "Add",
    "Ask",
    "CLUSTER_SAMPLE_TYPES",
    "Counted",
    "DEFAULT_MAX_BODY",
    "Done",
    "Failed",
    "FrameReader",
    "FrameWriter",
    "MAGIC",
    "MAX_HEADER",
    "Message",
    "Meta",
    "PREFIX",
    "SAMPLE_TYPES",
    "Start",
    "UnitEnd",
    "Update",
    "Warn",
    "WireError",
    "clean",
    "decode",
    "decode_all",
    "encode",
    "limits",
    "type_name",
]
