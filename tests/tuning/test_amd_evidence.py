"""``hipexplore.tuning.amd_evidence``: what an AMD code object says about a candidate: the
occupancy model's limits, resources read from real gfx942 code objects (Triton, offline), the
instruction mix of their listings and a diff of two."""

from __future__ import annotations

import pytest

from conftest import require_compiler
from hipexplore.errors import ConfigError

pytestmark = pytest.mark.timeout(300)


def test_occupancy_model_limits():
    from hipexplore.tuning.amd_evidence import occupancy

    assert occupancy({"vgpr": 128, "sgpr": 30, "num_warps": 4}, "gfx942")["waves_per_simd"] == 4  # 512 // 128
    o = occupancy({"vgpr": 40, "sgpr": 30, "shared": 32768, "num_warps": 4}, "gfx942")
    assert (o["waves_per_simd"], o["limited_by"]) == (2, "lds")  # 2 workgroups x 4 waves over 4 SIMDs
    assert occupancy({"vgpr": 40, "sgpr": 30, "shared": 32768, "num_warps": 4}, "gfx950")["waves_per_simd"] == 5
    assert occupancy({"vgpr": 8, "sgpr": 8, "num_warps": 1}, "gfx942")["limited_by"] == "waves"
    with pytest.raises(ConfigError, match="gfx1100"):
        occupancy({}, "gfx1100")


def test_gfx942_evidence_resources_and_disassembly_diff():
    """Two gemm candidates: resources from the code objects, MFMAs in the listing, and a diff."""
    from hipexplore.compile.cache import CompileCache
    from hipexplore.tuning.amd_evidence import disassembly_diff, instruction_mix, resource_table
    from hipexplore.tuning.lists import GemmProblem
    from hipexplore.tuning.gemm import GemmShape
    from hipexplore.tuning.triton_list import TritonConfig, role_request

    compiler = require_compiler("triton")
    cache = CompileCache(disk_dir=False)
    prob = GemmProblem("p", GemmShape(64, 64, 64))
    cands = {"small": TritonConfig(32, 32, 32, 1, 2, 1), "large": TritonConfig(64, 64, 32, 1, 4, 1)}
    codes = {
        n: cache.get_or_compile(role_request("gemm", "gfx942", prob, c), compiler).object_code for n, c in cands.items()
    }
    asm = {
        n: cache.get_or_compile(role_request("gemm", "gfx942", prob, c).with_(mode="asm"), compiler).object_code.binary
        for n, c in cands.items()
    }
    res = resource_table(codes).set_index("kernel")
    assert (res["vgpr"] > 0).all() and (res["waves_per_simd"] >= 1).all()
    assert res.loc["large", "lds_bytes"] > res.loc["small", "lds_bytes"] > 0  # Triton's dynamic shared memory
    mix = instruction_mix(asm).pivot(index="class", columns="kernel", values="count")
    assert (mix.loc["mfma"] > 0).all() and (mix.loc["total"] > mix.loc["mfma"]).all()
    diff = disassembly_diff(asm["small"], asm["large"], "small", "large")
    assert diff.startswith("--- small\n+++ large\n@@")
    assert disassembly_diff(asm["small"], asm["small"]) == ""
