"""A sweep measured in *units*: each configuration several times over, with what the code under
review does not decide drawn afresh each time.

Why: on the H200 the same 1 MiB triad ran 0.96-1.12 us depending on where its buffers landed, the
event floor moved 3.04-3.30 us between processes, and a byte-identical copy of a kernel read 3.5%
slower at 16 MiB because its buffers were allocated second. One unit sees one draw of all that, and
no interval over its chunks can show how far the next run would move (pyperf runs 20 processes for
this reason; Kalibera & Jones, ISMM 2013: repeat at every level that varies). So every sweep is made
of units (``SweepSpec.units``), and verdicts are decided from the variation between them
(``bench.levels``, ``verdicts``). A unit is one ``bench.sweeprun.SweepRun`` with:

* its own buffer placement: a pad allocation of its own size is taken before anything else
  (``passes.pad_bytes``), then fresh buffers; interleaved kernels are allocated in an order
  shuffled per unit, and kernels whose buffer arguments match share one pool of sets (their
  placement is then the same by construction: ``sweeprun``);
* its own code-object load: a fresh process on a GPU (module loaded anew); on the host a fresh
  device object, whose loaded library is a new copy at a new address;
* its own process on a GPU (the event floor is fixed per process), started ahead of its turn while
  the previous unit measures, so its interpreter start-up costs no wall time (``bench.worker``);
* its own share of the samples: fixed counts are split exactly; an adaptive rule's minimums, time
  budget and sample cap are divided by the planned units plus one (``shares``: room for the
  extras), its interval and noise-stability targets widened by sqrt(shares) and its noise read
  that many times as often, so that the units together take about what one unit took before.

``units="auto"`` plans ``AUTO_UNITS[0]`` units (3), then adds units, up to ``AUTO_UNITS[1]``, for the
configurations whose unit medians still spread wider than twice the stop rule's interval target,
as long as the extra units cost at most ``EXTRA_BUDGET`` of the time the planned ones took (the
number of units follows the between-unit variance, as Kalibera & Jones size each level).

``resolution`` (``--resolution 1%``) asks for a precision instead: extra units, up to ``MAX_UNITS``,
for each configuration whose 95% t half-width over its units (for interleaved kernels: the
half-width ``compare`` reports for the pair with the first kernel, ``pair_half_width``) is still wider, as long as the
extras take at most ``resolution_budget`` times the planned units' time; the metadata's
``units.resolution_outcome`` says whether it was reached, or what stopped it and where it was not.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..schema import Configuration
from . import passes as ps
from . import rotating as rot
from .spec import SweepSpec
from .spec_checks import AUTO_UNITS, MAX_UNITS
from .levels import (
    decision_interval,
    decision_level,
    interleaved_pair,
    paired_ratio_ci,
    paired_units,
    pooled_spreads,
)
from .runinfo import ResolutionInfo
from .stats import Measurement, StopRule, student_t_quantile

#: what a unit does (``UnitPlan.kind``, ``UnitJob.kind``): take timed samples, or count the launches
#: of configurations already timed, under a profiler (a counting unit: ``bench.counters``)
TIMED, COUNTING = "timed", "counting"
#: extra units (beyond the planned ones) may take at most this fraction of the planned units' time
EXTRA_BUDGET = 0.35
#: a configuration gets an extra unit while the t half-width of its unit medians, relative to the
#: median, exceeds this multiple of the stop rule's ``target_ci``
WIDE_FACTOR = 2.0


def planned(spec: SweepSpec, device: Any) -> tuple[int, int]:
    """(units planned, most units) of ``spec`` on ``device``. A fixed sample count is split among
    units only as far as every unit still covers each configuration's buffer sets (a unit must
    launch on every set); auto then plans no extra units (the count is the caller's)."""
    if spec.units != "auto":
        lo = hi = int(spec.units)
    else:
        lo, hi = AUTO_UNITS
        if not spec.stop.adaptive:
            sets = max_sets(spec, device)
            fit = int(spec.stop.iterations or 0) // max(1, sets)
            lo = max(1, min(lo, fit))
            hi = lo
    # --resolution: extras up to the most units a run takes, bounded by its budget (``UnitPlan._extra``)
    return lo, (MAX_UNITS if spec.resolution and lo >= 2 else hi)


def max_sets(spec: SweepSpec, device: Any) -> int:
    """The most rotating sets any configuration of ``spec`` uses on ``device``."""
    free, _ = device.memory_info()
    most = 1
    for k in spec.specs():
        for size in spec.sizes:
            n = k.elements(size)
            for r in spec.rotating:
                p = rot.plan(
                    r,
                    footprint_bytes=k.footprint(n),
                    set_bytes=k.set_bytes(n),
                    llc_bytes=device.llc_bytes,
                    free_bytes=free,
                    mem_fraction=spec.mem_fraction,
                    size_bytes=size,
                )
                most = max(most, p.count)
    return most


def unit_rule(rule: StopRule, units: int, k: int) -> StopRule:
    """The stop rule of unit ``k`` of ``units``: a fixed count split exactly (the first
    ``iterations % units`` units take one more), an adaptive rule's minimums, budget and cap
    divided and its targets widened by sqrt(units)."""
    if units == 1:
        return rule
    if rule.iterations is not None:
        share = rule.iterations // units + (1 if k < rule.iterations % units else 0)
        return dataclasses.replace(rule, iterations=max(1, share))
    widen = math.sqrt(units)
    # The noise rule (nvbench's stdrel) stops when the noise read from n/2 and from n samples agree
    # within stable_noise: a relative error that shrinks as 1/sqrt(n), like the interval, so its
    # limit is widened by sqrt(units) too, and it reads the noise units times as often (it needs 8
    # readings). Unscaled, each unit took as many samples as a whole one-unit sweep: 2.9x the wall
    # time of the one-unit default on the host, where this is the stop that binds.
    return dataclasses.replace(
        ps.pass_rule(rule, units),
        target_ci=rule.target_ci * widen if rule.target_ci is not None else None,
        target_cv=rule.target_cv * widen if rule.target_cv is not None else None,
        stable_noise=rule.stable_noise * widen,
        noise_every=max(1, round(rule.noise_every / units)),
    )


def shares(spec: SweepSpec, lo: int, hi: int) -> int:
    """Into how many shares an adaptive rule is divided: one more than the planned units when extra
    units may follow (``hi > lo``), so that the planned units and the extras (at most
    ``EXTRA_BUDGET`` of the planned units' time) together take about what one unit took before:
    shares of the planned 3 alone put the default at 1.36-1.48x the one-unit wall time on the host,
    where every configuration is noisy enough to earn its fourth unit. A fixed count is split among
    the planned units exactly (no extras follow it)."""
    return lo + 1 if spec.stop.adaptive and hi > lo else lo


def unit_spec(spec: SweepSpec, units: int, k: int, share: int | None = None) -> SweepSpec:
    """The spec unit ``k`` of ``units`` planned measures: its share of the samples (one of ``share``,
    default ``units``: ``shares``) and of the cold reference (one of the planned units: extras take none)."""
    return dataclasses.replace(
        spec,
        units=1,
        stop=unit_rule(spec.stop, share or units, k),
        reference_samples=max(1, math.ceil(spec.reference_samples / units)),
    )


def _t_half(logs: np.ndarray) -> float:
    logs = logs[np.isfinite(logs)]
    if logs.size < 2:
        return math.inf
    return student_t_quantile(0.975, logs.size - 1) * float(np.std(logs, ddof=1)) / math.sqrt(logs.size)


def half_widths(samples: Any, spec: SweepSpec, one_process: bool = False) -> dict[Configuration, float]:
    """Each configuration's 95% t half-width over its units, relative (of the log unit medians).

    With ``resolution`` and interleaved kernels, a kernel's half-width is that of the interval a
    verdict of it against the first kernel decides on (``pair_half_width``): asked for ±1%, the
    user's ``compare`` must read ±1% (on the H100 this rule once read ±0.92% where ``compare``
    reported ±1.11%: the two computed different intervals)."""
    out: dict[Configuration, float] = {}
    if not len(samples):
        return out
    kept = samples[~samples["dropped"].to_numpy(bool)] if "dropped" in samples.columns else samples
    kept = kept[~Configuration.marks_reference(kept)]
    groups = {Configuration.of_key(k): g for k, g in kept.groupby(list(Configuration.COLUMNS), sort=False)}
    first = spec.specs()[0].name
    paired = {
        c: (_measurement(g), _measurement(groups[c._replace(kernel=first)]))
        for c, g in groups.items()
        if spec.resolution and spec.interleave and c.kernel != first and c._replace(kernel=first) in groups
    }
    pooled = pooled_spreads(paired, lambda c: c._replace(flush=""))  # as ``compare`` pools (levels.pooled_spreads)
    for c, g in groups.items():
        if c in paired:
            h = _pair_half(*paired[c], one_process, pooled.get(c))
        else:
            med = g.groupby("pass_index")["time_s"].median()
            h = _t_half(np.log(med[med > 0]).to_numpy(float))
        if math.isfinite(h):  # fewer than 2 units: no spread to read yet
            out[c] = h
    return out


def _measurement(g: Any) -> Measurement:
    return Measurement(
        g["time_s"].to_numpy(float), chunks=g["chunk"].to_numpy(), groups=g["pass_index"].to_numpy(np.int64)
    )


def pair_half_width(new: Any, base: Any, one_process: bool = False, pooled: Any = None) -> float:
    """The half-width ``compare(run, base=first, new=kernel)`` reports for one configuration of an
    interleaved run (``verdicts``): its decision interval, the paired between-unit t interval (with
    the spread ``pooled`` over its flush modes, ``levels.pooled_spreads``) with the timer's grid as
    a floor (``levels.decision_interval``), widened to the paired within-unit interval when the
    units shared one process (``one_process``; both then at ``levels.SHARED_PROCESS_LEVEL``); inf with fewer than ``levels.MIN_UNITS`` units."""
    return _pair_half(_measurement(new), _measurement(base), one_process, pooled)


def _pair_half(n: Measurement, b: Measurement, one_process: bool, pooled: Any) -> float:
    level = decision_level(0.95, one_process)  # as ``compare`` decides (verdict_row.comparison_row)
    within = paired_ratio_ci(n, b, level=level)[1:] if one_process and interleaved_pair(b, n) else None
    lo, hi = decision_interval(paired_units(n, b, level, pooled=pooled), n, b, within)
    return (hi - lo) / 2 if math.isfinite(lo) and math.isfinite(hi) else math.inf


def target(spec: SweepSpec) -> float:
    """The half-width a configuration's units must reach before no extra unit is planned for it."""
    return spec.resolution or (spec.stop.target_ci or 0.01) * WIDE_FACTOR


def wide(samples: Any, spec: SweepSpec, one_process: bool = False) -> set[Configuration]:
    """Configurations (all kernels of one when interleaved) whose unit medians spread wider than
    ``target``: ``WIDE_FACTOR`` times the rule's interval target, or ``resolution`` (a t half-width
    over the units, ``half_widths``)."""
    want = target(spec)
    out = {c for c, h in half_widths(samples, spec, one_process).items() if h > want}
    if spec.resolution and spec.interleave:  # the first kernel's own spread is no pair's interval
        out = {c for c in out if c.kernel != spec.specs()[0].name or len(spec.kernels) == 1}
    if spec.interleave:  # a wide configuration is measured again for every kernel, so the pairs stay paired
        names = [k.name for k in spec.specs()]
        out = {c._replace(kernel=n) for c in out for n in names}
    return out


@dataclass(frozen=True)
class UnitJob:
    """One unit of one group, as an executor runs it: the unit's ``spec`` (its share of the samples,
    ``units=1``), its index ``unit`` (seeds its draws and its pad), the configurations it leaves out
    (``done``: those that have this unit already, or, for an extra unit, every one not wide), and
    its ``group`` (a cluster run's (kernel, size); 0 for a one-device run, whose group is the sweep).
    ``counting``: what makes it a counting unit (``bench.counters.phase.Counting``: no timed sample,
    each configuration replayed inside a profiler's range), None for a timed unit."""

    spec: SweepSpec
    unit: int
    done: frozenset[Configuration]
    group: int = 0
    counting: Any = None

    @property
    def kind(self) -> str:
        return TIMED if self.counting is None else COUNTING


class UnitPlan:
    """Which units a group still needs, in order: each planned unit (``planned``) over the
    configurations without it, then the adaptive extras (module docstring) for the configurations
    measured in this run whose unit medians spread wide, within ``EXTRA_BUDGET`` of the time the
    planned units took here. ``had``: the units each configuration had when the run started;
    ``previous``: their sample frames (``pass_index`` the unit, for the spread); ``group``: stamped
    on the jobs. Its units are timed ones (``kind``); the counter pass's plan
    (``bench.counters.counting.CountingPlan``) is the same orchestrator's plan of ``COUNTING`` units."""

    kind = TIMED

    def __init__(
        self,
        spec: SweepSpec,
        planned_units: tuple[int, int],
        had: dict[Configuration, set[int]] | None = None,
        previous: list[Any] | None = None,
        group: int = 0,
        one_process: bool = False,
    ) -> None:
        self.spec, self.group = spec, group
        self.one_process = one_process  # the units share this process: half-widths as its verdicts read them
        self.lo, self.hi = planned_units
        self.share = shares(spec, self.lo, self.hi)
        self.configs = spec.configurations()
        self.had = {c: set((had or {}).get(c, ())) for c in self.configs}
        self.fresh = {c for c in self.configs if not c.is_reference and len(self.had[c]) < self.lo}
        self.frames: list[Any] = list(previous or [])
        self.next_planned, self.stopped = 0, False
        self.spent = {"planned": 0.0, "extra": 0.0}
        self.measured = 0  # (configuration, unit)s of the planned units measured in this run
        self.top = max((k for ks in self.had.values() for k in ks), default=-1)
        self.ended = ""  # why the extras ended: "reached", "the budget (...)", "the most units (N)"

    def next(self) -> UnitJob | None:
        """The next unit to run, None when the group is finished (or was stopped)."""
        if self.stopped:
            return None
        while self.next_planned < self.lo:
            k = self.next_planned
            self.next_planned += 1
            done = frozenset(c for c in self.configs if k in self.had[c])
            if len(done) < len(self.configs):
                return UnitJob(unit_spec(self.spec, self.lo, k, self.share), k, done, self.group)
        return self._extra()

    def _extra(self) -> UnitJob | None:
        k = max(self.top + 1, self.lo)
        if not self.measured or not self.frames:
            return None
        todo = wide(units_frame(self.frames), self.spec, self.one_process) & self.fresh
        cost = self.spent["planned"] / self.measured * len(todo)  # a unit of just these configurations
        budget = self.spec.resolution_budget if self.spec.resolution else EXTRA_BUDGET
        self.ended = (
            "reached"
            if not todo
            else f"the most units ({self.hi})"
            if k >= self.hi
            else f"the budget ({budget:g}x the planned units' time)"
            if self.spent["planned"] + self.spent["extra"] + cost > self.spent["planned"] * (1 + budget)
            else ""
        )
        if self.ended:
            return None
        done = frozenset(c for c in self.configs if c not in todo)  # references too: taken by the planned units
        self.top = k
        return UnitJob(unit_spec(self.spec, self.lo, k % self.lo, self.share), k, done, self.group)

    def finished(self, job: UnitJob, samples: Any, stopped: bool, seconds: float) -> None:
        """``job`` ran: its samples (any ``pass_index``), whether it was stopped, its wall time."""
        self.stopped = self.stopped or stopped
        self.top = max(self.top, job.unit)
        planned_unit = job.unit < self.lo
        self.spent["planned" if planned_unit else "extra"] += seconds
        if samples is not None and len(samples):
            mine = samples.assign(pass_index=job.unit)
            self.frames.append(mine)
            if planned_unit:
                self.measured += len({c for c in Configuration.of_frame(mine) if not c.is_reference})


def units_frame(frames: list[Any]) -> Any:
    """A plan's unit frames (each unit's chunk ids as it measured them) as one frame stacked the way
    the sweep's record stacks them (``passes.stack``: chunk ids apart across units). ``compare``
    reads that frame, and an interleaved pair is recognised by its chunk ids, so the unit rules read
    the same: concatenated as measured, two units' ids overlapped, the pair was taken for separate
    measurements, and the resolution rule judged a wider interval than ``compare`` reported."""
    import pandas as pd

    if not frames or any("chunk" not in f.columns or "pass_index" not in f.columns for f in frames):
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()  # no chunk ids to keep apart
    by_unit: dict[int, list[Any]] = {}
    for f in frames:
        for k, g in f.groupby("pass_index", sort=True):
            by_unit.setdefault(int(k), []).append(g)
    if not by_unit:
        return pd.concat(frames, ignore_index=True)
    empty = frames[0].iloc[:0]
    return ps.stack(
        [pd.concat(by_unit[k], ignore_index=True) if k in by_unit else empty for k in range(max(by_unit) + 1)]
    )


def resolution_info(spec: SweepSpec, plans: list[UnitPlan], stopped: bool) -> ResolutionInfo:
    """With ``resolution``: the resolution asked for and the outcome saying whether every configuration reached it, or which did
    not and why the extras ended (the budget, the most units, the sweep stopped). A configuration
    with fewer than 2 units has no half-width yet: it has not reached it (an interrupted first unit
    once read "reached ... widest ±0.00%")."""
    if not spec.resolution:
        return ResolutionInfo()
    want, wider, unjudged, widest = spec.resolution, [], [], 0.0
    base = spec.specs()[0].name if spec.interleave and len(spec.kernels) > 1 else None
    for plan in plans:
        frames = [f for f in plan.frames if len(f)]
        halves = half_widths(units_frame(frames), spec, plan.one_process) if frames else {}
        measured = {
            c
            for f in frames
            for c in Configuration.of_frame(f.drop_duplicates([k for k in Configuration.COLUMNS if k in f.columns]))
            if not c.is_reference
        }
        for c in sorted(measured | set(halves)):
            if c.kernel == base:
                continue  # the base kernel's own spread: its pairs' ratios are what a verdict uses
            if c not in halves:
                unjudged.append(f"{c.kernel} {c.size} r={c.rotating} {c.flush} {c.timer}")
                continue
            h = halves[c]
            widest = max(widest, h)
            if h > want:
                wider.append(f"{c.kernel} {c.size} r={c.rotating} {c.flush} {c.timer}: ±{h:.2%}")
    why = "; ".join(sorted({p.ended for p in plans if p.ended and p.ended != "reached"})) or (
        "the sweep was stopped" if stopped else "no extra unit ran"
    )
    if not wider and not unjudged:
        text = f"reached: every configuration's 95% half-width (what compare reads) is within ±{want:.2%} (widest ±{widest:.2%})"
    else:
        parts = (
            [
                f"{len(wider)} configuration(s) still wider than ±{want:.2%}: {', '.join(wider[:6])}"
                f"{' ...' if len(wider) > 6 else ''}"
            ]
            if wider
            else []
        ) + (
            [
                f"{len(unjudged)} configuration(s) with fewer than 2 units (no half-width yet): {', '.join(unjudged[:6])}"
                f"{' ...' if len(unjudged) > 6 else ''}"
            ]
            if unjudged
            else []
        )
        text = f"not reached: stopped by {why}; " + "; ".join(parts)
    return ResolutionInfo(want, text)


def measure(
    spec: SweepSpec,
    device: Any,
    run_unit: Callable[[SweepSpec, int, set], Any],
    all_done: set[Configuration],
    clock: Callable[[], float] = time.perf_counter,
) -> list[Any]:
    """The units of ``spec`` in this process: ``run_unit(unit_spec, k, done)`` for each (it returns a
    ``SweepResult``), as ``UnitPlan`` orders them (``all_done``: configurations already complete)."""
    lo, hi = planned(spec, device)
    plan = UnitPlan(spec, (lo, hi), {c: set(range(lo)) for c in all_done})
    results: list[Any] = []
    while (job := plan.next()) is not None:
        t = clock()
        results.append(run_unit(job.spec, job.unit, set(job.done)))
        plan.finished(job, results[-1].samples, results[-1].stopped, clock() - t)
    return results


__all__ = [
    "COUNTING",
    "EXTRA_BUDGET",
    "TIMED",
    "UnitJob",
    "UnitPlan",
    "UnitRun",
    "WIDE_FACTOR",
    "half_widths",
    "max_sets",
    "measure",
    "planned",
    "resolution_info",
    "shares",
    "target",
    "unit_rule",
    "unit_spec",
    "wide",
]


@dataclass
class UnitRun:
    """What an executor needs to run one unit: the job (its spec, index, what it leaves out), the
    references it measured before (for its rows' biases), its pad, the run's id and input folder."""

    job: UnitJob
    run_id: str
    refs: dict[tuple[str, int, str], Measurement] = field(default_factory=dict)
    pad_bytes: int = 0
    inputs_dir: str | None = None

    @property
    def spec(self) -> SweepSpec:
        return self.job.spec

    @property
    def counting(self) -> Any:
        """A counting unit's ``Counting`` (``UnitJob.counting``), None for a timed unit."""
        return self.job.counting

    @property
    def prefix(self) -> tuple[str, ...]:
        """The command the unit's worker starts under: a counting unit's profiler's, else none."""
        return tuple(self.job.counting.prefix) if self.job.counting is not None else ()

    @property
    def unit(self) -> int:
        return self.job.unit
