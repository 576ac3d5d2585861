"""hipexplore.cli.tune_cmd: ``hipexplore tune-replay`` through the real command line (in-process
``main``): the list it builds (``--dry-run``, ``--export-list``), a small replay on the host compiler,
and the refusals that come before any compile. The text report: tests/cli/test_tune_report.py; the
options: test_tune_options.py; the whole command in a fresh process: tests/e2e/test_first_run_cli.py."""

from __future__ import annotations

import json

import pytest

from hipexplore.cli import main, tune_cmd
from hipexplore.tuning import listfile

HOST = ["tune-replay", "--compiler", "host"]


def _one_line(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hipexplore tune-replay: error:") and "\n" not in err, err
    return err


def test_a_dry_run_counts_the_built_in_list_and_compiles_nothing(capsys):
    assert main([*HOST, "--dry-run", "--json", "--problems", "2", "--limit", "3"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["list"], info["target"], info["problems"], info["candidates"]) == ("built-in", "host", 2, 6)
    assert info["kernels"] == sum(v["kernels"] for v in info["by_role"].values()) >= info["unique_kernels"] > 0
    assert main([*HOST, "--dry-run", "--problems", "mlp_up"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("list built-in: 1 problems, 12 candidates ->") and "(host host; nothing compiled)" in text


def test_the_default_target_is_the_compilers_and_a_blank_one_is_refused(capsys):
    assert main(["tune-replay", "--compiler", "nvrtc", "--dry-run", "--json", "--problems", "1", "--limit", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["target"] == tune_cmd.DEFAULT_TARGETS["nvrtc"] == "sm_90"
    assert "--target must be a non-empty string" in _one_line(capsys, [*HOST, "--target", "  ", "--dry-run"])


def test_the_exported_list_reads_back_with_the_same_selection(tmp_path, capsys):
    path = tmp_path / "layer.jsonl"
    assert main([*HOST, "--dry-run", "--json", "--problems", "qkv", "--limit", "2", "--export-list", str(path)]) == 0
    got = capsys.readouterr()
    assert f"tune-replay: wrote 2 candidates of 1 problems to {path}" in got.err
    assert main([*HOST, "--dry-run", "--json", "--list", str(path)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["list_file"], again["problems"], again["candidates"]) == (str(path), 1, 2)
    assert json.loads(got.out)["candidates"] == 2
    assert listfile.read(str(path)).n_candidates == 2


@pytest.mark.parametrize(
    "extra, says",
    [
        (["--problems", " , "], "--problems is empty"),
        (["--every", "2"], "--every and --every-problem select from a --list"),
        (["--passes", "2", "--cluster", "local:1"], "--passes runs each pass in fresh local compiler processes"),
        (["--cluster", "local:1", "--cache", "memory"], "--cache memory is not shared (use --cache disk)"),
        (["--cluster", "local:1", "--jobs", "2"], "--jobs is one compile per worker with --cluster"),
        (["--passes", "2", "--no-ideal"], "--no-ideal does not apply to it"),
        (["--passes", "2", "--ideal-repeats", "3"], "--ideal-repeats does not apply to it"),
        (["--frame", "events.csv"], "--frame must name a .parquet file"),
    ],
)
def test_a_bad_combination_is_one_line_before_any_compile(capsys, extra, says):
    assert says in _one_line(capsys, [*HOST, "--problems", "1", "--limit", "1", *extra])


def test_a_small_replay_through_the_memory_cache(tmp_path, capsys, need_host_cc):
    frame = tmp_path / "events.parquet"
    argv = [*HOST, "--problems", "1", "--limit", "1", "--no-ideal", "--estimate-without-cache", "--quiet"]
    assert main([*argv, "--json", "--frame", str(frame)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["cache"], out["scenario"], out["failed"], out["frame"]) == ("memory", "memory", 0, str(frame))
    assert out["compiles"] + out["hits"] == out["kernels"] > 0 and frame.is_file()
    assert out["seconds_without_cache_source"] == "recorded-sum"  # --estimate-without-cache: no cache-off pass
