"""hipexplore.bench.phases: a configuration's launches as the trials timed them (``LaunchSequence``)
and the phases a unit runs after the timed ones (``phases_for``). On the real host device, with
the catalog's triad compiled by cc and a real write flush."""

from __future__ import annotations

import numpy as np
import pytest

from hipexplore.bench import rotating as rot
from hipexplore.bench.flush import make_flusher
from hipexplore.bench.phases import LaunchSequence, phases_for
from hipexplore.bench.timing import TimingOptions, Workload
from hipexplore.compile.cache import CompileCache
from hipexplore.devices.host import HostDevice
from hipexplore.kernels import catalog
from hipexplore.kernels.build import kernel_for


class Recording(HostDevice):
    """The real host device, noting the C symbol of each launch (the kernel or the flush)."""

    def __init__(self) -> None:
        super().__init__(llc_bytes=64 << 10)
        self.launched: list[str] = []

    def launch(self, kernel, grid, block, args, shared_bytes: int = 0) -> None:
        self.launched.append(kernel.__name__)
        super().launch(kernel, grid, block, args, shared_bytes)


@pytest.fixture(scope="module")
def dev(tmp_path_factory):
    from conftest import require_compiler

    require_compiler("host")
    d = Recording()
    d.cache = CompileCache(disk_dir=tmp_path_factory.mktemp("pcache"))
    return d


def sequence(dev, sets, flusher=None, taps=None, **kw) -> LaunchSequence:
    spec = sets.spec
    grid, block = spec.geometry(sets.n, dev)
    work = Workload(
        dev,
        kernel_for(dev, "triad"),
        grid,
        block,
        sets.args,
        tap=(lambda s, p: taps.append(s)) if taps is not None else None,
    )
    return LaunchSequence(work, flusher, kspec=spec, n=sets.n, **kw)


@pytest.mark.timeout(300)
def test_enqueue_and_replay_rotate_over_the_sets_flush_first(dev):
    spec = catalog.get("triad")
    flusher = make_flusher(dev, "l2-write")
    taps: list[int] = []
    try:
        with rot.BufferSets(dev, spec, 1024, 3) as sets:
            seq = sequence(dev, sets, flusher, taps)
            assert seq.sets == 3 and seq.n == 1024 and seq.kspec is spec
            dev.launched.clear()
            seq.enqueue(4)  # modulo the sets: set 1
            assert taps == [1] and dev.launched == ["hx_write_flush", "triad"]
            taps.clear()
            dev.launched.clear()
            seq.replay(7)
            assert taps == [0, 1, 2, 0, 1, 2, 0]
            assert dev.launched == ["hx_write_flush", "triad"] * 7
            for i in range(3):  # every set really ran the kernel: a = b + s * c
                got = np.empty(1024, dtype=np.float32)
                dev.copy_to_host(sets.buffers[i]["a"], got)
                np.testing.assert_allclose(
                    got, sets.host["b"] + np.float32(sets.scalars["s"]) * sets.host["c"], rtol=1e-6
                )
    finally:
        flusher.free()


@pytest.mark.timeout(300)
def test_replay_without_a_flusher_launches_only_the_kernel(dev):
    with rot.BufferSets(dev, catalog.get("triad"), 512, 2) as sets:
        seq = sequence(dev, sets)
        dev.launched.clear()
        seq.replay(3)
        assert dev.launched == ["triad"] * 3


@pytest.mark.timeout(300)
def test_timed_goes_through_the_trials_path_with_overrides(dev):
    taps: list[int] = []
    with rot.BufferSets(dev, catalog.get("triad"), 512, 2) as sets:
        seq = sequence(dev, sets, taps=taps, timing=TimingOptions(warmup_s=0.0))
        raw = seq.timed(6)
        assert raw.time_s.size == 6 and (raw.time_s > 0).all()
        assert list(raw.buffer_set) == [0, 1, 0, 1, 0, 1]
        assert len(taps) >= 6  # the timed launches (plus the path's own leads and trails)
        raw = seq.timed(4, hold=False)  # an override of the run's options (the counter pass's)
        assert raw.time_s.size == 4
        no_options = sequence(dev, sets)  # timing=None: the default TimingOptions
        assert no_options.timed(2).time_s.size == 2


@pytest.mark.timeout(60)
def test_a_timed_unit_has_no_later_phases_a_counting_unit_the_counter_phase():
    from hipexplore.bench.counters.phase import CounterPhase, Counting

    assert phases_for(object()) == () and phases_for(object(), None) == ()
    phases = phases_for(object(), Counting(marker="none", count=5))
    assert len(phases) == 1 and isinstance(phases[0], CounterPhase) and phases[0].name == "counters"
    assert phases[0].counting.count == 5 and phases[0].tap is not None
