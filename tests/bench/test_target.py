"""``hipexplore.bench.target``: one (kernel, size) of a unit, built once on the real host device:
a loaded variant per timer, the events variant as the one the warm-up and the output check launch,
the same code object however often the (kernel, size) is built in a process (the output check's
"passed earlier in this process" rule is keyed by it), and dynamic shared memory bound to the code."""

from __future__ import annotations

import pytest

from conftest import require_compiler
from hipexplore.bench.target import Target, bound
from hipexplore.devices.base import BoundKernel
from hipexplore.devices.host import HostDevice
from hipexplore.kernels import catalog
from hipexplore.schema import Timer

pytestmark = pytest.mark.timeout(120)


def test_a_target_holds_a_variant_per_timer_and_the_events_one_is_plain():
    require_compiler("host")
    dev, kspec = HostDevice(), catalog.get("triad")
    t = Target(dev, kspec, 65536, (Timer.EVENTS, Timer.IN_KERNEL))
    assert set(t.kernels) == {Timer.EVENTS, Timer.IN_KERNEL}
    assert t.kernels[Timer.EVENTS] is not t.kernels[Timer.IN_KERNEL]
    assert t.plain is t.kernels[Timer.EVENTS]
    assert t.kernel(dev, "none", Timer.IN_KERNEL) is t.kernels[Timer.IN_KERNEL]  # a flush outside the kernel
    assert (t.n, t.footprint) == (kspec.elements(65536), kspec.footprint(kspec.elements(65536)))
    assert (t.grid, t.block, t.shared) == kspec.launch(t.n, dev)
    assert t.flags == [] and t.fresh is None
    only_in_kernel = Target(dev, kspec, 65536, (Timer.IN_KERNEL,))  # no events timer: plain is built anyway
    assert only_in_kernel.plain is t.plain  # loaded once per device and content: the same code object


def test_dynamic_shared_memory_is_bound_to_the_code():
    assert bound("k", 0) == "k"
    assert bound("k", 128) == BoundKernel("k", 128)
