"""``hipexplore.bench.counters.record``: the cold/partial/warm rule and its thresholds, what a
configuration promises (cold or not) and whether the counts kept it, the inputs' bytes from the
arguments' roles, and the counter columns joined to the summary's rows."""

from __future__ import annotations

import math

import pandas as pd

from hipexplore.bench.counters import (
    COLD_AT,
    COUNTER_COLUMNS,
    RECORD_COLUMNS,
    WARM_AT,
    asks_cold,
    cache_state,
    input_bytes,
    join_summary,
    promise_check,
)
from hipexplore.bench.counters.record import make_record
from hipexplore.kernels import catalog, user_kernel
from hipexplore.schema import Configuration

KIB, MIB = 1 << 10, 1 << 20


def test_state_rule_thresholds() -> None:
    assert (COLD_AT, WARM_AT) == (0.9, 0.1)
    assert [cache_state(x) for x in (1.0, 0.9, 0.8999, 0.5, 0.1001, 0.1, 0.0)] == [
        "cold",
        "cold",
        "partial",
        "partial",
        "partial",
        "warm",
        "warm",
    ]
    assert cache_state(1.4) == "cold"  # over-fetch: more than the inputs read is still cold
    assert cache_state(math.nan) == "n/a"


def test_which_configurations_promise_cold_and_the_flag() -> None:
    assert asks_cold("1", "l2-write") == "flush l2-write" and asks_cold("4", "l2-read") == "flush l2-read"
    assert asks_cold(" AUTO ", "none") == "rotating auto"
    assert asks_cold("5", "none") == "" and asks_cold("1", "icache") == "" and asks_cold("1", "inline-icache") == ""
    assert asks_cold("1", "l3-magic") == ""  # a recorded flush name this version does not know promises nothing
    assert promise_check("5", "none", 0.0) == ("", "")
    assert promise_check("auto", "none", 0.97) == ("kept", "")
    state, line = promise_check("auto", "none", 0.04, 85_000, 2 * MIB)
    assert state == "broken"
    assert line.startswith("asked cold (rotating auto) but counted warm: cold fraction 0.04") and "\n" not in line
    assert "2 MiB of inputs" in line
    assert promise_check("1", "l2-write", 0.5)[1].startswith("asked cold (flush l2-write) but counted partial")
    assert promise_check("auto", "l2-write", math.nan) == ("", "")  # no inputs: neither kept nor broken
    # inputs, but no DRAM bytes counted (a backend without the metric): unknown, and said, not silent
    assert promise_check("auto", "none", math.nan, math.nan, 2 * MIB) == (
        "unverified",
        "asked cold (rotating auto) but its DRAM bytes were not counted: the state is unknown",
    )
    assert promise_check("5", "none", math.nan, math.nan, 2 * MIB) == ("", "")  # not asked: nothing to verify


def test_the_cold_promise_is_checked_per_launch_not_only_on_the_mean() -> None:
    """A kernel that skips its reads on one launch in twenty averages 0.95 (cold): the launch that
    read nothing breaks the promise, and the line says how many launches and the least (issue 51)."""
    inputs = 2 * MIB
    each = [1.0] * 19 + [0.0]
    state, line = promise_check("1", "l2-read", sum(each) / 20, 0.95 * inputs, inputs, each)
    assert state == "broken" and line == (
        "asked cold (flush l2-read) but 1 of 20 counted launches read less than 0.9 of "
        "their inputs from DRAM (the least 0.00; the mean 0.95 hides them)"
    )
    assert promise_check("1", "l2-read", 1.0, inputs, inputs, [1.0001] * 12) == ("kept", "")
    assert promise_check("5", "none", 0.5, inputs / 2, inputs, [0.0, 1.0]) == ("", "")  # not asked: nothing to break
    # the record takes each launch's own fraction
    launches = [{"dram_read_bytes": float(inputs), "dram_write_bytes": 0.0}] * 19 + [
        {"dram_read_bytes": 0.0, "dram_write_bytes": 0.0}
    ]
    rec = make_record(
        Configuration("k", MIB, "1", "l2-read"), rotating=1, backend="b", launches=launches, warmup=0, inputs=inputs
    )
    assert (
        rec.cold_promise == "broken" and "1 of 20 counted launches" in rec.counter_warning and rec.cache_state == "cold"
    )


def test_input_bytes_of_catalog_kernels() -> None:
    n = catalog.get("triad").elements(MIB)
    assert input_bytes(catalog.get("triad"), n) == 2 * MIB  # b and c in; a out
    assert input_bytes(catalog.get("copy"), n) == MIB
    assert input_bytes(catalog.get("fill"), n) == 0  # nothing read: no state
    assert input_bytes(catalog.get("flush-l2-read"), 1024) == 16 * 1024 + 0  # buf in (4*n u32), sink out


def test_input_bytes_follow_roles_and_counts_of_a_source_kernel(tmp_path) -> None:
    src = tmp_path / "k.cu"
    src.write_text(
        'extern "C" __global__ void k(float* o, const float* a, double* acc, const int* idx, int rows, int cols) {}\n'
    )
    k = user_kernel(
        str(src),
        "k",
        "out:o:f32[rows*cols],in:a:f32[rows*cols],inout:acc:f64[rows],in:idx:i32[17],rows:i32=n//64,cols:i32=64",
        register_it=False,
    )
    n = k.elements(MIB)  # 262144 floats: rows 4096, cols 64
    assert input_bytes(k, n) == 4 * n + 8 * 4096 + 4 * 17  # a + acc (inout) + idx; o is not read


def test_join_summary_adds_counters_to_both_timers_not_the_reference() -> None:
    from hipexplore.bench.counters.record import make_record, records_frame

    rec = make_record(
        Configuration("triad", MIB, "auto", "none"),
        rotating=40,
        backend="ncu 2025.3.1",
        launches=[{"dram_read_bytes": 2 * MIB, "dram_write_bytes": MIB, "l2_hit_rate": 0.3}] * 2,
        warmup=40,
        inputs=2 * MIB,
    )
    assert (rec.cold_fraction, rec.cache_state, rec.cold_promise) == (1.0, "cold", "kept")
    summary = pd.DataFrame(
        {
            "kernel": ["triad"] * 3,
            "size_bytes": [MIB] * 3,
            "rotating_requested": ["auto", "auto", "1"],
            "rotating": [40, 40, 1],
            "flush": ["none", "none", "cold-reference"],
            "timer": ["events", "in-kernel", "events"],
            "median_s": [1e-6, 2e-6, 3e-6],
        }
    )
    joined = join_summary(summary, records_frame([rec]))
    assert list(joined["cache_state"]) == ["cold", "cold", ""] and list(joined["rotating"]) == [40, 40, 1]
    assert set(RECORD_COLUMNS) - set(joined.columns) == set() and set(COUNTER_COLUMNS) <= set(RECORD_COLUMNS)
