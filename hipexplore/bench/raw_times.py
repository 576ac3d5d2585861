"""``RawTimes``: the per-sample arrays of one timed run (its times, each sample's buffer set, chunk,
position and lead, the telemetry read after its chunk) and what happened while taking them.

Why apart from the timing loop (``bench.timing``, which makes them): the unit (``bench.sweeprun``),
the interleaved turns, the launch floor and the results (``bench.outcome``: the samples file's
columns) read them, and they are data: numpy arrays and a few counts, no device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..schema import Timer

if TYPE_CHECKING:  # numpy is imported in the functions that compute
    import numpy as np


#: telemetry read once per chunk, one value per sample of that chunk (``devices.telemetry.Reading``)
PER_CHUNK_READINGS = ("clock_mhz", "temp_c", "power_w", "host_load", "host_busy", "host_steal")
#: every per-sample array of ``RawTimes``
SAMPLE_ARRAYS = ("time_s", "flush_s", "gap_s", "buffer_set", "chunk", "position", "lead", *PER_CHUNK_READINGS)


def _no_ints() -> np.ndarray:
    import numpy as np

    return np.empty(0, dtype=np.int64)


def _no_floats() -> np.ndarray:
    import numpy as np

    return np.empty(0)


@dataclass
class RawTimes:
    """Per-sample arrays (seconds; the chunk and position of each sample; the device's clock,
    temperature and power read after its chunk) plus what happened while taking them."""

    time_s: np.ndarray
    flush_s: np.ndarray
    gap_s: np.ndarray
    buffer_set: np.ndarray
    chunk: np.ndarray = field(default_factory=_no_ints)
    position: np.ndarray = field(default_factory=_no_ints)
    #: untimed launches at the head of each sample's chunk
    lead: np.ndarray = field(default_factory=_no_ints)
    clock_mhz: np.ndarray = field(default_factory=_no_floats)
    temp_c: np.ndarray = field(default_factory=_no_floats)
    power_w: np.ndarray = field(default_factory=_no_floats)
    #: the host's load after each chunk (``devices.telemetry.HostLoad``): other runnable tasks, the
    #: share of CPU time others used and the share stolen since the previous chunk
    host_load: np.ndarray = field(default_factory=_no_floats)
    host_busy: np.ndarray = field(default_factory=_no_floats)
    host_steal: np.ndarray = field(default_factory=_no_floats)
    notes: list[str] = field(default_factory=list)
    hold_timeouts: int = 0
    chunks: int = 0
    stop_reason: str = ""
    timer: str = Timer.EVENTS

    def __post_init__(self) -> None:
        import numpy as np

        n = len(self.time_s)
        if len(self.chunk) != n:
            self.chunk = np.zeros(n, dtype=np.int64)
            self.position = np.arange(n, dtype=np.int64)
        if len(self.lead) != n:
            self.lead = np.zeros(n, dtype=np.int64)
        for name in PER_CHUNK_READINGS:
            if len(getattr(self, name)) != n:
                setattr(self, name, np.full(n, math.nan))

    @staticmethod
    def concat(raws: "list[RawTimes]", **fields: Any) -> "RawTimes":
        """Several runs' times as one (chunk ids as the caller made them); ``fields`` replace the
        summed or last-taken ones (notes, stop_reason, ...)."""
        import numpy as np

        if len(raws) == 1 and not fields:
            return raws[0]
        arrays = {f: np.concatenate([getattr(r, f) for r in raws]) for f in SAMPLE_ARRAYS}
        rest = dict(
            notes=[x for r in raws for x in r.notes],
            hold_timeouts=sum(r.hold_timeouts for r in raws),
            chunks=sum(r.chunks for r in raws),
            stop_reason=raws[-1].stop_reason,
            timer=raws[-1].timer,
        )
        return RawTimes(**arrays, **{**rest, **fields})


__all__ = ["PER_CHUNK_READINGS", "SAMPLE_ARRAYS", "RawTimes"]
