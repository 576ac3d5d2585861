"""``hipexplore.tuning.cluster``: the tuning replay over Dask workers: the ideal pass's tasks are
shaped like the cache passes' (each unique kernel once, at its first place, grouped by candidate),
and two workers sharing the Redis tier compile each unique kernel once. (Replays over the bench
suite's module cluster, disk and Redis tiers: tests/bench/test_cluster.py.)"""

from __future__ import annotations

import pytest

from hipexplore.tuning import listfile

pytestmark = pytest.mark.timeout(600)


def test_cluster_ideal_tasks_are_shaped_like_the_cache_passes():
    """The ideal's tasks: every unique kernel once at its first place, a candidate's first-seen kernels a
    task (one task per kernel paid 532 round trips on the H200 machine against the cold pass's candidates)."""
    from hipexplore.tuning.cluster import task_parts, unique_task_parts
    from hipexplore.tuning.lists import build_list, select_problems

    tlist = build_list("host", "host", problems=select_problems("2", tokens=64, d_model=64), limit=3)
    assert tlist.kernels > tlist.unique_kernels  # the list repeats kernels: otherwise nothing is tested
    for gran in ("candidate", "kernel"):
        parts, uniq = task_parts(tlist, gran), unique_task_parts(tlist, gran)
        flat = [i for p in uniq for i in p]
        assert len(flat) == tlist.unique_kernels and len({tlist.entries[i].request for i in flat}) == len(flat)
        firsts: dict = {}
        for i, e in enumerate(tlist.entries):
            firsts.setdefault(e.request, i)
        assert sorted(flat) == sorted(firsts.values())  # each at its first place in the list
        assert all(set(u) <= set(p) for u, p in zip(uniq, [p for p in parts if set(p) & set(flat)]))
        assert len(uniq) <= len(parts)
    assert len(unique_task_parts(tlist, "candidate")) < tlist.unique_kernels  # grouped, not one task per kernel


def test_two_workers_over_redis_compile_each_unique_kernel_once(redis_server, monkeypatch):
    from conftest import need_module, require_compiler

    need_module("distributed", hint="setup.sh --dev installs the cluster extra")
    require_compiler("host")
    from hipexplore.tuning.cluster import replay_on_cluster

    monkeypatch.setenv("HIPEXPLORE_CACHE_SECRET", "team-secret")
    monkeypatch.setenv("DASK_DISTRIBUTED__DIAGNOSTICS__NVML", "False")
    tl = listfile.expand(
        listfile.read("resnet50").select("b1.layer3.0.conv2,b1.layer4.0.conv2", limit=6), "host", "host"
    )
    assert tl.kernels > tl.unique_kernels  # tails repeat across the candidates
    rep = replay_on_cluster(tl, "local:2", remote=redis_server.url, timeout_s=600)
    assert rep.cache == "remote" and rep.primary == "disk-cold"
    cold = rep.frame[rep.frame["scenario"] == "disk-cold"]
    compiled = cold[cold["outcome"] == "compiled"]
    assert len(compiled) == tl.unique_kernels and compiled["digest"].is_unique
    assert (cold["outcome"] == "failed").sum() == 0
    assert cold["worker"].nunique() == 2  # both workers took tasks
    warm = rep.frame[rep.frame["scenario"] == "disk-warm"]
    assert (warm["outcome"] == "compiled").sum() == 0 and len(warm) == tl.kernels
    assert rep.scenarios["ideal"].frame["outcome"].eq("compiled").sum() == tl.unique_kernels
