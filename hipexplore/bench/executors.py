"""Where a unit of a sweep runs: executors, and the one place that picks one.

Why apart from the orchestrator (``bench.orchestrator``): resume, the unit plan, the files, the
progress and the metadata are the same wherever a unit runs; only running "one unit of one group"
differs. An executor does exactly that, reporting to the channel it is given:

* ``InProcessExecutor``: in this process (the host device; Python callables, which cannot leave
  it). A unit after the first gets a fresh device object (its code loaded anew) and holds its pad
  allocation here, so its buffers land elsewhere (``bench.units``).
* ``WorkerExecutor``: each unit in a fresh worker process (``bench.worker``: a faulting kernel
  kills the worker, never the caller; on a GPU the event floor is fixed per process), started one
  unit ahead so that its start-up costs no wall time; the units share one folder of seeded inputs
  (``bench.inputs``).
* ``bench.cluster.DaskExecutor``: on the workers of a Dask cluster, groups in parallel.

``executor_for`` is the one place that decides (``run_location``: where the units of one device run).
A sequential executor runs its groups' units in order through ``run_units``.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import replace
from typing import Any, Iterator

from ..schema import SAMPLE_COLUMNS, SUMMARY_COLUMNS
from .runinfo import RunInfo
from .spec import SweepSpec
from .units import UnitPlan, UnitRun  # UnitRun: where the executors, the unit and the worker all find it

#: where a unit of a sweep runs (``run_location``), as ``sweep.unit_location`` records it
IN_PROCESS, WORKER, CLUSTER = "in-process", "worker", "cluster"


def run_location(spec: SweepSpec, device: Any, worker: bool | None) -> str:
    """Where the measuring units of ``spec`` on one device run: ``WORKER`` (a fresh process per
    unit) or ``IN_PROCESS``.

    Python callables cannot leave this process. A sweep in units on a GPU runs every unit in a
    process of its own, whatever ``worker`` says: the event floor is fixed per process (BENCHMARKS.md
    "Run-to-run drift"), and the units are orchestrated from here, since from a worker one more
    idle CUDA context sat beside every unit and read L2-resident triads 1.6-4% slower on the H200.
    On the host a user's own C kernel runs in a worker too unless asked otherwise: a kernel there
    runs in the process that calls it, so one that faults (a NULL store, an index past its buffer,
    a spec longer than its buffers) took the whole Python process down with a bare "Segmentation
    fault"; in a worker it is a ``KernelFault`` naming the configuration. The catalog's own kernels
    stay in this process (written with their specs and tested), and so do a kernel that cannot
    travel (a reference given as a lambda or defined in ``__main__``: as before, rather than
    refusing a sweep that worked) and a device of the caller's own making (a subclass: a worker
    would make a plain one).
    Otherwise ``worker`` decides; None: ``HIPEXPLORE_SWEEP_WORKER``, else a worker for GPU devices."""
    from .. import settings
    from .worker import use_worker

    specs = spec.specs()
    has_callable = any(k.call is not None for k in specs)
    if has_callable and worker is None:
        return IN_PROCESS
    if worker is None and device.kind == "host" and any(k.code_object for k in specs):
        # a precompiled host library: no source to check --args against (kernels.build.check_host_signature),
        # so a spec shorter than the function must fault a worker, not this process
        return WORKER
    if worker is None and settings.SWEEP_WORKER.get() is None and _plain_host(device) and _user_code_travels(spec):
        return WORKER
    if spec.units != 1 and device.kind != "host" and not has_callable:
        return WORKER
    return WORKER if use_worker(device, worker) else IN_PROCESS


def _plain_host(device: Any) -> bool:
    """The host device itself, which a worker makes again the same (a subclass, say one with a
    clock of its own, would not travel)."""
    from ..devices.host import HostDevice

    return type(device) is HostDevice


def _user_code_travels(spec: SweepSpec) -> bool:
    """Whether ``spec`` holds a kernel that is not the catalog's own, and every one can be sent to
    a sweep worker as ``bench.worker`` sends them (pickled: its reference and traffic importable
    functions or expressions; not ``__main__``'s, which pickle by name and are not in a worker)."""
    from ..errors import ConfigError
    from ..kernels import catalog
    from .worker import _shippable

    own = {id(k) for k in catalog.OWN}
    if all(id(k) in own for k in spec.specs()):
        return False
    try:
        _named, kernels = _shippable(spec)
    except ConfigError:  # what cannot travel stays in this process, as before
        return False
    # a user kernel sent by name only (it did not pickle) would not be in the worker's catalog
    return all(
        id(k) in own or (blob is not None and b"__main__" not in blob)
        for k, (_name, blob) in zip(spec.specs(), kernels)
    )


class LocalExecutor:
    """An executor of one device in reach of this process (``device``): what the orchestrator asks of
    any executor, answered from the device itself."""

    where = IN_PROCESS
    columns = (SAMPLE_COLUMNS, SUMMARY_COLUMNS)

    def __init__(self, device: Any) -> None:
        self.device = device

    # -- what the orchestrator asks -----------------------------------------------------------------
    def check(self, spec: SweepSpec) -> None:
        """Refuse, before anything runs, what this device cannot measure."""
        from .flush import check_flush_mode

        for f in spec.flush:
            check_flush_mode(self.device, f)
        for kspec in spec.specs():
            kspec.source_for(self.device.compiler)  # a kernel without a source for this device fails now, not mid-sweep

    def facts(self, spec: SweepSpec) -> dict[str, Any]:
        """The device as resume and the unit plan see it: its name, LLC, each kernel's identity, a device to plan on."""
        from .io import kernel_identity

        return {
            "names": {self.device.name},
            "llc_bytes": self.device.llc_bytes,
            "plan_device": self.device,
            "identities": {k.name: kernel_identity(k, self.device) for k in spec.specs()},
        }

    def run_info(self, spec: SweepSpec, command: Any) -> RunInfo:
        """The run's metadata as this executor knows it: provenance, the code under test, the spec, the timing method."""
        from ..provenance import code_provenance, collect

        return RunInfo(
            provenance=collect(self.device, command),
            code=code_provenance(spec.specs(), self.device.compiler),
            spec=spec.record(),
            timing_method=(
                "perf_counter_ns around each synchronous ctypes call (host: no launch queue, no latency to hide)"
                if self.device.kind == "host"
                else "per-launch event pairs enqueued in chunks behind a blocking kernel (nvbench's method)"
            ),
        )

    def counter_backend(self, spec: SweepSpec, given: Any = None) -> tuple[Any, str]:
        """(the backend that counts ``spec`` on this device, "") or (None, the one line why there will
        be no counters): ``given``'s if it can count here, else the one ``spec.counters`` names
        (``bench.counters.counting.counter_backend``)."""
        from .counters.counting import counter_backend

        return counter_backend(spec, self.device, given)

    def groups(self, spec: SweepSpec) -> list[SweepSpec]:
        """One group: the whole sweep (a unit measures every configuration, in the spec's order)."""
        return [spec]

    @contextlib.contextmanager
    def session(self, spec: SweepSpec) -> Iterator["LocalExecutor"]:
        yield self

    def run(self, orchestrator: Any, plans: list[UnitPlan]) -> bool:
        return run_units(self, orchestrator, plans)

    def run_unit(self, run: UnitRun, channel: Any) -> bool:  # pragma: no cover - the subclasses'
        raise NotImplementedError


def run_units(executor: Any, orchestrator: Any, plans: list[UnitPlan]) -> bool:
    """Every group's units, one after another, in plan order, timed or counting (``UnitPlan.kind``);
    each unit's finish step is the orchestrator's (``finished``: a counting plan's report parsed
    there). True when the hooks stopped the sweep."""
    for plan in plans:
        while (job := plan.next()) is not None:
            run, channel = orchestrator.start(job)
            t0 = time.perf_counter()
            stopped = executor.run_unit(run, channel)
            orchestrator.finished(plan, job, channel, stopped, time.perf_counter() - t0)
            if stopped:
                return True
    return False


class InProcessExecutor(LocalExecutor):
    """Units in this process (module docstring)."""

    where = IN_PROCESS

    def run_unit(self, run: UnitRun, channel: Any) -> bool:
        """A timed unit here; a counting unit in a worker of its own (``WorkerExecutor``): a profiler
        counts a process it starts (ncu, rocprofv3) or is loaded into (CUPTI), never the caller's."""
        if run.counting is not None:
            return WorkerExecutor(self.device).run_unit(run, channel)
        from .sweeprun import SweepRun

        dev = self.device
        unit_dev = dev.fresh() if run.unit else dev  # host: the library loaded anew (a GPU: the device itself)
        pad_buf = unit_dev.alloc(run.pad_bytes) if run.pad_bytes else None
        try:
            return SweepRun(run, unit_dev, channel).measure()
        finally:
            if pad_buf is not None:
                unit_dev.free(pad_buf)
            if unit_dev is not dev:
                unit_dev.close()


class WorkerExecutor(LocalExecutor):
    """Each unit in a worker process of its own (module docstring). A counting unit of the counter
    pass (``bench.counters``) gets a worker of its own, started under its profiler's command
    (``UnitRun.prefix``: ``ncu ... --log-file F``, whose launches the profiler must see; it reaches
    ``compile.launcher.start_worker`` and ``interpreter.isolated_argv``), never one started ahead."""

    where = WORKER

    def __init__(self, device: Any) -> None:
        super().__init__(device)
        self.ahead: list[Any] = []
        self.many = False
        self.inputs_dir: str | None = None

    @contextlib.contextmanager
    def session(self, spec: SweepSpec) -> Iterator["WorkerExecutor"]:
        """A sweep in units: its units share one folder of drawn inputs, and a worker is started ahead."""
        from .inputs import shared_folder

        self.many = spec.units != 1
        try:
            with shared_folder() if self.many else contextlib.nullcontext() as folder:
                self.inputs_dir = folder
                yield self
        finally:
            for started in self.ahead:
                started.discard()
            self.ahead.clear()

    def run_unit(self, run: UnitRun, channel: Any) -> bool:
        from .worker import start_unit_worker, unit_in_worker

        if run.counting is not None:  # under its profiler's command, in a worker started for it
            return unit_in_worker(run, self.device, channel)
        started = self.ahead.pop() if self.ahead else (start_unit_worker() if self.many else None)
        if self.many:
            self.ahead.append(start_unit_worker())  # the next unit's interpreter starts while this one measures
        return unit_in_worker(replace(run, inputs_dir=self.inputs_dir), self.device, channel, started=started)


def executor_for(spec: SweepSpec, device: Any, worker: bool | None) -> LocalExecutor:
    """The executor of a one-device sweep (``run_location`` decides; a cluster's is ``bench.cluster.DaskExecutor``)."""
    return WorkerExecutor(device) if run_location(spec, device, worker) == WORKER else InProcessExecutor(device)


__all__ = [
    "CLUSTER",
    "IN_PROCESS",
    "InProcessExecutor",
    "LocalExecutor",
    "UnitRun",
    "WORKER",
    "WorkerExecutor",
    "executor_for",
    "run_location",
    "run_units",
]
