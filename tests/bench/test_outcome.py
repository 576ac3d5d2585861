"""A configuration's outcome is one typed object from unit to file (issue 48 item 2): a unit emits a
``bench.outcome.ConfigurationResult``, and only ``bench.io`` makes the files' rows and frames of it.
Scanning the source like tests/test_schema_vocabulary.py: no result row is grown in place outside
``bench/io.py`` (``row.update``, ``row[...] = ``, or the helpers that did it, ``set_bias`` and
``add_flags``), in the code that makes, merges and compares results (``bench/``, ``verdicts.py``,
``interop/``). The revision before counted 11 ``row.update`` there (sweeprun 4, stats 2, verdicts
2, interop/sides 2, passes 1) and 37 such mutations in all; each spelling is proven below."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

import hipexplore as hx
from hipexplore.bench.io import results_frames, summary_row
from hipexplore.bench.outcome import CounterSummary, Placement
from hipexplore.bench.record import Collector
from hipexplore.schema import CLUSTER_COLUMNS, COUNTER_COLUMNS, SUMMARY_COLUMNS, Configuration

from .made import result

PACKAGE = Path(hx.__file__).resolve().parent
EDGE = PACKAGE / "bench" / "io.py"
SCOPE = [
    *sorted((PACKAGE / "bench").rglob("*.py")),
    PACKAGE / "verdicts.py",
    *sorted((PACKAGE / "interop").rglob("*.py")),
]
#: a row grown in place: its ``update``/``setdefault``/``pop``, an item set on it, or a helper that did
_GROWN = re.compile(
    r"\b(?:row|rows\[[^\]]*\])\.(?:update|setdefault|pop)\(|\brow\[[^\]]+\]\s*=(?!=)|\b(?:set_bias|add_flags)\("
)


def test_no_result_row_is_grown_in_place_outside_io():
    found = [
        f"{p.relative_to(PACKAGE)}:{i}: {line.strip()}"
        for p in SCOPE
        if p != EDGE
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if _GROWN.search(line)
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [
        "row.update(floor_columns(None, row['median_s'], conf.timer))",
        'row["warning"] = "x"',
        "row.update(present='both', **comparison_row(a, b))",
        "set_bias(r, self.kept[c], m)",
        "add_flags(row, t.flags)",
        "rows[i].update(bias=0.1)",
        "row.setdefault('n', 0)",
        "row['passes'] = m.passes",
    ],
)
def test_the_scan_sees_each_spelling(line: str) -> None:
    assert _GROWN.search(line)


@pytest.mark.parametrize(
    "line",
    [
        "rows.append(row)",
        "if row['flush'] == x:",
        "out = {**row, 'warning': w}",
        "self.rows[c] = result",
        "row_floor_flags(result.columns(), k, n, dev)",
    ],
)
def test_the_scan_leaves_reading_alone(line: str) -> None:
    assert not _GROWN.search(line)


def test_a_results_parts_fill_exactly_the_schemas_columns():
    c = Configuration("triad", 16384, "1", "none")
    plain = result(c)
    assert set(summary_row(plain)) == set(SUMMARY_COLUMNS)
    placed = plain.with_summary(Placement("tls://w:1", "h", "0"))
    counted = placed.with_summary(
        dataclasses.replace(CounterSummary.uncounted(), dram_read_bytes=3.0, counter_backend="ncu")
    )
    assert set(summary_row(counted)) == {*SUMMARY_COLUMNS, *COUNTER_COLUMNS, *CLUSTER_COLUMNS}
    assert counted.counters.dram_read_bytes == 3.0 and counted.summary("placement").worker == "tls://w:1"
    assert counted.with_summary(None, CounterSummary.NAME).counters is None and plain.counters is None
    samples, summary = results_frames([counted], (list(plain.samples.columns), [*SUMMARY_COLUMNS, *COUNTER_COLUMNS]))
    assert len(samples) == 4 and summary["counter_backend"].tolist() == ["ncu"] and summary["n"].tolist() == [4]


def test_a_unit_emits_typed_results_and_io_makes_the_rows():
    """An in-process host unit reports ``ConfigurationResult``s to its channel: the Measurement, the plan,
    the statistics and run summaries, the bias against its cold reference once that is whole."""
    from hipexplore.bench.spec import SweepSpec
    from hipexplore.bench.stats import StopRule
    from hipexplore.bench.sweeprun import SweepRun
    from hipexplore.bench.units import UnitJob, UnitRun
    from hipexplore.devices import get_device

    spec = SweepSpec(
        kernels=("triad",),
        sizes=("16KiB",),
        rotating=(1,),
        flush=("none",),
        stop=StopRule(iterations=8),
        reference_samples=4,
        warmup_s=0.0,
        clock_warmup_s=0.0,
    )
    unit = Collector()
    SweepRun(UnitRun(UnitJob(spec, 0, frozenset()), "r1"), get_device("host"), unit).measure()
    timed, ref = unit.results
    assert ref.configuration.is_reference and timed.configuration == Configuration("triad", 16384, "1", "none")
    assert timed.measurement.n == timed.statistics.n == timed.samples.n == 8 and timed.plan.rotating == 1
    assert timed.bias.reference_median_s == ref.measurement.median and timed.run.stop_reason
    rows = [summary_row(r) for r in unit.results]
    assert rows[0]["bias"] == timed.bias.bias and rows[1]["flush"] == ref.configuration.flush
    assert "taken in" in ref.warning
