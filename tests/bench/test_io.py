"""hipexplore.bench.io: a sweep's files, the samples and summary parquet files and the metadata
beside them, read back for resume; empty frames keep the schema's columns and dtypes."""
from __future__ import annotations

from hipexplore.bench import io
from hipexplore.schema import SAMPLE_COLUMNS, SUMMARY_COLUMNS


def test_an_empty_frame_has_the_schemas_columns_and_their_dtypes():
    """Why: an empty sweep's files are read back and concatenated with later ones (resume); an
    int column that came back as object would turn every later int into object."""
    for frame, columns in ((io.samples_frame([]), SAMPLE_COLUMNS), (io.summary_frame([]), SUMMARY_COLUMNS)):
        assert list(frame.columns) == list(columns) and len(frame) == 0
        assert str(frame["size_bytes"].dtype) == "int64"
    frame = io.empty_frame(SAMPLE_COLUMNS)
    assert {c: str(frame[c].dtype) for c in ("size_bytes", "iteration", "time_s", "throttled", "kernel")} == {
        "size_bytes": "int64", "iteration": "int64", "time_s": "float64", "throttled": "bool", "kernel": "object"}


def test_summary_rows_are_put_in_the_schemas_column_order():
    """Why: the summary file's column order is the schema's whatever order a row's keys came in,
    and a key a row lacks is still a column."""
    row = {c: 1 for c in reversed(SUMMARY_COLUMNS) if c != "warning"}
    frame = io.summary_frame([row])
    assert list(frame.columns) == list(SUMMARY_COLUMNS)
    assert frame["warning"].isna().all() and frame["n"].tolist() == [1]


def _write(tmp_path, meta: dict[str, str]):
    paths = io.output_paths(tmp_path / "sub" / "r.parquet")
    part = io.empty_frame(SAMPLE_COLUMNS)
    io.write_results(paths, [part], [], meta)
    return paths


def test_read_results_needs_both_parquet_files_and_tolerates_the_metadata_file(tmp_path):
    """Why: resume starts over (None) unless the samples AND the summary exist; the metadata file
    is optional (None when absent, {} when unreadable), which tells resume what to check."""
    paths = _write(tmp_path, {"k": "v"})
    samples, summary, meta = io.read_results(paths)
    assert meta == {"k": "v"} and list(samples.columns) == list(SAMPLE_COLUMNS)
    paths[2].write_text("{not json")
    assert io.read_results(paths)[2] == {}
    paths[2].unlink()
    assert io.read_results(paths)[2] is None
    paths[1].unlink()
    _write(tmp_path, {"k": "v"})
    paths[1].unlink()          # samples and metadata there, summary missing
    assert io.read_results(paths) is None
