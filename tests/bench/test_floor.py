"""The launch floor (bench.floor): an empty kernel timed like the kernel under test, reported as
``floor_s`` and ``net_median_s`` on events rows. Run on the real host device (where the floor is the
ctypes call around an empty C function) and, marked ``gpu``, on a CUDA device."""

from __future__ import annotations

import math

import numpy as np
import pytest

import hipexplore as hx
from hipexplore.bench.floor import FLOOR_KERNEL, floor_columns, measure_floor, wants_floor
from hipexplore.bench.spec import SweepSpec
from hipexplore.devices import get_device
from hipexplore.errors import ConfigError
from hipexplore.kernels import catalog


def test_the_floor_kernel_is_internal_and_not_offered_for_benchmarking():
    assert FLOOR_KERNEL in catalog.names() and FLOOR_KERNEL not in catalog.user_names()


def test_floor_columns_subtract_on_events_rows_only():
    assert floor_columns(2e-6, 5e-6, "events") == {"floor_s": 2e-6, "net_median_s": pytest.approx(3e-6)}
    for got in (
        floor_columns(2e-6, 5e-6, "in-kernel"),
        floor_columns(None, 5e-6, "events"),
        floor_columns(math.nan, 5e-6, "events"),
    ):
        assert math.isnan(got["floor_s"]) and math.isnan(got["net_median_s"])


def test_the_floor_is_on_by_default_on_a_gpu_only():
    host = get_device("host")
    assert wants_floor(None, host) is False and wants_floor(True, host) is True and wants_floor(False, host) is False

    class Gpu:
        kind = "cuda"

    assert wants_floor(None, Gpu()) is True and wants_floor(False, Gpu()) is False


@pytest.mark.parametrize("bad", [1, "yes", 0.0])
def test_spec_refuses_a_floor_that_is_not_a_bool_or_none(bad):
    with pytest.raises(ConfigError, match=r"floor must be True, False or None .* got "):
        SweepSpec(kernels=("triad",), sizes=(4096,), floor=bad)


def test_measure_floor_on_the_host_reads_the_empty_call_well_below_a_real_kernel():
    dev = get_device("host")
    floor = measure_floor(dev, None, samples=40)
    assert 0 < floor < 200e-6  # an empty C call through ctypes: microseconds, not a kernel's time
    res = hx.sweep("triad", ["4MiB"], [1], ["none"], device="host", iterations=8, reference=False, progress=False)
    assert res.summary["median_s"].iloc[0] > 5 * floor  # 4 MiB of triad is far above the empty call


def test_a_host_sweep_with_the_floor_reports_it_per_flush_and_subtracts_it():
    res = hx.sweep(
        "triad",
        ["16KiB", "64KiB"],
        [1],
        ["none", "l2-read"],
        device="host",
        iterations=12,
        units=1,
        reference_samples=8,
        timers=("events", "in-kernel"),
        floor=True,
        progress=False,
    )
    s = res.summary
    ev = s[s.timer == "events"]
    assert len(ev) == 6 and np.isfinite(ev["floor_s"]).all() and (ev["floor_s"] > 0).all()
    np.testing.assert_allclose(ev["net_median_s"], ev["median_s"] - ev["floor_s"], rtol=0, atol=0)
    for flush, g in ev.groupby("flush"):  # one floor per flush mode and process, the same at every size
        want = "l2-read" if flush == "cold-reference" else flush
        assert g["floor_s"].nunique() == 1
        assert g["floor_s"].iloc[0] == pytest.approx(float(res.metadata[f"floor.{want}.median_s"]), rel=1e-5)
    assert s[s.timer == "in-kernel"][["floor_s", "net_median_s"]].isna().all().all()
    assert "floor-empty" not in set(res.samples["kernel"])  # the floor is a calibration, not a configuration


def test_a_host_sweep_leaves_the_floor_out_by_default_and_passes_merge_it():
    res = hx.sweep("triad", ["16KiB"], [1], ["none"], device="host", iterations=8, reference=False, progress=False)
    assert res.summary[["floor_s", "net_median_s"]].isna().all().all()
    assert not any(k.startswith("floor.") for k in res.metadata)
    merged = hx.sweep(
        "triad",
        ["16KiB"],
        [1],
        ["none"],
        device="host",
        iterations=12,
        units=3,
        reference=False,
        floor=True,
        progress=False,
    )
    row = merged.summary.iloc[0]
    assert row.passes == 3 and row.floor_s > 0 and row.net_median_s == pytest.approx(row.median_s - row.floor_s)


def test_the_cli_shows_the_floor_column_only_when_a_floor_was_taken(capsys):
    from hipexplore.cli import main

    assert (
        main(
            [
                "bench",
                "triad",
                "--device",
                "host",
                "--size",
                "256KiB",
                "--iterations",
                "8",
                "--no-reference",
                "--no-progress",
                "--floor",
                "on",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("kernel "))  # the table; its notes follow it
    header, row = lines[at : at + 2]
    assert "floor_us" in header
    import re

    # median, [interval], floor; a noisy run (a loaded machine) can put the interval below zero (issue 26.6)
    m = re.search(r"([\d.]+)\s+\[[-\d., ]+\]\s+([\d.]+)\s", row)
    assert m, row
    median_us, floor_us = float(m.group(1)), float(m.group(2))
    assert 0 < floor_us < median_us
    assert (
        main(
            [
                "bench",
                "triad",
                "--device",
                "host",
                "--size",
                "256KiB",
                "--iterations",
                "8",
                "--no-reference",
                "--no-progress",
            ]
        )
        == 0
    )
    assert "floor_us" not in capsys.readouterr().out


def test_the_report_table_carries_the_floor_in_the_median_unit():
    from hipexplore.report.dashboard import summary_table

    res = hx.sweep(
        "triad",
        ["16KiB"],
        [1],
        ["none", "l2-read"],
        device="host",
        iterations=8,
        reference=False,
        floor=True,
        progress=False,
    )
    t = summary_table(res.summary)
    unit = next(c for c in t.columns if c.startswith("median_")).split("_", 1)[1]
    assert f"floor_{unit}" in t.columns
    scale = {"us": 1e6, "ms": 1e3, "ns": 1e9, "s": 1.0}[unit]
    got = sorted(t[f"floor_{unit}"])
    assert got == pytest.approx(sorted(res.summary["floor_s"] * scale))
    plain = hx.sweep("triad", ["16KiB"], [1], ["none"], device="host", iterations=8, reference=False, progress=False)
    assert not any(c.startswith("floor_") for c in summary_table(plain.summary).columns)


@pytest.mark.gpu
def test_on_the_gpu_the_floor_is_what_events_read_beyond_the_in_kernel_window(cuda):
    # the H200: events - in-kernel of the triad ~3 us at every size (BENCHMARKS "Measurement truth");
    # the empty kernel's events read that floor, so at 64 MiB events - floor ~ in-kernel
    res = hx.sweep(
        "triad",
        ["64MiB"],
        [1],
        ["l2-read"],
        device=cuda,
        iterations=80,
        reference=False,
        timers=("events", "in-kernel"),
        progress=False,
    )
    s = res.summary.set_index("timer")
    floor = s.loc["events", "floor_s"]
    assert 0.5e-6 < floor < 10e-6
    assert s.loc["events", "net_median_s"] == pytest.approx(s.loc["in-kernel", "median_s"], rel=0.03)
