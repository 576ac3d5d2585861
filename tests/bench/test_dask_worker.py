"""hipexplore.bench.dask_worker: what runs on a Dask worker, on a real in-process ``LocalCluster``
(one worker thread, host device): what a worker answers for its own device, whether it can count
(its own profiler looked for there), and a profiler's report folder read back as data: regular files
only, nothing followed, bounded. A unit on a worker end to end: tests/bench/test_dask_executor.py
and tests/bench/test_cluster.py."""

from __future__ import annotations

import os

import pytest

from conftest import need_module

distributed = need_module("distributed")  # the cluster extra (setup.sh --dev)

from hipexplore.bench import wire  # noqa: E402
from hipexplore.bench.counters.backends import HOST_LINE, HostBackend  # noqa: E402
from hipexplore.bench.dask_executor import PlanDevice  # noqa: E402
from hipexplore.bench.dask_worker import device_name, read_report, worker_counters, worker_facts  # noqa: E402
from hipexplore.bench.spec import SweepSpec  # noqa: E402
from hipexplore.bench.stats import StopRule  # noqa: E402


def spec(**kw) -> SweepSpec:
    return SweepSpec(**{"kernels": ("triad",), "sizes": ("16KiB",), "stop": StopRule(iterations=10), **kw})


class _Counts(HostBackend):
    """The host's backend, except that it says it can count (what a caller's own backend may say)."""

    def available(self, device):
        return None


@pytest.mark.timeout(300)
def test_a_worker_answers_for_its_own_device_and_whether_it_can_count():
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
        cannot = client.submit(worker_counters, spec(counters=True), "host", {}, pure=False).result(timeout=120)
        given = client.submit(worker_counters, spec(counters=True), "host", {}, _Counts(), pure=False)
        can = given.result(timeout=120)
    from hipexplore.devices.host import HostDevice

    assert name == facts["name"] == HostDevice().name
    assert facts["llc_bytes"] > 0 and 0 < facts["free"] <= facts["total"]
    assert (facts["kind"], facts["index"], facts["target"]) == ("host", 0, "host")
    assert facts["identities"]  # each kernel's identity, for resume
    plan = PlanDevice(facts)
    assert plan.llc_bytes == facts["llc_bytes"] and plan.memory_info() == (facts["free"], facts["total"])
    assert (plan.name, plan.kind, plan.index, plan.target) == (
        name,
        "host",
        0,
        "host",
    )  # what the counter pass plans on
    assert cannot == (None, HOST_LINE)  # the worker's own device has no counters: its one line
    assert can == (None, "")  # a caller's backend is checked there, not sent back


def test_a_report_folder_is_read_as_regular_files_only_nothing_followed(tmp_path):
    folder = tmp_path / "report"
    (folder / "rocprof" / "host-1").mkdir(parents=True)
    (folder / "ncu.log").write_bytes(b'"ID","Kernel Name"\n')
    (folder / "rocprof" / "host-1" / "7_counter_collection.csv").write_bytes(b"a,b\n1,2\n")
    secret = tmp_path / "secret"
    secret.write_text("not the report's")
    (folder / "link.log").symlink_to(secret)  # a link the unit's processes left: never followed
    (folder / "linked").symlink_to(tmp_path, target_is_directory=True)
    os.mkfifo(folder / "fifo")  # would block a reader that opened it for reading
    (folder / ".hidden").write_text("x")  # a name the wire does not take
    got = read_report(str(folder))
    assert got == {
        "ncu.log": b'"ID","Kernel Name"\n',
        "rocprof/host-1/7_counter_collection.csv": b"a,b\n1,2\n",
    }
    assert wire.decode_all(wire.encode(wire.Report(got))) == [wire.Report(got)]


def test_a_report_over_its_bound_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "a.log").write_bytes(b"x" * 64)
    monkeypatch.setattr(wire, "MAX_REPORT", 63)
    with pytest.raises(wire.WireError, match="is over 63 bytes") as err:
        read_report(str(tmp_path))
    assert "\n" not in str(err.value)
