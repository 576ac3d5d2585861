"""The replay against the compilers' own caches (issue 45, item 2): every scenario in alternated
rounds, each pass in fresh compiler processes with its own salt (the compiler-cache pass sharing
the salt of the pass it warms from), the compiler's own cache recorded per scenario, the JSON and
the text table of the real CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import cliproc
from hipexplore.cli.tune_report import replay_text
from hipexplore.errors import ConfigError
from hipexplore.tuning.baselines import round_order, run_rounds
from hipexplore.tuning.lists import build_list, select_problems

REPO = Path(__file__).resolve().parents[2]


def test_rounds_alternate_and_keep_the_warm_pairs_together():
    first, second = round_order("memory", 0), round_order("memory", 1)
    assert first == ["ideal", "cold", "off", "compiler-cache", "memory"]
    assert second == ["memory", "off", "compiler-cache", "cold", "ideal"]
    both = round_order("all", 1)
    assert (
        both.index("disk-warm") == both.index("disk-cold") + 1 and both.index("compiler-cache") == both.index("off") + 1
    )
    with pytest.raises(ConfigError, match="cache must be one of"):
        round_order("everything", 0)


def test_passes_are_checked():
    tl = build_list("host", "host", problems=select_problems("1"), limit=1)
    for bad in (0, 101, True, 2.5):
        with pytest.raises(ConfigError, match="passes must be an integer"):
            run_rounds(tl, passes=bad)


@pytest.fixture(scope="module")
def nvrtc_rounds():
    """Two rounds of a one-candidate NVRTC list (NVRTC's own cache is inert without a driver, so the
    scenarios differ here only in what they ask and record, not in time)."""
    from conftest import require_compiler

    require_compiler("nvrtc")
    tl = build_list("nvrtc", "sm_90", problems=select_problems("1", tokens=64, d_model=32), limit=1)
    seen: list[str] = []
    return tl, run_rounds(tl, jobs=1, passes=2, on_pass=seen.append), seen


def test_every_pass_is_its_own_with_its_own_salt(nvrtc_rounds):
    tl, report, seen = nvrtc_rounds
    assert seen == round_order("memory", 0) + round_order("memory", 1)
    frame = report.frame
    assert sorted(frame.groupby(["scenario", "round"]).size().index) == sorted(
        (s, r) for r in (0, 1) for s in ("ideal", "cold", "off", "compiler-cache", "memory")
    )
    digests = {key: set(g["digest"]) for key, g in frame.groupby(["scenario", "round"])}
    # the compiler-cache pass compiles what the off pass of its round compiled (its warm-up); nothing else is shared
    assert (
        digests[("compiler-cache", 0)] == digests[("off", 0)] and digests[("compiler-cache", 1)] == digests[("off", 1)]
    )
    others = [d for k, d in digests.items() if k[0] != "compiler-cache"]
    assert all(not (a & b) for i, a in enumerate(others) for b in others[i + 1 :])
    for (scenario, rnd), g in frame.groupby(["scenario", "round"]):  # each row names its pass's wall time
        wall = [p.seconds for p in report.passes if (p.scenario, p.round) == (scenario, rnd)]
        assert set(g["pass_seconds"]) == set(wall) and len(wall) == 1


def test_each_scenario_records_the_compilers_own_cache_it_ran_with(nvrtc_rounds):
    _tl, report, _seen = nvrtc_rounds
    own = report.to_json()["compiler_cache_by_scenario"]
    assert own["cold"].startswith("off: HIPEXPLORE_COMPILER_CACHE=off (hipexplore passes --no-cache)")
    assert own["compiler-cache"].startswith("on: HIPEXPLORE_COMPILER_CACHE=on")
    assert own["off"].startswith("on: NVRTC's default") and own["memory"] == own["ideal"] == own["off"]
    for scenario, g in report.frame.groupby("scenario"):
        assert set(g["compiler_cache"]) == {own[scenario]}


def test_json_carries_walls_savings_with_intervals_and_the_state(nvrtc_rounds):
    _tl, report, _seen = nvrtc_rounds
    out = report.to_json()
    assert out["rounds"] == 2 and {k: len(v) for k, v in out["pass_walls"].items()} == dict.fromkeys(
        ("ideal", "cold", "off", "compiler-cache", "memory"), 2
    )
    for key, base, new in (
        ("saved_vs_cold", "cold", "memory"),
        ("saved_beyond_compiler_cache", "compiler-cache", "memory"),
        ("memory_vs_ideal", "ideal", "memory"),
    ):
        c = out[key]
        assert (c["base"], c["scenario"], c["passes"]) == (base, new, [2, 2])
        walls = out["pass_walls"]
        assert c["seconds"] == pytest.approx(sum(walls[base]) / 2 - sum(walls[new]) / 2)
        assert c["ratio"] == pytest.approx(sum(walls[new]) / sum(walls[base]))
        lo, hi = c["ratio_ci"]
        assert lo <= c["ratio"] <= hi and c["seconds_ci"] == pytest.approx(
            [c["base_s"] * (1 - hi), c["base_s"] * (1 - lo)]
        )
    assert (
        out["compiler_cache"] == out["compiler_cache_by_scenario"]["memory"]
        and out["compiler_cache_setting"] == "default"
    )


def test_the_table_fits_120_columns(nvrtc_rounds):
    _tl, report, _seen = nvrtc_rounds
    text = replay_text(report.to_json(), report.summary_frame())
    assert max(len(line) for line in text.splitlines()) <= 120, text
    assert "saved vs cold (every compiler cache off): " in text and "saved beyond the compiler's own cache: " in text
    assert "memory / ideal: " in text and "inert here: no CUDA driver" in text
    assert "both caches warm: not measured (tune-replay --cache disk or all with --passes N measures it)" in text


def test_the_cli_json_and_its_refusals(tmp_path):
    """The real command: --passes 2 --json, and --passes with what it replaces: one line, exit 2."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIPEXPLORE_COMPILER_CACHE")}
    run = lambda *a: cliproc.run(["tune-replay", *a], cwd=tmp_path, timeout=600, env=env)  # noqa: E731
    proc = run("--compiler", "host", "--problems", "1", "--limit", "1", "--passes", "2", "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out["pass_walls"]) == {"ideal", "cold", "off", "compiler-cache", "memory"}
    assert out["saved_vs_cold"]["seconds_ci"] and out["saved_beyond_compiler_cache"]["ratio_ci"]
    assert out["memory_vs_ideal"]["ratio_ci"] and out["compiler_cache"].startswith("none: the host C compiler")
    assert out["warm_beyond_compiler_cache"] is None
    both = run(
        "--compiler", "host", "--problems", "1", "--limit", "1", "--passes", "2", "--cache", "all", "--json", "--quiet"
    )
    assert both.returncode == 0, both.stderr
    warm = json.loads(both.stdout)["warm_beyond_compiler_cache"]
    assert (warm["base"], warm["scenario"], warm["passes"]) == ("compiler-cache", "disk-warm", [2, 2]) and warm[
        "ratio_ci"
    ]
    for extra in (["--ideal-repeats", "2"], ["--no-ideal"], ["--estimate-without-cache"], ["--cluster", "local:1"]):
        bad = run("--compiler", "host", "--passes", "2", *extra)
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--passes" in bad.stderr, (
            bad.stderr
        )
    zero = run("--compiler", "host", "--passes", "0")
    assert zero.returncode == 2 and "--passes" in zero.stderr


def test_a_bad_cuda_cache_path_stops_the_replay_before_any_pass(tmp_path):
    """One line, exit 2, and the --frame file already there is kept (checked before any compile)."""
    frame = tmp_path / "events.parquet"
    frame.write_bytes(b"not yours")
    bad = tmp_path / "a-file"
    bad.write_text("x")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("HIPEXPLORE_COMPILER_CACHE", "CUDA_CACHE"))},
        "CUDA_CACHE_PATH": str(bad),
    }
    proc = cliproc.run(
        ["tune-replay", "--compiler", "nvrtc", "--passes", "2", "--frame", str(frame), "--force"],
        cwd=tmp_path,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "CUDA_CACHE_PATH" in proc.stderr and "is a file" in proc.stderr and frame.read_bytes() == b"not yours"
