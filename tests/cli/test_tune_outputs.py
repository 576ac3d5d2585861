"""hipexplore.cli.tune_outputs: ``tune-replay``'s ``--frame`` and ``--export-list`` destinations,
refused before any compile, on real files in a temporary folder; the list written. The same through
the command line: tests/cli/test_inputs.py (destinations) and tests/cli/test_tune_cmd.py (export)."""

from __future__ import annotations

import argparse

import pandas as pd
import pytest

from hipexplore.cli import build_parser
from hipexplore.cli import tune_outputs as to
from hipexplore.errors import ConfigError
from hipexplore.schema import TUNING, write_parquet
from hipexplore.tuning import listfile
from hipexplore.tuning.lists import build_list, select_problems


def _args(*argv: str) -> argparse.Namespace:
    return build_parser(["tune-replay"]).parse_args(["tune-replay", "--compiler", "host", *argv])


def test_a_destination_needs_its_suffix_and_a_folder_that_exists(tmp_path):
    to.check_destination(str(tmp_path / "f.parquet"), "--frame", ".parquet")
    with pytest.raises(ConfigError, match="--frame must name a .parquet file"):
        to.check_destination(str(tmp_path / "f.csv"), "--frame", ".parquet")
    with pytest.raises(ConfigError, match="does not exist \\(checked before running\\)"):
        to.check_destination(str(tmp_path / "no" / "f.parquet"), "--frame", ".parquet")
    (tmp_path / "d.parquet").mkdir()
    with pytest.raises(ConfigError, match="is a directory; expected a .parquet file name"):
        to.check_destination(str(tmp_path / "d.parquet"), "--frame", ".parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.parquet"]  # the probe file is gone


def test_a_file_hipexplore_did_not_write_is_replaced_only_with_force(tmp_path):
    frame, foreign = tmp_path / "ours.parquet", tmp_path / "theirs.parquet"
    write_parquet(pd.DataFrame({"x": [1]}), frame, TUNING)
    pd.DataFrame({"x": [1]}).to_parquet(foreign)
    to.check_outputs(_args("--frame", str(frame)))  # a frame hipexplore wrote: replaced
    with pytest.raises(ConfigError, match="--frame"):
        to.check_outputs(_args("--frame", str(foreign)))
    to.check_outputs(_args("--frame", str(foreign), "--force"))
    (tmp_path / "mine.jsonl").write_text('{"notes": 1}\n')
    with pytest.raises(ConfigError, match="--export-list"):
        to.check_outputs(_args("--export-list", str(tmp_path / "mine.jsonl")))


def test_the_built_in_list_is_exported_as_a_list_file(tmp_path, capsys):
    path = tmp_path / "layer.jsonl"
    tlist = build_list("host", "host", problems=select_problems("qkv", tokens=512, d_model=512), limit=3)
    to.export_list(_args("--export-list", str(path)), None, tlist)
    assert f"wrote 3 candidates of 1 problems to {path}" in capsys.readouterr().err
    assert listfile.read(str(path)).n_candidates == 3
    to.check_outputs(_args("--export-list", str(path)))  # its own export: replaced without --force
    with pytest.raises(ConfigError, match="the built-in Triton list's candidates are Triton configs"):
        to.export_list(_args("--export-list", str(path), "--compiler", "triton"), None, tlist)
