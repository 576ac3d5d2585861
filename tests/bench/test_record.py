"""``hipexplore.bench.record``: a sweep's results per (configuration, unit), merged as each unit is
added and durable as written (read back, a resumed record holds the same units and rows), a
one-unit sweep's rows kept as measured, and ``Collector``, the channel that keeps one unit's
reports in memory and tells the hooks. The units are real: one-unit sweeps of the host device."""

from __future__ import annotations

import pytest

import hipexplore as hx
from hipexplore.bench.io import output_paths, previous_results, sample_frame, samples_of, summary_row
from hipexplore.bench.measured import MeasuredInfo
from hipexplore.bench.outcome import Bias, ConfigurationResult, Rebiased
from hipexplore.bench.record import Collector, Record
from hipexplore.bench.result import SweepHooks
from hipexplore.bench.runinfo import RunInfo
from hipexplore.schema import SAMPLE_COLUMNS, Configuration

pytestmark = pytest.mark.timeout(180)

C = Configuration("triad", 16384, "1", "none", "events")


@pytest.fixture(scope="module")
def units():
    """Two units of triad 16 KiB r=1 none, each its ``ConfigurationResult`` (read from the sweep's frames)."""
    out = []
    for k in range(2):
        res = hx.sweep(
            "triad",
            ["16KiB"],
            [1],
            ["none"],
            device="host",
            iterations=12,
            units=1,
            reference=False,
            warmup_s=0.0,
            progress=False,
            worker=False,
        )
        out.append(
            ConfigurationResult.of_columns(res.summary.iloc[0].to_dict(), samples_of(res.samples, SAMPLE_COLUMNS), k)
        )
    return out


def test_a_record_merges_a_configurations_units_as_they_are_added_and_reads_back(units, tmp_path):
    r0, r1 = units
    rec = Record(previous_results(None, True), merged=True, planned=2)
    rec.add(r0)
    assert rec.units_of(C) == {0} and rec.complete() == set() and rec.kept() == 1 and rec.results[C].run.passes == 1
    rec.add(r1)
    assert rec.units_of(C) == {0, 1} and rec.complete() == {C} and rec.kept() == 2 and rec.added == 2
    row, samples = summary_row(rec.results[C]), sample_frame(rec.results[C].samples)
    assert row["passes"] == 2 and row["n"] == r0.statistics.n + r1.statistics.n == len(samples)
    by_unit = samples.groupby("pass_index")["chunk"]
    assert by_unit.max()[0] < by_unit.min()[1]  # chunk ids stay apart across units
    paths = output_paths(tmp_path / "r.parquet")
    rec.write(paths, {"run_id": "rec"})
    again = Record(previous_results(paths, True), merged=True, planned=2)
    assert again.units_of(C) == {0, 1} and again.complete() == {C} and again.added == 0 and again.kept() == 2
    assert (
        again.results[C].statistics.median_s == pytest.approx(row["median_s"])
        and again.results[C].statistics.n == row["n"]
    )
    assert [u.unit for u in again.unit_results()] == [0, 1]
    short = Record(previous_results(paths, True), merged=True, planned=3)  # a third unit planned: not complete
    assert short.complete() == set() and short.units_of(C) == {0, 1}


def test_a_one_unit_record_keeps_the_units_row_as_measured(units):
    r0 = units[0]
    rec = Record(previous_results(None, True), merged=False, planned=1)
    rec.add(r0)
    assert rec.results[C] is r0 and rec.unit_results() is None and rec.complete() == {C}


def test_a_collector_keeps_what_a_unit_reports_and_tells_the_hooks(units):
    r0 = units[0]
    rows, frames, starts = [], [], []
    hooks = SweepHooks(
        on_result=rows.append,
        on_samples=frames.append,
        should_stop=lambda: True,
        on_start=lambda k, c: starts.append((k, c)),
    )
    col = Collector(RunInfo(other={"a": "1"}), hooks=hooks)
    col.started(["triad", "16 KiB r=1 none"])
    col.add(r0)
    col.meta(MeasuredInfo(warmup_clock="2"))
    col.update(
        [Rebiased(C, Bias(1e-6, 0.5, 0.4, 0.6), "w")]
    )  # its result filled in again (a bias once the reference is whole)
    res = col.result(stopped=col.stop_now())
    assert res.stopped and res.metadata == {"a": "1", "warmup.clock": "2"} and res.summary["bias"].tolist() == [0.5]
    assert res.summary["warning"].tolist() == ["w"] and col.results[0].bias.bias == 0.5
    assert len(res.samples) == r0.samples.n and rows == [summary_row(r0)] and len(frames[0]) == r0.samples.n
    assert starts == [("triad", "16 KiB r=1 none")]
    assert Collector().stop_now() is False
