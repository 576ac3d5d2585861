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
from hipexplore.bench.spec import SweepSpec  # noqa: E402
from hipexplore.bench.stats import StopRule  # noqa: E402
from hipexplore.errors import ConfigError  # noqa: E402


def spec(**kw) -> SweepSpec:
    return SweepSpec(**{"kernels": ("triad",), "sizes": ("16KiB",), "stop": StopRule(iterations=10), **kw})


@pytest.mark.timeout(300)
def test_only_workers_advertising_a_gpu_count_and_none_is_one_line():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as lc, \
            distributed.Client(lc) as client:
        with pytest.raises(ConfigError) as exc:
            gpu_workers(client)
        assert str(exc.value) == (f"the cluster at {client.scheduler.address} has 1 worker(s) and none advertises the "
                                  "resource GPU=1; start one worker per GPU: CUDA_VISIBLE_DEVICES=i dask worker ADDRESS "
                                  "--nthreads 1 --resources GPU=1")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                                  resources={"GPU": 1}) as lc, distributed.Client(lc) as client:
        workers = gpu_workers(client)
        assert workers == list(client.scheduler_info()["workers"])


@pytest.mark.timeout(300)
def test_a_worker_answers_for_its_own_device():
    from conftest import require_compiler

    require_compiler("host")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                                  resources={"GPU": 1}) as lc, distributed.Client(lc) as client:
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
    assert [(g.kernels, g.sizes) for g in groups] == [(("triad",), (16384,)), (("triad",), (32768,)), (("triad",), (65536,)),
                                                      (("copy",), (16384,)), (("copy",), (32768,)), (("copy",), (65536,))]
    keys = [expected_keys(g) for g in groups]
    for g, k in zip(groups, keys):  # every configuration of a group is its (kernel, size)
        assert k and {(c[0], c[1]) for c in k} == {(g.kernels[0], g.sizes[0])}
    assert set().union(*keys) == set(s.configurations()) and sum(map(len, keys)) == len(s.configurations())
    inter = groups_of(spec(kernels=("triad", "copy"), sizes=("16KiB", "32KiB"), interleave=True))
    assert [(g.kernels, g.sizes) for g in inter] == [(("triad", "copy"), (16384,)), (("triad", "copy"), (32768,))]


@pytest.mark.timeout(60)
def test_executor_arguments_are_refused_by_name():
    with pytest.raises(ConfigError, match=r"^with a cluster, device must be a name each worker opens .*got a HostDevice object$"):
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
    src.write_text("void only_here(float* y, unsigned long long n) { for (unsigned long long i = 0; i < n; ++i) y[i] = 1; }\n")
    k = hx.user_kernel(src, "only_here", "out:y:f32[n], n:u64=n", host_source=src, register_it=False)
    ex = DaskExecutor("local:1", "host", connect=None)
    ex.check(spec())  # catalog kernels pass
    with pytest.raises(ConfigError, match=r"^kernel 'only_here' is not in the catalog; a cluster run sends kernels by name"):
        ex.check(SweepSpec(kernels=(k,), sizes=("16KiB",), stop=StopRule(iterations=10)))
