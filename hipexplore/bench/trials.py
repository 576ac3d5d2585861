"""The timed window of one configuration: its trials, plain, sampled-checked or interleaved.

Why one place: a unit (``bench.sweeprun.SweepRun``) takes a configuration's timed samples here and
nowhere else (every other phase runs outside the timed window). A configuration's trials are one
``bench.timing.time_launches`` over its rotating sets, with the trust hooks between chunks
(``bench.trust``: the persisting-L2 reset; ``bench.sampled``: the sampled output check), or, when
the sweep interleaves its kernels (``bench.interleave``), its turns shuffled with those of every
partner kernel of the same configuration, each on the same pool of buffer sets where their buffers
match one for one (``shared_pool``). ``Trials`` is the unit's part that does it (a mixin of
``SweepRun``: it reads the unit's device, spec, timing, flushers, plans and channel).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from ..kernels.spec import KernelSpec
from ..schema import Configuration
from .callable import sets_for
from .check import CheckTarget
from .flush import flush_mode
from .measured import MeasuredInfo
from .interleave import interleaved_launches
from .sampled import Fresh, SampledCheck
from .target import Target, bound
from .raw_times import RawTimes
from .timing import InKernelTimer, Workload, time_launches

if TYPE_CHECKING:
    import numpy as np

    from ..devices.base import Device
    from . import rotating as rot
    from .flush import Flusher
    from .spec import SweepSpec
    from .timing_options import TimingOptions


class Trials:
    """The unit's timed window (module docstring): what it reads of the unit is declared below."""

    dev: Device
    spec: SweepSpec
    specs: list[KernelSpec]
    unit: int
    done: set[Configuration]
    timing: TimingOptions
    guard: Any
    flushers: dict[str, Flusher | None]
    plans: dict[tuple[str, int, str], rot.RotatingPlan]
    channel: Any
    rng: np.random.Generator
    pending: dict[Configuration, RawTimes]  # interleaved partners' times, until the loop reaches them
    current_sets: Any  # the group's rotating sets (interleaved partners may share them)

    def trials(self, t: Target, conf: Configuration, sets: Any) -> RawTimes:
        """The timed launches of one configuration: the only timed window of the unit; between its
        chunks the trust hooks (``bench.trust``: the persisting-L2 reset, the sampled output check),
        whose flags join the configuration's notes."""
        timer = InKernelTimer(self.dev, sets.args, self.spec.chunk) if conf.timer.timed_kernel else None
        sampled = self.sampled_check(t, conf, sets)
        try:
            wl = Workload(self.dev, t.kernel(self.dev, conf.flush, conf.timer), t.grid, t.block, sets.args, timer=timer)
            if self.spec.interleave and len(self.specs) > 1:
                raw = self.interleave(conf, wl)
            else:
                timing = self.timing.but(hooks=(*self.timing.hooks, sampled)) if sampled is not None else self.timing
                raw = time_launches(wl, self.flushers.get(conf.flush), self.spec.stop, timing)
        finally:
            if timer is not None:
                timer.free()
        found = (self.guard.take() if self.guard is not None else []) + (sampled.take() if sampled is not None else [])
        raw.notes = [*raw.notes, *(x for x in found if x not in raw.notes)]
        return raw

    def sampled_check(self, t: Target, conf: Configuration, sets: Any) -> SampledCheck | None:
        """The configuration's sampled output check (``bench.sampled``), None when the sweep checks no
        output (``verify`` off, ``HIPEXPLORE_SAMPLED_CHECKS=0``) or interleaves (each kernel's turns are
        checked before timing only). Fresh inputs against the reference in the first unit (at 256 MiB the
        reference costs a second a unit); every unit looks for outputs left unwritten."""
        from .. import settings

        limit = settings.SAMPLED_CHECKS.get()
        if not self.spec.verify or not limit or (self.spec.interleave and len(self.specs) > 1):
            return None
        if t.fresh is None and self.unit == 0:  # fresh inputs and the reference once per sweep, as the check
            t.fresh = Fresh(self.dev, t.kspec, self.unit)  # before timing; later units look for unwritten outputs
        return SampledCheck(
            CheckTarget(self.dev, t.kspec, sets, t.plain, t.grid, t.block),
            limit=limit,
            fresh=t.fresh,
            config=f"kernel {t.kspec.name} {conf.describe()}",
        )

    def interleave(self, conf: Configuration, wl: Workload) -> RawTimes:
        """This configuration of every interleaved kernel in shuffled turns (``bench.interleave``);
        the partners' raw times wait in ``pending`` until the loop reaches their kernel."""
        if conf in self.pending:
            return self.pending.pop(conf)
        partners = [
            o
            for o in self.specs
            if o.name != conf.kernel
            and conf._replace(kernel=o.name) not in self.done
            and conf._replace(kernel=o.name) not in self.pending
        ]
        with contextlib.ExitStack() as stack:
            wls = {conf.kernel: wl}
            mine = self.current_sets
            for o in partners:
                n_o = o.elements(conf.size)
                grid_o, block_o, shared_o = o.launch(n_o, self.dev)
                k_o = bound(flush_mode(conf.flush).kernel(self.dev, o, timed=conf.timer.timed_kernel), shared_o)
                shared = shared_pool(mine, o, n_o) if not conf.timer.timed_kernel else None
                if shared is not None:  # one pool of buffers: both kernels see the same placement
                    args_o = shared
                else:
                    sets_o = stack.enter_context(
                        sets_for(self.dev, o, n_o, self.plans[(o.name, conf.size, conf.rotating)].count)
                    )
                    args_o = sets_o.args
                timer_o = InKernelTimer(self.dev, args_o, self.spec.chunk) if conf.timer.timed_kernel else None
                if timer_o is not None:
                    stack.callback(timer_o.free)
                wls[o.name] = Workload(self.dev, k_o, grid_o, block_o, args_o, timer=timer_o)
            one_pool = len(wls) > 1 and all(shared_pool(mine, o, o.elements(conf.size)) is not None for o in partners)
            self.channel.meta(MeasuredInfo(pools={int(conf.size): bool(one_pool)}))
            got = interleaved_launches(
                wls, {k: self.flushers.get(conf.flush) for k in wls}, self.spec.stop, self.timing, rng=self.rng
            )
        for o in partners:
            self.pending[conf._replace(kernel=o.name)] = got.raws[o.name]
        return got.raws[conf.kernel]


def shared_pool(sets: Any, other: KernelSpec, n: int) -> list[Any] | None:
    """``other``'s packed arguments over the buffers of ``sets`` (another kernel's rotating sets),
    or None when they cannot serve it: its buffer arguments must match theirs one for one (dtype
    and element count, in order, no Python callable), its scalars are its own. Why: interleaved
    kernels with their own buffers are placed differently (a byte-identical copy read 3.5% slower
    on the H200 at 16 MiB because its buffers were allocated second); on one pool of sets they
    launch on the very same memory, turn by turn, so placement cannot tell them apart."""
    from ..devices.base import pack_args

    mine = getattr(sets, "spec", None)
    if (
        mine is None
        or other.call is not None
        or getattr(mine, "call", None) is not None
        or not hasattr(sets, "buffers")
    ):
        return None
    a, b = mine.buffers(), other.buffers()  # same roles and fills too: the same data, read and written alike
    if len(a) != len(b) or sets.n != n:
        return None
    env_a, scalars = mine.scalars(n), other.scalars(n)
    if any(
        x.dtype != y.dtype or x.role != y.role or x.init != y.init or x.nbytes(n, env_a) != y.nbytes(n, scalars)
        for x, y in zip(a, b)
    ):
        return None
    return [pack_args(other.args, {**{y.name: bufs[x.name] for x, y in zip(a, b)}, **scalars}) for bufs in sets.buffers]


__all__ = ["Trials", "shared_pool"]
