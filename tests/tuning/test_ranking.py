"""``hipexplore.tuning.ranking`` on the host device (the real bench harness, host C kernels through
ctypes): candidates are checked against numpy, timed under rotating counts, ranked; the choice
table is checked on a frame whose answer is known."""

from __future__ import annotations

import pandas as pd
import pytest

from hipexplore.tuning.gemm import GemmConfig
from hipexplore.tuning.ranking import RESULT_COLUMNS, choice_table
from hipexplore.tuning.workload import benchmark_candidates
from hipexplore.tuning.lists import transformer_problems

CANDS = (GemmConfig(16, 16, 8, 2, 2, split=1, unroll=2), GemmConfig(16, 16, 8, 2, 2, split=3, unroll=2))


def test_candidates_on_host_are_checked_timed_and_ranked():
    probs = transformer_problems(tokens=16, d_model=8)[:2]
    df = benchmark_candidates(probs, CANDS, device="host", rotating=(1, 2), flush=("none",), iterations=6)
    assert list(df.columns) == list(RESULT_COLUMNS)
    assert len(df) == 2 * 2 * 2  # problems x candidates x rotating counts
    assert (df["rel_error"] < 1e-5).all() and (df["median_s"] > 0).all() and (df["n_samples"] >= 6).all()
    assert sorted(df["rotating"].unique()) == [1, 2]
    # exactly one best per (problem, setting), and ranks are 1..n
    per = df.groupby(["problem", "rotating_requested", "flush"])
    assert (per["best"].sum() == 1).all()
    assert (per["rank"].max() <= len(CANDS)).all()
    # rank 1 is the fastest median of its setting
    fastest = df.loc[per["median_s"].idxmin()]
    assert (fastest["rank"] == 1).all() and fastest["best"].all()
    choice = choice_table(df)
    assert len(choice) == 4
    # the choice table against the measured frame, row by row: the winner of each setting, the
    # winner under the reference setting (first rotating count, flush none) and its cost here
    for row in choice.itertuples():
        prob = df[df["problem"] == row.problem]
        setting = prob[(prob["rotating_requested"] == row.rotating_requested) & (prob["flush"] == row.flush)]
        ref = prob[(prob["rotating_requested"] == prob["rotating_requested"].iloc[0]) & (prob["flush"] == "none")]
        hot_pick = ref.loc[ref["median_s"].idxmin(), "candidate"]
        winner = setting.loc[setting["median_s"].idxmin()]
        assert row.best == winner["candidate"] and row.best == setting.loc[setting["rank"] == 1, "candidate"].item()
        assert row.best_median_s == winner["median_s"]
        assert row.hot_pick == hot_pick
        hot_time = setting.loc[setting["candidate"] == hot_pick, "median_s"].item()
        assert row.hot_pick_median_s == hot_time
        assert row.same_choice == (winner["candidate"] == hot_pick)
        assert row.regret == pytest.approx(hot_time / winner["median_s"] - 1.0)
        assert row.regret >= 0 and (row.regret == 0) == row.same_choice


def _row(cand, rot, flush, med, lo, hi):
    return {
        "problem": "p",
        "candidate": cand,
        "rotating_requested": rot,
        "rotating": 1 if rot == "1" else 6,
        "flush": flush,
        "median_s": med,
        "ci_low_s": lo,
        "ci_high_s": hi,
    }


def test_choice_table_detects_a_changed_pick():
    df = pd.DataFrame(
        [
            _row("a", "1", "none", 1.0, 0.99, 1.01),
            _row("b", "1", "none", 1.2, 1.19, 1.21),
            # cold caches: b wins clearly (disjoint intervals)
            _row("a", "auto", "l2-read", 2.0, 1.98, 2.02),
            _row("b", "auto", "l2-read", 1.5, 1.49, 1.51),
            # within noise: a's interval overlaps b's
            _row("a", "auto", "none", 1.10, 1.00, 1.20),
            _row("b", "auto", "none", 1.05, 0.95, 1.15),
        ]
    )
    t = choice_table(df).set_index(["rotating_requested", "flush"])
    assert t.loc[("1", "none"), "same_choice"] and t.loc[("1", "none"), "regret"] == 0
    cold = t.loc[("auto", "l2-read")]
    assert cold["best"] == "b" and cold["hot_pick"] == "a" and not cold["same_choice"]
    assert cold["regret"] == pytest.approx(2.0 / 1.5 - 1) and cold["distinguishable"]
    noisy = t.loc[("auto", "none")]
    assert not noisy["same_choice"] and not noisy["distinguishable"]
