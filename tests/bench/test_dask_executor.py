"""hipexplore.bench.dask_executor: the parts of ``DaskExecutor`` a cluster sweep leans on, on a
real in-process Dask ``LocalCluster`` (one worker thread, host device): which workers count as GPU
workers, what a worker answers for its device, how a spec splits into groups, and the refusals of
the executor's arguments. Whole cluster sweeps, kills and resume: tests/bench/test_cluster.py."""

from __future__ import annotations

import pytest

from conftest import need_module

distributed = need_module("distributed")  # the cluster extra (setup.sh --dev)

from hipexplore.bench.dask_executor import (  # noqa: E402
    DaskExecutor,
    PlanDevice,
    device_name,
    expected_keys,
    gpu_workers,
    groups_of,
    worker_facts,
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


@pytest.mark.timeout(300)
def test_a_worker_answers_for_its_own_device():
    from conftest import require_compiler

    require_compiler("host")
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None, resources={"GPU": 1}
        ) as lc,
        distributed.Client(lc) as client,
    ):
        name = client.submit(device_name, "host", {}, pure=False).result(timeout=120)
        facts = client.submit(worker_facts, spec(), "host", {}, pure=False).result(timeout=240)
    from hipexplore.devices.host import HostDevice

    assert name == facts["name"] == HostDevice().name
    assert facts["llc_bytes"] > 0 and 0 < facts["free"] <= facts["total"]
    assert facts["identities"]  # each kernel's identity, for resume
    plan = PlanDevice(facts)
    assert plan.llc_bytes == facts["llc_bytes"] and plan.memory_info() == (facts["free"], facts["total"])


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
    from hipexplore.bench.dask_executor import placed

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
