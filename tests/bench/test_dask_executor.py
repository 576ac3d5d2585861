"""hipexplore.bench.dask_executor: the parts of ``DaskExecutor`` a cluster sweep leans on, on a
real in-process Dask ``LocalCluster`` (one worker thread, host device): which workers count as GPU
workers, how a spec splits into groups, the refusals of the executor's arguments, a unit's result
(timed or counting) decoded and checked against its plan; and the counter pass on real Dask worker
processes: its summaries equal to the worker executor's for the same plan, its profiler's report
written in the worker's own folder and back as data, the one line where the workers cannot count.
What runs on a worker: tests/bench/test_dask_worker.py. Whole cluster sweeps, kills and resume:
tests/bench/test_cluster.py."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conftest import need_module

distributed = need_module("distributed")  # the cluster extra (setup.sh --dev)

from hipexplore.bench.dask_executor import (  # noqa: E402
    DaskExecutor,
    expected_keys,
    gpu_workers,
    groups_of,
)
from hipexplore.bench.measured import MeasuredInfo  # noqa: E402
from hipexplore.bench.spec import SweepSpec  # noqa: E402
from hipexplore.bench.stats import StopRule  # noqa: E402
from hipexplore.errors import ConfigError  # noqa: E402


def spec(**kw) -> SweepSpec:
    return SweepSpec(**{"kernels": ("triad",), "sizes": ("16KiB",), "stop": StopRule(iterations=10), **kw})


@pytest.mark.timeout(300)
def test_only_workers_advertising_a_gpu_count_and_none_is_one_line():
    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as lc,
        distributed.Client(lc) as client,
    ):
        with pytest.raises(ConfigError) as exc:
            gpu_workers(client)
        assert str(exc.value) == (
            f"the cluster at {client.scheduler.address} has 1 worker(s) and none advertises the "
            "resource GPU=1; start one worker per GPU: CUDA_VISIBLE_DEVICES=i dask worker ADDRESS "
            "--nthreads 1 --resources GPU=1"
        )
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None, resources={"GPU": 1}
        ) as lc,
        distributed.Client(lc) as client,
    ):
        workers = gpu_workers(client)
        assert workers == list(client.scheduler_info()["workers"])


@pytest.mark.timeout(60)
def test_groups_keep_a_kernel_size_pair_or_an_interleaved_size_on_one_device():
    s = spec(kernels=("triad", "copy"), sizes=("16KiB", "32KiB", "64KiB"), rotating=(1, 2))
    groups = groups_of(s)
    assert [(g.kernels, g.sizes) for g in groups] == [
        (("triad",), (16384,)),
        (("triad",), (32768,)),
        (("triad",), (65536,)),
        (("copy",), (16384,)),
        (("copy",), (32768,)),
        (("copy",), (65536,)),
    ]
    keys = [expected_keys(g) for g in groups]
    for g, k in zip(groups, keys):  # every configuration of a group is its (kernel, size)
        assert k and {(c[0], c[1]) for c in k} == {(g.kernels[0], g.sizes[0])}
    assert set().union(*keys) == set(s.configurations()) and sum(map(len, keys)) == len(s.configurations())
    inter = groups_of(spec(kernels=("triad", "copy"), sizes=("16KiB", "32KiB"), interleave=True))
    assert [(g.kernels, g.sizes) for g in inter] == [(("triad", "copy"), (16384,)), (("triad", "copy"), (32768,))]


@pytest.mark.timeout(60)
def test_executor_arguments_are_refused_by_name():
    with pytest.raises(
        ConfigError, match=r"^with a cluster, device must be a name each worker opens .*got a HostDevice object$"
    ):
        from hipexplore.devices.host import HostDevice

        DaskExecutor("local:1", HostDevice(), connect=None)
    for bad in (-1, True, 1.5, "2"):
        with pytest.raises(ConfigError, match=rf"^retries must be an integer >= 0, got {bad!r}$"):
            DaskExecutor("local:1", "host", connect=None, retries=bad)
    ex = DaskExecutor("local:1", "host", {"llc_bytes": 1 << 20}, connect=None, retries=0)
    assert (ex.retries, ex.options, ex.reruns, ex.failed) == (0, {"llc_bytes": 1 << 20}, [], [])


@pytest.mark.timeout(120)
def test_a_kernel_not_in_the_catalog_cannot_be_sent_by_name(tmp_path):
    import hipexplore as hx

    src = tmp_path / "k.c"
    src.write_text(
        "void only_here(float* y, unsigned long long n) { for (unsigned long long i = 0; i < n; ++i) y[i] = 1; }\n"
    )
    k = hx.user_kernel(src, "only_here", "out:y:f32[n], n:u64=n", host_source=src, register_it=False)
    ex = DaskExecutor("local:1", "host", connect=None)
    ex.check(spec())  # catalog kernels pass
    with pytest.raises(
        ConfigError, match=r"^kernel 'only_here' is not in the catalog; a cluster run sends kernels by name"
    ):
        ex.check(SweepSpec(kernels=(k,), sizes=("16KiB",), stop=StopRule(iterations=10)))


@pytest.mark.timeout(120)
def test_a_callable_is_refused_before_any_set_up():
    """A cluster unit runs its kernel in a sweep worker (never in a process that speaks Dask's protocol),
    which a callable cannot reach: one line, before a cluster is asked for anything."""
    import numpy as np

    import hipexplore as hx

    k = hx.callable_kernel(
        lambda a: None, lambda n, i: (np.zeros(n, np.float32),), bytes_per_launch="4*n", name="cl_refused"
    )
    with pytest.raises(
        ConfigError,
        match=r"^kernel 'cl_refused' is a Python callable: a cluster unit runs its kernel in a sweep worker",
    ):
        DaskExecutor("local:1", "host", connect=None).check(
            SweepSpec(kernels=(k,), sizes=("16KiB",), stop=StopRule(iterations=10))
        )


def _run(s: SweepSpec, done=frozenset()):
    from hipexplore.bench.executors import UnitRun
    from hipexplore.bench.units import UnitJob

    return UnitRun(UnitJob(s, 0, frozenset(done)), "run0001")


def _unit_bytes(s: SweepSpec, *, rows=None, tail=None) -> bytes:
    """What ``unit_task`` returns for ``s``: its rows as wire frames, then done and where it ran."""
    from hipexplore.bench import wire
    from hipexplore.bench.dask_worker import placed

    from .made import result

    out = [wire.encode(wire.Meta({"warmup.clock": "stable"}))]
    for c in s.configurations() if rows is None else rows:
        ident = {"worker": "tls://127.0.0.1:1", "host": "h", "gpu": ""}
        out.append(wire.encode(wire.Add(placed(result(c, n=2), ident)), cluster=True))
    out += (
        tail
        if tail is not None
        else [wire.encode(wire.Done(False)), wire.encode(wire.UnitEnd("tls://127.0.0.1:1", "h", "", 1.5))]
    )
    return b"".join(out)


def test_a_cluster_units_result_is_decoded_and_checked_against_its_plan():
    """``unit_task`` returns wire bytes, never pickled rows; the client believes them only as the unit's plan allows."""
    import pickle

    from hipexplore.bench import wire
    from hipexplore.bench.dask_executor import unit_result
    from hipexplore.errors import KernelFault

    s = spec(rotating=(1, 2))
    got = unit_result(_unit_bytes(s), _run(s))
    assert [r.configuration.rotating for r in got.results] == ["1", "2", "1"] and got.worker == "tls://127.0.0.1:1"
    assert got.seconds == 1.5 and not got.stopped and got.measured == MeasuredInfo(warmup_clock="stable")
    assert list(got.results[0].samples.columns)[-3:] == ["worker", "host", "gpu"]
    assert got.results[0].summary("placement").worker == "tls://127.0.0.1:1"
    bad = {
        "a pickle": pickle.dumps({"rows": [], "frames": []}),
        "an early done": _unit_bytes(s, rows=s.configurations()[:1]),
        "a configuration twice": _unit_bytes(s, rows=[*s.configurations(), s.configurations()[0]]),
        "no end": _unit_bytes(s, tail=[wire.encode(wire.Done(False))]),
        "a foreign configuration": _unit_bytes(s, rows=[*s.configurations(), s.configurations()[0]._replace(size=1)]),
        "not bytes": {"rows": []},
    }
    for what, blob in bad.items():
        with pytest.raises(KernelFault, match="the cluster unit's result is not what a unit reports") as err:
            unit_result(blob, _run(s))
        assert str(err.value).startswith("kernel triad faulted in configuration ") and "\n" not in str(err.value), what


# -- the counter pass on a cluster ---------------------------------------------------------------------


def _count_run(s: SweepSpec, report: str = "/nowhere/group-0"):
    from hipexplore.bench.counters import Counting
    from hipexplore.bench.executors import UnitRun
    from hipexplore.bench.units import UnitJob

    return UnitRun(UnitJob(s, 0, frozenset(), counting=Counting(report=report)), "run0001")


def _entry(c) -> dict:
    return {
        "kernel": c.kernel,
        "entry": c.kernel,
        "size_bytes": int(c.size),
        "n": 4096,
        "rotating_requested": str(c.rotating),
        "rotating": 1,
        "flush": c.flush,
        "warmup": 3,
        "count": 2,
        "timed": 2,
        "input_bytes": 32768,
        "footprint_bytes": 49152,
        "marker": "none",
        "marker_status": "",
        "plan_note": "",
        "launches": [(0, 0), (0, 1)],
    }


def test_a_counting_units_result_carries_its_summaries_typed_and_its_report_as_data():
    """A cluster counting unit's result is wire bytes: each entry once with its ``CounterSummary``
    (typed, as its worker made it; None where a report is parsed instead), then ``done``, then its
    profiler's report files, then where it ran; anything else is one ``KernelFault`` line."""
    from hipexplore.bench import wire
    from hipexplore.bench.counters.summary import CounterSummary
    from hipexplore.bench.dask_executor import unit_result
    from hipexplore.errors import KernelFault

    s = spec(rotating=(1, 2))
    confs = [c for c in s.configurations() if not c.is_reference]
    summary = CounterSummary(1.5e6, 2.0, float("nan"), 32768, 0.95, "cold", "kept", "", "CUPTI", 2, "")
    counted = [wire.encode(wire.Counted(_entry(confs[0]), summary)), wire.encode(wire.Counted(_entry(confs[1])))]
    done, end = wire.encode(wire.Done(False)), wire.encode(wire.UnitEnd("tls://127.0.0.1:1", "h", "0", 2.0))
    report = wire.encode(wire.Report({"ncu.log": b'"ID"\n', "rocprof/h/1_counter_collection.csv": b""}))
    got = unit_result(b"".join([*counted, done, report, end]), _count_run(s))
    assert [type(x) for _e, x in got.counted] == [CounterSummary, type(None)]
    assert got.counted[0][1] == CounterSummary.of_columns(
        {**summary.columns(), "l2_hit_rate": got.counted[0][1].l2_hit_rate}
    )
    assert got.counted[1][0]["rotating_requested"] == "2" and got.report["ncu.log"] == b'"ID"\n'
    assert got.worker == "tls://127.0.0.1:1" and got.results == [] and not got.stopped
    assert unit_result(b"".join([*counted, done, end]), _count_run(s)).report is None  # counted in the worker
    bad = {
        "a report before done": [*counted, report, done, end],
        "a report twice": [*counted, done, report, report, end],
        "an entry missing": [counted[0], done, report, end],
        "an entry twice": [*counted, counted[0], done, report, end],
        "a timed row": [*counted, _unit_bytes(s, rows=confs[:1], tail=[]), done, report, end],
    }
    for what, frames in bad.items():
        with pytest.raises(KernelFault, match="the cluster unit's result is not what a unit reports") as err:
            unit_result(b"".join(frames), _count_run(s))
        assert "\n" not in str(err.value), what
    with pytest.raises(KernelFault, match="a report frame, which only a cluster counting unit's result holds"):
        unit_result(_unit_bytes(s, tail=[done, report, end]), _run(s))  # a timed unit sends no report


UNTIMED_READ = 1e12  # what a chunk's untimed lead and trail "read": a summary that averaged them would show it


def _made_up_ncu():
    """Nsight Compute's own parser and attribution, on a host without a GPU: the counting unit runs for
    real in a sweep worker started under a wrapper (a prefix that writes its argv into the report
    folder, then runs the rest: a report written where the executor put the profiler's folder), and
    ``parse`` needs that file, then makes ncu's CSV of the manifest's launches (timed launch on set s
    read (s + 1) KiB)."""
    from hipexplore.bench.counters.counting import MANIFEST
    from hipexplore.bench.counters.ncu import LOG, NcuBackend

    class MadeUpNcu(NcuBackend):
        def __init__(self, wrapper: str) -> None:
            super().__init__(ncu=wrapper, metrics=("dram__bytes_read.sum", "dram__bytes_write.sum"))
            self.marker, self.captures_warmup = "none", False  # the host has no cuProfilerStart

        def available(self, device):
            return None

        def prefix(self, group, out_dir, entries):
            return [self.explicit, str(out_dir / "argv.txt")]

        def parse(self, out_dir, entries=None):
            from pathlib import Path

            (Path(out_dir) / "argv.txt").read_text()  # the unit's command wrote it: no report, no counters
            if entries is None:
                entries = json.loads((Path(out_dir) / MANIFEST).read_text())["entries"]
            lines = ['"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"']
            ident = 0
            for e in entries:
                for s, position in e["launches"]:
                    read = 1024.0 * (s + 1) if position >= 0 else UNTIMED_READ
                    for name, value in (("dram__bytes_read.sum", read), ("dram__bytes_write.sum", 0.0)):
                        lines.append(f'"{ident}","{e["entry"]}","{name}","byte","{value:.1f}"')
                    ident += 1
            (Path(out_dir) / LOG).write_text("\n".join(lines) + "\n")
            return super().parse(out_dir)

        def describe(self):
            return {"name": "ncu", "label": "made-up ncu", "metrics": list(self.metrics), "profiler_range": False}

    return MadeUpNcu


@pytest.mark.timeout(900)
def test_the_counter_pass_runs_on_dask_workers_as_the_worker_executor_runs_it(tmp_path):
    """The same counting plan through the worker executor and through real Dask worker processes
    gives the same ``CounterSummary`` per configuration; on the cluster the profiler's report folder
    is one of the worker's own, and its files come back as data into the pass's kept evidence. A
    cluster whose workers cannot count says so in one line (naming the worker) and the sweep runs on."""
    import sys
    import warnings

    import cloudpickle
    import pandas as pd

    from conftest import require_compiler
    from hipexplore.bench.cluster import local_cluster
    from hipexplore.bench.counters import CountersSkipped
    from hipexplore.bench.dask_connect import connect
    from hipexplore.bench.executors import WorkerExecutor
    from hipexplore.bench.orchestrator import Orchestrator
    from hipexplore.bench.result import RunOptions
    from hipexplore.devices.host import HostDevice
    from hipexplore.schema import COUNTER_COLUMNS

    require_compiler("host")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the made-up backend is checked on the worker
    wrapper = tmp_path / "wrap.sh"
    # the profiler's stand-in: it writes where it was told to (its report folder) and the command it runs
    wrapper.write_text('#!/bin/sh\nout="$1"; shift\nprintf \'%s\\n\' "$out" "$@" > "$out"\nexec "$@"\n')
    wrapper.chmod(0o755)
    backend = _made_up_ncu()(str(wrapper))
    s = spec(rotating=(1, 2), flush=("none", "l2-write"), units=1, reference_samples=4, warmup_s=0.0, counters=True)
    s = dataclasses.replace(s, clock_warmup_s=0.0)

    def sweep(executor, out):
        options = RunOptions(out=tmp_path / out, progress=False)
        return Orchestrator(s, executor, options, counter_backend=backend).run()

    local = sweep(WorkerExecutor(HostDevice()), "w.parquet")
    lc = local_cluster(1)
    client = distributed.Client(lc)
    try:
        remote = sweep(DaskExecutor(client, "host", connect=connect), "d.parquet")
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            plain = Orchestrator(
                s, DaskExecutor(client, "host", connect=connect), RunOptions(progress=False)
            ).run()  # no backend of the caller's: the workers' own device, the host, has none
    finally:
        client.close()
        lc.close()
    keys = ["kernel", "size_bytes", "rotating_requested", "flush", "timer"]
    mine = local.summary.set_index(keys)[list(COUNTER_COLUMNS)].sort_index()
    theirs = remote.summary.set_index(keys)[list(COUNTER_COLUMNS)].sort_index()
    assert mine["counter_backend"].tolist().count("made-up ncu") == 4  # 4 configurations counted, the reference not
    assert (mine["dram_read_bytes"].dropna() < UNTIMED_READ).all()  # the timed launches' mean only
    pd.testing.assert_frame_equal(mine, theirs)
    assert remote.metadata["counters.status"].startswith("counted 4 configuration(s) with made-up ncu")
    # the report, written on the worker in a folder of its own, came back as data into the kept evidence
    there = (tmp_path / "d.counters" / "triad-16384" / "group-0" / "argv.txt").read_text().splitlines()
    here = (tmp_path / "w.counters" / "triad-16384" / "group-0" / "argv.txt").read_text().splitlines()
    assert "/hipexplore-report-" in there[0] and "/hipexplore-counters-" in here[0]
    assert there[1:3] == here[1:3] == [sys.executable, "-I"]  # a sweep worker under the profiler, both times
    lines = [str(w.message) for w in seen if issubclass(w.category, CountersSkipped)]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert lines[0].startswith("no counters: worker tls://127.0.0.1:") and "host: no hardware counters" in lines[0]
    assert plain.metadata["counters.status"] == lines[0]  # kept as the warning said it
    assert len(plain.summary) == len(s.configurations())  # the sweep ran on, unchanged
