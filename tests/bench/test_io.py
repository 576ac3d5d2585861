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
        "size_bytes": "int64",
        "iteration": "int64",
        "time_s": "float64",
        "throttled": "bool",
        "kernel": "object",
    }


def test_summary_rows_are_put_in_the_schemas_column_order():
    """Why: the summary file's column order is the schema's whatever order a row's keys came in,
    and a key a row lacks is still a column."""
    row = {c: 1 for c in reversed(SUMMARY_COLUMNS) if c != "warning"}
    frame = io.summary_frame([row])
    assert list(frame.columns) == list(SUMMARY_COLUMNS)
    assert frame["warning"].isna().all() and frame["n"].tolist() == [1]


def _write(tmp_path, meta: dict[str, str]):
    paths = io.output_paths(tmp_path / "sub" / "r.parquet")
    io.write_results(paths, [], meta)
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
    paths[1].unlink()  # samples and metadata there, summary missing
    assert io.read_results(paths) is None


def test_another_users_out_file_is_not_resumed_without_the_keyword(tmp_path):
    """Issue 47.2 through the library: files another user owns (chowned to nobody here: real
    ownership; tests/security/test_security_team.py mounts it with two real users) are refused in
    one line naming the owner and the keyword; with ``resume_from_others=True`` the sweep resumes and
    the result says whose rows it kept. A link at one of the names counts as its own owner's."""
    import os

    import pytest

    from hipexplore.bench import sweep
    from hipexplore.errors import ConfigError

    if os.geteuid() != 0:  # CI runs as root: without it, fails there instead of skipping (REQUIREMENT_RULES)
        from conftest import COMPILERS, need

        need("root", "giving a file to another user (chown) needs root", flag=COMPILERS)
    out = tmp_path / "r.parquet"
    args = dict(device="host", iterations=8, units=1, reference_samples=4, progress=False, out=out)
    first = sweep("triad", "16KiB", 1, "none", **args)
    assert first.kept_from == "" and not first.skipped
    paths = io.output_paths(out)
    assert io.check_owner(paths) == ""
    nobody = 65534
    before = {}
    for p in (*paths, io.units_path(paths)):
        if p.exists():
            os.chown(p, nobody, -1)
            before[p] = p.read_bytes()
    with pytest.raises(ConfigError) as err:
        sweep("triad", "16KiB", 1, "none", **args)
    text = str(err.value)
    assert f"(uid {nobody})" in text and "--resume-from-others (resume_from_others=True)" in text and "\n" not in text
    assert {p: p.read_bytes() for p in before} == before
    again = sweep("triad", "16KiB", 1, "none", resume_from_others=True, **args)
    assert again.skipped and again.kept_from == io.user_name(nobody)
    assert all(p.stat().st_uid == os.geteuid() for p in before)  # rewritten as this user's own files
    link = tmp_path / "link"
    link.mkdir()
    for p in paths:  # links (this process's own, but pointing at the files) at every name in another folder
        (link / p.name).symlink_to(p)
        os.lchown(link / p.name, nobody, -1)
    with pytest.raises(ConfigError, match=r"r.parquet there is another user's"):
        io.check_owner(io.output_paths(link / "r.parquet"))
