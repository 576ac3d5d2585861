"""The phases of one unit's measurement, and where a new one slots in.

A unit (``bench.sweeprun.SweepRun``) measures in named phases, in the style of nvbench's
``measure_cold`` (``check(); initialize(); run_warmup(); run_trials(); generate_summaries();``):

  initialize   telemetry, the flushers (``bench.flush``: each mode's ``Flusher``, a member of the
               run), the rotating plans against the free memory left (``SweepRun.initialize``)
  warm_up      once per unit: launches until the clock is stable (``SweepRun.warm_up``)
  check        per (kernel, size), in the first unit: the output check (``SweepRun.check``)
  trials       per configuration: the timed launches (``bench.timing.time_launches``), the only
               timed window (``SweepRun.trials``)
  summarise    per configuration: statistics, throttled samples, the launch floor, the row
               (``SweepRun.summarise``)
  ...          then every ``ConfigurationPhase`` of the run, in order, outside the timed window
  references   the cold reference, in parts between the groups, and every bias against it
  release      the flushers and the telemetry

A phase after the timed ones (a hardware-counter pass per configuration, say) is a
``ConfigurationPhase``: it gets the configuration, its ``LaunchSequence`` (the flush, then the
kernel on buffer set *i*, exactly what the trials timed, on the same buffers) and the row so far,
and returns columns to add to it. It runs after ``summarise``, so nothing it does is inside a timed
window. ``phases_for(spec)`` builds a run's phases from its spec (in-process and in a sweep
worker alike, since a worker builds them from the spec it is sent). A phase that needs the
launches under another program (``ncu ... python ...``) runs in a sweep worker started under that
command (``bench.executors.WorkerExecutor(prefix=...)``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..schema import Configuration


@dataclass(frozen=True)
class LaunchSequence:
    """One configuration's launches as the trials timed them: ``flusher`` (None for no flush),
    then the kernel on a buffer set (``workload``: a ``bench.timing.Workload``)."""

    workload: Any
    flusher: Any = None

    @property
    def sets(self) -> int:
        return len(self.workload.arg_sets)

    def enqueue(self, i: int) -> None:
        """The flush, then the kernel on buffer set ``i`` (modulo the sets)."""
        if self.flusher is not None:
            self.flusher.enqueue()
        self.workload.launch(i % self.sets)

    def replay(self, count: int) -> None:
        """``count`` launches over the sets in turn, then wait for them."""
        for i in range(count):
            self.enqueue(i)
        self.workload.device.synchronize()


class ConfigurationPhase(Protocol):
    """A phase run per configuration after the timed ones (module docstring)."""

    name: str

    def run(self, configuration: Configuration, launches: LaunchSequence, row: dict[str, Any]) -> dict[str, Any]:
        """Columns to add to the configuration's summary row."""
        ...


def phases_for(spec: Any) -> tuple[ConfigurationPhase, ...]:
    """The phases after the timed ones that ``spec`` asks for (none yet: where a counter pass is added)."""
    return ()


__all__ = ["ConfigurationPhase", "LaunchSequence", "phases_for"]
