"""``hipexplore.tuning.triton_workload``: Triton candidates carried to a machine that cannot compile
them: cubins exported with their launch metadata and found again by the request alone."""

from __future__ import annotations

import pytest

from conftest import require_compiler

from compile.test_triton import EM_CUDA, _elf

pytestmark = pytest.mark.timeout(300)


def test_carried_cubins_round_trip(tmp_path):
    """export_cubins writes what load_carried finds by the request alone: the same cubin and the
    launch metadata the H200 script needs when it cannot compile (or uses another Triton)."""
    from hipexplore.compile.cache import CompileCache
    from hipexplore.tuning.gemm import GemmShape
    from hipexplore.tuning.lists import GemmProblem
    from hipexplore.tuning.triton_workload import export_cubins, load_carried, request_digest
    from hipexplore.tuning.triton_list import TritonConfig, role_request, roles_for

    compiler = require_compiler("triton")
    prob, cfg = GemmProblem("p", GemmShape(32, 32, 32), "gelu"), TritonConfig(16, 16, 16, 2, 1, 1)
    cache = CompileCache(disk_dir=False)
    assert export_cubins(tmp_path, "sm_90", [prob], [cfg], cache=cache) == len(roles_for(cfg)) == 4
    for role in roles_for(cfg):
        req = role_request(role, "sm_90", prob, cfg, label="another label")  # labels do not matter
        carried = load_carried(tmp_path, request_digest(req))
        assert carried is not None and _elf(carried.binary)[0] == EM_CUDA
        assert carried.binary == cache.get_or_compile(req, compiler).object_code.binary
        assert carried.metadata["scratch_params"] and carried.metadata["num_warps"] >= 1
    other = role_request("gemm", "sm_90", prob, TritonConfig(32, 16, 16, 2, 1, 1))
    assert load_carried(tmp_path, request_digest(other)) is None
