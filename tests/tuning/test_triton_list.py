"""``hipexplore.tuning.triton_list``: the Triton tuning list: a candidate's values checked (Triton's
block shapes), its roles (a reduce only when split), each role's compile request built with ast
alone (no triton import), the list in launch order with each distinct request built once, and the
warm-up's requests salted so none is in any list."""

from __future__ import annotations

import pytest

from hipexplore.errors import ConfigError
from hipexplore.tuning.gemm import GemmShape
from hipexplore.tuning.lists import GemmProblem, select_problems
from hipexplore.tuning.triton_list import (
    KERNELS,
    TritonConfig,
    build_triton_list,
    default_candidates,
    role_request,
    roles_for,
    warm_up_requests,
)

pytestmark = pytest.mark.timeout(120)


def test_a_candidate_is_checked_and_named_and_the_default_list_is_tiles_by_splits():
    c = TritonConfig(64, 32, 16, 2, 4, 3)
    assert c.name == "b64x32x16_s2_w4_st3" and c.split == 2
    for kw, says in (
        ({"block_m": 48}, "block_m must be a power of two"),
        ({"block_k": 8}, "tl.dot needs blocks of at least 16"),
        ({"num_warps": 0}, r"num_warps must be an integer in 1..32"),
        ({"split_k": True}, "split_k must be an integer"),
    ):
        with pytest.raises(ConfigError, match=says):
            TritonConfig(**kw)
    assert len(default_candidates()) == 4 * 3 and default_candidates(((32, 32, 32, 1, 1),), (1, 4))[1].split_k == 4
    with pytest.raises(ConfigError, match="need at least one tile and one split"):
        default_candidates((), (1,))


def test_each_role_is_its_own_request_and_the_list_keeps_launch_order():
    prob = GemmProblem("p", GemmShape(32, 48, 64), "gelu")
    split, whole = TritonConfig(16, 16, 16, 2, 1, 1), TritonConfig(16, 16, 16, 1, 1, 1)
    assert roles_for(split) == ("fill", "gemm", "reduce", "pointwise") and roles_for(whole) == (
        "fill",
        "gemm",
        "pointwise",
    )
    reqs = {role: role_request(role, "gfx942", prob, split) for role in roles_for(split)}
    assert {r.kernels for r in reqs.values()} == {(KERNELS[role],) for role in reqs}
    assert all(r.compiler == "triton" and r.target == "gfx942" for r in reqs.values())
    assert role_request("gemm", "gfx942", prob, split) == reqs["gemm"]  # a request is its content: built again alike
    assert role_request("gemm", "gfx942", prob, TritonConfig(32, 16, 16, 2, 1, 1)) != reqs["gemm"]
    with pytest.raises(ConfigError, match="the reduce kernel exists only for SPLIT_K > 1"):
        role_request("reduce", "gfx942", prob, whole)
    with pytest.raises(ConfigError, match="role must be one of fill, gemm, reduce, pointwise; got 'epilogue'"):
        role_request("epilogue", "gfx942", prob, split)
    tl = build_triton_list(
        "gfx942", problems=select_problems("2", tokens=64, d_model=32), candidates=[split, whole], limit=2
    )
    assert [e.role for e in tl.entries[:7]] == ["fill", "gemm", "reduce", "pointwise", "fill", "gemm", "pointwise"]
    assert tl.entries[0].label.endswith(f"/{split.name}/fill") and [e.index for e in tl.entries] == list(
        range(tl.kernels)
    )
    with pytest.raises(ConfigError, match="limit must be a positive integer"):
        build_triton_list("gfx942", limit=0)


def test_the_warm_up_requests_are_salted_out_of_every_list():
    a, b = warm_up_requests("sm_90", "x1"), warm_up_requests("sm_90", "x2")
    assert [r.kernels[0] for r in a] == [KERNELS[r] for r in ("fill", "gemm", "reduce", "pointwise")]
    assert all("hx_warmup_x1 = 0" in r.source.text for r in a) and all(x != y for x, y in zip(a, b))


def test_both_triton_gemms_carry_the_one_tile_and_no_tail_does():
    """One GEMM body (tuning/src/triton_tile.py): the split-K list's matmul_splitk and the real-model
    lists' matmul_fused each carry it as the same generated module, so a change to it changes both
    GEMMs' keys; the tails' requests carry no module and no tile, so their keys stay as they were."""
    from hipexplore.tuning import hxgen

    prob = GemmProblem("p", GemmShape(32, 48, 64), "gelu")
    cfg = TritonConfig(16, 16, 16, 2, 1, 1)
    ours = role_request("gemm", "gfx942", prob, cfg)
    theirs = hxgen.request(
        "gemm", "triton", "gfx942", hxgen.Problem("p", 32, 48, 64, "bias"), hxgen.PerfConfig(16, 16, 16, 2, 2, 4, 2, 16)
    )

    def tile(req):
        (module,) = req.headers
        assert "def splitk_tile(" in module.text and "tl.dot(" in module.text
        assert "tl.dot(" not in req.source.text and "splitk_tile(" in req.source.text
        return module.text.split("\n", 1)[1]  # after the line naming the kernel it was carried for

    assert tile(ours) == tile(theirs)
    for role in ("fill", "reduce", "pointwise"):
        req = role_request(role, "gfx942", prob, cfg)
        assert req.headers == () and "splitk_tile" not in req.source.text
