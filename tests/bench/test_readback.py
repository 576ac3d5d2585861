"""``hipexplore.bench.readback``: a sweep's frames and metadata read back as untrusted input, at the
check itself: what a sweep can have written passes; each impossible value is one ConfigError line
naming the source, the column, the row and the value. (Hostile files through compare, resume and
the report: tests/hostile/test_hostile_files.py.)"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from hipexplore.bench.readback import MAX_TIME_S, MIN_TIME_S, check_frame, metadata_of, read_frame
from hipexplore.errors import ConfigError
from hipexplore.schema import SAMPLES, SUMMARY

pytestmark = pytest.mark.timeout(60)


def samples() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "kernel": ["triad"] * 3,
            "size_bytes": np.array([65536] * 3, dtype=np.int64),
            "rotating_requested": ["1"] * 3,
            "flush": ["none"] * 3,
            "timer": ["events"] * 3,
            "time_s": [1e-6, 1.1e-6, 0.9e-6],
            "chunk": np.array([0, 0, 1], dtype=np.int64),
            "dropped": [False] * 3,
            "host_load": [0.0, 1.0, math.nan],
        }
    )


def test_what_a_sweep_writes_passes_and_an_empty_frame_is_left_alone():
    good = samples()
    assert check_frame(good, SAMPLES, "s.parquet") is good
    empty = good.iloc[:0].astype(object)
    assert check_frame(empty, SAMPLES, "s.parquet") is empty
    summary = good.drop(columns=["time_s", "chunk", "dropped", "host_load"]).assign(median_s=[1e-6, math.nan, 2e-6])
    assert check_frame(summary, SUMMARY, "s.summary.parquet") is summary  # NaN where a row measured nothing


@pytest.mark.parametrize(
    "col, value, says",
    [
        (
            "time_s",
            1e-300,
            f"column 'time_s' holds 1e-300 at row 1; expected the seconds one launch took, in [{MIN_TIME_S:g}, {MAX_TIME_S:g}]",
        ),
        ("time_s", -1e-6, "column 'time_s' holds -1e-06 at row 1"),
        ("time_s", math.inf, "column 'time_s' holds inf at row 1"),
        ("size_bytes", -4, "column 'size_bytes' holds -4 at row 1; expected an integer in [1, 2**50]"),
        (
            "size_bytes",
            1 << 62,
            "column 'size_bytes' holds 4611686018427387904 at row 1; expected an integer in [1, 2**50]",
        ),
        (
            "host_load",
            -math.inf,
            "column 'host_load' holds -inf at row 1; expected a finite number (or NaN where not measured)",
        ),
        ("kernel", "tri\x1bad", "column 'kernel' holds"),
    ],
)
def test_an_impossible_value_is_one_line_naming_source_column_row_and_value(col, value, says):
    frame = samples()
    frame[col] = frame[col].astype(type(value)) if not isinstance(value, str) else frame[col]
    frame.loc[1, col] = value
    with pytest.raises(ConfigError) as err:
        check_frame(frame, SAMPLES, "b.parquet")
    msg = str(err.value)
    assert msg.startswith("'b.parquet'") and says in msg and "\n" not in msg and "\x1b" not in msg, msg


def test_columns_of_the_wrong_type_and_missing_columns_are_refused():
    for col, values, says in (
        ("time_s", ["1e-6"] * 3, "column 'time_s' holds text; expected floating-point seconds"),
        ("size_bytes", [65536.0] * 3, "column 'size_bytes' holds floating-point numbers (float64); expected integers"),
        ("dropped", [0, 1, 0], "column 'dropped' holds integers; expected true/false (bool)"),
        ("flush", ["none", None, "none"], "column 'flush' has no value at row 1; expected text on every row"),
    ):
        with pytest.raises(ConfigError, match=None) as err:
            check_frame(samples().assign(**{col: values}), SAMPLES, "b.parquet")
        assert says in str(err.value), str(err.value)
    with pytest.raises(ConfigError, match="has no column 'time_s'; expected a sweep's samples file"):
        check_frame(samples().drop(columns="time_s"), SAMPLES, "b.parquet")
    assert len(check_frame(samples().drop(columns="time_s"), SAMPLES, "legacy", required=False)) == 3


def test_a_file_that_is_no_parquet_and_metadata_that_is_no_object_of_text_are_one_line(tmp_path):
    bad = tmp_path / "cut.parquet"
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(ConfigError, match="is not a readable parquet file .*; expected a sweep's samples file"):
        read_frame(bad, SAMPLES)
    good = tmp_path / "ok.parquet"
    samples().to_parquet(good)
    assert len(read_frame(good, SAMPLES)) == 3
    assert metadata_of(json.dumps({"run_id": "r"}), "m.json") == {"run_id": "r"}
    for text, says in (
        ("[1, 2]", "the metadata is an array of 2 item(s); expected a JSON object"),
        ('{"units": 3}', "metadata 'units' is 3; expected text"),
        ("[" * 100_000 + "]" * 100_000, "m.json"),
    ):
        with pytest.raises(ConfigError, match=None) as err:
            metadata_of(text, "m.json")
        assert says in str(err.value) and len(str(err.value)) < 400
