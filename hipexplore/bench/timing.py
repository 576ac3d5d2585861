"""Timing without host launch latency, at equal queue depth, with a second, independent timer.

Measured on the H200 (our notes, shared/notes/anchors.md): an event pair per launch with a sync every iteration read
11.7 us for a triad whose device time is 4.7 us, because the start event fires before the host has
submitted the kernel. Here the stream is first held by a blocking kernel (nvbench's method), then a
chunk of samples is enqueued behind it — per sample: [flush-start event, flush, flush-end event,]
start event, kernel, end event — and released. The GPU then runs the chunk back to back.

Equal queue depth: chunks are short (``DEFAULT_CHUNK`` = 4 timed launches per hold). Measured on
the H200 (benchmarks/queue_depth.py, data/h200/queue_depth/): with 64 launches per hold, a timed
launch with 9 or more launches queued behind it read +0.64 us (1 MiB triad: 4.29 vs 3.65 us hot,
5.02 vs 4.54 us after an l2-read flush), so the last 9 of every chunk were "fast"; padding the chunk
with untimed trailing launches made every position slow but still left 3-4% between positions;
chunks of <= 4 timed launches read the same at every position (<= 0.7%) and agree with single
launches per hold (nvbench's cold mode). The in-kernel timer read the same kernel time (1.02-1.06 us
from first block start to last block end) at every position and in every design: the position
effect is in the events around the kernel, not the kernel. Every sample records its chunk and its
position in the chunk.

A random lead: each chunk starts with ``lead`` untimed launches (its flush, then the kernel on the
buffer set used just before), 0 or 1 per chunk (``CHUNK_LEAD = "random"``: each pair of chunks gets
one of each, in a seeded random order, so short runs are balanced too). Why: with
2000 samples per configuration on the H200 (BENCHMARKS.md "Session 3"), a buffer set launched back
to back with no flush alternated by launch parity within the hold — the slow mode held 30%, 49%,
35%, 52% of positions 0-3 at 1 MiB, and 64 MiB read 47.9 / 48.5 / 47.8 / 48.8 us in-kernel — so a
fixed chunk tied each position to one parity and a position's median moved by 1.3-4.4%. A lead of
0 or 1 at random gives every position both parities alike (a randomised design: the kernel's own
alternation stays in the samples, in every position equally), and in half the chunks the first
timed launch follows an untimed one rather than the hold kernel's release. The lead of each
sample's chunk is recorded (``lead``).

A trail: after the last timed launch of a chunk, ``CHUNK_TRAIL`` = 1 more sample is enqueued in the
same pattern (its flush, its events, the kernel on the set just used) and never read. Why: with the
lead in place, the H200 still read the last position of every chunk ~0.1 us fast after a flush
(1 MiB l2-read: 4.44 / 4.42 / 4.45 / 4.34 us by position, means over 500; 16 MiB: 14.56 / 14.54 /
14.50 / 14.41 us), where the in-kernel timer saw no position differ: the end event of a launch with
nothing queued behind it is written sooner. With the trail every timed launch has the same next
work behind it. Keep what is queued behind the first timed launch, (chunk - 1 + trail) samples of
one launch each (two with a flush), below 9 launches: a trail of 2 with chunks of 4 put 10 there and
read its first positions 3.6-12% slow (BENCHMARKS.md "Session 4").

Timers: ``events`` (the event pair around the launch: includes the launch and block-scheduling
latency before the first block starts and the drain after the last block ends) and, for kernels
built with one, ``in-kernel`` (the kernel writes its first block's start and its last block's end,
``%globaltimer`` / ``s_memrealtime``, into a slot per chunk position; see kernels/sources.py). The
in-kernel timer excludes what the events include around the kernel, so it reads lower by a roughly
constant offset: the two are a cross-check, not the same quantity.

Per sample we record the kernel time, the flush time (flush start -> kernel start event, or -> a
flush-end event when ``flush_end_event=True``) and the gap (idle time before the flush, or before
the kernel). Every chunk is checked: no timed window may overlap a flush window. A hold whose
blocking kernel timed out (the host took too long to enqueue the chunk) fails its chunk: the
samples are discarded and the chunk is measured again with half as many launches, never kept.

After each chunk the device's clock, temperature and power are read (``devices.telemetry``) and
stored with its samples.

On the host device events are ``perf_counter_ns`` reads and launches are synchronous calls: the
same code then measures the call itself (the in-kernel timer there: CLOCK_MONOTONIC inside the C
function, without the ctypes call).
"""

from __future__ import annotations

import ctypes
import math
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from ..devices.base import Device, DeviceBuffer, PackedArgs
from ..errors import BenchmarkError, ConfigError
from ..kernels.build import BUILDER
from ..schema import Timer

# timed launches per chunk, the untimed lead and trail around them, the warm-up: defaults that live in a
# module importing nothing (SweepSpec's defaults, shown by `bench --help`), named here too
from .defaults import CHUNK_LEAD, CHUNK_TRAIL, DEFAULT_CHUNK, WARMUP_S  # noqa: F401 - re-exported
from .flush import REFERENCE, Flusher
from .raw_times import PER_CHUNK_READINGS, RawTimes
from .stats import StopRule
from .timing_options import LEAD_SEED, TimingOptions, timing_options

if TYPE_CHECKING:  # numpy is imported in the functions that compute: `bench --help` loads this module without it
    import numpy as np

#: Failed holds in a row (each retried with half the launches, down to one) before giving up.
MAX_HOLD_FAILURES = 6
_TOL_S = 1e-9
_U64_MAX = (1 << 64) - 1  # np.iinfo(np.uint64).max: the slot's value before the kernel writes it


class InKernelTimer:
    """Slots the in-kernel timed variant of a kernel writes: [first block start, last block end]
    (u64 ns) per chunk position; the launch of position j gets slot j as its extra last argument.
    One more slot (``chunk``, never read) takes the chunk's untimed lead and trail launches."""

    def __init__(self, device: Device, arg_sets: Sequence[PackedArgs], chunk: int) -> None:
        import numpy as np

        self.device = device
        self.chunk = chunk
        self.buf: DeviceBuffer = device.alloc(16 * (chunk + 1))
        self.args = [
            [PackedArgs(list(a.values) + [ctypes.c_void_p(self.buf.ptr + 16 * j)]) for j in range(chunk + 1)]
            for a in arg_sets
        ]
        self._init = np.tile(np.array([_U64_MAX, 0], dtype=np.uint64), chunk)

    def reset(self, k: int) -> None:
        self.device.copy_to_device(self.buf, self._init[: 2 * k])
        self.device.synchronize()

    def read(self, k: int) -> np.ndarray:
        import numpy as np

        got = np.empty(2 * k, dtype=np.uint64)
        self.device.copy_to_host(self.buf, got)
        start, end = got[0::2], got[1::2]
        if np.any(start == _U64_MAX) or np.any(end == 0):
            bad = int(np.flatnonzero((start == _U64_MAX) | (end == 0))[0])
            raise BenchmarkError(
                f"in-kernel timer: the kernel did not write its timestamps at chunk position {bad} "
                f"(is it the timed variant, built with -DHX_TIMED?)"
            )
        return (end.astype(np.int64) - start.astype(np.int64)).astype(np.float64) * 1e-9

    def free(self) -> None:
        self.device.free(self.buf)


@dataclass
class Workload:
    """A loaded kernel ready to launch on any of its buffer sets (with ``timer``: the in-kernel
    timed variant, whose launches carry their timer slot)."""

    device: Device
    kernel: Any
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    arg_sets: Sequence[PackedArgs]
    timer: InKernelTimer | None = None
    #: told of every launch (``tap(buffer_set, position)`` before it, and ``tap.launched()`` after
    #: it is enqueued where the tap has one): the counter pass's manifest of the launches it counted,
    #: in order, and the ranges an in-process profiler puts around each (``bench.counters.phase``);
    #: None in a timed unit
    tap: Any = None

    def launch(self, buffer_set: int, position: int = 0) -> None:
        """Launch on ``buffer_set``; with a timer, into the slot of chunk ``position`` (-1: the
        untimed lead's and trail's slot)."""
        args = self.arg_sets[buffer_set] if self.timer is None else self.timer.args[buffer_set][position]
        after = getattr(self.tap, "launched", None)  # a plain callable hears the launch only
        if self.tap is not None:
            self.tap(buffer_set, position)
        try:
            self.device.launch(self.kernel, self.grid, self.block, args)
        finally:
            if after is not None:
                after()


class _EventPool:
    """Events are created once per device and reused by every chunk (never leaked per config)."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.events: list[Any] = []

    @classmethod
    def of(cls, device: Device) -> "_EventPool":
        pool = _EVENT_POOLS.get(device)
        if pool is None:
            pool = _EVENT_POOLS[device] = cls(device)
        return pool

    def take(self, k: int) -> list[Any]:
        while len(self.events) < k:
            self.events.append(self.device.event())
        return self.events[:k]


#: one event pool per device, dropped with the device
_EVENT_POOLS: "weakref.WeakKeyDictionary[Any, _EventPool]" = weakref.WeakKeyDictionary()


def warm_up(
    workload: Workload, flusher: Flusher | None, min_seconds: float = WARMUP_S, max_launches: int = 10_000
) -> None:
    """Run every buffer set at least once (module load, first touch, clocks), then keep launching
    until ``min_seconds`` of wall time have passed."""
    dev = workload.device
    t0 = time.perf_counter()
    launches = 0
    while True:
        for s in range(len(workload.arg_sets)):
            if flusher is not None:
                flusher.enqueue()
            workload.launch(s)
            launches += 1
        dev.synchronize()
        if time.perf_counter() - t0 >= min_seconds or launches >= max_launches:
            return


def _leads(lead: int | str, seed: int = LEAD_SEED) -> Any:
    """Per chunk, its number of untimed lead launches: ``lead`` itself, or 0/1 in a balanced random
    order (each pair of chunks gets one of each, in a seeded random order): after any even number of
    chunks every position has had both parities equally often, however few chunks a call takes."""
    import numpy as np

    if lead != "random":
        while True:
            yield int(lead)
    rng = np.random.default_rng(seed)
    while True:
        first = int(rng.integers(0, 2))
        yield first
        yield 1 - first


@dataclass(frozen=True)
class _ChunkSetup:
    """What every chunk of one timed run shares (made once, before the first chunk): the workload and
    its flush, the event pool, the stream hold (``hold_timeout_s``; None: no hold, the counter pass's
    replay), whether an event closes each flush, and the untimed trail."""

    workload: Workload
    flusher: Flusher | None
    pool: _EventPool
    hold_timeout_s: float | None
    flush_end_event: bool = False
    trail: int = 0


def _chunk(
    setup: _ChunkSetup, start_index: int, k: int, sets: Sequence[int] | None = None, lead: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """One chunk: [lead], then per sample its events, flush and launch, then the trail, behind a
    stream hold (``setup``). The setup is read into locals here, before any event is recorded."""
    import numpy as np

    workload, flusher, pool, hold_timeout_s = setup.workload, setup.flusher, setup.pool, setup.hold_timeout_s
    flush_end_event, trail = setup.flush_end_event, setup.trail
    dev = workload.device
    nsets = len(workload.arg_sets)
    per = 2 if flusher is None else (4 if flush_end_event else 3)
    evs = pool.take(1 + per * (k + trail))
    base = evs[0]
    set_ids = np.array([(start_index + j) % nsets for j in range(k)] if sets is None else list(sets), dtype=np.int64)
    if workload.timer is not None:
        workload.timer.reset(k)
    hold = (
        dev.hold_stream(hold_timeout_s, kernels=BUILDER) if hold_timeout_s is not None else None
    )  # a GPU builds its spin kernel
    try:
        before = int((int(set_ids[0]) - 1) % nsets) if k else 0
        for _ in range(lead):  # untimed: what every timed launch of the chunk follows, the first too
            if flusher is not None:
                flusher.enqueue()
            workload.launch(before, -1)
        dev.record(base)
        last = int(set_ids[-1]) if k else 0
        for j in range(k + trail):  # the trailing ones: the same pattern, untimed, on the set just used
            e = evs[1 + per * j : 1 + per * (j + 1)]
            if flusher is not None:
                dev.record(e[0])
                flusher.enqueue()
                if flush_end_event:
                    dev.record(e[1])
            dev.record(e[-2])
            workload.launch(int(set_ids[j]) if j < k else last, j if j < k else -1)
            dev.record(e[-1])
    finally:
        if hold is not None:
            hold.release()
    dev.synchronize()
    timed_out = hold.timed_out() if hold is not None else False
    times = np.empty(k)
    flush = np.zeros(k)
    gaps = np.empty(k)
    prev_end_t = 0.0
    for j in range(k):
        e = evs[1 + per * j : 1 + per * (j + 1)]
        start_t = dev.elapsed_s(base, e[-2])
        end_t = dev.elapsed_s(base, e[-1])
        times[j] = dev.elapsed_s(e[-2], e[-1])
        if flusher is not None:
            fs_t = dev.elapsed_s(base, e[0])
            fe_t = dev.elapsed_s(base, e[1]) if flush_end_event else start_t
            flush[j] = dev.elapsed_s(e[0], e[1] if flush_end_event else e[-2])
            if fs_t < prev_end_t - _TOL_S or fe_t > start_t + _TOL_S:
                raise BenchmarkError(
                    f"sample {start_index + j}: flush window [{fs_t:.9f}, {fe_t:.9f}] s overlaps a timed window "
                    f"(previous end {prev_end_t:.9f} s, this start {start_t:.9f} s)"
                )
            # with a flush-end event: idle time between flush and kernel; without one: idle time
            # between the previous kernel's end and the flush's start (the flush runs into the kernel)
            gaps[j] = (start_t - fe_t) if flush_end_event else (fs_t - prev_end_t)
        else:
            gaps[j] = start_t - prev_end_t
        if end_t < start_t - _TOL_S:
            raise BenchmarkError(f"sample {start_index + j}: end event precedes start event ({end_t} < {start_t})")
        prev_end_t = end_t
    if workload.timer is not None and not timed_out:
        times = workload.timer.read(k)
    return times, flush, gaps, set_ids, timed_out


def time_launches(
    workload: Workload, flusher: Flusher | None, rule: StopRule, options: TimingOptions | None = None, **overrides: Any
) -> RawTimes:
    """Time launches of ``workload`` rotating over its buffer sets, each after ``flusher`` (if any).

    ``flush_end_event=False`` (default) enqueues flush, start event, kernel back to back, like
    triton's do_bench; ``True`` puts an event between flush and start event (a separate flush time,
    at the cost of an idle ~1.2 us on the H200 in which the cache drains dirty lines). A chunk whose
    hold timed out is discarded and measured again with half the launches (never kept); after
    ``MAX_HOLD_FAILURES`` failures in a row a ``BenchmarkError`` says so. ``lead``: untimed launches
    at the head of each chunk (an int, or ``"random"``: 0 or 1 per chunk drawn from ``lead_seed``;
    see the module docstring); ``trail``: untimed samples after the last timed one of each chunk.
    ``profiler`` (the counter pass): started after the warm-up, stopped after the last chunk.
    """
    import numpy as np

    opts = timing_options(options, overrides)
    nsets = len(workload.arg_sets)
    if nsets < 1:
        raise ConfigError("the workload has no buffer sets")
    if workload.timer is not None and workload.timer.chunk < opts.chunk:
        raise ConfigError(f"the in-kernel timer has {workload.timer.chunk} slots for chunks of {opts.chunk}")
    if not rule.adaptive:
        from .rotating import check_iterations

        check_iterations(int(rule.iterations or 0), nsets)
    warm_up(workload, flusher, opts.warmup_s)
    if opts.profiler is not None:
        opts.profiler.start()
    try:
        parts, timeouts, why = _chunks(workload, flusher, rule.at_least(nsets), opts)
    except BaseException:
        if opts.profiler is not None:
            try:
                opts.profiler.stop()
            except Exception:  # noqa: BLE001 - the launches' own error is the one to report, not the range's
                pass
        raise
    if opts.profiler is not None:
        opts.profiler.stop()
    launched = sum(len(p[0]) for p in parts)
    for hook in opts.hooks:
        hook.after_run(len(parts), launched)
    notes: list[str] = []
    if timeouts:
        notes.append(
            f"stream hold timed out in {timeouts} chunk(s): those samples were discarded and measured again "
            f"with fewer launches per hold"
        )
    if why and not why.startswith(("fixed iteration count", "converged")):
        notes.append(why)
    cat = lambda i, dt=None: np.concatenate([p[i] for p in parts]) if parts else np.empty(0, dtype=dt)  # noqa: E731
    return RawTimes(
        time_s=cat(0),
        flush_s=cat(1),
        gap_s=cat(2),
        buffer_set=cat(3, np.int64),
        chunk=cat(4, np.int64),
        position=cat(5, np.int64),
        clock_mhz=cat(6),
        temp_c=cat(7),
        power_w=cat(8),
        lead=cat(9, np.int64),
        host_load=cat(10),
        host_busy=cat(11),
        host_steal=cat(12),
        notes=notes,
        hold_timeouts=timeouts,
        chunks=len(parts),
        stop_reason=why,
        timer=Timer.IN_KERNEL if workload.timer is not None else Timer.EVENTS,
    )


def _chunks(
    workload: Workload, flusher: Flusher | None, rule: StopRule, opts: TimingOptions
) -> tuple[list[tuple[np.ndarray, ...]], int, str]:
    """``time_launches``' chunks until ``rule`` stops: (per chunk its arrays, holds that timed out, why it stopped)."""
    import numpy as np

    tracker = rule.tracker()
    setup = _ChunkSetup(
        workload,
        flusher,
        _EventPool.of(workload.device),
        opts.hold_timeout_s if opts.hold else None,
        flush_end_event=opts.flush_end_event,
        trail=opts.trail,
    )
    parts: list[tuple[np.ndarray, ...]] = []
    timeouts = failures = taken = chunk_no = 0
    size = int(opts.chunk)
    leads = _leads(opts.lead, opts.lead_seed)
    t0 = time.perf_counter()
    while True:
        so_far = np.concatenate([p[0] for p in parts]) if parts else np.empty(0)
        ids = np.concatenate([p[4] for p in parts]) if parts else np.empty(0, dtype=np.int64)
        more, why = tracker.check(so_far, time.perf_counter() - t0, ids)
        if more == 0:
            return parts, timeouts, why
        k = min(size, more) if not rule.adaptive else size
        for hook in opts.hooks:  # the previous chunk was synchronized: nothing of the kernel's runs now
            hook.before_chunk(chunk_no, taken)
        n_lead = next(leads)
        t, f, g, s, to = _chunk(setup, taken, k, lead=n_lead)
        if to:
            timeouts += 1
            failures += 1
            if failures >= MAX_HOLD_FAILURES:
                raise BenchmarkError(
                    f"the stream hold timed out {failures} times in a row (last with {k} launch(es) in {opts.hold_timeout_s:g} s): "
                    f"the host cannot enqueue a chunk before the blocking kernel gives up; nothing was kept"
                )
            size = max(1, k // 2)
            continue
        failures = 0
        reading = opts.telemetry.read() if opts.telemetry is not None else None
        per_chunk = [
            np.full(k, getattr(reading, name, math.nan) if reading else math.nan) for name in PER_CHUNK_READINGS
        ]
        parts.append(
            (
                t,
                f,
                g,
                s,
                np.full(k, chunk_no, dtype=np.int64),
                np.arange(k, dtype=np.int64),
                *per_chunk[:3],
                np.full(k, n_lead, dtype=np.int64),
                *per_chunk[3:],
            )
        )
        chunk_no += 1
        taken += k


def time_cold_reference(
    workload: Workload, read_flusher: Flusher, samples: int, options: TimingOptions | None = None, **overrides: Any
) -> RawTimes:
    """Single launches on one buffer set, each after its own l2-read flush: the cold reference
    every other configuration reports its bias against.

    Timed exactly like every configuration (same warm-up, same held chunks), so that a bias is the
    cache state's effect alone. An earlier version held one launch per chunk and warmed up with a
    single launch; on the H200 that read a constant ~0.7 us below the same launches in chunks
    (1 to 256 MiB alike): an artefact of how it was timed, which then inflated every small-size bias.
    """
    if read_flusher.mode is not REFERENCE:
        raise ConfigError(f"the cold reference uses an {REFERENCE} flush, got {str(read_flusher.mode)!r}")
    if samples < 1:
        raise ConfigError(f"cold reference needs at least 1 sample, got {samples}")
    single = Workload(
        workload.device, workload.kernel, workload.grid, workload.block, workload.arg_sets[:1], timer=workload.timer
    )
    return time_launches(single, read_flusher, StopRule(iterations=samples), timing_options(options, overrides))
