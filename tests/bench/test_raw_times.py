"""The raw samples of one timed run (bench.raw_times): ``RawTimes`` fills the per-sample arrays a
caller left out, and several runs' times concatenate as one."""

from __future__ import annotations

import numpy as np

from hipexplore.bench.raw_times import SAMPLE_ARRAYS, RawTimes


def test_raw_times_fill_what_a_caller_left_out():
    r = RawTimes(time_s=np.ones(3), flush_s=np.zeros(3), gap_s=np.zeros(3), buffer_set=np.zeros(3, dtype=np.int64))
    assert r.chunk.dtype == np.int64 and list(r.chunk) == [0, 0, 0]
    assert r.position.dtype == np.int64 and list(r.position) == [0, 1, 2]
    for name in ("clock_mhz", "temp_c", "power_w"):
        v = getattr(r, name)
        assert v.shape == (3,) and np.isnan(v).all()
    kept = RawTimes(
        time_s=np.ones(2),
        flush_s=np.zeros(2),
        gap_s=np.zeros(2),
        buffer_set=np.zeros(2, dtype=np.int64),
        chunk=np.array([5, 5]),
        position=np.array([0, 1]),
        clock_mhz=np.array([1.0, 2.0]),
    )
    assert list(kept.chunk) == [5, 5] and list(kept.clock_mhz) == [1.0, 2.0] and np.isnan(kept.temp_c).all()


def test_runs_concatenate_their_samples_and_sum_what_they_counted():
    def run(n, chunk, note, reason):
        return RawTimes(
            time_s=np.full(n, float(chunk)),
            flush_s=np.zeros(n),
            gap_s=np.zeros(n),
            buffer_set=np.zeros(n, dtype=np.int64),
            chunk=np.full(n, chunk),
            position=np.arange(n),
            notes=[note],
            hold_timeouts=1,
            chunks=1,
            stop_reason=reason,
        )

    a, b = run(2, 0, "a", "first"), run(3, 1, "b", "fixed iteration count")
    assert RawTimes.concat([a]) is a
    both = RawTimes.concat([a, b])
    assert list(both.time_s) == [0, 0, 1, 1, 1] and list(both.chunk) == [0, 0, 1, 1, 1] and len(both.lead) == 5
    assert (both.notes, both.hold_timeouts, both.chunks, both.stop_reason) == (
        ["a", "b"],
        2,
        2,
        "fixed iteration count",
    )
    assert RawTimes.concat([a, b], stop_reason="stopped").stop_reason == "stopped"
    assert all(len(getattr(both, f)) == 5 for f in SAMPLE_ARRAYS)
