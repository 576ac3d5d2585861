"""``SweepRun``: one unit of a sweep — every configuration of a spec, measured in one process, in phases.

Why a unit: everything that must hold together for one placement is here (the flush buffers and the
rotating plans sized against this process's free memory, the clock warm-up, the launch floor that is
fixed per process, the cold reference a (kernel, size) is measured against, the interleaved turns
of several kernels). A one-pass sweep is one unit; a sweep in passes (``bench.passes``) is several,
each in a process of its own with its own pad allocation; a cluster worker measures one (kernel,
size) group as a unit. Where a unit runs is an executor's business (``bench.executors``); the
unit only measures and reports through its channel (the orchestrator's, ``bench.orchestrator``,
in-process; a pipe from a worker): ``started``, ``stop_now``, ``meta``, ``add(result)`` (a
``bench.outcome.ConfigurationResult``: no row or frame is made here; ``bench.io`` makes them) and
``update(rebiased)``.

The phases (``bench.phases``, nvbench's ``measure_cold`` order), as a unit takes them:
``initialize`` (flushers, then rotating plans against the free memory that remains), per (kernel,
size) ``warm_up`` (once per unit, until the clock is stable) and ``check`` (the output check: the
declared roles, then the reference), then its rotating counts as groups (``measure_group``: each
flush mode and timer on one allocation of the sets; per configuration ``trials``, ``summarise``,
then the run's ``ConfigurationPhase``s outside the timed window), the cold reference taken in
parts between the groups (``take_reference``), and last the reference row with every bias against
it (``emit_references``); ``release`` at the end.

A *counting unit* (``counting``: the counter pass, ``bench.counters``) takes the same
``initialize``, ``warm_up`` and groups of sets, but no output check, no cold reference, and per
configuration neither ``trials`` nor ``summarise``: only its phases (``count``), whose entry goes
to the channel as ``counted(entry, summary)``. It never takes a timed sample.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..devices.base import Device
from ..devices.telemetry import for_device, wait_for_stable_clock
from ..errors import DeviceError, KernelFault
from ..kernels.spec import KernelSpec
from ..schema import Configuration
from . import rotating as rot
from .callable import sets_for
from .cold_reference import ColdReference, reference_schedule
from .counters.phase import SUMMARY
from .floor import measure_floor, wants_floor
from .flush import REFERENCE, Flusher, flush_mode
from .measured import MeasuredInfo
from .modes import warning_with_modes
from .outcome import Bias, ConfigurationResult, Floor, Identity, Rebiased, Rotation, RunSummary, Samples, Statistics
from .phases import ConfigurationPhase, LaunchSequence, phases_for
from .spec import SweepSpec
from .stats import Measurement, is_timeout
from .raw_times import RawTimes
from .target import Target
from .timing import Workload, warm_up
from .trials import Trials
from .trust import guard_for, row_floor_flags, with_flags
from .verify import check_before_timing

if TYPE_CHECKING:
    from .units import UnitRun


class Channel(Protocol):
    """Where a unit reports (``bench.orchestrator.UnitChannel``, ``bench.record.Collector``, or the pipe of a sweep worker)."""

    def started(self, where: list[str]) -> None: ...

    def stop_now(self) -> bool: ...

    def meta(self, report: MeasuredInfo) -> None:
        """What the unit measured with (``bench.measured``), typed: the run's metadata merges it."""
        ...

    def add(self, result: ConfigurationResult) -> None:
        """A finished configuration of the unit (``bench.outcome``)."""
        ...

    def update(self, rebiased: list[Rebiased]) -> None:
        """Results sent before, filled in again: their biases, once the reference is whole."""
        ...

    def counted(self, entry: dict[str, Any], summary: Any = None) -> None:
        """A counting unit's manifest entry of one configuration (``bench.counters``), and its
        ``CounterSummary`` where the worker counted it in its own process."""
        ...


def fault_status(message: str) -> str:
    """The runtime status in a device error (``CUDA_ERROR_ILLEGAL_ADDRESS``), else the message."""
    import re

    m = re.search(r"\b(CUDA_ERROR_\w+|hipError\w+)", message)
    return m.group(1) if m else message


class SweepRun(Trials, ColdReference):
    """Measure ``run`` (a ``UnitRun``: its spec, minus the configurations its job leaves out, with the
    cold references of earlier units, (kernel, size, timer) -> Measurement) on ``device`` in this process."""

    def __init__(
        self, run: UnitRun, device: Device, channel: Channel, *, phases: "tuple[ConfigurationPhase, ...] | None" = None
    ) -> None:
        spec, unit, counting = run.spec, run.unit, run.counting
        self.spec, self.dev, self.channel, self.done = spec, device, channel, set(run.job.done)
        # a counting unit (bench.counters): no timed sample, only the phases per configuration
        self.counting = counting
        self.phases = tuple(
            phases_for(spec, counting) if phases is None else phases
        )  # after the timed ones (bench.phases)
        self.tap = next(
            (p.tap for p in self.phases if p.tap is not None), None
        )  # told of every launch (the counter phase)
        self.refs = dict(run.refs or {})
        self.unit = unit
        self.rng = np.random.default_rng([spec.interleave_seed, unit])
        self.specs = spec.specs()
        if spec.interleave and unit:  # who allocates first moves from unit to unit (placement is not the code's)
            self.specs = [self.specs[i] for i in self.rng.permutation(len(self.specs))]
        self.identity = Identity(run.run_id, _label(device), device.name)
        self.where: list[str] = []  # (kernel, configuration) being measured: what a fault names
        self.flushers: dict[str, Flusher | None] = {}
        self.plans: dict[tuple[str, int, str], rot.RotatingPlan] = {}
        self.floors: dict[str, float] = {}
        self.pending: dict[Configuration, RawTimes] = {}  # interleaved partners' times, until the loop reaches them
        self.kept: dict[Configuration, ConfigurationResult] = {}  # each emitted result (biases are set again)
        self.warmed = False
        self.current_sets: Any = None  # the group's rotating sets (interleaved partners may share them)
        self.telemetry: Any = None
        self.free = 0

    # -- the whole unit ---------------------------------------------------------------------------
    def measure(self) -> bool:
        """Every configuration not done; True when ``stop_now`` stopped it. A device error while
        measuring is a ``KernelFault`` naming kernel and configuration (its result: the caller's)."""
        faulted = False
        try:
            self.initialize()
            for kspec in self.specs:
                for size in self.spec.sizes:
                    if self.measure_target(kspec, size):
                        return True
            return False
        except DeviceError as exc:
            if not self.where:
                raise
            faulted = True
            raise KernelFault(self.where[0], self.where[1], fault_status(str(exc))) from exc
        finally:
            self.release(faulted)

    def initialize(self) -> None:
        """Telemetry, then the flushers (their memory is taken before rotating sets are sized
        against free memory), then every rotating plan."""
        spec, dev = self.spec, self.dev
        self.telemetry = for_device(dev)
        self.guard = guard_for(dev)  # the persisting-L2 reset before every timed chunk (bench.trust)
        self.timing = spec.timing(self.telemetry).but(hooks=(self.guard,) if self.guard is not None else ())
        self.throttle_mhz = (
            spec.throttle_threshold * self.telemetry.max_clock_mhz if self.telemetry.available else math.nan
        )
        factors = spec.flush_factor
        for f in set(spec.flush) | ({REFERENCE.name} if spec.reference else set()):
            self.flushers[f] = flush_mode(f).make(dev, factor=factors.get(f))
        self.free, _total = dev.memory_info()
        for kspec in self.specs:
            for size in spec.sizes:
                n = kspec.elements(size)
                for r in spec.rotating:
                    p = rot.plan(
                        r,
                        footprint_bytes=kspec.footprint(n),
                        set_bytes=kspec.set_bytes(n),
                        llc_bytes=dev.llc_bytes,
                        free_bytes=self.free,
                        mem_fraction=spec.mem_fraction,
                        size_bytes=size,
                    )
                    if not spec.stop.adaptive:
                        rot.check_iterations(int(spec.stop.iterations or 0), p.count)
                    self.plans[(kspec.name, size, str(r))] = p
        self.channel.meta(
            MeasuredInfo.initialized(
                self.telemetry, {f: self.flushers[f].nbytes if self.flushers.get(f) else 0 for f in spec.flush}, dev
            )
        )

    def release(self, faulted: bool) -> None:
        for fl in self.flushers.values():
            if fl is not None:
                try:
                    fl.free()
                except DeviceError:
                    if not faulted:  # after a fault the context is gone: freeing fails too
                        raise
        if self.telemetry is not None:
            self.telemetry.close()

    # -- one (kernel, size) -----------------------------------------------------------------------
    def measure_target(self, kspec: KernelSpec, size: int) -> bool:
        """Warm up, check the output, then the groups with the reference parts between them; True
        when ``stop_now`` stopped it."""
        self.where.clear()  # building and loading are not the kernel's fault: a DeviceError there is raised as is
        target = Target(self.dev, kspec, size, self.spec.timers)
        self.where[:] = [kspec.name, f"size={size}"]
        if self.channel.stop_now():
            return True
        if self.counting is None:  # a counting unit checks nothing: the timed units did
            self.check(target)  # first: the kernel's first launch in the unit is the one checked
        self.warm_up(target)
        groups = []
        for r in self.spec.rotating:
            p = self.plans[(kspec.name, size, str(r))]
            todo = [
                c
                for c in (
                    Configuration(kspec.name, size, p.requested, f, t)
                    for f in self.spec.flush
                    for t in self.spec.timers
                )
                if c not in self.done and SweepSpec.measures(c.flush, c.timer)
            ]
            if todo:
                groups.append((p, todo))
        need_ref = [
            t
            for t in self.spec.timers
            if self.spec.reference
            and self.counting is None
            and Configuration.reference_of(kspec.name, size, t) not in self.done
        ]
        schedule = (
            dict(reference_schedule(len(groups), self.spec.reference_parts, self.spec.reference_samples))
            if need_ref
            else {}
        )
        parts: dict[str, list[RawTimes]] = {t: [] for t in need_ref}
        rows: list[ConfigurationResult] = []
        stopped = False
        for gi, group in enumerate([*groups, None]):
            if gi in schedule:
                if self.channel.stop_now():
                    stopped = True
                    break
                self.take_reference(target, schedule[gi], parts)
            if group is None:
                break
            if self.measure_group(target, *group, rows):
                stopped = True
                break
        self.emit_references(target, parts, rows)  # a stopped sweep keeps the reference parts it took
        return stopped

    def warm_up(self, target: Target) -> None:
        """Once per unit: launch until the clock is stable (MI300 ramps for >= 400 ms)."""
        if self.warmed:
            return
        self.where[1] = f"size={target.size} (clock warm-up)"
        self.channel.started(self.where)
        with sets_for(self.dev, target.kspec, target.n, 1) as sets:
            wl = Workload(self.dev, target.plain, target.grid, target.block, sets.args, tap=self.tap)
            _spent, what = wait_for_stable_clock(
                self.telemetry, lambda: warm_up(wl, None, 0.005), min_s=self._clock_warmup_s()
            )
        self.channel.meta(MeasuredInfo(warmup_clock=what))
        self.warmed = True

    def _clock_warmup_s(self) -> float:
        if self.spec.clock_warmup_s is not None:
            return float(self.spec.clock_warmup_s)
        return {"hip": 0.4, "cuda": 0.2}.get(self.dev.kind, 0.0)

    def check(self, t: Target) -> None:
        """The output check (roles, then the reference: ``bench.verify``) of a (kernel, size) before any
        of its timing, in a sweep's first unit only: correctness does not move with placement, and at
        256 MiB each check copies the buffers back and compares them on the host."""
        if not self.spec.verify or self.unit:
            return
        self.where[1] = f"size={t.size} (output check)"
        self.channel.started(self.where)
        with sets_for(self.dev, t.kspec, t.n, 1) as sets:
            err = check_before_timing(self.dev, t, sets)
        self.channel.meta(MeasuredInfo.verified(t.kspec.name, t.size, err))

    # -- a group: one rotating count's flush modes and timers on one allocation of its sets -------
    def measure_group(
        self, t: Target, p: rot.RotatingPlan, todo: list[Configuration], rows: list[ConfigurationResult]
    ) -> bool:
        if self.channel.stop_now():
            return True
        with sets_for(self.dev, t.kspec, t.n, p.count) as sets:
            self.current_sets = sets
            for conf in todo:
                if self.channel.stop_now():
                    return True
                self.where[1] = conf.describe()
                self.channel.started(self.where)
                if self.counting is not None:
                    self.count(t, p, conf, sets)
                    continue
                result = self.summarise(t, p, conf, self.trials(t, conf, sets))
                for phase in self.phases:  # outside the timed window: counters and the like (bench.phases)
                    result = phase.run(conf, self.launches(t, conf, sets), result)
                rows.append(result)
                self.emit(result)
        return False

    def summarise(self, t: Target, p: rot.RotatingPlan, conf: Configuration, raw: RawTimes) -> ConfigurationResult:
        """A configuration's result: its samples, statistics, the bias against the reference so far, the floor."""
        mode = flush_mode(conf.flush)
        notes = ([p.note] if p.note else []) + list(raw.notes) + ([mode.note] if mode.note else [])
        m, throttled = self.statistics(raw, f"{t.kspec.name} {t.size} r={p.requested} {conf.flush} {conf.timer}", notes)
        result = self.result(conf, Rotation.of_plan(p), raw, m, throttled, self.refs.get(conf.reference_key))
        result = dataclasses.replace(
            result, floor=Floor.of(self.floor_of(conf.flush) if conf.timer.launch_floor else None, m.median, conf.timer)
        )
        flags = [*t.flags, *row_floor_flags(result.columns(), t.kspec, t.n, self.dev)]
        return dataclasses.replace(result, warning=with_flags(result.warning, flags))

    def launches(self, t: Target, conf: Configuration, sets: Any) -> LaunchSequence:
        """The configuration's flush and kernel on its sets, as its trials launched them (events variant)."""
        kernel = t.kernel(self.dev, conf.flush, conf.timer) if flush_mode(conf.flush).transforms_kernel else t.plain
        wl = Workload(self.dev, kernel, t.grid, t.block, sets.args, tap=self.tap)
        return LaunchSequence(wl, self.flushers.get(conf.flush), self.timing, t.kspec, t.n)

    def count(self, t: Target, p: rot.RotatingPlan, conf: Configuration, sets: Any) -> None:
        """A counting unit's configuration: its phases only (the counter phase replays it through the
        trials' path inside the profiler's range), the entry sent as ``channel.counted``. One timer's
        configuration per (kernel, size, rotating, flush): the timers launch the same data."""
        if conf.timer != self.spec.timers[0]:
            return
        entry: dict[str, Any] = {"plan_note": p.note}
        for phase in self.phases:
            entry = {**entry, **phase.run(conf, self.launches(t, conf, sets), entry)}
        # counted in this process: summarised here (``counters.phase``), apart from the manifest entry
        self.channel.counted({k: v for k, v in entry.items() if k != SUMMARY}, entry.get(SUMMARY))

    def emit(self, result: ConfigurationResult) -> None:
        self.kept[result.configuration] = result
        self.channel.add(result)

    # -- statistics of one configuration ----------------------------------------------------------
    def statistics(self, raw: RawTimes, what: str, notes: list[str]) -> tuple[Measurement, np.ndarray]:
        """The configuration's ``Measurement`` (throttled samples left out with ``drop_throttled``,
        the notes saying so) and which samples were throttled."""
        spec, max_mhz = self.spec, self.telemetry.max_clock_mhz
        throttled = (
            raw.clock_mhz < self.throttle_mhz if not math.isnan(self.throttle_mhz) else np.zeros(len(raw.time_s), bool)
        )
        keep = ~throttled if spec.drop_throttled else np.ones(len(raw.time_s), bool)
        notes = list(notes)
        if throttled.any():
            below = f"throttled: {int(throttled.sum())} sample(s) ran below {spec.throttle_threshold:.0%} of the {max_mhz:g} MHz maximum clock"
            if spec.drop_throttled and keep.any():
                notes.append(f"{below} and are left out of the statistics")
            else:
                keep = np.ones(len(raw.time_s), bool)
                notes.append(
                    f"{below} (kept: {'every sample was throttled' if spec.drop_throttled else 'drop_throttled=False'})"
                )
        if is_timeout(raw.stop_reason) and raw.stop_reason not in notes:  # the timing's own note says it already
            notes.append(f"stopped by its {raw.stop_reason.split(' reached', 1)[0]} before convergence")
        return Measurement(raw.time_s[keep], label=what, notes=notes, chunks=raw.chunk[keep]), throttled

    def result(
        self,
        conf: Configuration,
        plan: Rotation,
        raw: RawTimes,
        m: Measurement,
        throttled: np.ndarray,
        ref: Measurement | None,
    ) -> ConfigurationResult:
        """A configuration's result (``bench.outcome``): its raw samples and the throttled ones, its
        statistics, the bias against ``ref``, how its sampling ended; ``plan``: the sets it used under
        which cap (the floor and the flags are the caller's)."""
        k = len(raw.time_s)
        dropped = throttled if m.n < k else np.zeros(k, bool)
        s = m.summary()
        run = RunSummary(
            1,
            raw.stop_reason,
            bool(is_timeout(raw.stop_reason)),
            int(throttled.sum()),
            float(np.nanmedian(raw.clock_mhz)) if np.isfinite(raw.clock_mhz).any() else math.nan,
            plan.footprint_bytes / m.median / 1e9 if m.median > 0 else math.nan,
            float(self.dev.peak_bandwidth_gbs),
        )
        return ConfigurationResult(
            conf,
            self.unit,
            self.identity,
            plan,
            Samples.of_raw(self.identity, conf, plan, raw, (throttled, dropped)),
            m,
            Floor(),
            Bias.of(m, ref),
            (Statistics.of(s), run),
            warning_with_modes(s["warning"], m, s["ci_low_s"], s["ci_high_s"]),
        )

    def floor_of(self, flush: str) -> float | None:
        """The launch floor after ``flush`` in this process (``bench.floor``), timed once."""
        if not wants_floor(self.spec.floor, self.dev):
            return None
        if flush not in self.floors:
            self.floors[flush] = measure_floor(self.dev, self.flushers.get(flush), self.timing)
            self.channel.meta(MeasuredInfo(floors={str(flush): float(self.floors[flush])}))
        return self.floors[flush]


def _label(device: Device) -> str:
    from ..devices import device_label

    return device_label(device)


__all__ = ["Channel", "SweepRun", "fault_status"]
