"""``hipexplore.bench.sweeprun``: pieces of one unit's run: a fault named by the runtime's status,
the cold reference taken in parts spread through the group, and two interleaved kernels sharing
one pool of buffer sets only when their buffers match one for one. (A unit's phases end to end:
tests/bench/test_phases.py; its telemetry: tests/bench/test_timing.py.)"""

from __future__ import annotations

import pytest

from hipexplore.bench.sweeprun import fault_status, reference_schedule, shared_pool
from hipexplore.devices.host import HostDevice
from hipexplore.kernels import catalog, user_kernel

pytestmark = pytest.mark.timeout(120)


def test_a_fault_is_named_by_the_runtime_status_in_its_message():
    """Why: ``KernelFault`` names the status (what a user searches for); GPU faults are not
    reachable on the host, so the parsing is checked on the runtimes' own message shapes."""
    assert fault_status("cuLaunchKernel failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)") == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert (
        fault_status("hipModuleLaunchKernel: hipErrorIllegalAddress: an illegal memory access")
        == "hipErrorIllegalAddress"
    )
    assert fault_status("the device went away") == "the device went away"


def test_reference_parts_spread_from_first_group_to_after_the_last():
    assert reference_schedule(4, 1, 48) == [(0, 48)]
    assert reference_schedule(4, 3, 50) == [(0, 17), (2, 17), (4, 16)]


SRC = r"""
void sw_f32(float* restrict a, const float* restrict b, unsigned long long n) { for (unsigned long long i = 0; i < n; ++i) a[i] = b[i]; }
void sw_i32(int* restrict a, const int* restrict b, unsigned long long n) { for (unsigned long long i = 0; i < n; ++i) a[i] = b[i]; }
"""


def test_kernels_share_a_pool_of_sets_only_when_their_buffers_match_one_for_one(tmp_path):
    """The same f32 buffers do; i32 buffers of exactly the same bytes do not (each kernel reads its
    own typed data)."""
    from hipexplore.bench.callable import sets_for

    src = tmp_path / "k.c"
    src.write_text(SRC)
    names = {"sw_a": ("sw_f32", "f32"), "sw_copy": ("sw_f32", "f32"), "sw_int": ("sw_i32", "i32")}
    for name, (entry, t) in names.items():
        user_kernel(src, entry, f"out:a:{t}[n],in:b:{t}[n],n:u64=n", name=name)
    try:
        dev = HostDevice()
        a, i = catalog.get("sw_a"), catalog.get("sw_int")
        n = a.elements(65536)
        assert n == i.elements(65536)
        with sets_for(dev, a, n, 1) as sets:
            assert shared_pool(sets, catalog.get("sw_copy"), n) is not None
            assert shared_pool(sets, i, n) is None
    finally:
        for name in names:
            catalog.unregister(name)
