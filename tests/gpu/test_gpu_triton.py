"""The Triton split-K candidates on a real NVIDIA GPU (marked ``gpu``): the cubins Triton compiled
are launched with their trailing scratch arguments and agree with numpy, and the harness times them.
Skips without a CUDA GPU (fails under ``HIPEXPLORE_REQUIRE_GPU=1``). A wrong launch ABI (missing
scratch pointers, wrong block size or shared memory) fails the numpy check or the launch."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda():
    from hipexplore.errors import DeviceUnavailable

    try:
        from hipexplore.devices import get_device

        return get_device("cuda")
    except (DeviceUnavailable, ImportError) as exc:
        from conftest import GPU, need

        need("a CUDA GPU", str(exc), flag=GPU)


def test_triton_candidates_check_and_time(cuda):
    from hipexplore.tuning.lists import select_problems
    from hipexplore.tuning.triton_workload import benchmark_triton_candidates
    from hipexplore.tuning.triton_list import default_candidates

    carried = ".triton_cubins" if os.path.isdir(".triton_cubins") else None
    res, source = benchmark_triton_candidates(
        cuda,
        select_problems("qkv,mlp_up"),
        default_candidates()[:3],
        rotating=(1,),
        flush=("none",),
        iterations=20,
        carried=carried,
    )
    assert len(res) == 6 and (res["rel_error"] < 5e-3).all() and (res["median_s"] > 0).all()
    assert sum(source.values()) == 2 * (3 + 4 + 4)
