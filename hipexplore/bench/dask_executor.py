"""``DaskExecutor``: the units of a sweep on the workers of a Dask cluster, one GPU each.

Why an executor like the others: the orchestrator (``bench.orchestrator``) reads the out file,
checks resume, plans the units, records every (configuration, unit) and shows progress whatever
runs them, so a cluster run has units like a one-device run (it used to measure one unit per group
and never read ``units``) and the same resume rules. What this executor adds is where and how:

* the unit of work is one unit of one *group*, a (kernel, size) (all kernels of a size when they are
  interleaved): its cold reference is taken in parts through its configurations and every bias is
  measured against it, so a group's configurations never split across devices. Groups run in
  parallel, one task per GPU worker at a time (every task asks for the resource ``GPU=1``); the
  units of one group run in order, the later ones on the worker that ran its first (a loose
  restriction: elsewhere once that worker is gone, and the rows say which workers measured them);
* on the worker a unit runs in a sweep worker *child* of the Dask worker (``bench.worker``: the
  kernel never runs in a process that speaks Dask's protocol, whose messages the client unpickles
  as they come: distributed's ``protocol.core.loads`` unpickles a ``__Pickled__`` frame whatever
  ``deserializers`` the client was given), and its rows come back with ``worker``, ``host`` and
  ``gpu`` when it finishes, as ``bench.wire`` frames (bytes, no pickle of rows), which the client
  decodes and checks against the unit's plan (``unit_result``, ``bench.guard``); the orchestrator
  then writes each of its (configuration, unit)s. The price: an interpreter start per unit (seconds,
  not hidden behind the previous unit as ``WorkerExecutor`` hides it). What this does not cover: the Dask worker itself
  is trusted (its exceptions reach the client pickled), and a kernel, running as its user, can
  read that user's files, the cluster's TLS key among them;
* what the orchestrator asks of the device (its name, LLC, free memory, each kernel's identity)
  every GPU worker answers for its own device (``worker_facts``): resume refuses another device kind;
* failures: a worker that dies mid-unit loses only that unit. Dask reschedules it (the scheduler's
  ``allowed-failures``); a ``KilledWorker`` is caught here and the unit resubmitted; a retry is
  charged only to a unit that had started on a worker (units waiting in a dying worker's queue
  never ran), at most ``retries`` of them. Every re-run is reported (``cluster.reruns`` and the rows'
  ``warning``); units that never finished are listed in ``cluster.failed``. The run never hangs: no
  result for ``stall_s`` seconds, or no worker for ``no_workers_s``, ends it with what finished written.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any, Iterator

from ..errors import ConfigError
from ..schema import CLUSTER_COLUMNS, SAMPLE_COLUMNS, SUMMARY_COLUMNS, Configuration
from . import interrupts, wire
from .dask_connect import VISIBLE_DEVICE_VARS, _distributed
from .executors import CLUSTER, UnitRun
from .measured import MeasuredInfo
from .runinfo import ClusterInfo, RunInfo
from .spec import SweepSpec
from .units import UnitJob, UnitPlan

TASK_PREFIX = "hipexplore-sweep"
EVENT_TOPIC = "hipexplore.sweep"
#: resubmissions of a unit lost before it started (not charged a retry) allowed on top of the retries:
#: a bound, in case a worker dies before its "started" event reaches the scheduler every time
MAX_UNCHARGED = 16
_DEVICES: dict[tuple[str, tuple[tuple[str, Any], ...]], Any] = {}


def _pinned() -> str:
    for var in VISIBLE_DEVICE_VARS:
        if os.environ.get(var):
            return os.environ[var]
    return ""


def gpu_workers(client: Any) -> list[str]:
    """Addresses of the workers advertising ``GPU`` >= 1; a ConfigError when there are none."""
    workers = client.scheduler_info().get("workers", {})
    ok = [a for a, w in workers.items() if float((w.get("resources") or {}).get("GPU", 0)) >= 1]
    if not ok:
        raise ConfigError(
            f"the cluster at {client.scheduler.address} has {len(workers)} worker(s) and none advertises the "
            f"resource GPU=1; start one worker per GPU: CUDA_VISIBLE_DEVICES=i dask worker ADDRESS "
            f"--nthreads 1 --resources GPU=1"
        )
    return ok


def groups_of(spec: SweepSpec) -> list[SweepSpec]:
    """One sub-spec per (kernel, size), in the spec's order; per size (every kernel together) when
    the spec interleaves its kernels (their alternating turns must stay on one device)."""
    if getattr(spec, "interleave", False):
        return [replace(spec, sizes=(s,)) for s in spec.sizes]
    return [replace(spec, kernels=(k,), sizes=(s,)) for k in spec.kernels for s in spec.sizes]


def expected_keys(sub: SweepSpec) -> set[Configuration]:
    """Every configuration a sub-spec's run produces (``SweepSpec.configurations()``)."""
    return set(sub.configurations())


# ----------------------------------------------------------------------------- on a worker
def worker_device(device: str, device_options: dict[str, Any]) -> Any:
    """On a worker: its device, for the facts (opened once, and closed before a unit runs in a
    process of its own: ``_release_devices``)."""
    from ..devices import get_device

    key = (device, tuple(sorted(device_options.items())))
    if key not in _DEVICES:
        _DEVICES[key] = get_device(device, **device_options)
    return _DEVICES[key]


def device_name(device: str, device_options: dict[str, Any]) -> str:
    """On a worker: the name of the device it measures on."""
    return str(worker_device(device, device_options).name)


def worker_facts(spec: SweepSpec, device: str, device_options: dict[str, Any]) -> dict[str, Any]:
    """On a worker: what the orchestrator asks of the device (``LocalExecutor.facts``), its flush
    modes and sources checked, and its free memory (the unit plan sizes its units against it)."""
    from .executors import InProcessExecutor

    ex = InProcessExecutor(worker_device(device, device_options))
    ex.check(spec)
    facts = ex.facts(spec)
    free, total = ex.device.memory_info()
    return {
        "name": ex.device.name,
        "llc_bytes": int(ex.device.llc_bytes),
        "free": int(free),
        "total": int(total),
        "identities": facts["identities"],
    }


def _release_devices() -> None:
    """Close the devices this worker process opened for ``worker_facts``: a unit measures in a
    process of its own, and an idle second GPU context beside it slowed L2-resident kernels."""
    while _DEVICES:
        _key, dev = _DEVICES.popitem()
        try:
            dev.close()
        except Exception:  # noqa: BLE001 - a device that cannot close is gone with this process
            pass


def unit_task(run: UnitRun, device: str, device_options: dict[str, Any], name: str, attempt: int = 1) -> bytes:
    """On a worker: one unit of one group, measured in a sweep worker *child* of this Dask worker
    (``bench.worker.unit_in_worker``: the kernel never runs in a process that speaks Dask's
    protocol, whose messages the client unpickles), its rows checked against the unit's plan there,
    and returned as ``bench.wire`` frames with worker, host and gpu, which the client decodes and
    checks again (``unit_result``). The ``started`` event it logs first is what lets the coordinator
    charge a retry only to a unit that actually ran (``attempt``: which submission of it this is)."""
    from .record import Collector
    from .worker import unit_in_worker

    worker = _distributed().get_worker()
    worker.log_event(
        EVENT_TOPIC,
        {"group": name, "attempt": int(attempt), "worker": worker.address, "state": "started", "pid": os.getpid()},
    )
    _release_devices()
    unit = Collector()
    t0 = time.perf_counter()
    stopped = unit_in_worker(run, device, unit, llc_bytes=device_options.get("llc_bytes"))
    ident = {"worker": worker.address, "host": socket.gethostname(), "gpu": _pinned()}
    frames = [wire.encode(wire.Meta(unit.info.measured.entries()))]
    frames += [wire.encode(wire.Add(placed(r, ident)), cluster=True) for r in unit.results]
    frames += [
        wire.encode(wire.Done(bool(stopped))),
        wire.encode(wire.UnitEnd(ident["worker"], ident["host"], ident["gpu"], time.perf_counter() - t0)),
    ]
    return b"".join(frames)


def placed(result: Any, ident: dict[str, str]) -> Any:
    """``result`` with where it ran: its ``placement`` summary and, per sample, the cluster columns."""
    import numpy as np

    from .outcome import Placement, Samples

    s = result.samples
    extra = {c: np.full(s.n, ident[c], dtype=object) for c in CLUSTER_COLUMNS}
    return replace(result.with_summary(Placement(**ident)), samples=Samples({**s.columns, **extra}))


@dataclass
class UnitResult:
    """A cluster unit's result as the client believes it (``unit_result``)."""

    results: list[Any]
    measured: MeasuredInfo  #: what the unit measured with, read back typed
    stopped: bool
    seconds: float
    worker: str
    host: str
    gpu: str


def unit_result(blob: Any, run: UnitRun) -> UnitResult:
    """``unit_task``'s frames decoded (``bench.wire``: no pickle) and checked against ``run``'s plan
    (``bench.guard``): its metadata, each configuration once, then ``done`` and where it ran. A
    result that is anything else is one ``KernelFault`` line naming the kernel and configuration."""
    from .guard import UnitGuard

    guard = UnitGuard(run.spec, run.job.done, run_id=run.run_id, counting=run.counting is not None, cluster=True)
    out = UnitResult([], MeasuredInfo(), False, 0.0, "", "", "")
    try:
        msgs = wire.decode_all(blob, cluster=True, **wire.limits(run.spec))
        for i, msg in enumerate(msgs):
            guard.check(msg)
            if isinstance(msg, wire.Meta):  # the guard checked that it reads
                out.measured.merge(MeasuredInfo.of_entries(msg.entries))
            elif isinstance(msg, wire.Add):
                out.results.append(msg.result)
            elif isinstance(msg, wire.Done):
                out.stopped = msg.stopped
            elif isinstance(msg, wire.UnitEnd) and i == len(msgs) - 1 and i and isinstance(msgs[i - 1], wire.Done):
                out.seconds, out.worker, out.host, out.gpu = msg.seconds, msg.worker, msg.host, msg.gpu
            else:
                raise wire.WireError(f"a {type(msg).__name__} frame where a cluster unit's result has none")
        if not out.worker:
            raise wire.WireError("a cluster unit's result that does not end with done and where it ran")
    except wire.WireError as exc:
        raise guard.fault(f"the cluster unit's result is not what a unit reports: {exc}") from None
    return out


# ----------------------------------------------------------------------------- the parent
class PlanDevice:
    """A worker's device as the unit plan sizes units against it (its LLC and free memory)."""

    def __init__(self, facts: dict[str, Any]) -> None:
        self.llc_bytes, self._memory = facts["llc_bytes"], (facts["free"], facts["total"])

    def memory_info(self) -> tuple[int, int]:
        return self._memory


class DaskExecutor:
    """Units of groups on the GPU workers of ``cluster`` (module docstring); ``device``: the name each
    worker opens (``device_options``: its keywords)."""

    where = CLUSTER
    columns = ([*SAMPLE_COLUMNS, *CLUSTER_COLUMNS], [*SUMMARY_COLUMNS, *CLUSTER_COLUMNS])

    def __init__(
        self,
        cluster: Any,
        device: str = "auto",
        device_options: dict[str, Any] | None = None,
        *,
        connect: Any,
        retries: int = 2,
        stall_s: float = 1800.0,
        no_workers_s: float = 60.0,
    ) -> None:
        if not isinstance(device, str):
            raise ConfigError(
                f"with a cluster, device must be a name each worker opens (auto, host, cuda, hip); "
                f"got a {type(device).__name__} object"
            )
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ConfigError(f"retries must be an integer >= 0, got {retries!r}")
        self.cluster, self.device, self.options, self.connect = cluster, device, dict(device_options or {}), connect
        self.retries, self.stall_s, self.no_workers_s = retries, stall_s, no_workers_s
        self.conn: Any = None
        self.reruns: list[dict[str, Any]] = []
        self.failed: list[dict[str, Any]] = []

    # -- what the orchestrator asks -----------------------------------------------------------------
    def check(self, spec: SweepSpec) -> None:
        from ..kernels import catalog

        for kspec in spec.specs():
            if kspec.call is not None:  # before any set-up: a unit runs its kernel in a sweep worker (unit_task)
                raise ConfigError(
                    f"kernel {kspec.name!r} is a Python callable: a cluster unit runs its kernel in a sweep worker "
                    f"process, which a callable cannot reach; run it on one device"
                )
            if kspec.name not in catalog.names():
                raise ConfigError(
                    f"kernel {kspec.name!r} is not in the catalog; a cluster run sends kernels by name "
                    f"(register it on the workers, or run it on one device)"
                )

    @contextlib.contextmanager
    def session(self, spec: SweepSpec) -> Iterator["DaskExecutor"]:
        self.conn = self.connect(self.cluster)
        try:
            self.workers = gpu_workers(self.conn.client)
            yield self
        finally:
            self.conn.close()

    def facts(self, spec: SweepSpec) -> dict[str, Any]:
        """Every GPU worker's device (they must be of one kind for finished rows to be kept)."""
        client = self.conn.client
        futs = [
            client.submit(
                worker_facts,
                spec,
                self.device,
                self.options,
                workers=[w],
                allow_other_workers=False,
                resources={"GPU": 1},
                pure=False,
            )
            for w in self.workers
        ]
        got = client.gather(futs)
        return {
            "names": {g["name"] for g in got},
            "llc_bytes": got[0]["llc_bytes"],
            "plan_device": PlanDevice(got[0]),
            "identities": got[0]["identities"],
        }

    def run_info(self, spec: SweepSpec, command: Any) -> RunInfo:
        """The run's metadata as the client knows it: provenance, the spec, the cluster (completed when the run ends)."""
        from ..provenance import collect

        self.info = ClusterInfo(
            self.device, str(self.conn.client.scheduler.address), str(self.conn.client.dashboard_link or "")
        )
        return RunInfo(
            provenance=collect(None, command),
            spec=spec.record(),
            cluster=self.info,
            timing_method="per unit of a (kernel, size) group on one pinned worker per GPU (bench.cluster); "
            "see each device's method",
        )

    def groups(self, spec: SweepSpec) -> list[SweepSpec]:
        return groups_of(spec)

    def run(self, orchestrator: Any, plans: list[UnitPlan]) -> bool:
        """Every group's units (module docstring); True when the hooks stopped the sweep."""
        coordinator = _Coordinator(self, orchestrator, plans)
        try:
            return coordinator.run()
        finally:
            self.info.reruns, self.info.failed = self.reruns, self.failed
            self.info.workers = sorted(
                {str(r.get("worker")) for r in orchestrator.record.summary_rows() if r.get("worker")}
            )
            if self.failed and not coordinator.stopped:
                self.info.incomplete = f"{len(self.failed)} unit(s) did not finish: " + "; ".join(
                    f"{f['group']} ({f['error']})" for f in self.failed
                )
            orchestrator.info.cluster = self.info


def _events(client: Any) -> list[dict[str, Any]]:
    try:
        return [m for _t, m in client.get_events(EVENT_TOPIC) if isinstance(m, dict) and m.get("state") == "started"]
    except Exception:  # noqa: BLE001 - the scheduler went away: no knowledge, no report
        return []


class _Coordinator:
    """Submits each group's next unit, records each finished one, resubmits lost ones, ends a stalled run.

    A unit lost with a dying worker (``KilledWorker``) is charged a retry only when one of its
    attempts had started on a worker (its ``started`` event): units that were only waiting in the
    dying worker's queue never ran, and are resubmitted free (three deaths in one run once lost 10
    of 30 configurations that way)."""

    def __init__(self, ex: DaskExecutor, orch: Any, plans: list[UnitPlan]) -> None:
        self.ex, self.orch, self.plans = ex, orch, plans
        self.client = ex.conn.client
        self.attempts: dict[str, int] = {}
        self.charged: dict[str, int] = {}
        self.futures: dict[Any, tuple[str, UnitPlan, UnitJob, UnitRun, Any]] = {}
        self.home: dict[int, str] = {}  # group -> the worker its units run on
        self.nonce = uuid.uuid4().hex[:6]  # this invocation's tasks (a resumed run keeps its run_id)
        self.stopped = False
        for plan in plans:
            placements = [
                r.summary("placement") for r in (orch.record.results.get(c) for c in plan.configs) if r is not None
            ]
            known = [p.worker for p in placements if p is not None and p.worker]
            if known:
                self.home[plan.group] = str(known[0])

    def name(self, plan: UnitPlan) -> str:
        sub = plan.spec
        return f"{self.orch.run_id}-{self.nonce}-{plan.group}-{'+'.join(k.name for k in sub.specs())}-{sub.sizes[0]}"

    def submit_next(self, plan: UnitPlan) -> None:
        job = plan.next()
        if job is not None:
            self.submit(f"{self.name(plan)}-u{job.unit}", plan, job, *self.orch.start(job))

    def submit(self, name: str, plan: UnitPlan, job: UnitJob, run: UnitRun, channel: Any) -> None:
        n = self.attempts[name] = self.attempts.get(name, 0) + 1
        home = self.home.get(plan.group)
        fut = self.client.submit(
            unit_task,
            run,
            self.ex.device,
            self.ex.options,
            name,
            n,
            key=f"{TASK_PREFIX}-{name}-a{n}",
            resources={"GPU": 1},
            pure=False,
            **({"workers": [home], "allow_other_workers": True} if home else {}),
        )
        self.futures[fut] = (name, plan, job, run, channel)

    def run(self) -> bool:
        """Until every group finished or failed; True when the hooks stopped it."""
        distributed = _distributed()
        for plan in self.plans:
            self.submit_next(plan)
        self.last_result = time.monotonic()
        self.no_workers_since: float | None = None
        while self.futures:
            interrupts.check()  # a Ctrl-C whose KeyboardInterrupt a library swallowed: it ends the run here
            if self.orch.hooks.stop_now():
                self.client.cancel(list(self.futures))
                self.stopped = True
                return True
            try:
                distributed.wait(list(self.futures), timeout=0.5, return_when="FIRST_COMPLETED")
            except TimeoutError:
                pass
            # "lost": its worker died and the scheduler forgot it (every worker gone at once): it never
            # turns "error", so waiting for one hung the run until stall_s (seen: 900 s in the suite)
            for fut in [f for f in self.futures if f.status in ("finished", "error", "cancelled", "lost")]:
                self.collect(fut, *self.futures.pop(fut))
            self.watch(time.monotonic())
        return False

    def collect(self, fut: Any, name: str, plan: UnitPlan, job: UnitJob, run: UnitRun, channel: Any) -> None:
        distributed = _distributed()
        if fut.status == "finished":
            self.finished(name, plan, job, run, channel, fut.result())
            return
        cancelled = fut.status == "cancelled"
        exc = fut.exception() if fut.status == "error" else None
        # lost with its worker: a KilledWorker, or a future that ended with no error of its own (lost data)
        lost = not cancelled and (isinstance(exc, distributed.KilledWorker) or not isinstance(exc, BaseException))
        if lost:
            ran = self.attempts[name] in {int(m.get("attempt", 1)) for m in _events(self.client) if m["group"] == name}
            self.charged[name] = self.charged.get(name, 0) + (1 if ran else 0)
            if self.charged[name] <= self.ex.retries and self.attempts[name] <= self.ex.retries + 1 + MAX_UNCHARGED:
                self.submit(name, plan, job, run, channel)
                return
        if lost or cancelled:
            self.ex.failed.append(
                {
                    "group": name,
                    "attempts": self.attempts[name],
                    "error": str(exc or ("cancelled" if cancelled else f"lost ({fut.status})")),
                }
            )
            return
        self.client.cancel(list(self.futures))
        raise exc  # type: ignore[misc] - an error of the measurement itself: as a one-device run raises it

    def finished(self, name: str, plan: UnitPlan, job: UnitJob, run: UnitRun, channel: Any, blob: Any) -> None:
        """A unit's rows (checked: ``unit_result``), each (configuration, unit) recorded (and written) by
        the orchestrator; the group's next unit."""
        try:
            res = unit_result(blob, run)
        except BaseException:
            self.client.cancel(list(self.futures))
            raise
        self.last_result = time.monotonic()
        self.home.setdefault(plan.group, res.worker)
        lost = list(
            dict.fromkeys(
                str(m["worker"]) for m in _events(self.client) if m["group"] == name and str(m["worker"]) != res.worker
            )
        )
        note = ""
        if self.attempts[name] > 1 or lost:
            how = (
                f"after worker(s) {', '.join(lost)} died while measuring it"
                if lost or self.charged.get(name)
                else "after the worker it was queued on died (no start of it was seen: not charged a retry)"
            )
            note = f"re-run on {res.worker} {how} (attempt {self.attempts[name]})"
            self.ex.reruns.append(
                {
                    "group": name,
                    "lost": lost,
                    "worker": res.worker,
                    "attempts": self.attempts[name],
                    "charged": self.charged.get(name, 0),
                }
            )
        # the first worker's device description; every unit's verification
        channel.meta(res.measured.new_to(self.orch.info.measured))
        for result in res.results:
            if note:
                result = replace(result, warning="; ".join(filter(None, [result.warning or "", note])))
            channel.add(result)
        self.orch.finished(plan, job, channel, res.stopped, res.seconds)
        self.submit_next(plan)

    def watch(self, now: float) -> None:
        """End the run when no worker was there for ``no_workers_s`` or no result came for ``stall_s``."""
        if not self.client.scheduler_info().get("workers"):
            self.no_workers_since = self.no_workers_since or now
            if now - self.no_workers_since > self.ex.no_workers_s:
                self.give_up(f"no worker for {self.ex.no_workers_s:g} s")
        else:
            self.no_workers_since = None
        if self.futures and now - self.last_result > self.ex.stall_s:
            self.give_up(f"no result for {self.ex.stall_s:g} s")

    def give_up(self, why: str) -> None:
        self.ex.failed += [{"group": n, "attempts": self.attempts[n], "error": why} for n, *_ in self.futures.values()]
        self.client.cancel(list(self.futures))
        self.futures.clear()


__all__ = [
    "DaskExecutor",
    "PlanDevice",
    "UnitResult",
    "VISIBLE_DEVICE_VARS",
    "device_name",
    "expected_keys",
    "gpu_workers",
    "groups_of",
    "unit_result",
    "unit_task",
    "worker_facts",
]
