"""Files written by the previous revision read back identically (issue 48 item 2): a sweep's samples,
summary and (a sweep in units) units files, read into a ``Record`` and written again, hold the same
rows, columns, dtypes and metadata, and its ``SweepResult`` frames are the files' own.

The goldens: tests/fixtures/metadata/main-62221f9 (a host sweep in 3 units, interleaved, with its
cold references, written by main 62221f9) and tests/fixtures/results/one-unit-a3a64c4 (a one-unit
host sweep of two kernels, two rotating counts, two flush modes and the references, interleaved,
written by main a3a64c4, before results were carried as ``ConfigurationResult``) and
tests/fixtures/results/counted-a3a64c4 (a one-unit host sweep with the counter pass's columns, counted
by the recorded ncu backend of tests/bench/counters/test_counters.py, written by main a3a64c4)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from hipexplore.bench.io import output_paths, previous_results, units_path
from hipexplore.bench.record import Record
from hipexplore.schema import COUNTER_COLUMNS, METADATA_KEY, SAMPLE_COLUMNS, SCHEMA_KEY, SUMMARY_COLUMNS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GOLDENS = [
    (FIXTURES / "metadata" / "main-62221f9.parquet", True, 3),
    (FIXTURES / "results" / "one-unit-a3a64c4.parquet", False, 1),
    (FIXTURES / "results" / "counted-a3a64c4.parquet", False, 1),
]


@pytest.mark.parametrize("golden,merged,planned", GOLDENS, ids=["units", "one-unit", "counted"])
def test_a_golden_run_reads_back_and_writes_back_identically(
    golden: Path, merged: bool, planned: int, tmp_path: Path
) -> None:
    then = output_paths(golden)
    previous = previous_results(then, True)
    counted = set(COUNTER_COLUMNS) <= set(previous.summary.columns)
    summary_cols = [*SUMMARY_COLUMNS, *(COUNTER_COLUMNS if counted else ())]
    rec = Record(previous, merged=merged, planned=planned, columns=(SAMPLE_COLUMNS, summary_cols))
    assert rec.added == 0 and rec.complete() == set(previous.done)
    assert len(rec.counters) == (4 if counted else 0)  # the counted configurations' CounterSummary, the reference none
    now = output_paths(tmp_path / "again.parquet")
    rec.write(now, dict(previous.metadata or {}))
    files = [(then[0], now[0]), (then[1], now[1])] + ([(units_path(then), units_path(now))] if merged else [])
    assert units_path(now).exists() == merged
    for old, new in files:
        pd.testing.assert_frame_equal(pd.read_parquet(new), pd.read_parquet(old), check_exact=True)
        assert (
            pq.read_schema(new).metadata[METADATA_KEY.encode()] == pq.read_schema(old).metadata[METADATA_KEY.encode()]
        )
        assert pq.read_schema(new).metadata[SCHEMA_KEY.encode()] == pq.read_schema(old).metadata[SCHEMA_KEY.encode()]
    res = rec.result(dict(previous.metadata or {}), None)
    pd.testing.assert_frame_equal(res.summary, pd.read_parquet(then[1]), check_exact=True)
    pd.testing.assert_frame_equal(res.samples, pd.read_parquet(then[0]), check_exact=True)
