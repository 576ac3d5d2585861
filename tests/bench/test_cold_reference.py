"""``hipexplore.bench.cold_reference``: a (kernel, size)'s cold reference taken in parts spread from
before its first group to after its last, on the real host device: the schedule, the parts joined
into one reference (their chunk ids kept distinct), and every bias of the group taken again against
the whole reference."""

from __future__ import annotations

import pytest

from conftest import require_compiler
from hipexplore.bench.cold_reference import reference_schedule
from hipexplore.bench.record import Collector
from hipexplore.bench.spec import SweepSpec
from hipexplore.bench.stats import StopRule
from hipexplore.bench.sweeprun import SweepRun
from hipexplore.bench.units import UnitJob, UnitRun
from hipexplore.devices.host import HostDevice

pytestmark = pytest.mark.timeout(120)


def test_reference_parts_spread_from_first_group_to_after_the_last():
    assert reference_schedule(4, 1, 48) == [(0, 48)]
    assert reference_schedule(4, 3, 50) == [(0, 17), (2, 17), (4, 16)]
    assert reference_schedule(1, 5, 3) == [(0, 2), (1, 1)]  # no more parts than samples; parts at one place join
    assert sum(k for _, k in reference_schedule(7, 4, 101)) == 101  # every sample taken, none twice


def test_the_parts_make_one_reference_and_every_bias_is_taken_again_against_it():
    require_compiler("host")
    spec = SweepSpec(
        kernels=("copy",),
        sizes=("16KiB",),
        rotating=(1, 2, 3),
        flush=("none",),
        stop=StopRule(iterations=6),
        units=1,
        reference_samples=9,
        reference_parts=3,
        warmup_s=0.0,
        clock_warmup_s=0.0,
    )
    channel = Collector()
    SweepRun(UnitRun(UnitJob(spec, 0, frozenset()), "r"), HostDevice(), channel).measure()
    (ref,) = [r for r in channel.results if r.configuration.is_reference]
    assert "taken in 3 part(s) through the sweep" in ref.warning
    assert ref.samples.n == 9 and ref.samples["chunk"].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]  # a part's id each
    for r in channel.results:
        if not r.configuration.is_reference:  # the bias against the whole reference, not a part of it
            assert r.bias.reference_median_s == pytest.approx(ref.measurement.median)
