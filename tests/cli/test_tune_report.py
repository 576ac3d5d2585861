"""hipexplore.cli.tune_report: ``hipexplore tune-replay``'s text report, built from hand-made reports
(the rare lines, such as a pass faster than the ideal), and ``--dry-run``'s account of a real list.
The command run end to end: tests/cli/test_tune_cmd.py and tests/e2e/test_first_run_cli.py."""

from __future__ import annotations

import argparse

import pandas as pd

from hipexplore.cli import tune_report
from hipexplore.tuning.lists import build_list, select_problems


def test_negative_vs_ideal_is_explained():
    from hipexplore.cli.tune_report import replay_text

    out = {
        "compiler": "host",
        "target": "host",
        "jobs": 1,
        "cache": "memory",
        "isolated": True,
        "problems": ["qkv"],
        "candidates_per_problem": 2,
        "kernels": 4,
        "unique_kernels": 3,
        "by_role": {},
        "seconds": 0.8,
        "seconds_ideal": 1.0,
        "seconds_without_cache": 2.0,
        "seconds_without_cache_source": "measured",
        "overhead_vs_ideal": -0.2,
        "speedup_vs_without_cache": 2.5,
        "failed": 0,
        "seconds_saved": 1.2,
        "seconds_saved_recorded": 0.9,
    }
    cols = [
        "scenario",
        "jobs",
        "lookups",
        "compiles",
        "memory_hits",
        "disk_hits",
        "remote_hits",
        "joins",
        "failed",
        "seconds",
        "compile_seconds",
        "seconds_saved",
    ]
    text = replay_text(out, pd.DataFrame([dict.fromkeys(cols, 0)]))
    assert "vs ideal: -20.0%" in text and "negative: this pass was faster than the ideal pass" in text
    assert "saved: 1.200 s of wall time" in text and "quote this one" in text
    assert "negative" not in replay_text({**out, "overhead_vs_ideal": 0.1}, pd.DataFrame([dict.fromkeys(cols, 0)]))


def test_what_was_not_measured_says_which_run_measures_it():
    lines = tune_report.own_cache_lines({"compiler_cache_setting": "off"})
    assert "the compiler's own cache (HIPEXPLORE_COMPILER_CACHE=off), and each scenario's passes (wall s):" in lines
    assert "saved vs cold (every compiler cache off): not measured (tune-replay --passes N measures it)" in lines
    assert "both caches warm: not measured (tune-replay --cache disk or all with --passes N measures it)" in lines
    walls = tune_report.own_cache_lines(
        {"pass_walls": {"memory": [0.5] * 10}, "compiler_cache_by_scenario": {"memory": "off (HIPEXPLORE_..)"}}
    )
    assert (
        "  memory          (a)  " + " ".join(["0.500"] * 8) + " ... (10)" in walls
        and "  (a) off (HIPEXPLORE_..)" in walls
    )


def test_a_dry_run_accounts_for_every_kernel_of_the_list(capsys):
    tlist = build_list("host", "host", problems=select_problems("2", tokens=512, d_model=512), limit=3)
    info = tune_report.dry_run_info(tlist)
    assert (info["list"], info["problems"], info["candidates"]) == ("built-in", 2, 6)
    assert info["kernels"] - info["unique_kernels"] == info["repeated_kernels"] >= 0
    assert info["unique_source_bytes"] > 0 and sum(v["kernels"] for v in info["by_role"].values()) == info["kernels"]
    assert tune_report.dry_run(argparse.Namespace(json=False, compiler="host"), tlist) == 0
    first, roles = capsys.readouterr().out.splitlines()
    assert first.startswith("list built-in: 2 problems, 6 candidates ->") and first.endswith(
        "(host host; nothing compiled)"
    )
    assert roles.startswith("  gemm: ")
