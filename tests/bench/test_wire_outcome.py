"""``hipexplore.bench.wire_outcome``: a unit's outcome as checked JSON data and back. A result's
parts travel as exactly their fields, each of its declared type (read from the part's own dataclass
fields, NaN as null), its configuration with a timer of the vocabulary; a rebiased result and a
counting unit's entry the same; nothing else is taken, and every refusal is one line."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from hipexplore.bench.outcome import Bias, CounterSummary, Rebiased, Rotation, Statistics
from hipexplore.bench.wire_outcome import (
    COUNTED_INTS,
    COUNTED_TEXTS,
    RESULT_KEYS,
    configuration_in,
    configuration_out,
    counted_in,
    counted_out,
    part_in,
    part_out,
    rebiased_in,
    rebiased_out,
    result_in,
    result_out,
)
from hipexplore.bench.wire_values import WireError
from hipexplore.schema import Configuration, Timer

from .made import result

C = Configuration("t", 16384, "auto", "l2-write", Timer.IN_KERNEL)


def _json(value):
    """What the frame's header holds: JSON text read back (no NaN: the writer wrote null)."""
    return json.loads(json.dumps(value, allow_nan=False))


def test_every_part_round_trips_by_its_declared_field_types():
    parts = [
        Bias(1e-6, math.nan, -0.5, 0.5),
        Rotation("auto", 3, 1 << 30, 3 << 14),
        Statistics(4, 1e-6, 1e-6, 0.5e-6, 0.5e-6, 1.5e-6, 0.1, 0.2, 0.9e-6, 1.1e-6, 0, math.nan),
        CounterSummary(1.5e6, 2.0, math.nan, 2048, 0.95, "cold", "kept", "", "ncu", 12, ""),
    ]
    for p in parts:
        back = part_in(type(p), _json(part_out(p)), "a part")
        assert type(back) is type(p)
        for f in dataclasses.fields(p):
            a, b = getattr(p, f.name), getattr(back, f.name)
            assert (isinstance(a, float) and math.isnan(a) and math.isnan(b)) or a == b, f.name
    with pytest.raises(WireError, match="a part n must be an integer"):
        part_in(Statistics, {**_json(part_out(parts[2])), "n": 4.5}, "a part")
    with pytest.raises(WireError, match="has keys"):
        part_in(Bias, {**_json(part_out(parts[0])), "extra": 1}, "a part")


def test_a_configuration_and_a_result_round_trip_and_a_timer_outside_the_vocabulary_is_refused():
    assert configuration_in(_json(configuration_out(C)), "a configuration") == C
    with pytest.raises(WireError, match="timer 'sleep' is unknown"):
        configuration_in({**configuration_out(C), "timer": "sleep"}, "a configuration")
    r = result(C._replace(timer=Timer.EVENTS), n=3)
    head = _json(result_out(r))
    assert tuple(head) == RESULT_KEYS
    back = result_in(head, r.samples)
    assert back.configuration == r.configuration and back.plan == r.plan and back.warning == "noisy"
    assert back.measurement.median == pytest.approx(r.measurement.median)  # made again from the samples
    assert [s.NAME for s in back.summaries] == [s.NAME for s in r.summaries]
    with pytest.raises(WireError, match="expected some of"):
        result_in({**head, "summaries": {"exec": {}}}, r.samples)


def test_a_rebiased_result_and_a_counted_entry_round_trip_and_nothing_else_is_taken():
    rb = Rebiased(C, Bias(2e-6, 0.5, 0.4, 0.6), "w")
    assert rebiased_in(_json(rebiased_out(rb))) == rb
    entry = {
        **{k: 1 for k in COUNTED_INTS},
        **{k: "x" for k in COUNTED_TEXTS},
        "launches": [(0, 0), (1, -1)],
        "values": [{"dram__bytes_read.sum": 1.0}, {"dram__bytes_read.sum": math.nan}],
    }
    back = counted_in(_json(counted_out(entry)))
    assert back["launches"] == [(0, 0), (1, -1)] and math.isnan(back["values"][1]["dram__bytes_read.sum"])
    assert {k: back[k] for k in (*COUNTED_INTS, *COUNTED_TEXTS)} == {
        k: entry[k] for k in (*COUNTED_INTS, *COUNTED_TEXTS)
    }
    out = _json(counted_out(entry))
    for bad, why in (
        ({**out, "launches": [[0, 0, 0]]}, r"a \[set, position\] pair"),
        ({**out, "count": -1}, "counted count must be an integer"),
        ({**out, "values": [{"": 1.0}]}, "a counter's name"),
        ({**out, "pickle": "x"}, "has keys"),
    ):
        with pytest.raises(WireError, match=why):
            counted_in(bad)
