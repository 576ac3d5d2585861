"""``run(spec, device)``: measure a sweep on one device (the front of ``bench.orchestrator``).

Every configuration produces raw sample rows and one summary row (columns: ``hipexplore.schema``,
documented in docs/ARCHITECTURE.md "Benchmark frames"). Per (kernel, size) a cold reference is
taken (single launches, each after an l2-read flush) and every summary reports its bias against it.

The parent never measures: the orchestrator reads what the out file already holds (``bench.io``:
one reader, one resume check), plans the units, and records what they send back (``bench.record``:
the files, rewritten after every finished (configuration, unit), the hooks, the progress bar); an
executor (``bench.executors``: this process or a worker process per unit, ``run_location``
decides) runs each unit, a ``bench.sweeprun.SweepRun``.

With ``RunOptions(out=FILE.parquet)`` an interrupted sweep keeps what finished, and running it again with the
same ``out`` resumes (done configurations and units are skipped) when they were measured the same
way (the recorded spec's ``measurement()``, the device, each kernel's code). ``hooks.on_samples(frame)``
then ``hooks.on_result(summary_row)`` run after each (configuration, unit), ``hooks.on_progress``
after that, and ``hooks.should_stop()`` before each configuration, so a widget can show live
results and stop the sweep.
"""

from __future__ import annotations

from ..devices.base import Device
from .executors import IN_PROCESS, WORKER, executor_for, run_location
from .orchestrator import Orchestrator
from .result import RunOptions, SweepHooks, SweepResult
from .spec import SweepSpec
from .cold_reference import reference_schedule
from .sweeprun import fault_status
from .verify import verify


def run(
    spec: SweepSpec, device: Device, options: RunOptions | None = None, *, worker: bool | None = False
) -> SweepResult:
    """Measure every configuration of ``spec`` on ``device``; see the module docstring (``options``: the
    out file, resume, hooks, bar, run id and command, ``RunOptions``; ``worker``: as ``run_location``
    takes it; default False, this process)."""
    if not isinstance(spec, SweepSpec):
        from ..errors import ConfigError

        raise ConfigError(f"run() takes a SweepSpec; got {type(spec).__name__}")
    return Orchestrator(spec, executor_for(spec, device, worker), options).run()


__all__ = [
    "IN_PROCESS",
    "WORKER",
    "RunOptions",
    "SweepHooks",
    "SweepResult",
    "fault_status",
    "reference_schedule",
    "run",
    "run_location",
    "verify",
]
