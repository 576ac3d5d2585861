"""Harness parts on the real host backend: rotating buffer plans, flush modes, latency-free timing
with its invariants, the cold reference, and the correctness check."""
from __future__ import annotations

import math

import numpy as np
import pytest

from hipexplore.bench import rotating as rot
from hipexplore.bench.flush import flush_bytes, make_flusher
from hipexplore.bench.stats import StopRule
from hipexplore.bench.sweep import verify
from hipexplore.bench.timing import DEFAULT_CHUNK, Workload, time_cold_reference, time_launches
from hipexplore.compile.cache import CompileCache
from hipexplore.devices.host import HostDevice
from hipexplore.errors import BenchmarkError, ConfigError, UnsupportedOperation
from hipexplore.kernels import catalog, user_kernel

MIB = 1 << 20


@pytest.fixture(scope="module")
def dev(tmp_path_factory) -> HostDevice:
    d = HostDevice(llc_bytes=256 << 10)  # a small LLC keeps host flushes and auto counts cheap
    d.cache = CompileCache(disk_dir=tmp_path_factory.mktemp("bcache"))
    return d


def test_auto_count_follows_the_review_rule() -> None:
    assert rot.auto_count(60 * MIB, 3 * MIB) == 40  # H200: 60 MiB L2, 1 MiB triad
    assert rot.auto_count(60 * MIB, 768 * MIB) == 2
    assert rot.auto_count(4 * MIB + 256 * MIB, 3 * MIB) == 2 * 87  # MI300: L2 + Infinity Cache
    with pytest.raises(ConfigError):
        rot.auto_count(MIB, 0)


def test_plan_caps_at_a_fraction_of_free_memory_and_says_so() -> None:
    p = rot.plan("auto", footprint_bytes=3 * MIB, set_bytes=3 * MIB, llc_bytes=60 * MIB, free_bytes=1000 * MIB)
    assert p.count == 40 and not p.capped and p.cap_bytes == 500 * MIB and p.requested == "auto"
    p = rot.plan(100, footprint_bytes=30 * MIB, set_bytes=30 * MIB, llc_bytes=60 * MIB, free_bytes=1000 * MIB, mem_fraction=0.3)
    assert p.capped and p.count == 10 and "capped to 10" in p.note and str(300 * MIB) in p.note
    with pytest.raises(ConfigError, match="one buffer set needs"):
        rot.plan(1, footprint_bytes=MIB, set_bytes=600 * MIB, llc_bytes=MIB, free_bytes=1000 * MIB)
    for bad in ("two", 0, -1, True, 1.5):
        with pytest.raises(ConfigError, match="rotating"):
            rot.parse_rotating(bad)


def test_fewer_iterations_than_sets_shows_both_numbers() -> None:
    with pytest.raises(ConfigError, match=r"iterations \(3\) must be greater than or equal to .* \(8\)"):
        rot.check_iterations(3, 8)


def test_flush_sizes_and_modes(dev) -> None:
    assert flush_bytes("l2-write", 60 * MIB) == 120 * MIB
    assert flush_bytes("l2-read", 60 * MIB) == 240 * MIB
    with pytest.raises(ConfigError, match="at least 2x"):
        flush_bytes("l2-read", MIB, factor=1.5)
    assert make_flusher(dev, "none") is None
    for mode in ("icache", "inline-icache"):
        with pytest.raises(UnsupportedOperation, match=mode):
            make_flusher(dev, mode)
    with pytest.raises(ConfigError, match="unknown"):
        make_flusher(dev, "l3-write")
    fl = make_flusher(dev, "l2-read")
    try:
        assert fl.nbytes >= 2 * dev.llc_bytes
        fl.enqueue()  # real C loop over the zeroed buffer
    finally:
        fl.free()


def _workload(dev: HostDevice, sets: rot.BufferSets) -> Workload:
    spec = sets.spec
    grid, block = spec.geometry(sets.n, dev)
    return Workload(dev, dev.compiled_kernel(spec.name), grid, block, sets.args)


def test_time_launches_rotates_and_records_flush_and_gap(dev) -> None:
    spec = catalog.get("triad")
    fl = make_flusher(dev, "l2-write")
    try:
        with rot.BufferSets(dev, spec, 4096, 3) as sets:
            raw = time_launches(_workload(dev, sets), fl, StopRule(iterations=10), chunk=4, warmup_s=0)
            assert raw.time_s.size == 10 and raw.chunks == 3
            assert list(raw.buffer_set) == [i % 3 for i in range(10)]
            assert (raw.time_s > 0).all() and (raw.flush_s > 0).all() and (raw.gap_s >= 0).all()
            # the flush is outside the timed window: a write flush of 512 KiB takes longer than a 48 KiB triad
            assert np.median(raw.flush_s) > np.median(raw.time_s)
            raw = time_launches(_workload(dev, sets), None, StopRule(iterations=6), warmup_s=0)
            assert (raw.flush_s == 0).all()
            with pytest.raises(ConfigError, match=r"iterations \(2\) .* \(3\)"):
                time_launches(_workload(dev, sets), None, StopRule(iterations=2))
            raw = time_launches(_workload(dev, sets), None, StopRule(min_samples=5, min_time_s=0, target_cv=10, timeout_s=5), chunk=4, warmup_s=0)
            assert raw.time_s.size >= 5 and raw.stop_reason.startswith("converged")
    finally:
        fl.free()


class _LateFlushEnd(HostDevice):
    """A host device whose flush-end timestamps are pushed 1 ms late: the timed window then
    appears to contain part of the flush, which the harness must refuse."""

    def __init__(self) -> None:
        super().__init__(llc_bytes=256 << 10)
        self.records = 0

    def record(self, event) -> None:
        super().record(event)
        self.records += 1
        if self.records > 1 and (self.records - 2) % 4 == 1:  # [base] then [fs, fe, s, e] per sample
            event.t_ns += 1_000_000


def test_overlap_of_flush_and_timed_window_is_an_error() -> None:
    dev = _LateFlushEnd()
    spec = catalog.get("triad")
    fl = make_flusher(dev, "l2-read")
    try:
        with rot.BufferSets(dev, spec, 1024, 1) as sets:
            with pytest.raises(BenchmarkError, match="overlaps a timed window"):
                time_launches(_workload(dev, sets), fl, StopRule(iterations=3), warmup_s=0, flush_end_event=True)
    finally:
        fl.free()


def test_cold_reference_is_single_launches_after_a_read_flush(dev) -> None:
    spec = catalog.get("triad")
    rd, wr = make_flusher(dev, "l2-read"), make_flusher(dev, "l2-write")
    try:
        with rot.BufferSets(dev, spec, 4096, 2) as sets:
            raw = time_cold_reference(_workload(dev, sets), rd, 5, warmup_s=0)
            # one buffer set only, and timed like every configuration: in held chunks, not one per launch
            assert raw.time_s.size == 5 and raw.chunks == math.ceil(5 / DEFAULT_CHUNK) and set(raw.buffer_set) == {0}
            assert time_cold_reference(_workload(dev, sets), rd, 5, chunk=2, warmup_s=0).chunks == 3
            with pytest.raises(ConfigError, match="l2-read"):
                time_cold_reference(_workload(dev, sets), wr, 5)
    finally:
        rd.free()
        wr.free()


def test_verify_accepts_triad_and_catches_a_wrong_kernel(dev, tmp_path) -> None:
    spec = catalog.get("triad")
    with rot.BufferSets(dev, spec, 5000, 1) as sets:
        grid, block = spec.geometry(5000, dev)
        assert verify(dev, spec, sets, dev.compiled_kernel("triad"), grid, block) < 1e-6
    # a host kernel that forgets the last element: its output keeps the NaN poison
    src = tmp_path / "bad.c"
    src.write_text("void bad_triad(float* a, const float* b, const float* c, float s, unsigned long long n) {\n"
                   "  for (unsigned long long i = 0; i + 1 < n; ++i) a[i] = b[i] + s * c[i]; }\n")
    bad = user_kernel(src, "bad_triad", "out:a:f32[n],in:b:f32[n],in:c:f32[n],s:f32=3.0,n:u64=n",
                      name="test_bad_triad", host_source=src, register_it=False)
    bad = type(bad)(**{**bad.__dict__, "reference": spec.reference, "gpu_source": None})
    catalog.register(bad, replace=True)
    try:
        with rot.BufferSets(dev, bad, 100, 1) as sets:
            with pytest.raises(BenchmarkError, match="unwritten"):
                verify(dev, bad, sets, dev.compiled_kernel("test_bad_triad"), (1, 1, 1), (1, 1, 1))
    finally:
        catalog.unregister("test_bad_triad")
