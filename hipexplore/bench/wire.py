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
  the message's ``kind`` and its fields, each of a declared type (``bench.wire_values``: text is
  printable, the writer escapes control characters and the reader refuses any, and bounded);
* a body of raw little-endian arrays, the numeric columns of the tables the header declares
  (``bench.wire_tables``: exactly the schema's columns and dtypes, rows bounded, the body exactly as
  long as the arrays it declares, booleans 0 or 1), or a cluster counting unit's report files
  (``Report``: each path checked, the sizes adding up to the body);
* a unit's result (``bench.outcome.ConfigurationResult``) as data (``bench.wire_outcome``): its
  configuration, and each of its parts as an object of exactly that part's fields, each of its
  declared type; its samples as a table; its ``Measurement`` made again from them by the reader.

Every failure is one ``WireError`` line saying what was wrong. What a message *means* (which
configurations a unit may report, when ``done`` is believed) is ``bench.guard``'s business; this
module only turns bytes into typed messages (``bench.wire_messages``: ``Start`` ... ``Report``) and
back (``encode``, ``FrameReader``, ``FrameWriter``, ``decode_all``). The names of those modules that
a reader of frames needs are here too (re-exported: this module is the format's one face, and the
attacks in tests/security/ go through it).
"""

from __future__ import annotations

import json
import math
import os
import struct
import threading
from typing import Any, Callable, Sequence

from ..errors import ConfigError
from ..untrusted import load_json, shown
from .outcome import CounterSummary
from .wire_messages import (
    REPORT_PATH,
    Add,
    Ask,
    Counted,
    Done,
    Failed,
    Message,
    Meta,
    Report,
    Start,
    UnitEnd,
    Update,
    Warn,
    type_name,
)
from .wire_outcome import counted_in, counted_out, part_in, part_out, rebiased_in, rebiased_out, result_in, result_out
from .wire_tables import (
    BOOL,
    CLUSTER_SAMPLE_TYPES,
    FLOAT,
    INT,
    SAMPLE_TYPES,
    TEXT,
    UNTYPED,
    decode_table,
    encode_table,
    row_bytes,
    samples_of,
)
from .wire_values import (
    MAX_ITEMS,
    MAX_KEY,
    MAX_LOG,
    MAX_TEXT,
    WireError,
    bool_of,
    clean,
    int_of,
    list_of,
    number_of,
    object_of,
    strings_of,
    text_of,
)

MAGIC = b"HXw1"
#: magic, header bytes (u32), body bytes (u64), little-endian
PREFIX = struct.Struct("<4sIQ")
MAX_HEADER = 1 << 20
#: a body no reader is given a bound for may be this long (a unit's reader sets its own, from its spec)
DEFAULT_MAX_BODY = 1 << 28
DEFAULT_MAX_ROWS = 1 << 22
#: the most bytes a cluster counting unit's report files may hold together (``Report``)
MAX_REPORT = 1 << 26


# -- encoding -------------------------------------------------------------------------------------
def _pack(header: dict[str, Any], body: Sequence[bytes] = ()) -> bytes:
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    size = sum(len(b) for b in body)
    if len(head) > MAX_HEADER:
        raise WireError(f"a {header.get('kind')} frame's header of {len(head)} bytes is over the {MAX_HEADER} limit")
    return b"".join([PREFIX.pack(MAGIC, len(head), size), head, *body])


def _text_fields(kind: str, msg: Any, limits: dict[str, tuple[int, bool]]) -> bytes:
    """A frame of ``msg``'s text fields, each cleaned to its (limit, lines)."""
    return _pack({"kind": kind, **{k: clean(getattr(msg, k), n, lines) for k, (n, lines) in limits.items()}})


_FAILED_FIELDS = {
    "type": (128, False),
    "message": (MAX_TEXT, True),
    "kernel": (MAX_KEY, False),
    "configuration": (MAX_KEY, False),
    "status": (MAX_TEXT, True),
    "log": (MAX_LOG, True),
}


def _encode_add(msg: Add, cluster: bool) -> bytes:
    sd, sb = encode_table(msg.result.samples, CLUSTER_SAMPLE_TYPES if cluster else SAMPLE_TYPES)
    return _pack({"kind": "add", "samples": sd, "result": result_out(msg.result)}, sb)


def _encode_counted(msg: Counted) -> bytes:
    summary = {"summary": part_out(msg.summary)} if msg.summary is not None else {}
    return _pack({"kind": "counted", "entry": counted_out(msg.entry), **summary})


def _encode_warn(msg: Warn) -> bytes:
    line = int(msg.lineno) if 0 <= int(msg.lineno) < 1 << 31 else 0
    return _pack(
        {
            "kind": "warn",
            "category": clean(msg.category, 128),
            "message": clean(msg.message, lines=True),
            "lineno": line,
        }
    )


def _encode_unit(msg: UnitEnd) -> bytes:
    return _pack(
        {
            "kind": "unit",
            **{k: clean(getattr(msg, k), MAX_KEY) for k in ("worker", "host", "gpu")},
            "seconds": float(msg.seconds) if math.isfinite(msg.seconds) else 0.0,
            "extra": {clean(k, MAX_KEY): clean(v) for k, v in msg.extra.items()},
        }
    )


def _encode_report(msg: Report) -> bytes:
    bad = [p for p in msg.files if not REPORT_PATH.fullmatch(p)]
    if bad:
        raise WireError(f"a report file's path {shown(bad[0])} is not one a reader takes (REPORT_PATH)")
    names = sorted(msg.files)
    return _pack({"kind": "report", "files": [[p, len(msg.files[p])] for p in names]}, [msg.files[p] for p in names])


_ENCODERS: dict[type, Callable[[Any, bool], bytes]] = {
    Start: lambda m, _c: _text_fields("start", m, {"kernel": (MAX_KEY, False), "configuration": (MAX_KEY, False)}),
    Ask: lambda m, _c: _pack({"kind": "ask"}),
    Meta: lambda m, _c: _pack({"kind": "meta", "entries": {clean(k, MAX_KEY): clean(v) for k, v in m.entries.items()}}),
    Add: _encode_add,
    Update: lambda m, _c: _pack({"kind": "update", "rebiased": [rebiased_out(r) for r in m.rebiased]}),
    Counted: lambda m, _c: _encode_counted(m),
    Warn: lambda m, _c: _encode_warn(m),
    Done: lambda m, _c: _pack({"kind": "done", "stopped": bool(m.stopped)}),
    Failed: lambda m, _c: _text_fields("error", m, _FAILED_FIELDS),
    UnitEnd: lambda m, _c: _encode_unit(m),
    Report: lambda m, _c: _encode_report(m),
}


def encode(msg: Message, *, cluster: bool = False) -> bytes:
    """``msg`` as one frame (``cluster``: tables with the cluster columns, a cluster unit's)."""
    encoder = _ENCODERS.get(type(msg))
    if encoder is None:
        raise TypeError(f"not a wire message: {type(msg).__name__}")
    return encoder(msg, cluster)


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
    "report": (("files",), ()),
}
#: the kinds whose frames carry a body
_BODIES = ("add", "report")


def _header(head: bytes) -> tuple[str, dict[str, Any]]:
    """(kind, fields) of a frame's header: UTF-8 JSON, bounded, of a known kind with exactly its keys."""
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
    return kind, object_of(h, f"a {kind} frame", keys, optional)


def decode(
    head: bytes, body: memoryview | bytes, *, max_rows: int = DEFAULT_MAX_ROWS, cluster: bool = False
) -> Message:
    """One frame's header and body as its message; ``WireError`` when either is not what ``encode`` writes."""
    kind, h = _header(head)
    body = memoryview(body)
    if kind not in _BODIES and len(body):
        raise WireError(f"a {kind} frame carries a body of {len(body)} bytes; it has none")
    if kind == "report":
        return _report_in(h["files"], body)
    if kind == "update":
        return Update([rebiased_in(r) for r in list_of(h["rebiased"], "an update frame's results")])
    if kind != "add":
        return _plain(kind, h)
    st = CLUSTER_SAMPLE_TYPES if cluster else SAMPLE_TYPES
    cols, _n, off = decode_table(h["samples"], body, 0, st, "an add frame's samples", max_rows)
    msg = Add(result_in(h["result"], samples_of(cols, st)))
    if off != len(body):
        raise WireError(f"a {kind} frame's body has {len(body)} bytes; its tables declare {off}")
    return msg


def _report_in(value: Any, body: memoryview) -> Report:
    """A report's files: each a [path, size] pair of a path ``REPORT_PATH`` takes, named once, the
    sizes adding up to the body exactly."""
    files: dict[str, bytes] = {}
    offset = 0
    for pair in list_of(value, "a report frame's files"):
        if not isinstance(pair, list) or len(pair) != 2:
            raise WireError(f"a report frame's file must be a [path, size] pair; got {shown(pair)}")
        path = text_of(pair[0], "a report file's path", MAX_KEY, empty=False)
        if not REPORT_PATH.fullmatch(path) or path in files:
            raise WireError(
                f"a report file's path {shown(path)} is {'named twice' if path in files else 'not one below its folder'}"
            )
        size = int_of(pair[1], f"report file {shown(path)}'s size", 0, len(body) - offset)
        files[path] = bytes(body[offset : offset + size])
        offset += size
    if offset != len(body):
        raise WireError(f"a report frame's body has {len(body)} bytes; its files declare {offset}")
    return Report(files)


def _plain(kind: str, h: dict[str, Any]) -> Message:
    """The messages without a body."""
    if kind == "start":
        return Start(
            text_of(h["kernel"], "a start frame's kernel", MAX_KEY),
            text_of(h["configuration"], "a start frame's configuration", MAX_KEY),
        )
    if kind == "ask":
        return Ask()
    if kind == "meta":
        return Meta(strings_of(h["entries"], "a meta frame's entries"))
    if kind == "counted":
        return Counted(
            counted_in(h["entry"]),
            part_in(CounterSummary, h["summary"], "a counted summary") if "summary" in h else None,
        )
    if kind == "warn":
        return Warn(
            text_of(h["category"], "a warning's category", 128),
            text_of(h["message"], "a warning", lines=True),
            int_of(h["lineno"], "a warning's line", 0, (1 << 31) - 1),
        )
    if kind == "done":
        return Done(bool_of(h["stopped"], "a done frame's stopped"))
    if kind == "error":
        return Failed(
            text_of(h["type"], "an error's type", 128, empty=False),
            text_of(h["message"], "an error's message", lines=True),
            text_of(h["kernel"], "an error's kernel", MAX_KEY),
            text_of(h["configuration"], "an error's configuration", MAX_KEY),
            text_of(h["status"], "an error's status", lines=True),
            text_of(h["log"], "an error's log", MAX_LOG, lines=True),
        )
    return _unit_in(h)


def _unit_in(h: dict[str, Any]) -> UnitEnd:
    seconds = number_of(h["seconds"], "a unit's seconds")
    if not math.isfinite(seconds) or seconds < 0:
        raise WireError(f"a unit's seconds must be a finite number >= 0; got {shown(seconds)}")
    return UnitEnd(
        text_of(h["worker"], "a unit's worker", MAX_KEY),
        text_of(h["host"], "a unit's host", MAX_KEY),
        text_of(h["gpu"], "a unit's gpu", MAX_KEY),
        seconds,
        strings_of(h["extra"], "a unit's extra"),
    )


# -- streams --------------------------------------------------------------------------------------
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
    return {"max_rows": rows, "max_body": rows * row_bytes(CLUSTER_SAMPLE_TYPES) + (1 << 20)}


__all__ = [
    "Add",
    "Ask",
    "BOOL",
    "CLUSTER_SAMPLE_TYPES",
    "Counted",
    "DEFAULT_MAX_BODY",
    "Done",
    "FLOAT",
    "Failed",
    "FrameReader",
    "FrameWriter",
    "INT",
    "MAGIC",
    "MAX_HEADER",
    "MAX_ITEMS",
    "MAX_KEY",
    "MAX_REPORT",
    "MAX_TEXT",
    "Message",
    "Meta",
    "PREFIX",
    "Report",
    "SAMPLE_TYPES",
    "Start",
    "TEXT",
    "UNTYPED",
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
