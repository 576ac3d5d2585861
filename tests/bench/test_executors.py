"""``hipexplore.bench.executors``: where a one-device sweep's units run (``run_location``: this
process or a worker process per unit, and why), the executor that follows from it, and one unit in
a worker process of its own (``WorkerExecutor``), as every unit runs on a GPU."""

from __future__ import annotations

import pytest

import hipexplore as hx
from hipexplore.bench import passes as ps
from hipexplore.bench.executors import (
    IN_PROCESS,
    WORKER,
    InProcessExecutor,
    UnitRun,
    WorkerExecutor,
    executor_for,
    run_location,
)
from hipexplore.bench.runinfo import RunInfo
from hipexplore.bench.spec import SweepSpec
from hipexplore.bench.stats import StopRule
from hipexplore.devices.host import HostDevice
from hipexplore.kernels import catalog, user_kernel

C_KERNEL = "void hx_fill(float* a, unsigned long long n) { for (unsigned long long i = 0; i < n; ++i) a[i] = 1.0f; }\n"


class _OwnClockHost(HostDevice):
    """A device of the caller's own making (a subclass): a worker would make a plain one instead."""


@pytest.fixture
def user_c(tmp_path):
    src = tmp_path / "fill.c"
    src.write_text(C_KERNEL)
    user_kernel(src, "hx_fill", "out:a:f32[n],n:u64=n", name="ex_fill")
    yield "ex_fill"
    catalog.unregister("ex_fill")


@pytest.mark.timeout(120)
def test_on_the_host_a_users_c_kernel_runs_in_a_worker_and_the_catalogs_in_this_process(user_c):
    """A user's C kernel that faults would take this process down: it runs in a worker unless asked
    otherwise; the catalog's own kernels, a device of the caller's own and an explicit
    ``worker=False`` stay here; ``worker=True`` asks for a worker."""
    dev = HostDevice()
    own = SweepSpec(kernels=("triad",))
    users = SweepSpec(kernels=(user_c,))
    assert run_location(own, dev, None) == IN_PROCESS and run_location(own, dev, True) == WORKER
    assert run_location(users, dev, None) == WORKER and run_location(users, dev, False) == IN_PROCESS
    assert run_location(users, _OwnClockHost(), None) == IN_PROCESS
    assert isinstance(executor_for(users, dev, None), WorkerExecutor)
    assert isinstance(executor_for(own, dev, None), InProcessExecutor)
    assert executor_for(own, dev, None).where == IN_PROCESS and executor_for(users, dev, None).where == WORKER


def pass_in_worker(one, dev, *, hooks, run_id, done, info, pad=0):
    """One pass as the sweep runs it on a GPU: one unit in a worker process of its own
    (``bench.executors.WorkerExecutor``), its reports merged into ``info`` (the sweep's ``RunInfo``)."""
    from hipexplore.bench.record import Collector
    from hipexplore.bench.units import UnitJob

    unit = Collector(info, hooks=hooks)
    stopped = WorkerExecutor(dev).run_unit(UnitRun(UnitJob(one, 0, frozenset(done)), run_id, pad_bytes=pad), unit)
    return unit.result(stopped)


def test_a_pass_in_its_own_worker_leaves_out_what_is_done_and_keeps_its_telemetry_source():
    # on a GPU every pass runs this way (the event floor is per process); the host device runs it too
    from hipexplore.devices import get_device

    dev = get_device("host")
    one = SweepSpec(
        kernels=("triad",), sizes=(4096, 16384), flush=("none",), stop=StopRule(iterations=8), reference=False
    )
    info = RunInfo(spec={"sweep.spec": "outer"})
    res = pass_in_worker(one, dev, hooks=None, run_id="r1", done={("triad", 4096, "1", "none", "events")}, info=info)
    assert res.summary["size_bytes"].tolist() == [16384]
    assert set(res.samples["size_bytes"]) == {16384} and len(res.samples) == 8
    assert set(res.summary["run_id"]) == {"r1"}
    assert info.spec["sweep.spec"] == "outer" and info.measured.telemetry_source  # the worker's report, typed
    assert res.metadata["sweep.spec"] == "outer" and res.metadata["telemetry.source"] == info.measured.telemetry_source


def test_a_pass_in_its_own_worker_holds_its_pad_there_and_the_sweep_records_every_pad():
    from hipexplore.devices import get_device

    dev = get_device("host")
    one = SweepSpec(kernels=("triad",), sizes=(4096,), flush=("none",), stop=StopRule(iterations=8), reference=False)
    info = RunInfo()
    res = pass_in_worker(one, dev, hooks=None, run_id="r2", done=set(), info=info, pad=ps.pad_bytes(2))
    assert res.metadata["worker.pad_bytes"] == str(ps.pad_bytes(2)) and info.measured.worker_pad_bytes == ps.pad_bytes(
        2
    )
    res0 = pass_in_worker(one, dev, hooks=None, run_id="r3", done=set(), info=RunInfo(), pad=0)
    assert "worker.pad_bytes" not in res0.metadata  # the first pass holds none
    res3 = hx.sweep(
        "triad", ["16KiB"], [1], ["none"], device="host", iterations=9, units=3, reference=False, progress=False
    )
    assert res3.metadata["sweep.unit_pad_bytes"] == ",".join(str(ps.pad_bytes(k)) for k in range(3))
