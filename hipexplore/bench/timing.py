"""Timing without host launch latency.

Measured on the H200 (our notes, shared/notes/anchors.md): an event pair per launch with a sync every iteration read
11.7 us for a triad whose device time is 4.7 us, because the start event fires before the host has
submitted the kernel. Here the stream is first held by a blocking kernel (nvbench's method), then a
bounded chunk of samples is enqueued behind it — per sample: [flush-start event, flush, flush-end
event,] start event, kernel, end event — and released. The GPU then runs the chunk back to back.

Per sample we record the kernel time (start -> end), the flush time (flush start -> kernel start
event, or -> a flush-end event when ``flush_end_event=True``) and the gap (idle time: previous end ->
flush start, or flush end -> start; without a flush, previous end -> start). Every chunk is checked: no timed window may
overlap a flush window; a violation raises ``BenchmarkError``. A hold whose blocking kernel timed
out (the host took too long to enqueue the chunk) is reported in the notes.

On the host device events are ``perf_counter_ns`` reads and launches are synchronous calls: the
same code then measures the call itself, and there is no latency to hide.
"""
from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..devices.base import Device, PackedArgs
from ..errors import BenchmarkError, ConfigError
from .flush import Flusher
from .stats import StopRule

DEFAULT_CHUNK = 64
HOLD_TIMEOUT_S = 5.0
_TOL_S = 1e-9


@dataclass
class Workload:
    """A loaded kernel ready to launch on any of its buffer sets."""

    device: Device
    kernel: Any
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    arg_sets: Sequence[PackedArgs]

    def launch(self, buffer_set: int) -> None:
        self.device.launch(self.kernel, self.grid, self.block, self.arg_sets[buffer_set])


@dataclass
class RawTimes:
    """Per-sample arrays (seconds) plus what happened while taking them."""

    time_s: np.ndarray
    flush_s: np.ndarray
    gap_s: np.ndarray
    buffer_set: np.ndarray
    notes: list[str] = field(default_factory=list)
    hold_timeouts: int = 0
    chunks: int = 0
    stop_reason: str = ""


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


def warm_up(workload: Workload, flusher: Flusher | None, min_seconds: float = 0.02, max_launches: int = 10_000) -> None:
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


def _chunk(workload: Workload, flusher: Flusher | None, start_index: int, k: int, pool: _EventPool,
           hold_timeout_s: float, sets: Sequence[int] | None = None, flush_end_event: bool = False,
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    dev = workload.device
    nsets = len(workload.arg_sets)
    per = 2 if flusher is None else (4 if flush_end_event else 3)
    evs = pool.take(1 + per * k)
    base = evs[0]
    set_ids = np.array([(start_index + j) % nsets for j in range(k)] if sets is None else list(sets), dtype=np.int64)
    hold = dev.hold_stream(hold_timeout_s)
    try:
        dev.record(base)
        for j in range(k):
            e = evs[1 + per * j: 1 + per * (j + 1)]
            if flusher is not None:
                dev.record(e[0])
                flusher.enqueue()
                if flush_end_event:
                    dev.record(e[1])
            dev.record(e[-2])
            workload.launch(int(set_ids[j]))
            dev.record(e[-1])
    finally:
        hold.release()
    dev.synchronize()
    timed_out = hold.timed_out()
    times = np.empty(k)
    flush = np.zeros(k)
    gaps = np.empty(k)
    prev_end_t = 0.0
    for j in range(k):
        e = evs[1 + per * j: 1 + per * (j + 1)]
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
    return times, flush, gaps, set_ids, timed_out


def time_launches(workload: Workload, flusher: Flusher | None, rule: StopRule, *, chunk: int = DEFAULT_CHUNK,
                  hold_timeout_s: float = HOLD_TIMEOUT_S, warmup_s: float = 0.02, flush_end_event: bool = False) -> RawTimes:
    """Time launches of ``workload`` rotating over its buffer sets, each after ``flusher`` (if any).

    ``flush_end_event=False`` (default) enqueues flush, start event, kernel back to back, like
    triton's do_bench; ``True`` puts an event between flush and start event (a separate flush time,
    at the cost of an idle ~1.2 us on the H200 in which the cache drains dirty lines).
    """
    if chunk < 1:
        raise ConfigError(f"chunk must be a positive number of samples, got {chunk}")
    nsets = len(workload.arg_sets)
    if nsets < 1:
        raise ConfigError("the workload has no buffer sets")
    if not rule.adaptive:
        from .rotating import check_iterations

        check_iterations(int(rule.iterations or 0), nsets)
    rule = rule.at_least(nsets)
    warm_up(workload, flusher, warmup_s)
    pool = _EventPool.of(workload.device)
    parts: list[tuple[np.ndarray, ...]] = []
    notes: list[str] = []
    timeouts = 0
    taken = 0
    t0 = time.perf_counter()
    while True:
        so_far = np.concatenate([p[0] for p in parts]) if parts else np.empty(0)
        more, why = rule.remaining(so_far, time.perf_counter() - t0)
        if more == 0:
            break
        k = min(chunk, more) if not rule.adaptive else chunk
        t, f, g, s, to = _chunk(workload, flusher, taken, k, pool, hold_timeout_s, flush_end_event=flush_end_event)
        timeouts += int(to)
        parts.append((t, f, g, s))
        taken += k
    if timeouts:
        notes.append(f"stream hold timed out in {timeouts} chunk(s): host enqueue outran the blocking kernel; "
                     f"those samples may include submission latency")
    if why and why not in ("fixed iteration count", "converged"):
        notes.append(why)
    return RawTimes(
        time_s=np.concatenate([p[0] for p in parts]),
        flush_s=np.concatenate([p[1] for p in parts]),
        gap_s=np.concatenate([p[2] for p in parts]),
        buffer_set=np.concatenate([p[3] for p in parts]),
        notes=notes, hold_timeouts=timeouts, chunks=len(parts), stop_reason=why,
    )


def time_cold_reference(workload: Workload, read_flusher: Flusher, samples: int, *, chunk: int = DEFAULT_CHUNK,
                        hold_timeout_s: float = HOLD_TIMEOUT_S, warmup_s: float = 0.02) -> RawTimes:
    """Single launches on one buffer set, each after its own l2-read flush: the cold reference
    every other configuration reports its bias against.

    Timed exactly like every configuration (same warm-up, same held chunks), so that a bias is the
    cache state's effect alone. An earlier version held one launch per chunk and warmed up with a
    single launch; on the H200 that read a constant ~0.7 us below the same launches in chunks
    (1 to 256 MiB alike): an artefact of how it was timed, which then inflated every small-size bias.
    """
    if read_flusher.mode != "l2-read":
        raise ConfigError(f"the cold reference uses an l2-read flush, got {read_flusher.mode!r}")
    if samples < 1:
        raise ConfigError(f"cold reference needs at least 1 sample, got {samples}")
    single = Workload(workload.device, workload.kernel, workload.grid, workload.block, workload.arg_sets[:1])
    return time_launches(single, read_flusher, StopRule(iterations=samples), chunk=chunk,
                         hold_timeout_s=hold_timeout_s, warmup_s=warmup_s)
