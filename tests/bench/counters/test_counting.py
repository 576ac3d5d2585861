"""``hipexplore.bench.counters.counting``: the parent's side of the counter pass: which
configurations are counted, the backend a spec and device get (the host refuses in one line),
and the counted launches attributed to configurations by the manifest's order and names."""

from __future__ import annotations

import pytest

from hipexplore.bench import SweepSpec
from hipexplore.bench.counters import HOST_LINE, counted_configurations, counter_backend
from hipexplore.bench.counters.backends import CounterError, Launch
from hipexplore.bench.counters.counting import attribute
from hipexplore.errors import ConfigError
from hipexplore.schema import Configuration

from bench.counters.test_phase import dev  # noqa: F401 - the host device fixture (a small LLC, its own compile cache)

KIB, MIB = 1 << 10, 1 << 20


def test_counted_configurations_leave_out_the_reference_and_merge_timers() -> None:
    spec = SweepSpec(
        kernels=("triad",),
        sizes=(MIB,),
        rotating=(1, "auto"),
        flush=("none", "l2-write"),
        timers=("events", "in-kernel"),
    )
    got = counted_configurations(spec)
    assert got == [Configuration("triad", MIB, r, f) for r in ("1", "auto") for f in ("none", "l2-write")]
    with pytest.raises(ConfigError, match="no configuration to count"):
        counted_configurations(spec, [Configuration("triad", MIB, "1", "cold-reference")])


def test_the_host_refuses_in_one_line(dev) -> None:
    for counters in (True, "ncu", "rocprofv3"):
        backend, why = counter_backend(SweepSpec(kernels=("triad",), sizes=(64 * KIB,), counters=counters), dev)
        assert backend is None and "\n" not in why
    assert counter_backend(SweepSpec(counters=True), dev)[1] == HOST_LINE
    assert counter_backend(SweepSpec(counters="ncu"), dev)[1] == "ncu counts NVIDIA GPUs; the device is host:0"
    assert counter_backend(SweepSpec(counters="cupti"), dev)[1] == "CUPTI counts NVIDIA GPUs; the device is host:0"


def test_a_backend_of_the_callers_own_is_taken_where_it_says_it_can_count(dev) -> None:
    """``given`` (``Orchestrator(counter_backend=...)``; a cluster's workers are asked the same):
    taken as it is where its ``available`` says None, else its one line."""
    from hipexplore.bench.counters.backends import HostBackend

    class Counts(HostBackend):
        def available(self, device):
            return None

    spec = SweepSpec(kernels=("triad",), sizes=(64 * KIB,), counters=True)
    mine = Counts()
    assert counter_backend(spec, dev, mine) == (mine, "")
    assert counter_backend(spec, dev, HostBackend()) == (None, HOST_LINE)


def _entry(kernel: str, entry: str, warmup: int, count: int) -> dict:
    return {
        "kernel": kernel,
        "entry": entry,
        "size_bytes": MIB,
        "rotating_requested": "1",
        "rotating": 1,
        "flush": "none",
        "warmup": warmup,
        "count": count,
    }


def test_attribution_by_order_and_name() -> None:
    entries = [_entry("triad", "triad", 4, 2), _entry("stencil", "stencil2d", 6, 3)]
    counted = [Launch("triad", {"i": i}) for i in range(2)] + [Launch("stencil2d", {"i": i}) for i in range(3)]
    owned, note = attribute(counted, entries, False, "ncu")
    assert [[x.values["i"] for x in o] for o in owned] == [[0, 1], [0, 1, 2]] and note == ""
    whole = [Launch("triad", {"i": i}) for i in range(6)] + [Launch("stencil2d", {"i": i}) for i in range(9)]
    owned, note = attribute(whole, entries, False, "ncu")  # the warm-up reported although not asked: by the total
    assert [[x.values["i"] for x in o] for o in owned] == [[4, 5], [6, 7, 8]] and "before the range" in note
    with pytest.raises(CounterError, match="reported 4 launch"):
        attribute(counted[:4], entries, False, "ncu")
    with pytest.raises(CounterError, match="expected kernel 'stencil2d', got \\['triad'\\]"):
        attribute([Launch("triad")] * 5, entries, False, "ncu")


def test_the_counter_pass_is_a_plan_of_counting_units(dev, tmp_path) -> None:
    """``CountingPlan``: the orchestrator's plan of ``COUNTING`` units (``UnitPlan.kind``), one per
    (kernel, size) and counter group of the backend, each under the profiler's command for its group
    (``Counting.prefix``, read by the executor), leaving out what another unit counts; the timed
    plan's kind is ``TIMED``."""
    from hipexplore.bench.counters import CountingPlan
    from hipexplore.bench.counters.ncu import NCU_GROUPS, NcuBackend
    from hipexplore.bench.units import COUNTING, TIMED, UnitJob, UnitPlan, UnitRun

    tool = tmp_path / "ncu"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    spec = SweepSpec(kernels=("triad",), sizes=(64 * KIB, MIB), rotating=(1, "auto"), flush=("none",), units=1)
    plan = CountingPlan(spec, dev, NcuBackend(ncu=str(tool)), counted_configurations(spec))
    try:
        jobs = []
        while (job := plan.next()) is not None:
            jobs.append(job)
        assert plan.kind == COUNTING and UnitPlan.kind == TIMED and UnitJob(spec, 0, frozenset()).kind == TIMED
        assert [(j.group, j.counting.metrics) for j in jobs] == [(g, m) for g in (0, 1) for m in NCU_GROUPS]
        assert all(j.kind == COUNTING and j.counting.prefix[0] == str(tool) and j.spec.units == 1 for j in jobs)
        assert UnitRun(jobs[0], "r").prefix == jobs[0].counting.prefix
        assert UnitRun(UnitJob(spec, 0, frozenset()), "r").prefix == ()
        counted = [
            {c.untimed_key for c in j.spec.configurations() if c not in j.done and not c.is_reference} for j in jobs
        ]
        assert [sorted(k.size for k in keys) for keys in counted] == [[64 * KIB] * 2] * 2 + [[MIB] * 2] * 2
        assert all(j.counting.label == plan.label == "ncu" for j in jobs)
        for j in jobs:  # the folder its profiler writes its report into: a cluster unit moves it (Counting.moved)
            log = j.counting.prefix[list(j.counting.prefix).index("--log-file") + 1]
            assert log == f"{j.counting.report}/ncu.log" and j.counting.report.startswith(str(plan.evidence.root))
    finally:
        plan.evidence.discard()
    assert not plan.evidence.root.exists()
