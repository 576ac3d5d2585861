"""``hipexplore.bench.interleave``: kernels of one configuration measured in alternating turns on
the real host device: every kernel gets the same turns in an order shuffled each round (seeded),
chunk ids run through the whole configuration, the rotation of buffer sets goes on across turns,
and bad arguments are refused."""

from __future__ import annotations

import numpy as np
import pytest

from hipexplore.bench import rotating as rot
from hipexplore.bench.interleave import interleaved_launches
from hipexplore.bench.stats import StopRule
from hipexplore.bench.timing import Workload
from hipexplore.errors import ConfigError
from hipexplore.kernels import catalog
from hipexplore.kernels.build import kernel_for

from bench.test_run import dev, rdev  # noqa: F401 - the host device fixtures (and the launch-recording one)

pytestmark = pytest.mark.timeout(120)


def _workloads(d, names, sets, n=4096):
    out = {}
    stack = []
    for name in names:
        spec = catalog.get(name)
        bs = rot.BufferSets(d, spec, n, sets)
        stack.append(bs)
        grid, block = spec.geometry(n, d)
        out[name] = Workload(d, kernel_for(d, spec), grid, block, bs.args)
    return out, stack


def test_turns_alternate_in_shuffled_rounds_with_chunk_ids_through_the_configuration(dev):  # noqa: F811
    workloads, sets = _workloads(dev, ("triad", "copy"), 3)
    try:
        got = interleaved_launches(
            workloads,
            {"triad": None, "copy": None},
            StopRule(iterations=8),
            chunk=2,
            rng=np.random.default_rng(4),
            turn_chunks=1,
            warmup_s=0,
            lead=0,
            trail=0,
        )
        again = interleaved_launches(
            workloads,
            {"triad": None, "copy": None},
            StopRule(iterations=8),
            chunk=2,
            rng=np.random.default_rng(4),
            turn_chunks=1,
            warmup_s=0,
            lead=0,
            trail=0,
        )
    finally:
        for s in sets:
            s.free()
    rounds = [got.order[i : i + 2] for i in range(0, len(got.order), 2)]
    assert len(rounds) == 4 and all(sorted(r) == ["copy", "triad"] for r in rounds)  # 8 samples in turns of 2 each
    assert len({tuple(r) for r in rounds}) == 2  # the order is shuffled between rounds...
    assert again.order == got.order  # ...by the seed
    for name, raw in got.raws.items():
        assert len(raw.time_s) == 8 and list(raw.buffer_set) == [0, 1, 2, 0, 1, 2, 0, 1]  # rotation across turns
        assert (np.diff(raw.chunk) >= 0).all() and "interleaved with" in raw.notes[-1]
    a, b = set(got.raws["triad"].chunk), set(got.raws["copy"].chunk)
    assert not a & b and sorted(a | b) == list(range(8))  # one id per chunk, numbered through the configuration


def test_interleaving_refuses_no_kernels_and_a_bad_turn_length(dev):  # noqa: F811
    with pytest.raises(ConfigError, match="at least one kernel"):
        interleaved_launches({}, {}, StopRule(iterations=4), rng=np.random.default_rng(0))
    workloads, sets = _workloads(dev, ("triad",), 1)
    try:
        for bad in (0, -1, 1.5, True):
            with pytest.raises(ConfigError, match=f"turn_chunks must be a positive integer, got {bad!r}"):
                interleaved_launches(
                    workloads, {}, StopRule(iterations=4), rng=np.random.default_rng(0), turn_chunks=bad
                )
    finally:
        for s in sets:
            s.free()


def test_interleaved_turns_with_the_in_kernel_timer_launch_the_sets_they_record(rdev) -> None:  # noqa: F811
    """A turn's rotated view carries the timer's arguments too: with 5 sets and turns of 4 samples,
    every set is launched (set 4 in the second turn), as the recorded buffer_set says."""
    from hipexplore.bench.interleave import interleaved_launches
    from hipexplore.bench.timing import InKernelTimer
    from hipexplore.kernels.build import kernel_for

    spec = catalog.get("triad")
    with rot.BufferSets(rdev, spec, 4096, 5) as sets:
        timer = InKernelTimer(rdev, sets.args, 4)
        try:
            grid, block = spec.geometry(4096, rdev)
            wl = Workload(rdev, kernel_for(rdev, spec, timed=True), grid, block, sets.args, timer=timer)
            ptr_to_set = {sets.buffers[s]["a"].ptr: s for s in range(5)}
            rdev.launches.clear()
            got = interleaved_launches(
                {"triad": wl},
                {"triad": None},
                StopRule(iterations=12),
                chunk=4,
                rng=np.random.default_rng(0),
                turn_chunks=1,
                warmup_s=0,
                lead=0,
                trail=0,
            )
        finally:
            timer.free()
    raw = got.raws["triad"]
    assert list(raw.buffer_set) == [i % 5 for i in range(12)]
    used = [ptr_to_set[p] for name, p in rdev.launches if p in ptr_to_set]
    assert set(used) == {0, 1, 2, 3, 4}
    # each turn: a warm-up over its 4 sets, then its 4 samples on the same sets in the same order
    assert used == [0, 1, 2, 3] * 2 + [4, 0, 1, 2] * 2 + [3, 4, 0, 1] * 2
