"""The CUDA device itself, on a real NVIDIA GPU (marked ``gpu``; ``scripts/device_check.sh`` runs
them on the H200). Where no CUDA GPU is present they skip, or fail under ``HIPEXPLORE_REQUIRE_GPU=1``
(the device script sets it, so a GPU test can never skip silently on the GPU machine).

What each test pins down, and the bug it catches:
- the stream hold keeps host latency out of the timed window: a kernel of known in-kernel duration
  reads that duration from events even when the host sleeps between the start event and the launch
  (a harness that stopped holding the stream would read the host's sleep);
- chunking: ``ceil(iterations / chunk)`` chunks, none timed out;
- rotating sets are distinct memory and every launch really uses the set it is recorded with
  (counted by the kernel's own increments, not by the label);
- the flushes move the bytes they claim: l2-write stores its value over its whole buffer, l2-read
  reads up to its last word, and their device time is at least bytes / peak bandwidth; a flushed
  small launch is slower than a hot one;
- the LLC is the driver's L2 attribute (checked against PyTorch where present) and the override
  wins.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

SLEEP_SRC = r"""
extern "C" __global__ void hx_test_sleep(unsigned long long ns, unsigned long long* out) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = t - t0;
}
"""

INC_SRC = r"""
extern "C" __global__ void hx_test_inc(float* a, unsigned long long n) {
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] += 1.0f;
}
"""

EMPTY_SRC = r"""
extern "C" __global__ void hx_test_empty(int* p) { if (p == 0 && threadIdx.x == 1023) *p = 1; }
"""


from conftest import _no_gpu, cuda  # noqa: F401,E402 - the GPU guard and the module-scoped device fixture


def _load(dev, source: str, entry: str):
    """Compile ``source`` with NVRTC for the device (through the compile cache) and look ``entry`` up."""
    from hipexplore.compile import CompileCache, CompileRequest, Source

    cache = CompileCache(disk_dir=False)
    res = cache.get_or_compile(CompileRequest(Source(f"{entry}.cu", source), "nvrtc", dev.target, kernels=(entry,)))
    module = dev.load(res.object_code)
    return dev.kernel(module, res.object_code.symbol(entry))


def _time(
    dev,
    kernel,
    arg_sets,
    iterations,
    *,
    flusher=None,
    chunk=64,
    grid=(1, 1, 1),
    block=(32, 1, 1),
    workload_cls=None,
    lead=0,
    trail=0,
):
    from hipexplore.bench.stats import StopRule
    from hipexplore.bench.timing import Workload, time_launches

    cls = workload_cls or Workload
    wl = cls(dev, kernel, grid, block, arg_sets)
    return time_launches(wl, flusher, StopRule(iterations=iterations), chunk=chunk, lead=lead, trail=trail)


def _args(values):
    from hipexplore.devices.base import PackedArgs

    import ctypes

    return PackedArgs([ctypes.c_uint64(v) if isinstance(v, int) else v for v in values])


def test_events_read_a_known_in_kernel_duration_despite_host_delay(cuda):
    """Kernels spinning 20 us and 60 us in-kernel, timed while the host sleeps 300 us before each
    launch: the events read the in-kernel difference (40 us), and neither reads the host's sleep."""
    import ctypes

    from hipexplore.bench.timing import Workload

    kernel = _load(cuda, SLEEP_SRC, "hx_test_sleep")
    out = cuda.alloc(8)

    class SlowHost(Workload):
        def launch(self, buffer_set: int, position: int = 0) -> None:
            time.sleep(300e-6)  # host latency between the start event and the launch
            super().launch(buffer_set, position)

    med = {}
    for ns in (20_000, 60_000):
        raw = _time(cuda, kernel, [_args([ns, ctypes.c_void_p(out.ptr)])], 48, workload_cls=SlowHost, chunk=16)
        assert raw.hold_timeouts == 0
        med[ns] = float(np.median(raw.time_s))
        # the kernel's own fixed cost (launch, block start, globaltimer ticks) is a few us, never 300
        assert ns * 1e-9 <= med[ns] <= ns * 1e-9 + 5e-6, f"median {med[ns] * 1e6:.2f} us for a {ns / 1000:g} us kernel"
        assert float(np.max(raw.time_s)) < ns * 1e-9 + 40e-6, raw.time_s
        got = np.zeros(1, dtype=np.uint64)
        cuda.copy_to_host(out, got)
        assert ns <= int(got[0]) < ns + 2_000
    assert abs((med[60_000] - med[20_000]) - 40e-6) < 1e-6, med


def test_hold_removes_submission_latency_for_a_tiny_kernel(cuda):
    """An empty kernel held in a chunk reads far less than one timed with a sync per launch."""
    import ctypes

    kernel = _load(cuda, EMPTY_SRC, "hx_test_empty")
    args = [_args([ctypes.c_void_p(0)])]
    held = float(np.median(_time(cuda, kernel, args, 200).time_s))
    ev0, ev1 = cuda.event(), cuda.event()
    per_launch = []
    for _ in range(200):
        cuda.record(ev0)
        time.sleep(50e-6)
        cuda.launch(kernel, (1, 1, 1), (32, 1, 1), args[0])
        cuda.record(ev1)
        cuda.synchronize()
        per_launch.append(cuda.elapsed_s(ev0, ev1))
    unheld = float(np.median(per_launch))
    assert held < 4e-6, f"held empty kernel {held * 1e6:.2f} us"
    assert unheld > held + 40e-6, (held, unheld)


@pytest.mark.parametrize("iterations,chunk", [(200, 64), (64, 64), (65, 64), (10, 3)])
def test_chunk_count_and_no_hold_timeout(cuda, iterations, chunk):
    import ctypes

    kernel = _load(cuda, EMPTY_SRC, "hx_test_empty")
    raw = _time(cuda, kernel, [_args([ctypes.c_void_p(0)])], iterations, chunk=chunk)
    assert raw.chunks == math.ceil(iterations / chunk)
    assert len(raw.time_s) == iterations and raw.hold_timeouts == 0
    assert np.all(raw.time_s > 0) and np.all(raw.gap_s >= -1e-9)


def test_rotating_sets_are_distinct_and_each_launch_uses_its_own(cuda):
    from hipexplore.bench import rotating as rot
    from hipexplore.kernels.catalog import parse_args, user_kernel

    spec = user_kernel(
        INC_SRC,
        "hx_test_inc",
        parse_args("inout:a:f32[n], n:u64=n"),
        name="hx-test-inc",
        register_it=False,
        grid=None,
        block=256,
    )
    n = 1 << 18
    kernel = _load(cuda, INC_SRC, "hx_test_inc")
    with rot.BufferSets(cuda, spec, n, 5) as sets:
        spans = sorted((b["a"].ptr, b["a"].ptr + b["a"].nbytes) for b in sets.buffers)
        assert all(hi <= lo2 for (_, hi), (lo2, _) in zip(spans, spans[1:])), spans  # disjoint
        grid = ((n + 255) // 256, 1, 1)
        raw = _time(cuda, kernel, sets.args, 23, grid=grid, block=(256, 1, 1), chunk=8)
        # warm-up ran every set once at least; count launches per set from what the kernel did
        added = []
        for s in range(5):
            got = np.empty(n, dtype=np.float32)
            cuda.copy_to_host(sets.buffers[s]["a"], got)
            inc = np.rint(got.astype(np.float64) - sets.host["a"])  # float32 rounding of x + k
            assert np.all(inc == inc[0]), f"set {s}: not every element incremented the same"
            added.append(int(inc[0]))
        timed = np.bincount(raw.buffer_set, minlength=5)
        assert list(timed) == [5, 5, 5, 4, 4]  # round robin over 23 launches, as recorded
        warm = [a - t for a, t in zip(added, timed)]
        assert min(warm) >= 1 and len(set(warm)) == 1, (added, list(timed))  # warm-up: same count per set


def test_l2_write_flush_stores_over_its_whole_buffer(cuda):
    from hipexplore.bench.flush import make_flusher

    fl = make_flusher(cuda, "l2-write")
    try:
        assert fl.nbytes == math.ceil(2 * cuda.llc_bytes / (1 << 20)) * (1 << 20)
        buf = fl.buffers[0]
        cuda.memset(buf, 0xAB)
        cuda.synchronize()
        fl.enqueue()
        got = np.empty(buf.nbytes // 4, dtype=np.uint32)
        cuda.copy_to_host(buf, got)
        assert np.all(got == 0), f"{int(np.count_nonzero(got))} words not written"
    finally:
        fl.free()


@pytest.mark.parametrize("where", ["first", "last"])
def test_l2_read_flush_reads_up_to_its_last_word(cuda, where):
    from hipexplore.bench.flush import make_flusher

    fl = make_flusher(cuda, "l2-read")
    try:
        assert fl.nbytes == math.ceil(4 * cuda.llc_bytes / (1 << 20)) * (1 << 20)
        buf, sink = fl.buffers
        word = np.array([0x9E3779B9], dtype=np.uint32)  # the fold value that makes the kernel store
        offset = 0 if where == "first" else buf.nbytes - 16
        full = np.zeros(buf.nbytes // 4, dtype=np.uint32)
        full[offset // 4] = word[0]
        cuda.copy_to_device(buf, full)
        cuda.memset(sink, 0)
        cuda.synchronize()
        fl.enqueue()
        got = np.zeros(4, dtype=np.uint32)
        cuda.copy_to_host(sink, got)
        assert got[0] == word[0], f"the {where} 16-byte word of the flush buffer was not read"
        cuda.copy_to_device(buf, np.zeros(buf.nbytes // 4, dtype=np.uint32))  # back to zeros
    finally:
        fl.free()


@pytest.mark.parametrize("mode", ["l2-write", "l2-read"])
def test_flush_time_is_at_least_its_bytes_over_peak(cuda, mode):
    import ctypes

    from hipexplore.bench.flush import make_flusher

    kernel = _load(cuda, EMPTY_SRC, "hx_test_empty")
    fl = make_flusher(cuda, mode)
    try:
        raw = _time(cuda, kernel, [_args([ctypes.c_void_p(0)])], 32, flusher=fl)
        peak = cuda.peak_bandwidth_gbs * 1e9
        assert peak > 0
        floor = fl.nbytes / peak
        med = float(np.median(raw.flush_s))
        assert med >= 0.9 * floor, f"{mode}: {fl.nbytes} B flushed in {med * 1e6:.1f} us < {floor * 1e6:.1f} us at peak"
        assert med < 20 * floor, f"{mode}: flush took {med * 1e6:.1f} us, far over {floor * 1e6:.1f} us"
    finally:
        fl.free()


def test_a_flushed_small_triad_is_slower_than_a_hot_one(cuda):
    import hipexplore as hx

    res = hx.sweep(
        "triad",
        sizes=["1MiB"],
        rotating=[1],
        flush=["none", "l2-read"],
        device=cuda,
        iterations=200,
        progress=False,
        reference=False,
    )
    med = dict(zip(res.summary["flush"], res.summary["median_s"]))
    assert med["l2-read"] > 1.03 * med["none"], med
    assert res.metadata.get(f"verify.triad.{1 << 20}", "").startswith("rel_l2_error=")


def test_rotating_auto_on_the_gpu_uses_the_l2_attribute(cuda):
    import hipexplore as hx

    res = hx.sweep(
        "triad",
        sizes=["1MiB"],
        rotating=["auto"],
        flush=["none"],
        device=cuda,
        iterations=64,
        progress=False,
        reference=False,
    )
    footprint = 3 * (1 << 20)
    want = max(2, 2 * -(-cuda.llc_bytes // footprint))
    assert int(res.summary["rotating"].iloc[0]) == want


def test_llc_is_the_l2_attribute_and_the_override_wins(cuda, monkeypatch):
    from hipexplore.devices.cuda import CudaDevice

    assert "L2_CACHE_SIZE" in cuda.llc_source
    try:
        import torch

        assert cuda.llc_bytes == torch.cuda.get_device_properties(cuda.index).L2_cache_size
    except ImportError:
        assert cuda.llc_bytes > (1 << 20)
    monkeypatch.setenv("HIPEXPLORE_LLC_BYTES", str(7 << 20))
    other = CudaDevice(cuda.index)
    try:
        assert other.llc_bytes == 7 << 20 and "HIPEXPLORE_LLC_BYTES" in other.llc_source
    finally:
        other.close()


def test_a_hold_that_times_out_fails_its_chunk_and_is_measured_again(cuda):
    """A hold shorter than the host's enqueue fails; its samples are never kept."""
    import ctypes

    from hipexplore.bench.stats import StopRule
    from hipexplore.bench.timing import MAX_HOLD_FAILURES, Workload, time_launches
    from hipexplore.errors import BenchmarkError

    kernel = _load(cuda, EMPTY_SRC, "hx_test_empty")
    wl = Workload(cuda, kernel, (1, 1, 1), (32, 1, 1), [_args([ctypes.c_void_p(0)])])
    with pytest.raises(BenchmarkError, match=f"timed out {MAX_HOLD_FAILURES} times in a row"):
        time_launches(wl, None, StopRule(iterations=8), hold_timeout_s=1e-7, warmup_s=0)

    class SlowFirst(Workload):
        calls = 0

        def launch(self, buffer_set: int, position: int = 0) -> None:
            SlowFirst.calls += 1
            if position >= 2:
                time.sleep(2e-3)  # a chunk of 4 outlasts a 1 ms hold; chunks of 2 do not
            super().launch(buffer_set, position)

    raw = time_launches(
        SlowFirst(cuda, kernel, (1, 1, 1), (32, 1, 1), wl.arg_sets),
        None,
        StopRule(iterations=8),
        hold_timeout_s=1e-3,
        warmup_s=0,
    )
    assert raw.hold_timeouts >= 1 and len(raw.time_s) == 8 and raw.chunks == 4
    assert any("discarded" in n for n in raw.notes)
    assert float(np.max(raw.time_s)) < 1e-3  # no sample of a timed-out hold (they would hold 2 ms of host time)


def test_nvml_telemetry_and_clocks_in_the_frames(cuda):
    import hipexplore as hx
    from hipexplore.devices.telemetry import for_device

    t = for_device(cuda)
    assert t.available, t.source
    assert 1000 < t.max_clock_mhz < 4000 and "NVML" in t.source
    r = t.read()
    assert r.clock_mhz > 0 and r.temp_c > 0 and r.power_w > 0
    t.close()
    res = hx.sweep("triad", ["16MiB"], [1], ["none"], device=cuda, iterations=64, reference=False, progress=False)
    x = res.samples
    assert np.isfinite(x.clock_mhz).all() and (x.clock_mhz > 0).all()
    s = res.summary.iloc[0]
    assert s.n_throttled == int(x.throttled.sum())
    assert "stable" in res.metadata["warmup.clock"], res.metadata["warmup.clock"]


def test_in_kernel_timer_on_the_gpu(cuda):
    import hipexplore as hx

    res = hx.sweep(
        "triad",
        ["1MiB", "64MiB"],
        [1],
        ["l2-read"],
        device=cuda,
        iterations=100,
        reference=False,
        progress=False,
        timers=("events", "in-kernel"),
    )
    s = res.summary
    for size, g in s.groupby("size_bytes"):
        ev = g[g.timer == "events"].median_s.iloc[0]
        ik = g[g.timer == "in-kernel"].median_s.iloc[0]
        # the in-kernel window (first block start -> last block end) sits inside the event window
        assert 0 < ik < ev, (size, ev, ik)
    big = s[s.size_bytes == 64 << 20].set_index("timer").median_s
    assert big["in-kernel"] > 0.8 * big["events"]  # at 64 MiB the fixed launch/drain offset is small


def test_a_random_lead_on_the_gpu_keeps_every_in_kernel_slot_its_own(cuda):
    """The lead launches write the timer's spare slot: with leads of 0 and 1 the in-kernel readings
    stay inside their event windows at every position, and the leads are recorded per chunk."""
    from hipexplore.bench import rotating as rot
    from hipexplore.bench.stats import StopRule
    from hipexplore.bench.timing import InKernelTimer, Workload, time_launches
    from hipexplore.kernels import catalog
    from hipexplore.kernels.build import kernel_for

    spec = catalog.get("triad")
    n = 1 << 20
    grid, block = spec.geometry(n, cuda)
    with rot.BufferSets(cuda, spec, n, 2) as sets:
        timer = InKernelTimer(cuda, sets.args, 4)
        try:
            timed = Workload(cuda, kernel_for(cuda, spec, timed=True), grid, block, sets.args, timer=timer)
            ik = time_launches(timed, None, StopRule(iterations=200), lead="random")
        finally:
            timer.free()
        ev = time_launches(
            Workload(cuda, kernel_for(cuda, spec), grid, block, sets.args),
            None,
            StopRule(iterations=200),
            lead="random",
        )
    assert set(ik.lead.tolist()) == {0, 1} and list(ik.lead) == list(ev.lead)
    for pos in range(4):
        a, b = np.median(ik.time_s[ik.position == pos]), np.median(ev.time_s[ev.position == pos])
        assert 0 < a < b, (pos, a, b)
