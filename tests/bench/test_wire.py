"""hipexplore.bench.wire: what a sweep worker may send its parent, as bytes and back.

Every message round-trips through ``encode`` and ``FrameReader`` (fed a byte at a time too: a
frame is decoded only once all of it is in); every frame that is not one ``encode`` writes is one
``WireError`` line, its lengths checked before a byte of its header or body is held; text with a
control character is escaped by the writer and refused by the reader. The attacks through a real
worker: tests/security/test_security_channel.py."""

from __future__ import annotations

import json
import math
import pickle
import struct

import numpy as np
import pytest

from hipexplore.bench import wire
from hipexplore.bench.io import summary_row
from hipexplore.bench.outcome import Bias, Rebiased
from hipexplore.schema import CLUSTER_COLUMNS, SAMPLE_COLUMNS, SUMMARY_COLUMNS, Configuration

from .made import but, result


C = Configuration("t", 16384, "1", "none")


def add(n: int = 4, cluster: bool = False, c: Configuration = C, **parts) -> wire.Add:
    return wire.Add(but(result(c, n=n, cluster=cluster), **parts))


def entry() -> dict:
    return {
        "kernel": "triad",
        "entry": "triad",
        "size_bytes": 1024,
        "n": 256,
        "rotating_requested": "auto",
        "rotating": 2,
        "flush": "none",
        "warmup": 1,
        "count": 2,
        "timed": 2,
        "input_bytes": 2048,
        "footprint_bytes": 3072,
        "marker": "none",
        "marker_status": "",
        "plan_note": "",
        "launches": [(0, 0), (1, -1)],
        "values": [{"dram__bytes_read.sum": 1.0}, {"dram__bytes_read.sum": math.nan}],
    }


def messages() -> list:
    return [
        wire.Start("triad", "size=1024 rotating=1 flush=none"),
        wire.Ask(),
        wire.Meta({"warmup.clock": "stable"}),
        add(bias=Bias(2e-6, math.nan, -0.6, -0.4), warning="noisy"),
        wire.Update([Rebiased(C, Bias(), "w"), Rebiased(C._replace(kernel="copy"), Bias(1.0, 0.5, 0.4, 0.6), "")]),
        wire.Counted(entry()),
        wire.Warn("CacheWarning", "two\nlines", 12),
        wire.Done(False),
        wire.Failed("KernelFault", "m", "triad", "size=1", "SIGSEGV", "log\nlines"),
    ]


def test_every_message_round_trips_whole_and_a_byte_at_a_time():
    blob = b"".join(wire.encode(m) for m in messages())
    whole = wire.decode_all(blob)
    reader = wire.FrameReader()
    bytewise = []
    for i in range(len(blob)):
        reader.feed(blob[i : i + 1])
        while (m := reader.next()) is not None:
            bytewise.append(m)
    for got in (whole, bytewise):
        assert [type(m) for m in got] == [type(m) for m in messages()]
        sent, came = messages()[3].result, got[3].result
        assert list(came.samples.columns) == list(SAMPLE_COLUMNS) and came.samples["time_s"].dtype == np.float64
        for c in SAMPLE_COLUMNS:
            assert came.samples[c].tolist() == sent.samples[c].tolist(), c
        assert came.statistics.n == 4 and isinstance(came.statistics.n, int) and math.isnan(came.bias.bias)
        assert (came.configuration, came.identity, came.plan, came.floor) == (
            sent.configuration,
            sent.identity,
            sent.plan,
            sent.floor,
        )
        assert (
            repr(came.summaries) == repr(sent.summaries)
            and came.warning == "noisy"
            and came.measurement.n == sent.measurement.n == 2
        )
        row = summary_row(came)
        assert set(SUMMARY_COLUMNS) <= set(row) and row["median_s"] == 1e-6
        assert [r.configuration.kernel for r in got[4].rebiased] == ["t", "copy"] and got[4].rebiased[
            1
        ].bias.bias == 0.5
        assert got[5].entry["launches"] == [(0, 0), (1, -1)] and math.isnan(
            got[5].entry["values"][1]["dram__bytes_read.sum"]
        )
        assert got[6] == wire.Warn("CacheWarning", "two\nlines", 12) and got[7] == wire.Done(False)
        assert got[8] == messages()[8]


def test_a_cluster_units_tables_carry_the_cluster_columns():
    got = wire.decode_all(wire.encode(add(2, cluster=True), cluster=True), cluster=True)[0].result
    assert (
        list(got.samples.columns) == [*SAMPLE_COLUMNS, *CLUSTER_COLUMNS] and summary_row(got)["worker"] == "tls://w:1"
    )
    with pytest.raises(wire.WireError, match="text columns"):  # a unit's table where a cluster's is expected
        wire.decode_all(wire.encode(add()), cluster=True)


def test_text_with_control_characters_is_escaped_by_the_writer_and_refused_by_the_reader():
    got = wire.decode_all(wire.encode(wire.Warn("UserWarning", "\x1b[1;32mok\u202e\ud800", 1)))[0]
    assert got.message == "\\x1b[1;32mok\\u202e\\ud800"
    header = json.dumps({"kind": "warn", "category": "UserWarning", "message": "\x1b[31mred", "lineno": 1}).encode()
    with pytest.raises(wire.WireError, match="escape"):
        wire.decode_all(wire.PREFIX.pack(wire.MAGIC, len(header), 0) + header)
    long = wire.decode_all(wire.encode(wire.Meta({"verify.k.1": "x" * (wire.MAX_TEXT + 10)})))[0]
    assert len(long.entries["verify.k.1"]) <= wire.MAX_TEXT


def frame(header: dict | bytes, body: bytes = b"") -> bytes:
    head = header if isinstance(header, bytes) else json.dumps(header).encode()
    return wire.PREFIX.pack(wire.MAGIC, len(head), len(body)) + head + body


@pytest.mark.parametrize(
    "blob, why",
    [
        (struct.pack("!i", 5) + pickle.dumps(("done", False)), "is not a frame"),
        (struct.pack("!i", -5), "is not a frame"),
        (wire.PREFIX.pack(wire.MAGIC, 2**32 - 5, 0), "declares a header of 4294967291 bytes"),
        (wire.PREFIX.pack(wire.MAGIC, 16, 2**64 - 1), "declares a body of 18446744073709551615 bytes"),
        (wire.PREFIX.pack(wire.MAGIC, 0, 0), "declares a header of 0 bytes"),
        (frame(pickle.dumps(SystemExit(0))), "not UTF-8|not JSON"),
        (frame({"kind": "exec", "code": "1"}), "unknown kind 'exec'"),
        (frame({"kind": "done", "stopped": 0}), "must be true or false"),
        (frame({"kind": "done", "stopped": False, "also": 1}), "has keys"),
        (frame({"kind": "done", "stopped": False}, b"x"), "carries a body of 1 bytes"),
        (frame(b'{"kind": "done", "stopped": NaN}'), "not a JSON number"),
        (frame(b"[" * 100 + b"]" * 100), "nested more than"),
        (frame({"kind": "warn", "category": "UserWarning", "message": "m", "lineno": 10**30}), "digits"),
        (
            frame(
                {
                    "kind": "error",
                    "type": "SystemExit",
                    "message": 0,
                    "kernel": "",
                    "configuration": "",
                    "status": "",
                    "log": "",
                }
            ),
            "must be text",
        ),
    ],
)
def test_a_frame_that_is_not_ours_is_one_line(blob, why):
    with pytest.raises(wire.WireError, match=why) as err:
        wire.decode_all(blob)
    assert "\n" not in str(err.value)


def test_a_tables_declared_shape_must_be_the_schemas_and_the_body_exactly_its_arrays():
    good = wire.encode(add(3))
    _magic, hlen, blen = wire.PREFIX.unpack_from(good)
    head = json.loads(good[wire.PREFIX.size : wire.PREFIX.size + hlen])
    body = good[wire.PREFIX.size + hlen :]
    cases = []
    h = json.loads(json.dumps(head))
    h["samples"]["arrays"][0][1] = "<f8"  # an int column declared float
    cases.append((frame(h, body), "declares arrays"))
    h = json.loads(json.dumps(head))
    h["samples"]["rows"] = 10**6  # more rows than the body holds
    cases.append((frame(h, body), "needs .* bytes"))
    cases.append((frame(head, body + bytes(8)), "tables declare"))  # bytes left over
    h = json.loads(json.dumps(head))
    h["result"]["statistics"] = {}
    cases.append((frame(h, body), "has keys"))
    h = json.loads(json.dumps(head))
    h["result"]["summaries"]["statistics"]["n"] = 1.5  # a field not of its declared type
    cases.append((frame(h, body), "statistics n must be an integer"))
    h = json.loads(json.dumps(head))
    h["result"]["summaries"]["exec"] = {}  # a summary no result has
    cases.append((frame(h, body), "expected some of"))
    h = json.loads(json.dumps(head))
    h["result"]["configuration"]["timer"] = "sleep"
    cases.append((frame(h, body), "timer 'sleep' is unknown"))
    h = json.loads(json.dumps(head))
    del h["samples"]["text"]["kernel"]
    cases.append((frame(h, body), "text columns"))
    bad_bool = bytearray(body)
    first_bool = 3 * 8 * sum(1 for t in wire.SAMPLE_TYPES.values() if t in (wire.INT, wire.FLOAT))
    bad_bool[first_bool] = 7
    cases.append((frame(head, bytes(bad_bool)), "neither 0 nor 1"))
    for blob, why in cases:
        with pytest.raises(wire.WireError, match=why):
            wire.decode_all(blob)
    assert len(wire.decode_all(frame(head, body))) == 1


def test_bounds_come_from_the_spec_and_a_reader_holds_no_more_than_them():
    from hipexplore.bench.spec import SweepSpec
    from hipexplore.bench.stats import StopRule

    lim = wire.limits(SweepSpec(kernels=("triad",), sizes=("16KiB",), stop=StopRule(iterations=500_000)))
    assert lim["max_rows"] >= 500_000 and lim["max_body"] < 1 << 30
    reader = wire.FrameReader(max_body=100)
    reader.feed(wire.PREFIX.pack(wire.MAGIC, 10, 101))
    with pytest.raises(wire.WireError, match="at most 100"):
        reader.next()
    with pytest.raises(wire.WireError, match="ends inside a frame"):
        wire.decode_all(wire.encode(wire.Done(True))[:-1])


def test_every_schema_column_has_a_declared_type():
    """A column added to schema.py must be given its type: a sample column here (text, integer, float or
    boolean), a summary column as the field of a result's part (``bench.outcome``)."""
    assert list(wire.SAMPLE_TYPES) == list(SAMPLE_COLUMNS)
    assert [c for c, t in wire.SAMPLE_TYPES.items() if t == wire.UNTYPED] == []
    assert set(summary_row(result(C, cluster=True))) == {*SUMMARY_COLUMNS, *CLUSTER_COLUMNS}


def test_a_long_kernel_name_travels_whole():
    name = "k" * 300  # a name may be long (issue 47's 300-character --source name)
    got = wire.decode_all(wire.encode(wire.Start(name, "size=1")) + wire.encode(add(1, c=C._replace(kernel=name))))
    assert (
        got[0].kernel == name
        and got[1].result.configuration.kernel == name
        and got[1].result.samples["kernel"][0] == name
    )


def test_a_counted_entry_carries_the_summary_its_worker_made_as_data():
    """A worker that counted in its own process (CUPTI) sends each configuration's counter summary
    beside its entry: ``schema.COUNTER_COLUMNS`` as numbers and text (NaN as null), never an object;
    one of another shape, a text with a control character or a count that is no integer is refused."""
    from hipexplore.bench.counters.summary import CounterSummary
    from hipexplore.schema import COUNTER_COLUMNS

    summary = CounterSummary(
        1.5e6,
        2.0,
        math.nan,
        2048,
        0.95,
        "cold",
        "kept",
        "",
        "CUPTI range profiler (libcupti.so.13)",
        12,
        "the L2 hit rate is not counted",
    )
    (got,) = wire.decode_all(wire.encode(wire.Counted(entry(), summary)))
    again = got.summary  # typed on both sides: no dict of columns between the worker's summary and the parent's
    assert isinstance(again, CounterSummary) and isinstance(again.counter_launches, int)
    assert list(again.columns()) == list(COUNTER_COLUMNS) and math.isnan(again.l2_hit_rate)
    assert again == CounterSummary.of_columns({**summary.columns(), "l2_hit_rate": again.l2_hit_rate})
    assert wire.decode_all(wire.encode(wire.Counted(entry())))[0].summary is None  # a report's backend: none sent
    frame = json.loads(wire.encode(wire.Counted(entry(), summary))[wire.PREFIX.size :].decode())
    for bad, why in (
        ({k: v for k, v in frame["summary"].items() if k != "cold_fraction"}, "a counted summary has keys"),
        ({**frame["summary"], "cache_state": "cold\x1b[2J"}, "summary cache_state"),
        ({**frame["summary"], "counter_launches": 1.5}, "summary counter_launches must be an integer"),
    ):
        head = json.dumps({**frame, "summary": bad}).encode()
        with pytest.raises(wire.WireError, match=why):
            wire.decode_all(wire.PREFIX.pack(wire.MAGIC, len(head), 0) + head)


def test_a_workers_counter_summary_reaches_the_parents_channel_as_the_same_typed_value():
    """The worker's channel writes a ``CounterSummary`` to a real pipe and the parent's delivery hands
    the counting channel a ``CounterSummary`` equal to it: no dict of columns on either side (the cold
    fraction's walk, docs/guide/walks.md)."""
    import os

    from hipexplore.bench.counters.counting import CountChannel
    from hipexplore.bench.counters.summary import CounterSummary
    from hipexplore.bench.worker import _deliver
    from hipexplore.bench.worker_main import _PipeChannel

    summary = CounterSummary(1.5e6, 2.0, 0.25, 2048, 0.95, "cold", "kept", "", "CUPTI", 12, "")
    r, w = os.pipe()
    try:
        _PipeChannel(None, w).counted(entry(), summary)  # type: ignore[arg-type]
        os.close(w)
        w = -1
        blob = b""
        while chunk := os.read(r, 1 << 16):
            blob += chunk
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    (msg,) = wire.decode_all(blob)
    assert isinstance(msg.summary, CounterSummary) and msg.summary == summary
    channel = CountChannel()
    _deliver(msg, channel, None, None)  # type: ignore[arg-type]
    (got,) = channel.summaries.values()
    assert got == summary and type(got) is CounterSummary
