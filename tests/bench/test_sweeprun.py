"""``hipexplore.bench.sweeprun``: one unit of a sweep on the real host device, reported through its
channel: every configuration's result once, its phases in order (the output check before any
timing, the reference last with every bias against it), and a fault named by the runtime's status.
(A unit's phases end to end: tests/bench/test_phases.py; its telemetry: tests/bench/test_timing.py;
its parts: test_target.py, test_verify.py, test_trials.py, test_cold_reference.py.)"""

from __future__ import annotations

import math

import pytest

from conftest import require_compiler
from hipexplore.bench.record import Collector
from hipexplore.bench.spec import SweepSpec
from hipexplore.bench.stats import StopRule
from hipexplore.bench.sweeprun import SweepRun, fault_status
from hipexplore.bench.units import UnitJob, UnitRun
from hipexplore.devices.host import HostDevice

pytestmark = pytest.mark.timeout(120)


def test_a_fault_is_named_by_the_runtime_status_in_its_message():
    """Why: ``KernelFault`` names the status (what a user searches for); GPU faults are not
    reachable on the host, so the parsing is checked on the runtimes' own message shapes."""
    assert fault_status("cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)") == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert (
        fault_status("hipModuleLaunchKernel: hipErrorIllegalAddress: an illegal memory access")
        == "hipErrorIllegalAddress"
    )
    assert fault_status("the device went away") == "the device went away"


class _Order(Collector):
    """A collector that notes what the unit said, in order (started where, meta keys, adds, updates)."""

    def __init__(self) -> None:
        super().__init__()
        self.said: list[tuple[str, str]] = []

    def started(self, where: list[str]) -> None:
        self.said.append(("started", where[1]))

    def meta(self, report) -> None:
        super().meta(report)
        self.said += [("meta", k) for k in report.entries()]

    def add(self, result) -> None:
        super().add(result)
        self.said.append(("add", result.configuration.describe()))

    def update(self, rebiased) -> None:
        super().update(rebiased)
        self.said += [("update", r.configuration.describe()) for r in rebiased]


def test_a_unit_checks_before_it_times_and_sends_each_result_once_the_reference_last():
    require_compiler("host")
    spec = SweepSpec(
        kernels=("triad",),
        sizes=("16KiB",),
        rotating=(1, 2),
        flush=("none",),
        stop=StopRule(iterations=8),
        units=1,
        reference_samples=4,
        reference_parts=2,
        warmup_s=0.0,
        clock_warmup_s=0.0,
    )
    channel = _Order()
    stopped = SweepRun(UnitRun(UnitJob(spec, 0, frozenset()), "run-1"), HostDevice(), channel).measure()
    assert stopped is False
    got = [r.configuration for r in channel.results]
    assert sorted(got) == sorted(spec.configurations()) and len(set(got)) == len(got)  # each once
    assert got[-1].is_reference  # the reference last, once it is whole
    verify_at = channel.said.index(("meta", "verify.triad.16384"))
    first_add = next(i for i, s in enumerate(channel.said) if s[0] == "add")
    assert verify_at < first_add  # the output check before any timed result
    timed = [r for r in channel.results if not r.configuration.is_reference]
    assert all(r.identity.run_id == "run-1" and r.samples.n == 8 for r in timed)
    assert all(not math.isnan(r.bias.bias) for r in timed)  # every bias against the whole reference
    updated = [s[1] for s in channel.said if s[0] == "update"]
    assert sorted(updated) == sorted(c.describe() for c in got if not c.is_reference)
