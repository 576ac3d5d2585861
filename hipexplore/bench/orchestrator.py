"""``Orchestrator``: one sweep, wherever its units run — resume, the unit plan, durability,
progress and metadata, in one place (pyperf's one ``Runner``).

Why one: a sweep on one device and a sweep on a Dask cluster used to be two orchestrators with
different resume rules, and the cluster never read ``units``. Here an executor
(``bench.executors``: this process, a worker process per unit, or a Dask worker per group) runs
"one unit of one group" and everything else is this class's:

1. the out file's finished work is read (``bench.io``) and checked against how the new rows would
   be measured (``check_resume``: the device, the measurement, the LLC, each kernel's code), the
   same rules whatever the executor;
2. each group (the whole sweep on one device; a (kernel, size) on a cluster) gets a ``UnitPlan``
   (``bench.units``): the units each of its configurations still lacks, then adaptive extras;
3. each unit reports through a channel of its own; every (configuration, unit) it finishes is added
   to the ``Record`` (``bench.record``) and the files are rewritten at once: an interrupt loses at
   most what was being measured, and running the same sweep again measures only what is missing,
   never a configuration or unit twice;
4. progress advances per (configuration, unit), with the time left (``bench.progress``);
5. the metadata is gathered typed (``bench.runinfo.RunInfo``: the executor's provenance, code and
   spec, each unit's ``bench.measured.MeasuredInfo`` merged as it reports it, the units, the counter
   pass, the resolution) and written with the rows, as text only by ``bench.io``;
6. with ``spec.counters``, after the last timed unit: the counter pass (``bench.counters``), a plan
   of counting units (``UnitPlan.kind``: ``counting``) run by the same executor (on a cluster, on
   its GPU workers), one per (kernel, size) group in a worker started under the profiler's command
   (one for the whole pass where the worker counts itself), over the configurations no counter
   has counted yet; each configuration's ``CounterSummary`` goes to the record, which writes its
   columns in the configurations' summary rows (``schema.COUNTER_COLUMNS``) and the pass's manifests
   once, as its evidence. Whether the device can count (a cluster: each of its GPU workers) is
   decided before any timed unit runs: one that cannot (the host, no profiler) says so in one line (a
   ``CountersSkipped`` warning, ``counters.status`` in the metadata) and the sweep runs unchanged.
   Counting is not part of ``measurement()``: a finished sweep run again with counters is counted
   without being timed again.
"""

from __future__ import annotations

import dataclasses
import uuid
import warnings
from typing import Any

from ..errors import ConfigError, KernelFault
from ..schema import CLUSTER_COLUMNS, COUNTER_COLUMNS, Configuration
from . import interrupts
from . import passes as ps
from . import units as us
from .executors import UnitRun
from .levels import shared_process
from .io import Previous, check_resume, output_paths, previous_results, sample_frame, summary_row
from .measured import MeasuredInfo
from .outcome import ConfigurationResult, Rebiased
from .progress import Progress
from .record import Record, evidence_folder
from .result import RunOptions, SweepHooks, SweepResult
from .runinfo import CountersInfo, RunInfo, UnitsInfo
from .spec import SweepSpec
from .stats import Measurement


class Orchestrator:
    """One sweep of ``spec`` through ``executor`` (module docstring); ``run()`` measures it."""

    def __init__(
        self, spec: SweepSpec, executor: Any, options: RunOptions | None = None, *, counter_backend: Any = None
    ) -> None:
        """``options``: the out file, resume, hooks, bar, run id and command (``RunOptions``; default: none of
        them, the bar shown). ``counter_backend``: the counter pass's backend, instead of the one
        ``spec.counters`` names (``bench.counters.backends``; a profiler of one's own, or recorded output in a test)."""
        if not isinstance(spec, SweepSpec):
            raise ConfigError(f"run() takes a SweepSpec; got {type(spec).__name__}")
        o = options or RunOptions()
        self.spec, self.executor, self.hooks = spec, executor, o.hooks or SweepHooks()
        self.counter_backend = counter_backend
        self.counting: Any = None  # the backend that counts this sweep after its timed units (None: no counters)
        self.paths = output_paths(o.out) if o.out is not None else None
        self.resume, self.show_bar, self.command, self.run_id = o.resume, o.progress, o.command, o.run_id
        self.resume_from_others = o.resume_from_others
        self.kept_from = ""  # whose results were resumed: "" this user's, else the other user (io.check_owner)
        self.info = RunInfo()  # the run's metadata, typed: made by the executor, completed here, written by bench.io
        self.pads: list[int] = []
        self.stopped = False

    # -- the whole sweep --------------------------------------------------------------------------
    def run(self) -> SweepResult:
        """Measure what the out file does not hold yet; the result holds both."""
        self.executor.check(self.spec)
        interrupts.clear()  # a signal noted by an earlier sweep in this process is not this one's
        previous = previous_results(self.paths, self.resume, self.resume_from_others)
        self.kept_from = previous.owner
        with self.executor.session(self.spec):
            plans, kept = self._prepare(previous)
            try:
                self.stopped = self.executor.run(self, plans)
                if not self.stopped:
                    self._count()
            except KernelFault as exc:  # what finished is on disk already; the result goes with the error
                exc.result = self._finish(True)
                raise
            except BaseException as exc:  # an interrupt (KeyboardInterrupt, SIGTERM turned into one): kept is on disk
                self._interrupted()
                exc.sweep_result = self.result(True, kept)  # type: ignore[attr-defined]
                exc.sweep_progress = self.progress.state()  # type: ignore[attr-defined]
                self.progress.close()
                raise
            self._finish(True)
        return self.result(self.stopped, kept)

    def _prepare(self, previous: Previous) -> tuple[list[us.UnitPlan], set[Configuration]]:
        """The device facts and metadata, the resume check, the record, each group's plan, the progress."""
        facts = self.executor.facts(self.spec)
        self.plan_device = facts["plan_device"]  # the device the unit plan and the counter pass plan on
        self.info = self.executor.run_info(self.spec, self.command)
        self.info.identities.update(facts["identities"])
        self._check_resume(previous, facts)
        self.info.run_id = self.run_id = self.run_id or previous.run_id or uuid.uuid4().hex[:12]
        self.lo, self.hi = us.planned(self.spec, facts["plan_device"]) if self.spec.units != 1 else (1, 1)
        if set(CLUSTER_COLUMNS) <= set(
            self.executor.columns[1]
        ):  # a cluster file: rows of a one-device run say no worker
            previous = previous.with_cluster_columns()
        columns = self.executor.columns
        if self._counters_wanted() or set(COUNTER_COLUMNS) & set(previous.summary.columns):
            columns = (columns[0], [*columns[1], *(c for c in COUNTER_COLUMNS if c not in columns[1])])
        self.record = Record(previous, merged=self.spec.units != 1, planned=self.lo, columns=columns)
        kept = self.record.complete()
        plans = self.plans = [self._plan(g, i) for i, g in enumerate(self.executor.groups(self.spec))]
        total = sum(len(p.configs) for p in plans) * self.lo
        self.progress = Progress(
            total, self.record.kept(), bar=self.show_bar, units=self.spec.units != 1, hook=self.hooks.on_progress
        )
        return plans, kept

    def _check_resume(self, previous: Previous, facts: dict[str, Any]) -> None:
        """The one resume rule (``bench.io.check_resume``): another device, measurement, LLC or kernel code is refused."""
        if self.paths is None or (previous.metadata is None and not len(previous.summary)):
            return
        now = RunInfo(
            spec=self.spec.measurement(),
            identities=dict(facts["identities"]),
            measured=MeasuredInfo(llc_bytes=facts.get("llc_bytes")),
        )
        check_resume(str(self.paths[0]), previous, now, facts["names"])

    # -- the counter pass -------------------------------------------------------------------------
    def _counters_wanted(self) -> bool:
        """Before any timed unit: the backend that will count (``self.counting``), or the one line
        why there will be no counters (warned, and kept as ``counters.status``)."""
        if not self.spec.counters:
            return False
        # asked where the units run: this device, or a cluster's GPU workers (``bench.dask_worker``)
        self.counting, why = self.executor.counter_backend(self.spec, self.counter_backend)
        if why:
            self._no_counters(why)
        return self.counting is not None

    def _no_counters(self, why: str) -> None:
        """Say once, in one line, why this sweep has no counters (a failed pass's tail folded in)."""
        from .counters.counting import CountersSkipped

        why = " | ".join(line.strip() for line in str(why).splitlines() if line.strip())
        why = why if len(why) <= 1500 else why[:1500] + " ..."
        self.info.counters = CountersInfo.skipped(why)
        warnings.warn(f"no counters: {why}", CountersSkipped, stacklevel=2)

    def _count(self) -> None:
        """After the timed units: the configurations no counter has counted yet, counted by a plan of
        counting units (``bench.counters.CountingPlan``) through the same executor, their summaries and
        the pass's evidence handed to the record. A failed pass is one line; the timed rows stay."""
        if self.counting is None:
            return
        from .counters.counting import CountingPlan, counted_configurations

        todo = [c for c in counted_configurations(self.spec) if c.untimed_key not in self.record.counters]
        if not todo:
            self.info.counters = CountersInfo(CountersInfo.NOTHING_TO_COUNT)
            return
        plan = CountingPlan(self.spec, self.plan_device, self.counting, todo)
        keep = evidence_folder(self.paths) if self.paths is not None else None
        try:
            self.executor.run(self, [plan])
        except Exception as exc:  # noqa: BLE001 - the timed results are on disk: a failed pass is one line
            self.record.count({}, plan.evidence if keep is not None else None)  # what it left, kept with the files
            where = keep or plan.evidence.root
            self._no_counters(f"the counter pass failed ({type(exc).__name__}: {exc}); its outputs: {where}")
            return
        except BaseException:  # an interrupt: what the pass left is kept now, the temporary folder removed
            if keep is not None:
                plan.evidence.keep(keep)
            plan.evidence.discard()
            raise
        if keep is None:
            plan.evidence.discard()
        self.record.count(plan.summaries, plan.evidence if keep is not None else None)
        self.info.counters = CountersInfo.counted(len(plan.configs), plan.label, plan.wall_s, keep)

    def _plan(self, group: SweepSpec, index: int) -> us.UnitPlan:
        confs = group.configurations()
        had = {c: self.record.units_of(c) for c in confs}
        return us.UnitPlan(
            group,
            (self.lo, self.hi),
            had,
            self._recorded(confs),
            group=index,
            one_process=shared_process(self.executor.where),
        )

    def _recorded(self, confs: list[Configuration]) -> list[Any]:
        """The recorded (configuration, unit)s' sample frames of ``confs``, ``pass_index`` their unit."""
        return self.record.unit_frames(confs)

    def _units_metadata(self, stopped: bool) -> None:
        """What the units reached: units done, the pads they held, the resolution's outcome."""
        if self.spec.units != 1:
            units_done = min((len(self.record.units_of(c)) for c in self.spec.configurations()), default=0)
            self.info.units = UnitsInfo(self.lo, units_done, self.executor.where, list(self.pads))
            self.info.resolution = us.resolution_info(self.spec, getattr(self, "plans", []), stopped)

    def _interrupted(self) -> None:
        """An interrupt: the units' metadata in the result and, with the (configuration, unit)s kept,
        on disk (each was written as it finished, before these entries existed). Best effort: a
        failed write leaves the files as the last finished pair wrote them, and the interrupt goes on."""
        if not hasattr(self, "record"):
            return
        for plan in getattr(self, "plans", []):  # the unit cut short never told its plan: judge what is recorded
            plan.frames = self._recorded(plan.configs)
        self._units_metadata(True)
        if self.spec.units != 1 and self.record.added:
            try:
                self.record.write(self.paths, self.info)
            except Exception:  # noqa: BLE001 - the interrupt, not a write error, is what the caller must see
                pass

    def _finish(self, write: bool) -> SweepResult:
        """The units' metadata, the last write (when anything is there to write), the bar closed."""
        self._units_metadata(self.stopped)
        if write and (not self.stopped or self.spec.units == 1 or self.record.added):
            self.record.write(self.paths, self.info)
        self.progress.close()
        return self.result(self.stopped)

    def result(self, stopped: bool, kept: set[Configuration] | None = None) -> SweepResult:
        skipped = sorted(c for c in (kept or set()) if not c.is_reference)
        res = self.record.result(self.info, self.paths[0] if self.paths else None, stopped, skipped)
        res.kept_from = self.kept_from if skipped else ""
        return res

    # -- one unit ---------------------------------------------------------------------------------
    def start(self, job: us.UnitJob) -> tuple[UnitRun, Any]:
        """What an executor needs to run ``job``, and the channel it reports to (a counting unit's:
        ``bench.counters.CountChannel``, its entries and summaries for its plan's finish step)."""
        if job.kind == us.COUNTING:
            from .counters.counting import CountChannel

            return UnitRun(job, self.run_id or ""), CountChannel(self.hooks.stop_now)
        pad = ps.pad_bytes(job.unit, seed=self.spec.interleave_seed) if self.spec.units != 1 else 0
        self.pads.append(pad)
        run = UnitRun(job, self.run_id or "", self._references(job), pad, getattr(self.executor, "inputs_dir", None))
        return run, UnitChannel(self, job)

    def _references(self, job: us.UnitJob) -> dict[tuple[str, int, str], Measurement]:
        """The cold references this unit took before (for its rows' biases): a one-unit sweep's
        from the out file; a unit's own, from the record."""
        out = {}
        for c in job.done:
            if not c.is_reference:
                continue
            got = self.record.samples_of(c, None if self.spec.units == 1 else job.unit)
            if got is not None:
                out[c.reference_key] = Measurement(
                    got["time_s"], label=f"{c.kernel} {c.size} cold", chunks=got["chunk"]
                )
        return out

    def add(self, job: us.UnitJob, result: ConfigurationResult) -> None:
        """A finished (configuration, unit) (its result, ``bench.outcome``): recorded, written, shown."""
        if result.unit != job.unit:  # the unit is the job's, whatever a unit says
            result = dataclasses.replace(result, unit=job.unit)
        # recorded, written and counted whole: a SIGINT inside Record.add (its merge runs pandas) left the unit's
        # row in the record without its samples, and the interrupt's own write put that row in the units file;
        # one landing right after the write, before the count, said "keeps 0 of 18" of a file that kept 1
        with interrupts.held():
            self.record.add(result)
            self.record.write(self.paths, self.info)
            self.progress.count()
        if self.hooks.on_samples is not None:
            self.hooks.on_samples(sample_frame(result.samples))
        if self.hooks.on_result is not None:
            self.hooks.on_result(summary_row(result))
        self.progress.show()

    def finished(self, plan: Any, job: us.UnitJob, channel: Any, stopped: bool, seconds: float) -> None:
        """A unit ended (the executor's finish step): a timed plan learns its samples (adaptive extras),
        progress grows by an extra unit's steps; a counting plan (``bench.counters.CountingPlan``)
        keeps its entries and summaries, and parses a profiler's report after the group's last unit."""
        if plan.kind == us.COUNTING:
            plan.finished(job, channel, stopped, seconds)
            interrupts.check()
            return
        import pandas as pd

        frames = [sample_frame(r.samples) for r in channel.results if r.samples.n]
        plan.finished(job, pd.concat(frames, ignore_index=True) if frames else None, stopped, seconds)
        self.stopped = self.stopped or stopped
        interrupts.check()  # a signal whose KeyboardInterrupt was lost on the way ends the sweep here


class UnitChannel:
    """The channel one unit reports to (``bench.sweeprun.Channel``): the orchestrator's hooks and record."""

    def __init__(self, orchestrator: Orchestrator, job: us.UnitJob) -> None:
        self.orch, self.job = orchestrator, job
        self.results: list[ConfigurationResult] = []
        self.expected = len(set(job.spec.configurations()) - set(job.done))
        if job.unit >= orchestrator.lo:  # an extra unit: its (configuration, unit)s join the total
            orchestrator.progress.grow(self.expected)

    def started(self, where: list[str]) -> None:
        self.orch.hooks.started(where)

    def stop_now(self) -> bool:
        interrupts.check()
        return self.orch.hooks.stop_now()

    def meta(self, report: MeasuredInfo) -> None:
        """What the unit measured with, merged into the run's (``bench.measured``)."""
        self.orch.info.measured.merge(report)

    def add(self, result: ConfigurationResult) -> None:
        self.results.append(result)
        self.orch.add(self.job, result)

    def update(self, rebiased: list[Rebiased]) -> None:
        with interrupts.held():  # the unit's results filled in whole: an interrupt's write keeps all of them or none
            self.orch.record.update(self.job.unit, rebiased)


__all__ = ["Orchestrator", "UnitChannel"]
