"""``hipexplore.bench.record``: a sweep's results per (configuration, unit), merged as each unit is
added and durable as written (read back, a resumed record holds the same units and rows), a
one-unit sweep's rows kept as measured, and ``Collector``, the channel that keeps one unit's
reports in memory and tells the hooks. The units are real: one-unit sweeps of the host device."""
from __future__ import annotations

import pytest

import hipexplore as hx
from hipexplore.bench.io import output_paths, previous_results
from hipexplore.bench.record import Collector, Record
from hipexplore.bench.result import SweepHooks
from hipexplore.schema import Configuration

pytestmark = pytest.mark.timeout(180)

C = Configuration("triad", 16384, "1", "none", "events")


@pytest.fixture(scope="module")
def units():
    """Two units of triad 16 KiB r=1 none, each (its sample frame, its summary row)."""
    out = []
    for _ in range(2):
        res = hx.sweep("triad", ["16KiB"], [1], ["none"], device="host", iterations=12, units=1, reference=False,
                       warmup_s=0.0, progress=False, worker=False)
        out.append((res.samples, res.summary.iloc[0].to_dict()))
    return out


def test_a_record_merges_a_configurations_units_as_they_are_added_and_reads_back(units, tmp_path):
    (f0, r0), (f1, r1) = units
    rec = Record(previous_results(None, True), merged=True, planned=2)
    rec.add(C, 0, f0, r0)
    assert rec.units_of(C) == {0} and rec.complete() == set() and rec.kept() == 1 and rec.rows[C]["passes"] == 1
    rec.add(C, 1, f1, r1)
    assert rec.units_of(C) == {0, 1} and rec.complete() == {C} and rec.kept() == 2 and rec.added == 2
    row, samples = rec.rows[C], rec.samples[C]
    assert row["passes"] == 2 and row["n"] == r0["n"] + r1["n"] == len(samples)
    by_unit = samples.groupby("pass_index")["chunk"]
    assert by_unit.max()[0] < by_unit.min()[1]  # chunk ids stay apart across units
    paths = output_paths(tmp_path / "r.parquet")
    rec.write(paths, {"run_id": "rec"})
    again = Record(previous_results(paths, True), merged=True, planned=2)
    assert again.units_of(C) == {0, 1} and again.complete() == {C} and again.added == 0 and again.kept() == 2
    assert again.rows[C]["median_s"] == pytest.approx(row["median_s"]) and again.rows[C]["n"] == row["n"]
    assert [u["pass_index"] for u in again.unit_rows()] == [0, 1]
    short = Record(previous_results(paths, True), merged=True, planned=3)  # a third unit planned: not complete
    assert short.complete() == set() and short.units_of(C) == {0, 1}


def test_a_one_unit_record_keeps_the_units_row_as_measured(units):
    f0, r0 = units[0]
    rec = Record(previous_results(None, True), merged=False, planned=1)
    rec.add(C, 0, f0, r0)
    assert rec.rows[C] is r0 and rec.samples[C] is f0 and rec.unit_rows() is None and rec.complete() == {C}


def test_a_collector_keeps_what_a_unit_reports_and_tells_the_hooks(units):
    f0, r0 = units[0]
    rows, frames, starts = [], [], []
    hooks = SweepHooks(on_result=rows.append, on_samples=frames.append, should_stop=lambda: True,
                       on_start=lambda k, c: starts.append((k, c)))
    col = Collector({"a": "1"}, hooks=hooks)
    col.started(["triad", "16 KiB r=1 none"])
    col.add(f0, r0)
    col.meta({"b": "2"})
    col.update([{**r0, "bias": 0.5}])  # its rows filled in again (a bias once the reference is whole)
    res = col.result(stopped=col.stop_now())
    assert res.stopped and res.metadata == {"a": "1", "b": "2"} and res.summary["bias"].tolist() == [0.5]
    assert len(res.samples) == len(f0) and rows == [dict(r0)] and len(frames[0]) == len(f0)
    assert starts == [("triad", "16 KiB r=1 none")]
    assert Collector().stop_now() is False
