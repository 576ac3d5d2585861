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
  What runs on a worker is ``bench.dask_worker``'s;
* what the orchestrator asks of the device (its name, LLC, free memory, each kernel's identity)
  every GPU worker answers for its own device (``worker_facts``): resume refuses another device kind;
* the counter pass (``bench.counters``): whether the units can count, every GPU worker answers for
  its own device and profiler (``counter_backend``); its counting units then run as the timed ones
  do, one after another (the plan's finish step reads them in order), each in a sweep worker child
  under its profiler's command. A backend that counts in that worker (CUPTI) sends each
  configuration's ``CounterSummary`` back as data (``wire.Counted``, as the worker pipe does); a
  report (ncu, rocprofv3) is written in a folder of the worker's own and its files come back as data
  (``wire.Report``), written below the plan's folder (``write_report``) and parsed at its finish step
  as a local unit's. A counting unit lost or stopped fails the pass in one line (the timed rows stay);
* failures: a worker that dies mid-unit loses only that unit. Dask reschedules it (the scheduler's
  ``allowed-failures``); a ``KilledWorker`` is caught here and the unit resubmitted; a retry is
  charged only to a unit that had started on a worker (units waiting in a dying worker's queue
  never ran), at most ``retries`` of them. Every re-run is reported (``cluster.reruns`` and the rows'
  ``warning``); units that never finished are listed in ``cluster.failed``. The run never hangs: no
  result for ``stall_s`` seconds, or no worker for ``no_workers_s``, ends it with what finished written.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

from ..errors import ConfigError
from ..schema import CLUSTER_COLUMNS, SAMPLE_COLUMNS, SUMMARY_COLUMNS, Configuration
from . import interrupts, wire
from .dask_connect import VISIBLE_DEVICE_VARS, _distributed
from .dask_worker import EVENT_TOPIC, unit_task, worker_counters, worker_facts
from .executors import CLUSTER, UnitRun
from .measured import MeasuredInfo
from .runinfo import ClusterInfo, RunInfo
from .spec import SweepSpec
from .units import COUNTING, UnitJob, UnitPlan

TASK_PREFIX = "hipexplore-sweep"
#: resubmissions of a unit lost before it started (not charged a retry) allowed on top of the retries:
#: a bound, in case a worker dies before its "started" event reaches the scheduler every time
MAX_UNCHARGED = 16


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


@dataclass
class UnitResult:
    """A cluster unit's result as the client believes it (``unit_result``): a timed unit's results;
    a counting unit's entries with their summaries (``CounterSummary`` where its worker counted,
    else None) and, under a profiler that writes one, its report's files (``wire.Report``)."""

    results: list[Any]
    measured: MeasuredInfo  #: what the unit measured with, read back typed
    stopped: bool
    seconds: float
    worker: str
    host: str
    gpu: str
    counted: list[tuple[dict[str, Any], Any]] = field(default_factory=list)
    report: dict[str, bytes] | None = None


def unit_result(blob: Any, run: UnitRun) -> UnitResult:
    """``unit_task``'s frames decoded (``bench.wire``: no pickle) and checked against ``run``'s plan
    (``bench.guard``): its metadata, each configuration once (a counting unit's: each entry once),
    then ``done``, a counting unit's report, and where it ran. A result that is anything else is one
    ``KernelFault`` line naming the kernel and configuration."""
    from .guard import UnitGuard

    counting = run.counting is not None
    guard = UnitGuard(run.spec, run.job.done, run_id=run.run_id, counting=counting, cluster=True)
    out = UnitResult([], MeasuredInfo(), False, 0.0, "", "", "")
    bounds = wire.limits(run.spec)
    if counting:  # room for the report's files beside the entries
        bounds["max_body"] += wire.MAX_REPORT
    try:
        msgs = wire.decode_all(blob, cluster=True, **bounds)
        for i, msg in enumerate(msgs):
            guard.check(msg)
            if isinstance(msg, wire.Meta):  # the guard checked that it reads
                out.measured.merge(MeasuredInfo.of_entries(msg.entries))
            elif isinstance(msg, wire.Add):
                out.results.append(msg.result)
            elif isinstance(msg, wire.Counted):
                out.counted.append((msg.entry, msg.summary))
            elif isinstance(msg, wire.Done):
                out.stopped = msg.stopped
            elif isinstance(msg, wire.Report):
                out.report = msg.files
            elif (
                isinstance(msg, wire.UnitEnd)
                and i == len(msgs) - 1
                and i
                and isinstance(msgs[i - 1], wire.Done | wire.Report)
            ):
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
    """A worker's device as the client plans on it: the unit plan sizes units against its LLC and
    free memory; the counter pass (``counters.CountingPlan``) names it and asks its backend's counter
    groups of its kind, index and target (``dask_worker.worker_facts``)."""

    def __init__(self, facts: dict[str, Any]) -> None:
        self.llc_bytes, self._memory = facts["llc_bytes"], (facts["free"], facts["total"])
        self.name, self.kind, self.index = facts["name"], facts.get("kind", ""), int(facts.get("index", 0))
        self.target = facts.get("target", "")

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

    def counter_backend(self, spec: SweepSpec, given: Any = None) -> tuple[Any, str]:
        """Whether the units can count where they run: every GPU worker asked for its own device
        (``dask_worker.worker_counters``: its profiler looked for there); the first one that cannot
        says why in one line, naming it. The backend is the first worker's (``given``: the caller's)."""
        client = self.conn.client
        futs = [
            client.submit(
                worker_counters,
                spec,
                self.device,
                self.options,
                given,
                workers=[w],
                allow_other_workers=False,
                resources={"GPU": 1},
                pure=False,
            )
            for w in self.workers
        ]
        got = client.gather(futs)
        for w, (_backend, why) in zip(self.workers, got):
            if why:
                return None, f"worker {w}: {why}"
        return (given if given is not None else got[0][0]), ""

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
            stopped = coordinator.run()
            if stopped and any(p.kind == COUNTING for p in plans):  # as a local counting unit's finish step says it
                raise _counter_error("the sweep was stopped during its counter pass")
            return stopped
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


def _died_measuring(client: Any, name: str, attempt: int) -> bool:
    """Whether ``attempt`` of unit ``name`` had started and not finished measuring (its ``started``
    event and no ``measured`` one, ``dask_worker.unit_task``): one read of the scheduler's events."""
    try:
        seen = {
            (m.get("state"), int(m.get("attempt", 1)))
            for _t, m in client.get_events(EVENT_TOPIC)
            if isinstance(m, dict) and m.get("group") == name
        }
    except Exception:  # noqa: BLE001 - the scheduler went away: not known to have run, not charged
        return False
    return ("started", attempt) in seen and ("measured", attempt) not in seen


class _Coordinator:
    """Submits each group's next unit, records each finished one, resubmits lost ones, ends a stalled run.

    A unit lost with a dying worker (``KilledWorker``) is charged a retry only when its attempt had
    started on a worker (its ``started`` event) and had not finished measuring (no ``measured``
    event): units that were only waiting in the dying worker's queue never ran, and units whose
    result died with the worker after they had measured did not bring it down; both are resubmitted
    free (three deaths in one run once lost 10 of 30 configurations the first way, and one group the
    second)."""

    def __init__(self, ex: DaskExecutor, orch: Any, plans: list[UnitPlan]) -> None:
        self.ex, self.orch, self.plans = ex, orch, plans
        self.client = ex.conn.client
        self.attempts: dict[str, int] = {}
        self.charged: dict[str, int] = {}
        self.futures: dict[Any, tuple[str, UnitPlan, UnitJob, UnitRun, Any]] = {}
        self.home: dict[int, str] = {}  # group -> the worker its units run on
        self.nonce = uuid.uuid4().hex[:6]  # this invocation's tasks (a resumed run keeps its run_id)
        self.stopped = False
        self.counting_jobs = 0  # counting units submitted (each named apart: they share group and unit)
        for plan in (p for p in plans if p.kind != COUNTING):  # a counting unit goes where a GPU is free
            placements = [
                r.summary("placement") for r in (orch.record.results.get(c) for c in plan.configs) if r is not None
            ]
            known = [p.worker for p in placements if p is not None and p.worker]
            if known:
                self.home[plan.group] = str(known[0])

    def name(self, plan: UnitPlan, job: UnitJob) -> str:
        """A unit's task name: the run, this invocation, its group (a counting unit: its place in the
        counter pass), its kernels and size, its unit."""
        sub = job.spec
        where = f"count{self.counting_jobs}" if plan.kind == COUNTING else str(plan.group)
        kernels = "+".join(k.name for k in sub.specs())
        return f"{self.orch.run_id}-{self.nonce}-{where}-{kernels}-{sub.sizes[0]}-u{job.unit}"

    def submit_next(self, plan: UnitPlan) -> None:
        job = plan.next()
        if job is not None:
            self.counting_jobs += plan.kind == COUNTING
            self.submit(self.name(plan, job), plan, job, *self.orch.start(job))

    def submit(self, name: str, plan: UnitPlan, job: UnitJob, run: UnitRun, channel: Any) -> None:
        n = self.attempts[name] = self.attempts.get(name, 0) + 1
        home = self.home.get(plan.group) if plan.kind != COUNTING else None
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
            # charged only when it died while measuring: started, and not done measuring (a unit whose
            # result was lost with its worker after it had measured did not bring the worker down:
            # the README's test command beside two busy loops once lost a group that way)
            ran = _died_measuring(self.client, name, self.attempts[name])
            self.charged[name] = self.charged.get(name, 0) + (1 if ran else 0)
            if self.charged[name] <= self.ex.retries and self.attempts[name] <= self.ex.retries + 1 + MAX_UNCHARGED:
                self.submit(name, plan, job, run, channel)
                return
        if lost or cancelled:
            error = str(exc or ("cancelled" if cancelled else f"lost ({fut.status})"))
            if plan.kind == COUNTING:  # the counter pass has no partial answer: it fails in one line
                self.client.cancel(list(self.futures))
                raise _counter_error(f"the counting unit {name} did not finish ({error})")
            self.ex.failed.append({"group": name, "attempts": self.attempts[name], "error": error})
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
        if plan.kind == COUNTING:
            self.counted(plan, job, run, channel, res)
            return
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

    def counted(self, plan: Any, job: UnitJob, run: UnitRun, channel: Any, res: UnitResult) -> None:
        """A counting unit's finish: its entries (and its worker's summaries) on its channel, its
        profiler's report written below the plan's own folder, where the plan's finish step
        (``counters.CountingPlan.finished``, through the orchestrator) parses it; the next counting unit."""
        for entry, summary in res.counted:
            channel.counted(entry, summary)
        if res.report is not None:
            write_report(res.report, run.counting.report)
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
        if any(plan.kind == COUNTING for _n, plan, *_ in self.futures.values()):
            self.client.cancel(list(self.futures))
            raise _counter_error(f"the counter pass: {why}")
        self.ex.failed += [{"group": n, "attempts": self.attempts[n], "error": why} for n, *_ in self.futures.values()]
        self.client.cancel(list(self.futures))
        self.futures.clear()


def write_report(files: dict[str, bytes], folder: str) -> None:
    """A cluster counting unit's report files (``wire.Report``) below ``folder``, the counting plan's
    own (it made it, in its private temporary folder), each written by ``files.write_below``: no
    path leaves the folder and nothing there is followed."""
    import os

    from ..files import write_below

    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for rel in sorted(files):
            write_below(fd, rel, files[rel], what="counter report", shown_dir=folder, durable=False)
    finally:
        os.close(fd)


def _counter_error(why: str) -> Exception:
    from .counters.backends import CounterError

    return CounterError(why)


__all__ = [
    "DaskExecutor",
    "PlanDevice",
    "UnitResult",
    "VISIBLE_DEVICE_VARS",
    "expected_keys",
    "gpu_workers",
    "groups_of",
    "unit_result",
    "write_report",
]
