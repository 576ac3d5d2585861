"""Savings with intervals over passes (``tuning.savings``): the verdict machinery's intervals, the
seconds' interval the ratio's in seconds, no interval from one pass, walls read back from a frame."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hipexplore.tuning.savings import comparison, interval_text, pass_walls, savings
from hipexplore.verdicts import compare_scenarios

WALLS = {
    "cold": [10.0, 10.6, 9.8],
    "compiler-cache": [7.0, 7.4, 6.9],
    "memory": [4.0, 4.3, 4.1],
    "ideal": [3.9, 4.2, 4.0],
}


def test_comparisons_are_the_verdict_machinerys():
    c = comparison(WALLS, "cold", "memory")
    frame = pd.DataFrame(
        [
            {"scenario": s, "round": i, "jobs": 0, "lookup_seconds": w}
            for s in ("cold", "memory")
            for i, w in enumerate(WALLS[s])
        ]
    )
    row = compare_scenarios(frame, "cold", new="memory").iloc[0]
    assert c["ratio_ci"] == [pytest.approx(row["ratio_ci_low"]), pytest.approx(row["ratio_ci_high"])]
    assert c["seconds"] == pytest.approx(sum(WALLS["cold"]) / 3 - sum(WALLS["memory"]) / 3)
    assert c["ratio"] == pytest.approx(sum(WALLS["memory"]) / sum(WALLS["cold"]))
    lo, hi = c["ratio_ci"]
    assert lo < c["ratio"] < hi < 1 and c["verdict"] == "faster"
    assert c["seconds_ci"][0] > 0 and c["seconds_ci"] == pytest.approx([c["base_s"] * (1 - hi), c["base_s"] * (1 - lo)])


def test_three_answers_and_what_one_pass_cannot_say():
    out = savings(WALLS, "memory")
    assert [out[k]["base"] for k in ("saved_vs_cold", "saved_beyond_compiler_cache", "memory_vs_ideal")] == [
        "cold",
        "compiler-cache",
        "ideal",
    ]
    one = comparison({"cold": [10.0], "memory": [4.0]}, "cold", "memory")
    assert (
        one["seconds"] == 6.0
        and one["seconds_ci"] is None
        and one["ratio_ci"] is None
        and "two or more" in one["interval_over"]
    )
    assert interval_text(one) == "6 s (1 pass)" and savings({"memory": [1.0]}, "memory")["saved_vs_cold"] is None
    assert interval_text(out["saved_vs_cold"]).startswith("6 s [5.") and "[" in interval_text(
        out["memory_vs_ideal"], "ratio"
    )


def test_both_caches_warm_is_the_disk_warm_pass_against_the_compilers_warm_cache():
    """The second run of a flow: hipexplore's disk tier warm against the compiler's warm cache, never
    the primary pass (which starts cold in its process); not measured without a disk-warm pass."""
    assert savings(WALLS, "memory")["warm_beyond_compiler_cache"] is None
    walls = {**WALLS, "disk-warm": [0.5, 0.6, 0.55]}
    warm = savings(walls, "memory")["warm_beyond_compiler_cache"]
    assert (warm["base"], warm["scenario"], warm["verdict"]) == ("compiler-cache", "disk-warm", "faster")
    assert warm["seconds"] == pytest.approx(sum(WALLS["compiler-cache"]) / 3 - 0.55)
    assert savings(walls, "memory")["saved_beyond_compiler_cache"]["scenario"] == "memory"


def test_walls_read_back_from_a_frame():
    rows = []
    for s, walls in WALLS.items():
        for r, w in enumerate(walls):
            rows += [{"scenario": s, "round": r, "jobs": 1, "lookup_seconds": w / 2, "pass_seconds": w}] * 2
    assert pass_walls(pd.DataFrame(rows)) == WALLS
    old = pd.DataFrame(rows).drop(columns=["pass_seconds"])  # recorded before the wall was kept: summed lookups
    assert pass_walls(old) == WALLS
    nan = pd.DataFrame(rows).assign(pass_seconds=math.nan)
    assert pass_walls(nan, jobs=1) == WALLS and pass_walls(nan, jobs=2) == {}
