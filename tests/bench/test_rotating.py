"""``hipexplore.bench.rotating``: how many rotating buffer sets (the review rule for ``auto``, the
cap at a fraction of free memory, said when it binds), the rotation, and the sets themselves on the
real host device (every buffer freed, also when an allocation fails; seeded inputs drawn once and
handed out as fresh copies)."""

from __future__ import annotations

import numpy as np
import pytest

from hipexplore.bench import rotating as rot
from hipexplore.errors import ConfigError
from hipexplore.kernels import catalog

from bench.test_run import _Allocs, dev  # noqa: F401 - the host device fixture and the allocation-keeping device

MIB = 1 << 20


def test_auto_count_follows_the_review_rule() -> None:
    assert rot.auto_count(60 * MIB, 3 * MIB) == 40  # H200: 60 MiB L2, 1 MiB triad
    assert rot.auto_count(60 * MIB, 768 * MIB) == 2
    assert rot.auto_count(4 * MIB + 256 * MIB, 3 * MIB) == 2 * 87  # MI300: L2 + Infinity Cache
    with pytest.raises(ConfigError):
        rot.auto_count(MIB, 0)


@pytest.mark.parametrize(
    "llc, footprint, expected",
    [
        # expected = 2 * (the smallest whole number of footprints that covers the LLC), at least 2
        (1001, 1000, 4),  # ratio 1.001: just above an integer (ceil(2x) gives 3, 2 round(x) gives 2)
        (1400, 1000, 4),  # ratio 1.4: fractional part below 0.5 (2 round(x) gives 2, ceil(2x) gives 3)
        (1500, 1000, 4),  # ratio 1.5: at 0.5 (ceil(2x) gives 3)
        (2500, 1000, 6),  # ratio 2.5: at 0.5 (2 round(x) gives 4, ceil(2x) gives 5)
        (2100, 1000, 6),  # ratio 2.1 (ceil(2x) gives 5, 2 round(x) gives 4)
        (2000, 1000, 4),  # exact integers stay: 2 x 2
        (3000, 1000, 6),
        (1000, 1000, 2),
        (999, 1000, 2),  # below one footprint: the floor of 2 sets
        (1, 1000, 2),
        (60 * MIB + 1, 3 * MIB, 42),  # one byte over 20 footprints needs a 21st
    ],
)
def test_auto_count_boundaries(llc: int, footprint: int, expected: int) -> None:
    assert rot.auto_count(llc, footprint) == expected
    p = rot.plan("auto", footprint_bytes=footprint, set_bytes=footprint, llc_bytes=llc, free_bytes=1 << 40)
    assert p.count == expected and not p.capped


def test_plan_caps_at_a_fraction_of_free_memory_and_says_so() -> None:
    p = rot.plan("auto", footprint_bytes=3 * MIB, set_bytes=3 * MIB, llc_bytes=60 * MIB, free_bytes=1000 * MIB)
    assert p.count == 40 and not p.capped and p.cap_bytes == 500 * MIB and p.requested == "auto"
    p = rot.plan(
        100, footprint_bytes=30 * MIB, set_bytes=30 * MIB, llc_bytes=60 * MIB, free_bytes=1000 * MIB, mem_fraction=0.3
    )
    assert p.capped and p.count == 10 and "capped to 10" in p.note and str(300 * MIB) in p.note
    with pytest.raises(ConfigError, match="one buffer set needs"):
        rot.plan(1, footprint_bytes=MIB, set_bytes=600 * MIB, llc_bytes=MIB, free_bytes=1000 * MIB)
    for bad in ("two", 0, -1, True, 1.5):
        with pytest.raises(ConfigError, match="rotating"):
            rot.parse_rotating(bad)


def test_fewer_iterations_than_sets_shows_both_numbers() -> None:
    with pytest.raises(ConfigError, match=r"iterations \(3\) must be greater than or equal to .* \(8\)"):
        rot.check_iterations(3, 8)


def test_plan_caps_one_set_over_and_checks_the_fraction() -> None:
    # 11 sets of 10 MiB wanted, a 100 MiB cap fits 10: capped (one over is over)
    p = rot.plan(11, footprint_bytes=10 * MIB, set_bytes=10 * MIB, llc_bytes=MIB, free_bytes=200 * MIB)
    assert p.capped and p.count == 10 and p.cap_bytes == 100 * MIB
    p = rot.plan(10, footprint_bytes=10 * MIB, set_bytes=10 * MIB, llc_bytes=MIB, free_bytes=200 * MIB)
    assert not p.capped and p.count == 10 and p.note == ""
    for bad in (0, 1.01, 2, -0.5):
        with pytest.raises(ConfigError, match="mem_fraction"):
            rot.plan(1, footprint_bytes=MIB, set_bytes=MIB, llc_bytes=MIB, free_bytes=100 * MIB, mem_fraction=bad)
    assert (
        rot.plan(1, footprint_bytes=MIB, set_bytes=MIB, llc_bytes=MIB, free_bytes=100 * MIB, mem_fraction=1).cap_bytes
        == 100 * MIB
    )
    assert list(rot.rotation(7, 3)) == [0, 1, 2, 0, 1, 2, 0]


def test_buffer_sets_free_everything_also_when_an_allocation_fails() -> None:
    from hipexplore.errors import DeviceError

    spec = catalog.get("triad")  # 3 buffers per set
    d = _Allocs()
    with rot.BufferSets(d, spec, 256, 4) as sets:
        assert sets.total_bytes == 4 * 3 * 256 * 4 and len({b.ptr for b in d.bufs}) == 12
        assert not any(b.freed for b in d.bufs)
    assert len(d.bufs) == 12 and all(b.freed for b in d.bufs) and sets.buffers == [] and sets.args == []
    d = _Allocs(fail_at=8)  # the second buffer of the third set
    with pytest.raises(DeviceError, match="allocation 8"):
        rot.BufferSets(d, spec, 256, 4)
    assert len(d.bufs) == 7 and all(b.freed for b in d.bufs)


def test_host_inputs_are_drawn_once_and_handed_out_as_fresh_copies(dev) -> None:  # noqa: F811
    """The same (buffers, n, seed) gives the same data without a second draw; a reference writing
    into its copy changes no later set; another seed or size draws anew."""
    spec = catalog.get("triad")
    with rot.BufferSets(dev, spec, 4096, 1) as one:
        first = {k: v.copy() for k, v in one.host.items()}
        kept = rot.HOST_INPUTS[next(iter(rot.HOST_INPUTS))]
        one.host["b"][:] = -7.0  # a reference that scribbles on its inputs
    with rot.BufferSets(dev, spec, 4096, 2) as two:
        assert rot.HOST_INPUTS[next(iter(rot.HOST_INPUTS))] is kept  # not drawn again
        for k in first:
            np.testing.assert_array_equal(two.host[k], first[k])
        got = np.empty(4096, dtype=np.float32)
        dev.copy_to_device(two.buffers[1]["b"], two.host["b"])
        dev.copy_to_host(two.buffers[1]["b"], got)
        np.testing.assert_array_equal(got, first["b"])
    with rot.BufferSets(dev, spec, 4096, 1, seed=5) as other:
        assert not np.array_equal(other.host["b"], first["b"])
    with rot.BufferSets(dev, spec, 2048, 1) as smaller:
        assert smaller.host["b"].size == 2048
    fresh = rot.host_inputs(spec, 4096, spec.scalars(4096), 0)
    np.testing.assert_array_equal(fresh["c"], first["c"])
