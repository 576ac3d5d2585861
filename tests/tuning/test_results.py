"""hipexplore.tuning.results: what a tuning replay measured, summarised. One real replay of a small
host list (cc through the real cache), then its ``ScenarioResult``s and ``ReplayReport`` read
directly: each summary figure from the rows, the JSON's derived figures and strictness."""

from __future__ import annotations

import dataclasses
import json
import math

import pandas as pd
import pytest

from hipexplore.schema import REPLAY_COLUMNS
from hipexplore.tuning.lists import build_list, select_problems
from hipexplore.tuning.replay import run_replay
from hipexplore.tuning.results import ReplayReport, ScenarioResult, candidates_by_problem, empty_frame


@pytest.fixture(scope="module")
def report() -> ReplayReport:
    from conftest import require_compiler

    comp = require_compiler("host")
    tl = build_list("host", "host", problems=select_problems("2", tokens=64, d_model=32), limit=2)
    return run_replay(tl, jobs=1, cache="memory", compiler=comp, warm_pass=False)


@pytest.mark.timeout(600)
def test_summary_figures_come_from_the_rows(report):
    mem = report.scenarios["memory"]
    f, s = mem.frame, mem.summary()
    assert s["scenario"] == "memory" and s["jobs"] == 1 and s["lookups"] == len(f) == report.tuning_list.kernels
    assert s["compiles"] + s["hits"] + s["joins"] + s["failed"] == s["lookups"]
    assert s["seconds"] == mem.seconds and s["cpu_seconds"] == mem.cpu_seconds
    assert s["call_seconds"] == pytest.approx(f["call_seconds"].sum())
    assert s["outside_compiler_seconds"] == pytest.approx(mem.seconds - f["call_seconds"].sum())
    assert s["cache_overhead_seconds"] == pytest.approx((f["lookup_seconds"] - f["call_seconds"]).sum())
    assert s["seconds_saved"] == pytest.approx(f["seconds_saved"].sum())
    assert report.scenarios["ideal"].summary()["cache_overhead_seconds"] == 0.0  # the ideal has no cache
    # a parallel pass has no serial "outside the compiler" figure
    par = ScenarioResult("memory", 2, mem.seconds, f, mem.cpu_seconds).summary()
    assert math.isnan(par["outside_compiler_seconds"]) and par["call_seconds"] == s["call_seconds"]


@pytest.mark.timeout(600)
def test_json_derived_figures(report):
    js = report.to_json()
    main, off = js["scenarios"]["memory"], js["scenarios"]["off"]
    assert js["scenario"] == "memory" and js["compiler"] == "host" and js["list"] == "built-in"
    assert js["seconds_without_cache_source"] == "measured" and js["seconds_without_cache"] == off["seconds"]
    assert js["seconds_saved"] == pytest.approx(off["seconds"] - main["seconds"])
    assert js["speedup_vs_without_cache"] == pytest.approx(off["seconds"] / main["seconds"])
    assert js["overhead_vs_ideal"] == pytest.approx(main["seconds"] / js["seconds_ideal"] - 1)
    assert js["ideal_repeats"] == 1 and js["seconds_ideal_passes"] == [js["seconds_ideal"]]
    assert js["candidates_per_problem"] == 2 and js["problems"] == [p.name for p in report.tuning_list.problems]
    if js["seconds_floor"]:
        assert js["ratio_vs_floor"] == pytest.approx(main["seconds"] / js["seconds_floor"])
    json.dumps(js, allow_nan=False)  # strict JSON
    # without a measured cache-off pass: the recorded sum stands in, and says so
    no_off = dataclasses.replace(report, scenarios={k: v for k, v in report.scenarios.items() if k != "off"})
    js2 = no_off.to_json()
    assert js2["seconds_without_cache_source"] == "recorded-sum" and js2["seconds_without_cache_measured"] is None
    assert js2["seconds_without_cache"] == js2["seconds_without_cache_recorded_sum"] == main["recorded_compile_seconds"]
    # a parallel primary pass: its NaN figure is null in the JSON
    mem = report.scenarios["memory"]
    par = dataclasses.replace(
        report, jobs=2, scenarios={**report.scenarios, "memory": dataclasses.replace(mem, jobs=2)}
    )
    js3 = par.to_json()
    assert js3["outside_compiler_seconds"] is None
    json.dumps(js3, allow_nan=False)


@pytest.mark.timeout(600)
def test_frames_one_row_per_lookup_and_one_per_scenario(report):
    frame = report.frame
    assert len(frame) == sum(len(s.frame) for s in report.scenarios.values())
    summary = report.summary_frame()
    assert list(summary["scenario"]) == list(report.scenarios)
    assert (summary["compiler"] == "host").all() and (summary["kernels"] == report.tuning_list.kernels).all()
    assert list(summary.columns[:2]) == ["compiler", "target"]
    empty = empty_frame()
    assert empty.empty and set(REPLAY_COLUMNS) <= set(empty.columns)
    assert str(empty["entry"].dtype) == "int64" and str(empty["jobs"].dtype) == "int64"
    assert pd.api.types.is_object_dtype(empty["problem"])
    assert dataclasses.replace(report, scenarios={}).frame.columns.tolist() == empty.columns.tolist()


@pytest.mark.timeout(600)
def test_by_problem_lists_each_problems_distinct_candidates_in_order(report):
    groups = candidates_by_problem(report.tuning_list)
    assert len(groups) == len(report.tuning_list.problems)
    order = list(dict.fromkeys(e.candidate for e in report.tuning_list.entries))
    for g in groups:
        assert len(g) == len(set(g)) == 2 and g == [c for c in order if c in g]
