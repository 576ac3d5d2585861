"""Golden files of the counter pass: what the previous revision wrote reads back, and is written again,
identically, now that counting is a unit kind of the one orchestrator (issue 48, item 3).

``tests/fixtures/counters/main-a3a64c4/`` was written by revision a3a64c4 (the counter pass with a loop
and manifests of its own) on the host: the sweep of ``test_counters.py`` (a 1 MiB triad, rotating 1 and
auto, flush none and l2-write) in 2 units, counted by the recorded-ncu stand-in (a real sweep worker
under a command prefix, given the H200's recorded ncu launches): its samples, units and summary files,
its metadata and its kept pass folder (``counted.counters/``: backend.json, the unit's manifest.json
and the ncu.log parsed). Here:

* the kept folder collects to exactly the counter columns that revision wrote in the summary;
* a sweep resumed on those files, with nothing left to measure, writes samples, units and summary
  files equal to them, counter columns included (``CounterSummary.of_row`` and back);
* a new pass of the same sweep writes the same counter columns and a manifest and backend
  description of the same shape, which collect to the same figures.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from hipexplore.bench.counters import COUNTER_COLUMNS, CounterSummary, collect
from hipexplore.bench.counters.backends import MANIFEST
from hipexplore.bench.counters.counting import BACKEND_FILE
from hipexplore.bench.counters.registry import from_description

from bench.counters.test_counters import _host_spec, _sweep, recorded_ncu  # noqa: F401 - the stand-in's fixture
from bench.counters.test_phase import dev  # noqa: F401 - the host device fixture (a small LLC, its own compile cache)

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "counters" / "main-a3a64c4"
FOLDER = "counted.counters/triad-1048576"


def _spec(**kw):
    return dataclasses.replace(_host_spec(**kw), units=2)


def _same(a, b) -> bool:
    return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == b


def _counted_rows(summary: pd.DataFrame) -> dict:
    return {
        (r["rotating_requested"], r["flush"]): {c: r[c] for c in COUNTER_COLUMNS}
        for r in summary.to_dict("records")
        if r["counter_backend"]
    }


def _reader():
    """Nsight Compute's parser over a kept folder's ncu.log, as the stand-in counted (its log holds the range only)."""
    be = from_description(json.loads((GOLDEN / FOLDER / BACKEND_FILE).read_text()))
    be.captures_warmup = False
    return be


def test_the_previous_revisions_kept_folder_collects_to_the_columns_it_wrote() -> None:
    written = _counted_rows(pd.read_parquet(GOLDEN / "counted.summary.parquet"))
    got = collect(GOLDEN / FOLDER, backend=_reader())
    assert len(got.records) == len(written) == 4
    for rec in got.records:
        want = written[(rec.rotating_requested, rec.flush)]
        got = rec.summary().columns()
        assert all(_same(got[c], want[c]) for c in COUNTER_COLUMNS), (got, want)


def test_files_of_the_previous_revision_are_written_back_identically(dev, tmp_path) -> None:  # noqa: F811
    for f in GOLDEN.glob("counted.*"):
        (shutil.copytree if f.is_dir() else shutil.copy)(f, tmp_path / f.name)
    res = _sweep(dev, _spec(), tmp_path / "counted.parquet")  # every (configuration, unit) kept: nothing measured
    assert res.summary["counter_backend"].astype(bool).sum() == 4
    for name in ("counted.parquet", "counted.summary.parquet", "counted.units.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / name), pd.read_parquet(GOLDEN / name))
    for f in (GOLDEN / "counted.counters").rglob("*"):  # the evidence is the previous pass's, untouched
        if f.is_file():
            assert (tmp_path / f.relative_to(GOLDEN)).read_bytes() == f.read_bytes(), f


def test_a_new_pass_writes_what_the_previous_revision_wrote(dev, tmp_path, recorded_ncu) -> None:  # noqa: F811
    backend, seen = recorded_ncu
    res = _sweep(dev, _spec(counters=True), tmp_path / "counted.parquet", backend, seen)
    before = pd.read_parquet(GOLDEN / "counted.summary.parquet")
    now = pd.read_parquet(tmp_path / "counted.summary.parquet")
    assert list(now.columns) == list(before.columns)
    assert _counted_rows(now).keys() == _counted_rows(before).keys()
    for key, want in _counted_rows(before).items():
        got = _counted_rows(now)[key]
        assert all(_same(got[c], want[c]) for c in COUNTER_COLUMNS), (key, got, want)
    assert res.metadata["counters.status"].startswith("counted 4 configuration(s) with ncu (recorded on the H200)")
    new, old = tmp_path / FOLDER, GOLDEN / FOLDER
    m_new, m_old = (json.loads((d / "group-0" / MANIFEST).read_text()) for d in (new, old))
    assert m_new.keys() == m_old.keys() and [e.keys() for e in m_new["entries"]] == [e.keys() for e in m_old["entries"]]
    assert [(e["kernel"], e["rotating_requested"], e["flush"], e["count"]) for e in m_new["entries"]] == [
        (e["kernel"], e["rotating_requested"], e["flush"], e["count"]) for e in m_old["entries"]
    ]
    b_new, b_old = (json.loads((d / BACKEND_FILE).read_text()) for d in (new, old))
    assert b_new.keys() == b_old.keys() and {k: v for k, v in b_new.items() if k != "commands"} == {
        k: v for k, v in b_old.items() if k != "commands"
    }
    assert sorted(p.relative_to(new).as_posix() for p in new.rglob("*")) == sorted(
        p.relative_to(old).as_posix() for p in old.rglob("*")
    )
    for a, b in zip(collect(new, backend=_reader()).records, collect(old, backend=_reader()).records, strict=True):
        assert all(_same(x, y) for x, y in zip(a.summary().columns().values(), b.summary().columns().values())), (a, b)


@pytest.mark.parametrize("row", [{}, {"counter_backend": ""}, {"counter_backend": float("nan")}])
def test_a_row_nothing_counted_has_no_summary(row) -> None:
    assert CounterSummary.of_row(row) is None
