"""hipexplore.schema: one set of column lists and outcomes for every reader and writer, schema
tags on written parquet files, and the report recognising files by their tag (legacy untagged
files by their columns)."""

from __future__ import annotations

import pandas as pd
import pytest

from hipexplore import plots, schema
from hipexplore.bench import SAMPLE_COLUMNS, SUMMARY_COLUMNS
from hipexplore.compile import events
from hipexplore.errors import ConfigError
from hipexplore.report import load_recorded, scenario_table
from hipexplore.tuning import replay


def test_every_module_shares_the_one_contract() -> None:
    assert events.EVENT_COLUMNS is schema.EVENT_COLUMNS and events.OUTCOMES is schema.OUTCOMES
    assert events.HIT_OUTCOMES is schema.HIT_OUTCOMES and plots.HIT_OUTCOMES is schema.HIT_OUTCOMES
    assert SAMPLE_COLUMNS is schema.SAMPLE_COLUMNS and SUMMARY_COLUMNS is schema.SUMMARY_COLUMNS
    assert replay.REPLAY_COLUMNS is schema.REPLAY_COLUMNS
    assert set(schema.HIT_OUTCOMES) | set(schema.COMPILE_OUTCOMES) | {schema.FAILED} == set(schema.OUTCOMES)


def test_count_outcomes_counts_each_kind_once() -> None:
    o = pd.Series(["compiled", "memory-hit", "memory-hit", "disk-hit", "remote-hit", "joined", "failed", "bypassed"])
    assert schema.count_outcomes(o) == {
        "lookups": 8,
        "compiles": 2,
        "memory_hits": 2,
        "disk_hits": 1,
        "remote_hits": 1,
        "hits": 4,
        "joins": 1,
        "failed": 1,
    }
    frame = pd.DataFrame({"scenario": ["a"] * 8, "outcome": o, "lookup_seconds": 0.0, "compile_seconds": 0.0})
    row = scenario_table(frame).loc["a"]
    assert (row.compiles, row.memory_hits, row.disk_hits, row.joins, row.failed) == (2, 2, 1, 1, 1)


def test_require_columns_names_what_is_missing() -> None:
    with pytest.raises(ConfigError, match=r"\['outcome'\]"):
        schema.require_columns(pd.DataFrame({"seq": [1]}), ("seq", "outcome"), "events frame")
    with pytest.raises(ConfigError, match="no rows"):
        schema.require_columns(pd.DataFrame({"seq": []}), ("seq",), "events frame")
    with pytest.raises(ConfigError, match="DataFrame"):
        schema.require_columns([1], ("seq",), "events frame")


def test_write_parquet_tags_and_refuses_unknown_schema(tmp_path) -> None:
    path = tmp_path / "x.parquet"
    schema.write_parquet(pd.DataFrame({"a": [1]}), path, schema.SUMMARY, {"k": "v"})
    assert schema.schema_of(path) == "summary"
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "plain.parquet")
    assert schema.schema_of(tmp_path / "plain.parquet") is None
    with pytest.raises(ConfigError, match="'bogus'"):
        schema.write_parquet(pd.DataFrame({"a": [1]}), path, "bogus")


def _events(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "seq": range(n),
            "outcome": ["compiled"] * n,
            "lookup_seconds": 0.1,
            "compile_seconds": 0.1,
            "scenario": "memory",
        }
    )


def test_load_recorded_goes_by_the_tag_not_the_columns(tmp_path) -> None:
    # a tagged tuning frame that also carries summary-like columns: the tag decides
    tagged = _events(3).assign(median_s=1.0, iqr_rel=0.1, size_bytes=1, flush="none")
    schema.write_parquet(tagged, tmp_path / "replay.parquet", schema.TUNING, {"date": "then"})
    rec = load_recorded(tmp_path)
    assert rec.summary is None and rec.events is not None and len(rec.events) == 3
    assert rec.provenance.get("date") == "then"
    # a passes file with event-like columns stays a passes file (a column guess would show its 5 rows)
    schema.write_parquet(_events(5), tmp_path / "passes.parquet", schema.PASSES)
    rec = load_recorded(tmp_path)
    assert len(rec.events) == 3


def test_load_recorded_still_reads_legacy_untagged_files(tmp_path) -> None:
    _events(4).to_parquet(tmp_path / "old.parquet", index=False)  # as data/ holds: no tag
    rec = load_recorded(tmp_path)
    assert rec.events is not None and len(rec.events) == 4
