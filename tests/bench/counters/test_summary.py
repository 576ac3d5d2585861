"""``hipexplore.bench.counters.summary``: one configuration's counters as one typed value, its fields
the file's counter columns in their order, read from a summary row as it was written, and turned
back into the row's columns (a broken promise's line joined to the row's warning once)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from hipexplore.bench.counters.summary import TEXT_COLUMNS, CounterSummary, uncounted_columns, with_counters
from hipexplore.schema import COUNTER_COLUMNS

BROKEN = CounterSummary(
    7.6e5,
    1.0e3,
    0.25,
    1 << 21,
    0.36,
    "partial",
    "broken",
    "asked cold (rotating auto) but counted partial: cold fraction 0.36",
    "ncu 2025.3.1",
    12,
    "",
)


def test_the_fields_are_the_files_counter_columns_and_the_value_is_frozen() -> None:
    assert tuple(f.name for f in dataclasses.fields(CounterSummary)) == COUNTER_COLUMNS
    assert list(BROKEN.columns()) == list(COUNTER_COLUMNS) and CounterSummary.of_columns(BROKEN.columns()) == BROKEN
    with pytest.raises(dataclasses.FrozenInstanceError):
        BROKEN.cache_state = "cold"  # type: ignore[misc]
    assert set(TEXT_COLUMNS) < set(COUNTER_COLUMNS)


def test_a_row_read_back_gives_its_counters_as_they_were_written() -> None:
    row = {"kernel": "triad", "median_s": 1e-6, **BROKEN.columns(), "counter_launches": 12.0}  # a file's float column
    got = CounterSummary.of_row(row)
    assert got is not None and got.counter_launches == 12.0 and isinstance(got.counter_launches, float)
    assert CounterSummary.of_row({"kernel": "triad"}) is None and CounterSummary.of_row({"counter_backend": ""}) is None
    partial = CounterSummary.of_row({"counter_backend": "ncu"})  # some columns: the others as if nothing counted
    assert partial is not None and math.isnan(partial.cold_fraction) and partial.cache_state == ""


def test_a_row_gets_the_columns_and_the_broken_promise_once_in_its_warning() -> None:
    row = {"kernel": "triad", "warning": "noisy"}
    once = with_counters(row, BROKEN)
    assert once["warning"] == f"noisy; {BROKEN.counter_warning}" and once["cold_fraction"] == 0.36
    assert with_counters(once, BROKEN)["warning"] == once["warning"]
    none = with_counters(row, None)
    assert {c: none[c] for c in TEXT_COLUMNS} == dict.fromkeys(TEXT_COLUMNS, "") and none["warning"] == "noisy"
    assert all(math.isnan(none[c]) for c in COUNTER_COLUMNS if c not in TEXT_COLUMNS)
    assert uncounted_columns().keys() == set(COUNTER_COLUMNS)
