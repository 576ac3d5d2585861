"""``hipexplore.bench.trials``: a configuration's timed window on the real host device: interleaved
kernels share one pool of buffer sets only when their buffers match one for one (and the metadata
says which), and the sampled output check runs beside plain trials but not interleaved ones."""

from __future__ import annotations

import pytest

from conftest import require_compiler
from hipexplore.bench.callable import sets_for
from hipexplore.bench.record import Collector
from hipexplore.bench.sampled import SampledCheck
from hipexplore.bench.spec import SweepSpec
from hipexplore.bench.stats import StopRule
from hipexplore.bench.sweeprun import SweepRun
from hipexplore.bench.target import Target
from hipexplore.bench.trials import shared_pool
from hipexplore.bench.units import UnitJob, UnitRun
from hipexplore.devices.host import HostDevice
from hipexplore.kernels import catalog, user_kernel
from hipexplore.schema import Configuration

pytestmark = pytest.mark.timeout(120)

SRC = r"""
void sw_f32(float* restrict a, const float* restrict b, unsigned long long n) { for (unsigned long long i = 0; i < n; ++i) a[i] = b[i]; }
void sw_i32(int* restrict a, const int* restrict b, unsigned long long n) { for (unsigned long long i = 0; i < n; ++i) a[i] = b[i]; }
"""
NAMES = {"sw_a": ("sw_f32", "f32"), "sw_copy": ("sw_f32", "f32"), "sw_int": ("sw_i32", "i32")}


@pytest.fixture
def kernels(tmp_path):
    require_compiler("host")
    src = tmp_path / "k.c"
    src.write_text(SRC)
    for name, (entry, t) in NAMES.items():
        user_kernel(src, entry, f"out:a:{t}[n],in:b:{t}[n],n:u64=n", name=name)
    yield
    for name in NAMES:
        catalog.unregister(name)


def test_kernels_share_a_pool_of_sets_only_when_their_buffers_match_one_for_one(kernels):
    """The same f32 buffers do; i32 buffers of exactly the same bytes do not (each kernel reads its
    own typed data)."""
    dev = HostDevice()
    a, i = catalog.get("sw_a"), catalog.get("sw_int")
    n = a.elements(65536)
    assert n == i.elements(65536)
    with sets_for(dev, a, n, 1) as sets:
        assert shared_pool(sets, catalog.get("sw_copy"), n) is not None
        assert shared_pool(sets, i, n) is None


def _interleaved(partner: str) -> Collector:
    spec = SweepSpec(
        kernels=("sw_a", partner),
        sizes=(65536,),
        rotating=(2,),
        flush=("none",),
        stop=StopRule(iterations=8),
        units=1,
        interleave=True,
        reference=False,
        warmup_s=0.0,
        clock_warmup_s=0.0,
    )
    channel = Collector()
    SweepRun(UnitRun(UnitJob(spec, 0, frozenset()), "r"), HostDevice(), channel).measure()
    return channel


def test_interleaved_turns_run_on_one_pool_where_the_buffers_match_and_say_so(kernels):
    same = _interleaved("sw_copy")
    assert same.info.measured.pools == {65536: True}  # metadata "interleave.pool.65536": "shared"
    assert sorted(r.configuration.kernel for r in same.results) == ["sw_a", "sw_copy"]
    chunks = [set(r.samples["chunk"].tolist()) for r in same.results]
    assert not chunks[0] & chunks[1]  # one sequence of turns: a chunk id belongs to one kernel
    assert _interleaved("sw_int").info.measured.pools == {65536: False}  # "own sets"


def test_the_sampled_check_runs_beside_plain_trials_and_not_interleaved_ones(kernels):
    dev = HostDevice()
    conf = Configuration("sw_a", 65536, "1", "none")
    for interleave, want in ((False, SampledCheck), (True, type(None))):
        spec = SweepSpec(kernels=("sw_a", "sw_copy"), sizes=(65536,), interleave=interleave, units=1)
        unit = SweepRun(UnitRun(UnitJob(spec, 0, frozenset()), "r"), dev, Collector())
        t = Target(dev, catalog.get("sw_a"), 65536, spec.timers)
        with sets_for(dev, t.kspec, t.n, 1) as sets:
            assert isinstance(unit.sampled_check(t, conf, sets), want)
