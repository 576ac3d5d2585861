"""What a harness needs to launch a Triton kernel (``compile.triton_launch``), from real compiles
with the Triton wheel (gfx942 code objects and sm_90 cubins, no GPU).

Why: the harness launches by these fields; a parameter count that missed Triton's trailing scratch
pointers would launch with a short argument list (a fault, or garbage read as a pointer).
"""

from __future__ import annotations

import pytest

from compile.test_triton import HELPERS, KERNEL, SIG
from conftest import require_compiler
from hipexplore.compile.triton_launch import count_params
from hipexplore.compile.triton_source import triton_request


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """(target, mode) -> ObjectCode of the ``scale`` kernel."""
    compiler = require_compiler("triton")
    root = tmp_path_factory.mktemp("triton-launch")
    (root / "helpers.py").write_text(HELPERS)
    (root / "k.py").write_text(KERNEL)
    return {
        (target, mode): compiler.compile(
            triton_request(root / "k.py", "scale", SIG, target, {"BLOCK": 256}, environ={}, mode=mode)
        )
        for target in ("gfx942", "sm_90")
        for mode in ("binary", "asm")
    }


@pytest.mark.parametrize("target, kind, asm", [("gfx942", "hsaco", "amdgcn"), ("sm_90", "cubin", "ptx")])
def test_the_parameters_are_the_users_then_tritons_scratch_pointers(compiled, target, kind, asm):
    meta = compiled[(target, "binary")].metadata
    assert meta["binary_kind"] == kind and meta["name"] == compiled[(target, "binary")].lowered_names["scale"]
    assert meta["params"][:3] == ["x_ptr", "y_ptr", "n"] and meta["params"][3:] == meta["scratch_params"]
    assert meta["scratch_params"] == ["global_scratch", "profile_scratch"][: len(meta["scratch_params"])]
    assert meta["block_threads"] == meta["num_warps"] * meta["warp_size"] > 0
    # counted from the entry of the assembly Triton wrote for the same request
    text = compiled[(target, "asm")].binary.decode()
    assert count_params({asm: text}, kind) == len(meta["params"])


def test_amd_resource_usage_comes_from_the_code_objects_metadata(compiled):
    meta = compiled[("gfx942", "binary")].metadata
    assert meta["wavefront_size"] == meta["warp_size"] == 64 and meta["arch"] == "gfx942"
    assert meta["vgpr"] > 0 and meta["sgpr"] > 0 and meta["lds"] >= 0 and meta["kernarg_size"] > 0
    assert "vgpr" not in compiled[("sm_90", "binary")].metadata


def test_an_entry_that_cannot_be_found_counts_minus_one():
    assert count_params({}, "cubin") == -1 and count_params({"amdgcn": "no metadata"}, "hsaco") == -1
    ptx = ".visible .entry k(\n .param .u64 a,\n .param .u32 n\n)\n{ ret; }"
    assert count_params({"ptx": ptx}, "cubin") == 2
