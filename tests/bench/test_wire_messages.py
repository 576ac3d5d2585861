"""``hipexplore.bench.wire_messages``: the vocabulary a unit speaks, each message a typed value that
``bench.wire`` encodes and reads back equal; a cluster counting unit's ``Report`` (a profiler's files)
named only by paths that stay below its folder, its files' sizes adding up to the frame's body; an
error frame's type shown only as an identifier."""

from __future__ import annotations

import json
import typing

import pytest

from hipexplore.bench import wire
from hipexplore.bench.wire_messages import (
    REPORT_PATH,
    Done,
    Failed,
    Message,
    Meta,
    Report,
    Start,
    UnitEnd,
    Warn,
    type_name,
)


def test_every_message_type_is_one_the_wire_encodes():
    for cls in typing.get_args(Message):
        assert cls in wire._ENCODERS, cls.__name__


def test_plain_messages_read_back_equal():
    for msg in (
        Start("triad", "size=1"),
        Meta({"verify.k.1": "ok"}),
        Warn("UserWarning", "a\nb", 3),
        Done(True),
        Failed("KernelFault", "m", "k", "c", "SIGSEGV", "log"),
        UnitEnd("tls://w:1", "h", "0", 1.5, {"x": "y"}),
    ):
        assert wire.decode_all(wire.encode(msg)) == [msg]


def test_a_report_carries_its_files_as_bytes_under_paths_below_its_folder():
    files = {
        "ncu.log": b'"ID","Kernel Name"\n1,"triad"\n',
        "rocprof/host-1/42_counter_collection.csv": b"\x00\xff",
        "e": b"",
    }
    (got,) = wire.decode_all(wire.encode(Report(files)))
    assert got == Report(files)
    for bad in ("../x", "/etc/passwd", ".hidden", "a//b", "a/./b", "a/../b", "a\\b", "a b", "", "x/" * 16 + "x"):
        assert not REPORT_PATH.fullmatch(bad), bad
        with pytest.raises(wire.WireError, match="REPORT_PATH"):
            wire.encode(Report({bad: b"x"}))


def _frame(files, body: bytes) -> bytes:
    head = json.dumps({"kind": "report", "files": files}).encode()
    return wire.PREFIX.pack(wire.MAGIC, len(head), len(body)) + head + body


@pytest.mark.parametrize(
    "files, body, why",
    [
        ([["../escape", 1]], b"x", "not one below its folder"),
        ([["a", 1], ["a", 1]], b"xy", "named twice"),
        ([["a", 2]], b"x", r"size must be an integer in \[0, 1\]"),
        ([["a", 1]], b"xy", "its files declare 1"),
        ([["a"]], b"", r"a \[path, size\] pair"),
        ([["a\x1b[2J", 0]], b"", "escape"),
    ],
)
def test_a_report_frame_that_is_not_ours_is_one_line(files, body, why):
    with pytest.raises(wire.WireError, match=why) as err:
        wire.decode_all(_frame(files, body))
    assert "\n" not in str(err.value)


def test_an_error_type_is_shown_only_as_an_identifier():
    assert (
        type_name("KernelFault") == "KernelFault"
        and type_name("numpy.linalg.LinAlgError") == "numpy.linalg.LinAlgError"
    )
    assert type_name("x\x1b[2J") == "?" and type_name("1abc") == "?" and type_name("") == "?"
