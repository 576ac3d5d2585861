"""The launch floor: what the event pair reads around a kernel that does nothing.

Why: events time the launch, not only the kernel. On the H200 the event pair around the triad read a
nearly constant ~3 us more than the triad's own first-block-start -> last-block-end window at every
size, 4 KiB to 256 MiB (BENCHMARKS.md "Measurement truth"): the launch and block-scheduling latency
before the first block and the drain after the last. That is real time a caller waits, so the
``median_s`` of the events timer keeps it; but a reviewer comparing a 10 us kernel with a 7 us one
needs to know that 3 us of each is the floor, and kernels without an in-kernel timer (most user
kernels) have no other way to see it.

So every sweep on a GPU (``SweepSpec.floor``; off by default on the host, where it is the ctypes
call) times ``floor-empty`` (one block of 32 threads that returns at once) exactly as it times the
kernel under test: the same flush before each launch, the same held chunks, the same warm-up, in the
same process (the floor moves between processes, 3.04-3.30 us there, and stays put within one).
Every events summary row then carries ``floor_s`` (that median, per flush mode) and ``net_median_s``
= ``median_s`` - ``floor_s``: an estimate of the kernel's own time that leaves the floor out. The
estimate is only as good as the floor is constant: a kernel whose launch or drain is longer than an
empty one's (many blocks, heavy write-back at the end) reads its excess in ``net_median_s``.
The in-kernel timer needs no floor (it excludes it by construction): its rows leave both empty.
"""

from __future__ import annotations

import math
import numpy as np

from ..devices.base import Device, pack_args
from ..kernels import catalog
from ..kernels.build import kernel_for
from ..schema import Timer
from .flush import Flusher
from .stats import StopRule
from .timing import Workload, time_launches
from .timing_options import TimingOptions

#: samples of the empty kernel per flush mode and process (a median of 64 held launches: the floor
#: is steady within a process, so more would only cost time)
FLOOR_SAMPLES = 64
FLOOR_KERNEL = "floor-empty"


def measure_floor(
    device: Device, flusher: Flusher | None, options: TimingOptions | None = None, *, samples: int = FLOOR_SAMPLES
) -> float:
    """Median seconds the event pair reads around ``floor-empty`` after ``flusher`` (None: no flush),
    timed like any configuration (the sweep's ``options``)."""
    spec = catalog.get(FLOOR_KERNEL)
    grid, block = spec.geometry(0, device)
    wl = Workload(device, kernel_for(device, spec), grid, block, [pack_args((), {})])
    raw = time_launches(wl, flusher, StopRule(iterations=int(samples)), options)
    return float(np.median(raw.time_s)) if len(raw.time_s) else math.nan


def floor_columns(floor_s: float | None, median_s: float, timer: str) -> dict[str, float]:
    """``floor_s`` and ``net_median_s`` of a summary row (NaN for the in-kernel timer or no floor)."""
    from .outcome import Floor

    return Floor.of(floor_s, median_s, Timer.of(timer)).columns()


def wants_floor(setting: bool | None, device: Device) -> bool:
    """``SweepSpec.floor``: None means on a GPU, not on the host."""
    return bool(setting) if setting is not None else device.kind != "host"


__all__ = ["FLOOR_KERNEL", "FLOOR_SAMPLES", "floor_columns", "measure_floor", "wants_floor"]
