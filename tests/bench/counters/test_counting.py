"""``hipexplore.bench.counters.counting``: the parent's side of the counter pass: which
configurations are counted, the backend a spec and device get (the host refuses in one line),
and the counted launches attributed to configurations by the manifest's order and names."""
from __future__ import annotations

import pytest

from hipexplore.bench import SweepSpec
from hipexplore.bench.counters import HOST_LINE, counted_configurations, counter_backend
from hipexplore.bench.counters.backends import CounterError, Launch
from hipexplore.bench.counters.counting import attribute
from hipexplore.errors import ConfigError
from hipexplore.schema import Configuration

from bench.counters.test_phase import dev  # noqa: F401 - the host device fixture (a small LLC, its own compile cache)

KIB, MIB = 1 << 10, 1 << 20


def test_counted_configurations_leave_out_the_reference_and_merge_timers() -> None:
    spec = SweepSpec(kernels=("triad",), sizes=(MIB,), rotating=(1, "auto"), flush=("none", "l2-write"),
                     timers=("events", "in-kernel"))
    got = counted_configurations(spec)
    assert got == [Configuration("triad", MIB, r, f) for r in ("1", "auto") for f in ("none", "l2-write")]
    with pytest.raises(ConfigError, match="no configuration to count"):
        counted_configurations(spec, [Configuration("triad", MIB, "1", "cold-reference")])


def test_the_host_refuses_in_one_line(dev) -> None:
    for counters in (True, "ncu", "rocprofv3"):
        backend, why = counter_backend(SweepSpec(kernels=("triad",), sizes=(64 * KIB,), counters=counters), dev)
        assert backend is None and "\n" not in why
    assert counter_backend(SweepSpec(counters=True), dev)[1] == HOST_LINE
    assert counter_backend(SweepSpec(counters="ncu"), dev)[1] == "ncu counts NVIDIA GPUs; the device is host:0"
    assert counter_backend(SweepSpec(counters="cupti"), dev)[1] == "CUPTI counts NVIDIA GPUs; the device is host:0"


def _entry(kernel: str, entry: str, warmup: int, count: int) -> dict:
    return {"kernel": kernel, "entry": entry, "size_bytes": MIB, "rotating_requested": "1", "rotating": 1, "flush": "none",
            "warmup": warmup, "count": count}


def test_attribution_by_order_and_name() -> None:
    entries = [_entry("triad", "triad", 4, 2), _entry("stencil", "stencil2d", 6, 3)]
    counted = [Launch("triad", {"i": i}) for i in range(2)] + [Launch("stencil2d", {"i": i}) for i in range(3)]
    owned, note = attribute(counted, entries, False, "ncu")
    assert [[x.values["i"] for x in o] for o in owned] == [[0, 1], [0, 1, 2]] and note == ""
    whole = [Launch("triad", {"i": i}) for i in range(6)] + [Launch("stencil2d", {"i": i}) for i in range(9)]
    owned, note = attribute(whole, entries, False, "ncu")  # the warm-up reported although not asked: by the total
    assert [[x.values["i"] for x in o] for o in owned] == [[4, 5], [6, 7, 8]] and "before the range" in note
    with pytest.raises(CounterError, match="reported 4 launch"):
        attribute(counted[:4], entries, False, "ncu")
    with pytest.raises(CounterError, match="expected kernel 'stencil2d', got \\['triad'\\]"):
        attribute([Launch("triad")] * 5, entries, False, "ncu")
