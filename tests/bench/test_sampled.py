"""The sampled output check (``hipexplore.bench.sampled``) on the real host device, against the hostile
suite's C twins (tests/fixtures/hostile/*.c): kernels that keep state in a static variable between
calls, compiled by the real host compiler."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hipexplore.bench.check import CheckTarget
from hipexplore.bench.rotating import BufferSets
from hipexplore.bench.sampled import Fresh, SampledCheck, fresh_inputs, points
from hipexplore.devices.host import HostDevice
from hipexplore.kernels.build import kernel_for

pytestmark = pytest.mark.timeout(300)
N = 4096


@pytest.fixture
def dev():
    return HostDevice(llc_bytes=1 << 20)


def _check(dev, family: str, honest: bool, *, reference: bool = True, limit: int = 3, sets: int = 2):
    """A SampledCheck over a fresh build of a C twin (each set launched once, as a run's warm-up does)."""
    from fixtures.hostile import BY_NAME, host_spec

    spec = host_spec(BY_NAME[family], honest)
    if not reference:
        spec = dataclasses.replace(spec, reference=None)
    bufs = BufferSets(dev, spec, N, sets)
    grid, block, _shared = spec.launch(N, dev)
    kernel = kernel_for(dev, spec)
    for args in bufs.args:  # every set launched once, as a run's warm-up does
        dev.launch(kernel, grid, block, args)
    dev.synchronize()
    check = SampledCheck(
        CheckTarget(dev, spec, bufs, kernel, grid, block),
        limit=limit,
        fresh=Fresh(dev, spec, 0),
        config=f"{family} test",
    )
    return check, bufs


def test_points_are_chunks_1_8_64_then_the_end():
    assert points(4) == {1, 8, 64} and points(2) == {1} and points(1) == set() and points(0) == set()


def test_fresh_inputs_rotate_the_inputs_and_keep_the_rest(dev):
    from fixtures.hostile import BY_NAME, host_spec

    spec = host_spec(BY_NAME["output-cache"], True)
    with BufferSets(dev, spec, N, 1) as bufs:
        got = fresh_inputs(spec, N, bufs.scalars, bufs.pristine, [1, 2])
        assert not np.array_equal(got["x"], bufs.pristine["x"]) and not np.array_equal(got["y"], bufs.pristine["y"])
        assert sorted(got["x"]) == sorted(bufs.pristine["x"])  # the same values (the fill rule's range), elsewhere
        assert np.array_equal(got["out"], bufs.pristine["out"]) and got["out"] is not bufs.pristine["out"]
        assert np.array_equal(fresh_inputs(spec, N, bufs.scalars, bufs.pristine, [1, 2])["x"], got["x"])  # seeded


@pytest.mark.parametrize("family", ["output-cache", "skip-work", "result-replay"])
def test_a_stateful_kernel_fails_every_sampled_check_and_its_twin_none(dev, family):
    hostile, bufs = _check(dev, family, honest=False)
    with bufs:
        hostile.before_chunk(0, 0)  # not a sample point: nothing
        assert hostile.checks == 0
        hostile.before_chunk(1, 4)
        hostile.before_chunk(1, 4)  # a retried chunk (its hold timed out) is not checked twice
        hostile.after_run(5, 20)
        assert hostile.checks == 2
        lines = hostile.take()
        assert len(lines) == 1 and lines[0].startswith(
            "untrusted timing: 2 of 2 output checks of launches sampled across the "
            "run failed, the first, after 4 timed launch(es), on buffer set "
        )
        assert "(fresh inputs)" in lines[0] and ";" not in lines[0]
    honest, bufs = _check(dev, family, honest=True)
    with bufs:
        honest.before_chunk(1, 4)
        honest.after_run(5, 20)
        assert honest.checks == 2 and honest.take() == []


def test_the_run_data_is_put_back_after_a_check(dev):
    check, bufs = _check(dev, "output-cache", honest=True)
    with bufs:
        check.before_chunk(1, 4)  # the first check: set 0 gets fresh inputs, then the run's back
        for i, names in ((0, ("x", "y", "out")), (1, ("x", "y"))):
            for name in names:
                got = np.empty_like(bufs.pristine[name])
                dev.copy_to_host(bufs.buffers[i][name], got)
                assert np.array_equal(got, bufs.pristine[name]), (i, name)


def test_without_a_reference_unwritten_outputs_are_still_caught(dev):
    """No reference: the inputs stay, the outputs are poisoned, and an output the launch left holding
    the poison (checked twice, as the role check does) fails."""
    hostile, bufs = _check(dev, "output-cache", honest=False, reference=False)
    with bufs:
        hostile.after_run(1, 4)
        (line,) = hostile.take()
        assert "16384" not in line and f"{N} of {N} elements of 'out' were left unwritten" in line
    honest, bufs = _check(dev, "output-cache", honest=True, reference=False)
    with bufs:
        honest.after_run(1, 4)
        assert honest.take() == []


def test_a_replay_that_writes_its_stored_result_needs_fresh_inputs_and_a_reference(dev):
    """The limit the docs name: without a reference nothing can tell a replayed result from a computed
    one (the outputs are written), so only the fresh-input check catches a result replay."""
    replay, bufs = _check(dev, "result-replay", honest=False, reference=False)
    with bufs:
        replay.after_run(1, 4)
        assert replay.take() == []
    replay, bufs = _check(dev, "result-replay", honest=False)
    with bufs:
        replay.after_run(1, 4)
        assert replay.take() != []


def test_a_callable_is_checked_on_the_sets_in_turn(dev):
    """A callable's check runs it on the set whose turn it is and compares its own output/reference."""
    from hipexplore.bench.callable import CallableSets, OutputCheck, callable_kernel

    calls: list[int] = []

    def fn(values, stream):
        calls.append(values["i"])
        values["out"][:] = values["x"] * 2 if values["i"] == 0 else 0  # wrong on every set but the first

    spec = callable_kernel(
        fn,
        lambda n, i: {"i": i, "x": np.arange(n, dtype=np.float32), "out": np.zeros(n, np.float32)},
        bytes_per_launch="8*n",
        check=OutputCheck(lambda v: v["x"] * 2, output=lambda v: v["out"]),
        register_it=False,
    )
    sets = CallableSets(dev, spec, 64, 2)
    check = SampledCheck(CheckTarget(dev, spec, sets, spec.call, (1, 1, 1), (1, 1, 1)), limit=2, config="callable test")
    check.before_chunk(1, 4)
    assert calls == [0] and check.take() == []
    check.after_run(2, 8)
    assert calls == [0, 1]
    (line,) = check.take()
    assert "1 of 2 output checks" in line and "on buffer set 1" in line


def test_a_large_output_is_compared_on_a_sample_first_and_whole_where_it_fails(dev):
    """Past 2^20 elements a check compares a seeded sample; a sample that disagrees sends it to the
    whole comparison, whose message names the worst element of the whole output."""
    from hipexplore.bench import sampled
    from hipexplore.errors import BenchmarkError

    check, bufs = _check(dev, "output-cache", honest=True)
    with bufs:
        n = sampled.SAMPLE_ELEMENTS * 3
        ref = np.linspace(1, 2, n, dtype=np.float32)
        check._compare("out", ref.copy(), ref)  # equal: the sample passes, nothing more is read
        bad = ref.copy()
        bad[::7] = 0  # a seventh wrong: the sample sees it
        with pytest.raises(
            BenchmarkError, match=rf"out\[\d+\] = 0 but expected .* {len(bad[::7])} of {n} elements differ"
        ):
            check._compare("out", bad, ref)
