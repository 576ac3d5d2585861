"""The cold reference of a (kernel, size): taken in parts spread through its groups, then every
bias against it.

Why in parts: a configuration's bias is its median against the same kernel's cold launches (each
after an l2-read flush, single launches), and a reference taken all at once, before or after the
group, would see another machine state than the group's middle (clock, temperature). So its samples
are split into ``reference_parts`` parts spread evenly from before the first group to after the
last (``reference_schedule``); the reference so far biases each configuration as it finishes, and
once it is whole every bias of the group is taken again against it (``emit_references``: sent as
``update``, with the reference's own result). ``ColdReference`` is the unit's part that does it (a
mixin of ``bench.sweeprun.SweepRun``: it reads the unit's device, spec, timing, flushers and channel,
and makes results with the unit's ``statistics`` and ``result``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ..schema import COLD_REFERENCE, Configuration, Timer
from .callable import sets_for
from .flush import REFERENCE
from .outcome import Bias, ConfigurationResult, Floor, Rebiased, Rotation
from .target import Target
from .raw_times import RawTimes
from .timing import InKernelTimer, Workload, time_cold_reference
from .trust import reference_flag, with_flags

if TYPE_CHECKING:
    from ..devices.base import Device
    from .flush import Flusher
    from .spec import SweepSpec
    from .stats import Measurement
    from .timing_options import TimingOptions


def reference_schedule(groups: int, parts: int, samples: int) -> list[tuple[int, int]]:
    """(group index before which a part is taken — ``groups`` meaning after the last — and its
    samples), parts spread evenly from before the first group to after the last."""
    parts = max(1, min(parts, samples))
    where = [0] if parts == 1 else [round(i * groups / (parts - 1)) for i in range(parts)]
    sizes = [samples // parts + (1 if i < samples % parts else 0) for i in range(parts)]
    out: dict[int, int] = {}
    for w, k in zip(where, sizes):
        out[w] = out.get(w, 0) + k
    return sorted(out.items())


class ColdReference:
    """The unit's cold references (module docstring): what it reads of the unit is declared below;
    its results are made and sent by the unit's own ``statistics``, ``result``, ``floor_of`` and ``emit``."""

    dev: Device
    spec: SweepSpec
    timing: TimingOptions
    guard: Any
    flushers: dict[str, Flusher | None]
    channel: Any
    where: list[str]
    refs: dict[tuple[str, int, str], Measurement]
    kept: dict[Configuration, ConfigurationResult]
    free: int

    def take_reference(self, t: Target, samples: int, parts: dict[str, list[RawTimes]]) -> None:
        """One part of the (kernel, size)'s cold reference, ``samples`` single launches per timer."""
        with sets_for(self.dev, t.kspec, t.n, 1) as sets:
            for timer_name, got in parts.items():
                self.where[1] = f"size={t.size} rotating=1 flush={COLD_REFERENCE} timer={timer_name}"
                self.channel.started(self.where)
                timer = (
                    InKernelTimer(self.dev, sets.args, self.spec.chunk) if Timer.of(timer_name).timed_kernel else None
                )
                try:
                    wl = Workload(self.dev, t.kernels[timer_name], t.grid, t.block, sets.args, timer=timer)
                    raw = time_cold_reference(wl, self.flushers[REFERENCE.name], samples, self.timing)  # type: ignore[arg-type]
                finally:
                    if timer is not None:
                        timer.free()
                if self.guard is not None:
                    raw.notes = [*raw.notes, *self.guard.take()]
                if got:
                    raw.chunk = raw.chunk + int(got[-1].chunk.max()) + 1
                got.append(raw)
                self.refs[(t.kspec.name, t.size, timer_name)] = self.statistics(
                    RawTimes.concat(got), f"{t.kspec.name} {t.size} cold", []
                )[0]

    def emit_references(self, t: Target, parts: dict[str, list[RawTimes]], rows: list[ConfigurationResult]) -> None:
        """The reference's result of each timer, then every bias of the group against the whole reference."""
        for timer_name, got in parts.items():
            if not got:
                continue
            raw = RawTimes.concat(got)
            m, throttled = self.statistics(raw, f"{t.kspec.name} {t.size} cold", list(raw.notes))
            self.refs[(t.kspec.name, t.size, timer_name)] = m
            conf = Configuration.reference_of(t.kspec.name, t.size, timer_name)
            plan = Rotation(conf.rotating, 1, int(self.free * self.spec.mem_fraction), t.footprint)
            result = self.result(conf, plan, raw, m, throttled, m)
            floor = Floor.of(self.floor_of(REFERENCE.name) if conf.timer.launch_floor else None, m.median, conf.timer)
            # the same kernel's flags: a reference of a kernel that keeps state is not one
            warning = with_flags(result.warning, [f"taken in {len(got)} part(s) through the sweep", *t.flags])
            biased = []
            for r in rows:
                if r.configuration.timer == timer_name:
                    r = dataclasses.replace(r, bias=Bias.of(self.kept[r.configuration].measurement, m))
                    biased.append(
                        dataclasses.replace(r, warning=with_flags(r.warning, reference_flag(r.columns(), self.dev)))
                    )
            for r in biased:
                self.kept[r.configuration] = r
            self.channel.update([Rebiased.of(r) for r in biased])
            self.emit(dataclasses.replace(result, floor=floor, warning=warning))


__all__ = ["ColdReference", "reference_schedule"]
