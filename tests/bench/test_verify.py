"""``hipexplore.bench.verify``: the output check before timing on the real host device, against the
hostile suite's C twins (tests/fixtures/hostile/skip_work.c: a static call counter, all the work on
the first call only): an honest kernel passes with its error; a kernel wrong from its first launch is
refused in one error naming the configuration; one that is right on its first launch and skips work
after it keeps state between launches, which is a trust flag on its rows (and a NaN error), not a
refusal."""

from __future__ import annotations

import math

import pytest

from conftest import require_compiler
from hipexplore.bench.callable import sets_for
from hipexplore.bench.check import CheckTarget
from hipexplore.bench.target import Target
from hipexplore.bench.verify import check_before_timing, code_of, verify
from hipexplore.devices.base import BoundKernel
from hipexplore.devices.host import HostDevice
from hipexplore.errors import BenchmarkError
from hipexplore.kernels.catalog import user_kernel
from hipexplore.schema import Timer

pytestmark = pytest.mark.timeout(300)
SIZE = 1 << 14


@pytest.fixture
def dev():
    require_compiler("host")
    return HostDevice()


def _target(dev, honest: bool) -> Target:
    from fixtures.hostile import BY_NAME, host_spec

    return Target(dev, host_spec(BY_NAME["skip-work"], honest), SIZE, (Timer.EVENTS,))


def test_an_honest_kernel_passes_with_its_error(dev):
    t = _target(dev, honest=True)
    with sets_for(dev, t.kspec, t.n, 1) as sets:
        assert verify(CheckTarget(dev, t.kspec, sets, t.plain, t.grid, t.block)) < 1e-6
        assert check_before_timing(dev, t, sets) < 1e-6
    assert t.flags == []


def test_a_kernel_that_skips_work_after_its_first_launch_is_flagged_not_refused(dev):
    t = _target(dev, honest=False)
    with sets_for(dev, t.kspec, t.n, 1) as sets:
        err = check_before_timing(dev, t, sets)
    assert math.isnan(err)
    assert len(t.flags) == 1 and "wrote every output and its second left some unwritten" in t.flags[0]


def test_a_kernel_wrong_from_its_first_launch_is_refused_naming_the_configuration(dev, tmp_path):
    src = tmp_path / "wrong.c"
    src.write_text(
        "void wrong(float* out, const float* x, const float* y, float a, unsigned long long n) {\n"
        "  for (unsigned long long i = 0; i < n; ++i) out[i] = x[i];\n}\n"
    )
    from fixtures.hostile import ARGS, reference

    kspec = user_kernel(src, "wrong", ARGS, reference=reference, register_it=False)
    t = Target(dev, kspec, SIZE, (Timer.EVENTS,))
    with sets_for(dev, t.kspec, t.n, 1) as sets, pytest.raises(BenchmarkError) as exc:
        check_before_timing(dev, t, sets)
    assert f"kernel wrong size={SIZE}" in str(exc.value) and "\n" not in str(exc.value).strip()
    assert t.flags == []


def test_the_code_under_a_bound_kernel_is_what_the_rule_remembers():
    assert code_of(BoundKernel("f", 64)) == "f" and code_of("f") == "f"
