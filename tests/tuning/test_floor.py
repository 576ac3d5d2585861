"""``hipexplore.tuning.floor``: the compile floor (each unique kernel's fastest measured compile,
summed, spread over the jobs) is never above a measured replay, and the report draws it below the
cache curve even when the ideal pass ran slow."""

from __future__ import annotations

import pytest

from hipexplore.tuning.replay import replay_passes, run_replay

from tuning.test_replay import _available, _small

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_floor_is_never_above_a_measured_replay(jobs):
    """#26.5: the floor is built from the fastest measured compile of each unique kernel, so no
    pass that compiles every unique kernel (ideal and its repeats, off, memory, disk-cold) is
    below it, in wall time (jobs at a time) or in summed lookups (the report's curve)."""
    from hipexplore.tuning.floor import check_below

    _available("host")
    tl = _small(problems="2", limit=3)
    rep = run_replay(tl, jobs=jobs, cache="all", ideal_repeats=2)
    fl = rep.floor()
    assert fl["complete"] and fl["kernels"] == tl.unique_kernels and fl["jobs"] == jobs
    # the bound's sources: 2 ideal passes, off (every entry), 2 memory passes and disk-cold (the uniques)
    assert fl["compiles_measured"] == 5 * tl.unique_kernels + tl.kernels
    passes = [rep.scenarios[n] for n in ("off", "disk-cold")] + rep.ideal_passes + rep.memory_passes
    for res in passes:
        assert fl["floor_s"] <= res.seconds, (res.scenario, res.seconds, fl)
        assert fl["compile_sum_s"] <= float(res.frame["lookup_seconds"].sum()), res.scenario
    assert check_below(fl, rep.scenarios) == []
    js = rep.to_json()
    assert js["seconds_floor"] == pytest.approx(fl["floor_s"]) and js["ideal_repeats"] == 2
    assert js["seconds_ideal"] == pytest.approx(min(js["seconds_ideal_passes"]))
    # the memory side is repeated as often as the ideal, alternating, and read by the same statistic:
    # the fastest of two ideals against one memory pass was biased against the cache
    assert len(rep.memory_passes) == 2 and rep.memory_passes[0] is not rep.memory_passes[1]
    assert rep.scenarios["memory"].seconds == pytest.approx(min(js["seconds_memory_passes"]))
    assert replay_passes("all", ideal_repeats=2) == [
        "warm-up",
        "ideal",
        "off",
        "memory",
        "disk",
        "disk-warm",
        "ideal",
        "memory",
    ]
    assert replay_passes("disk", ideal_repeats=3) == ["warm-up", "ideal", "off", "disk", "disk-warm", "ideal", "ideal"]
    assert js["ratio_vs_floor"] >= 1.0
    # the bound is max(sum / jobs, longest), from per-kernel minima
    from hipexplore.tuning.floor import per_kernel_min

    mins = per_kernel_min(
        [s.frame for s in rep.scenarios.values()] + [p.frame for p in rep.ideal_passes + rep.memory_passes]
    )
    assert fl["compile_sum_s"] == pytest.approx(float(mins.sum()))
    assert fl["floor_s"] == pytest.approx(max(float(mins.sum()) / jobs, float(mins.max())))


def test_the_report_floor_is_below_the_cache_curve_even_when_the_ideal_pass_ran_slow():
    """The defect of #26.5 reproduced: a recorded replay whose ideal pass ran slower than the
    memory pass's compiles (memory 1.27 s under an "ideal" 1.33 s on the report). The panel's
    dashed line was the ideal pass's summed time; it must be the floor, never above the curve."""
    from hipexplore.report.replay import split_replay
    from hipexplore.report.review import ideal_floor

    _available("host")
    rep = run_replay(_small(problems="2", limit=3), jobs=1, cache="memory")
    frame = rep.frame.copy()
    slow = frame["scenario"] == "ideal"
    # a slow ideal pass, as recorded on that report: 1.5x the memory pass's lookups whatever the load did
    # to either pass (a fixed factor on the ideal alone left the premise to the machine, issue 26.6)
    factor = (
        1.5
        * float(frame.loc[frame["scenario"] == "memory", "lookup_seconds"].sum())
        / float(frame.loc[slow, "lookup_seconds"].sum())
    )
    for col in ("lookup_seconds", "call_seconds", "compile_seconds"):
        frame.loc[slow, col] = frame.loc[slow, col] * factor
    mem = frame[frame["scenario"] == "memory"]
    assert frame.loc[slow, "lookup_seconds"].sum() > mem["lookup_seconds"].sum()  # the old line would be above
    data = split_replay(frame, source="recorded")
    floor = ideal_floor(data)
    assert floor is not None and floor <= float(data.events["lookup_seconds"].sum())
    assert floor <= float(data.baseline["lookup_seconds"].sum())
    assert data.floor["kernels"] == rep.tuning_list.unique_kernels
