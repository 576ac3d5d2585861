"""The phases of one unit's measurement, and where a new one slots in.

A unit (``bench.sweeprun.SweepRun``) measures in named phases, in the style of nvbench's
``measure_cold`` (``check(); initialize(); run_warmup(); run_trials(); generate_summaries();``):

  initialize   telemetry, the flushers (``bench.flush``: each mode's ``Flusher``, a member of the
               run), the rotating plans against the free memory left (``SweepRun.initialize``)
  warm_up      once per unit: launches until the clock is stable (``SweepRun.warm_up``)
  check        per (kernel, size), in the first unit, before its timing: the output check
               (``SweepRun.check``: the declared roles, ``bench.roles``, then the reference)
  trials       per configuration: the timed launches (``bench.timing.time_launches``), the only
               timed window (``SweepRun.trials``)
  summarise    per configuration: statistics, throttled samples, the launch floor, the row
               (``SweepRun.summarise``)
  ...          then every ``ConfigurationPhase`` of the run, in order, outside the timed window
  references   the cold reference, in parts between the groups, and every bias against it
  release      the flushers and the telemetry

A phase after the timed ones is a ``ConfigurationPhase``: it gets the configuration, its
``LaunchSequence`` (the flush, then the kernel on buffer set *i*, exactly what the trials timed, on
the same buffers, with the trials' timing options) and the configuration's result so far
(``bench.outcome.ConfigurationResult``), and returns it with what it adds (a named summary: the
counters are a ``CounterSummary``), never a row grown in place. It runs after ``summarise``, so nothing it does is inside a timed window. ``phases_for(spec,
counting)`` builds a run's phases (in-process and in a sweep worker alike, since a worker builds
them from what it is sent).

The counter pass (``bench.counters``) is such a phase, run in a *counting unit*: a unit of its own,
after the timed ones, in a worker started under the profiler's command
(``UnitJob.counting``'s ``prefix``, read by the executor). It takes the same ``initialize`` and ``warm_up``
as a timed unit, no output check and no cold reference, and per configuration, in place of
``trials`` and ``summarise``, only the counter phase: the configuration's launches through the
trials' own path (``LaunchSequence.timed``: ``time_launches`` with a small fixed count, its
timings thrown away) with the profiler's range opened after that path's warm-up. Why not a
stand-alone replay: on the H200 a child that launched "flush, kernel on set i" alone did not
reproduce the timed run's cache state (data/counters/h200-probe/).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..schema import Configuration


@dataclass(frozen=True)
class LaunchSequence:
    """One configuration's launches as the trials timed them: ``flusher`` (None for no flush),
    then the kernel on a buffer set (``workload``: a ``bench.timing.Workload``, on the trials' own
    sets), timed the way the trials were (``timing``: the run's ``TimingOptions``); ``kspec`` and
    ``n``: the kernel and its element count (what a phase reports about its inputs)."""

    workload: Any
    flusher: Any = None
    timing: Any = None
    kspec: Any = None
    n: int = 0

    @property
    def sets(self) -> int:
        return len(self.workload.arg_sets)

    def enqueue(self, i: int) -> None:
        """The flush, then the kernel on buffer set ``i`` (modulo the sets)."""
        if self.flusher is not None:
            self.flusher.enqueue()
        self.workload.launch(i % self.sets)

    def replay(self, count: int) -> None:
        """``count`` launches over the sets in turn, then wait for them (no holds, no events)."""
        for i in range(count):
            self.enqueue(i)
        self.workload.device.synchronize()

    def launch_bound(self, samples: int) -> int:
        """At most how many launches of the workload ``timed(samples)`` makes after its warm-up:
        the timed ones, and per chunk its untimed lead and trail (a profiler in this process sizes
        its record of ranges by it: an ``auto`` rotation of hundreds of sets runs that many)."""
        from .timing_options import TimingOptions

        opts = self.timing or TimingOptions()
        chunks = -(-max(int(samples), 1) // max(int(opts.chunk), 1))
        lead = 1 if opts.lead == "random" else int(opts.lead)
        return int(samples) + chunks * (lead + int(opts.trail))

    def timed(self, samples: int, **overrides: Any) -> Any:
        """``samples`` launches through the trials' own path (``bench.timing.time_launches``: its
        warm-up, then chunks with their leads, events, flushes and trails), ``overrides`` replacing
        timing options (the counter pass: no hold, its profiler range); the ``RawTimes``."""
        from .stats import StopRule
        from .timing import time_launches
        from .timing_options import TimingOptions

        return time_launches(
            self.workload,
            self.flusher,
            StopRule(iterations=int(samples)),
            (self.timing or TimingOptions()).but(**overrides),
        )


class ConfigurationPhase(Protocol):
    """A phase run per configuration after the timed ones (module docstring). ``tap``: told of
    every launch of the unit's kernel (``bench.timing.Workload.tap``), or None."""

    name: str
    tap: Any

    def run(self, configuration: Configuration, launches: LaunchSequence, so_far: Any) -> Any:
        """In a timed unit: the configuration's result (``bench.outcome.ConfigurationResult``) with what
        the phase adds (a named summary: ``with_summary``); in a counting unit: its manifest entry (a
        dict) with what the phase adds."""
        ...


def phases_for(spec: Any, counting: Any = None) -> tuple[ConfigurationPhase, ...]:
    """The phases after the timed ones that a unit of ``spec`` runs: none in a timed unit; in a
    counting unit (``counting``: a ``bench.counters.phase.Counting``, sent by the orchestrator when
    ``spec.counters`` asks for counters) the counter phase, which replays each configuration
    through the timing path inside the profiler's range (the unit then takes no timed sample)."""
    if counting is None:
        return ()
    from .counters.phase import CounterPhase

    return (CounterPhase(counting),)


__all__ = ["ConfigurationPhase", "LaunchSequence", "phases_for"]
