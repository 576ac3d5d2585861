"""``hipexplore.tuning.lists``: the built-in split-K GEMM tuning list: its tails repeat (what a
cache saves), its labels name each entry, and its arguments are checked."""

from __future__ import annotations

import pytest

from hipexplore.errors import ConfigError
from hipexplore.tuning.gemm import GemmShape
from hipexplore.tuning.lists import GemmProblem, build_list, default_candidates, select_problems
from hipexplore.tuning.replay import candidate_groups

pytestmark = pytest.mark.timeout(120)


def test_default_list_repeats_the_tails():
    tl = build_list("nvrtc", "sm_90")
    roles = tl.counts_by_role()
    # 4 problems x 12 candidates (4 tiles x split 1,2,4); a reduce only when split > 1
    assert tl.kernels == 4 * 12 * 3 + 4 * 8 == 176
    assert roles["gemm"] == {"kernels": 48, "unique": 48}
    # one pointwise per (M, N, activation): attn_out and mlp_down share theirs
    assert roles["pointwise"] == {"kernels": 48, "unique": 3}
    # one reduce per (M*N, split > 1): 3 output sizes x 2 splits
    assert roles["reduce"] == {"kernels": 32, "unique": 6}
    # one fill per split*M*N: {1,2,4}*MN, {3,6,12}*MN, {4,8,16}*MN -> 4*MN shared by two problems
    assert roles["fill"] == {"kernels": 48, "unique": 8}
    assert tl.unique_kernels == 48 + 3 + 6 + 8
    # labels are unique per entry and name it; candidates keep launch order
    assert len({e.label for e in tl.entries}) == tl.kernels
    assert [e.role for e in candidate_groups(tl)[1]] == ["fill", "gemm", "reduce", "pointwise"]


def test_list_arguments_are_checked():
    with pytest.raises(ConfigError, match="'cuda'"):
        build_list("cuda", "sm_90")
    with pytest.raises(ConfigError, match="limit"):
        build_list("host", "host", limit=0)
    n = len(build_list("host", "host").candidates)
    assert len(build_list("host", "host", limit=n).candidates) == n  # all of them, by name
    with pytest.raises(ConfigError, match=f"limit {n + 1} is above the {n} candidates per problem"):
        build_list("host", "host", limit=n + 1)  # silently all of them before
    with pytest.raises(ConfigError, match="'mlp_side'"):
        select_problems("qkv,mlp_side")
    with pytest.raises(ConfigError, match="1..4"):
        select_problems("9")
    with pytest.raises(ConfigError, match="unique"):
        p = GemmProblem("a", GemmShape(4, 4, 4))
        build_list("host", "host", problems=[p, p])
    with pytest.raises(ConfigError, match="'tanh'"):
        GemmProblem("a", GemmShape(4, 4, 4), "tanh")
    assert [p.name for p in select_problems("mlp_up,qkv")] == ["mlp_up", "qkv"]
    assert len(default_candidates(splits=(1, 8))) == 8
