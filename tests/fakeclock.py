"""A fake *timer* for tests of rules, and the host's load for tests of real timing.

``WorkClock``: the real host device (real C kernels, really launched through ctypes) whose clock
is virtual: every launch advances it by a time proportional to the work its integer arguments ask
for (the product of its ``u64`` arguments: ``reps * n`` for ``hx_work`` of tests/test_verdicts.py),
times a tiny deterministic jitter. A kernel doing four times the work then reads exactly four times
slower, whatever else the machine runs: what a verdict, a headline or a table says about a change
of known size is tested without depending on the host's luck (a loaded host makes an honest
verdict ``undecided``; issue 50 found three tests red at load 12-20 that way).

``run_load`` / ``need_quiet_run``: for a test of *real* timing, the load the run's chunks were
measured under (``host_load``, ``host_busy`` of the samples, read once per chunk by
``devices.telemetry``), and a skip (``conftest.need`` with ``NOT_REQUIRED``: no CI flag can ask
for a quiet machine) naming that load when the host was too busy for the sharp claim.
"""

from __future__ import annotations

import ctypes
import math
import os

import numpy as np

from hipexplore.devices.host import HostDevice


class WorkClock(HostDevice):
    """The host device with a virtual clock: a launch takes ``NS_PER_WORK`` ns per unit of work
    (the product of the launch's ``u64`` arguments) times ``1 + JITTER * sin(launch index)``."""

    NS_PER_WORK = 8.0  # hx_work: 8 dependent multiply-adds per element and rep, about 1 ns each
    JITTER = 0.003
    _launches = 0  # across devices (each unit gets a fresh one): the jitter never repeats a unit's

    def __init__(self, *a, **k) -> None:
        super().__init__(*a, **k)
        self.clock_ns = 0

    def launch(self, kernel, grid, block, args, shared_bytes: int = 0) -> None:
        super().launch(kernel, grid, block, args, shared_bytes)  # the real call
        work = 1
        for v in args.values:
            if isinstance(v, ctypes.c_uint64):
                work *= int(v.value)
        WorkClock._launches += 1
        jitter = 1.0 + self.JITTER * math.sin(WorkClock._launches * 0.7)
        self.clock_ns += max(1, int(self.NS_PER_WORK * work * jitter))

    def record(self, event) -> None:
        self.clock_ns += 1
        event.t_ns = self.clock_ns


def run_load(samples) -> tuple[float, float]:
    """(median other runnable tasks, median share of all CPUs' time others used) over the chunks
    of a run's samples (NaN where the readings are missing)."""

    def med(col: str) -> float:
        if col not in samples.columns:
            return math.nan
        v = samples[col].to_numpy(float)
        v = v[np.isfinite(v)]
        return float(np.median(v)) if v.size else math.nan

    return med("host_load"), med("host_busy")


def load_text(samples) -> str:
    runnable, busy = run_load(samples)
    return (
        f"measured over the run's chunks: a median of {runnable:g} other runnable task(s) on "
        f"{os.cpu_count()} CPU(s), others using {busy:.0%} of all CPU time"
    )


def quiet(samples) -> bool:
    """Whether the run was measured on a host quiet enough for a sharp timing claim: fewer other
    runnable tasks than CPUs (the suite's other xdist worker alone is one) in the median chunk."""
    runnable, _busy = run_load(samples)
    return math.isfinite(runnable) and runnable < (os.cpu_count() or 1)


def need_quiet_run(samples, claim: str) -> None:
    """Skip (always a skip: no CI flag can ask for a quiet machine) when the run's chunks were
    measured under load, naming the load and the ``claim`` not checked."""
    if quiet(samples):
        return
    from conftest import NOT_REQUIRED, need

    need(
        "a quiet host",
        f"{claim} is checked only where the run was measured quietly; this one was busy ({load_text(samples)})",
        flag=NOT_REQUIRED,
    )
