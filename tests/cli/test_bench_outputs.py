"""hipexplore.cli.bench_outputs: ``hipexplore bench``'s destinations, refused before a device or
compiler starts. Each check on real files in a temporary folder; the same refusals through the
command line, a foreign parquet forced over included: tests/cli/test_inputs.py; exports written
after a real sweep: tests/cli/test_bench_cmd.py."""

from __future__ import annotations

import argparse

import pandas as pd
import pytest

from hipexplore.cli import bench_outputs as bo
from hipexplore.cli import build_parser
from hipexplore.errors import ConfigError
from hipexplore.schema import SAMPLES, TUNING, write_parquet


def _args(*argv: str) -> argparse.Namespace:
    return build_parser(["bench"]).parse_args(["bench", "triad", *argv])


def test_a_new_file_in_folders_still_to_be_made_is_accepted(tmp_path):
    bo.check_out(str(tmp_path / "a" / "b" / "run.parquet"), force=False)
    assert not (tmp_path / "a").exists()  # checked where the writer would make them; nothing left behind
    assert [p.name for p in tmp_path.iterdir()] == []


def test_a_foreign_parquet_is_left_as_it_is_unless_forced(tmp_path):
    out = tmp_path / "mine.parquet"
    pd.DataFrame({"precious": [1]}).to_parquet(out)
    with pytest.raises(ConfigError, match="is not a hipexplore result \\(no mine.meta.json beside it\\)"):
        bo.check_out(str(out), force=False)
    bo.check_out(str(out), force=True)
    assert pd.read_parquet(out).columns.tolist() == ["precious"]  # the check writes nothing


def test_only_a_samples_file_hipexplore_wrote_is_its_own(tmp_path):
    ours, tuning, text = tmp_path / "ours.parquet", tmp_path / "frame.parquet", tmp_path / "text.parquet"
    write_parquet(pd.DataFrame({"x": [1.0]}), ours, SAMPLES)
    write_parquet(pd.DataFrame({"x": [1.0]}), tuning, TUNING)
    text.write_text("not parquet")
    assert bo.tagged_samples(ours) and not bo.tagged_samples(tuning) and not bo.tagged_samples(text)
    bo.check_out(str(ours), force=False)  # what a sweep killed before its first summary left: started over


def test_a_directory_or_a_file_for_a_folder_is_refused(tmp_path):
    (tmp_path / "run.parquet").mkdir()
    with pytest.raises(ConfigError, match="is a directory; expected a FILE.parquet name"):
        bo.check_out(str(tmp_path / "run.parquet"), force=False)
    (tmp_path / "plain").write_text("x")
    with pytest.raises(ConfigError, match="is not a directory"):
        bo.check_out(str(tmp_path / "plain" / "run.parquet"), force=False)


def test_every_export_is_checked_with_the_out_file(tmp_path):
    bo.check_outputs(_args("--out", str(tmp_path / "r.parquet"), "--export", "pyperf", str(tmp_path / "p.json")))
    with pytest.raises(ConfigError, match="--export format 'csv' is unknown"):
        bo.check_outputs(_args("--export", "csv", str(tmp_path / "r.csv")))
    with pytest.raises(ConfigError, match="--export"):
        bo.check_outputs(_args("--export", "pyperf", str(tmp_path / "missing" / "p.json")))
    assert sorted(p.name for p in tmp_path.iterdir()) == []
