"""The candidates ranked: one row per (problem, candidate, rotating, flush), its rank among the
candidates of that problem under that setting, and whether the rotating count or the flush changed
the pick (``choice_table``).

Why apart from the measuring: the candidates are measured by the one pipeline (``bench``: units,
flushes, rotating sets, the cold reference, throttle rules; ``tuning.workload`` makes each
candidate's pipeline a workload); tuning only turns its summary rows into a ranking.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..schema import Configuration

RESULT_COLUMNS = (
    "run_id",
    "device",
    "device_name",
    "problem",
    "candidate",
    "m",
    "n",
    "k",
    "split",
    "rotating",
    "rotating_requested",
    "flush",
    "footprint_bytes",
    "n_samples",
    "median_s",
    "mean_s",
    "min_s",
    "p5_s",
    "p95_s",
    "iqr_rel",
    "cv",
    "ci_low_s",
    "ci_high_s",
    "gflops",
    "rank",
    "best",
    "rel_error",
    "warning",
)
_STATS = ("median_s", "mean_s", "min_s", "p5_s", "p95_s", "iqr_rel", "cv", "ci_low_s", "ci_high_s")


def candidate_rows(summary: pd.DataFrame, info: Any, names: dict[str, tuple[Any, Any, int]]) -> list[dict[str, Any]]:
    """A sweep's summary rows of candidates as result rows (``names``: workload name -> (problem,
    its candidate's name, its split)); the cold references are left out (they rank nothing)."""
    rows = []
    for r in summary.to_dict("records"):
        c = Configuration.of(r)
        if c.is_reference or c.kernel not in names:
            continue
        prob, cand, split = names[c.kernel]
        shape = prob.shape
        err = info.measured.verify.get(f"{c.kernel}.{c.size}", math.nan)  # the output check's relative error
        rows.append(
            {
                "run_id": r["run_id"],
                "device": r["device"],
                "device_name": r["device_name"],
                "problem": prob.name,
                "candidate": cand,
                "m": shape.m,
                "n": shape.n,
                "k": shape.k,
                "split": split,
                "rotating": r["rotating"],
                "rotating_requested": c.rotating,
                "flush": c.flush,
                "footprint_bytes": r["footprint_bytes"],
                "n_samples": r["n"],
                **{s: r[s] for s in _STATS},
                "gflops": 2.0 * shape.m * shape.n * shape.k / r["median_s"] / 1e9,
                "rel_error": float(err),
                "warning": r["warning"] or "",
            }
        )
    return rows


def ranked(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The candidates' result rows as one frame, ranked by median within (problem, rotating, flush)."""
    df = pd.DataFrame(rows)
    df["rank"] = df.groupby(["problem", *Configuration.CACHE_COLUMNS])["median_s"].rank(method="min").astype("int64")
    df["best"] = df["rank"] == 1
    return df[list(RESULT_COLUMNS)]


def choice_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per problem and setting: the winner, its time, and what the winner under the reference
    setting (the first rotating count with flush 'none', i.e. hot caches) costs under this one.

    ``same_choice`` False means the rotating count or the flush changed the pick; ``regret`` is how
    much slower the hot-cache pick runs under this setting than this setting's own pick;
    ``distinguishable`` says whether the two picks' 95% intervals of the median are disjoint (else
    the change is within noise)."""
    rows = []
    for prob, g_ in results.groupby("problem", sort=False):
        settings = list(dict.fromkeys(zip(g_["rotating_requested"], g_["flush"])))
        ref = settings[0]
        ref_rows = g_[(g_["rotating_requested"] == ref[0]) & (g_["flush"] == ref[1])]
        ref_pick = ref_rows.loc[ref_rows["median_s"].idxmin(), "candidate"]
        for rr, fl in settings:
            s = g_[(g_["rotating_requested"] == rr) & (g_["flush"] == fl)]
            best = s.loc[s["median_s"].idxmin()]
            ref_row = s.loc[s["candidate"] == ref_pick].iloc[0]
            ref_time = float(ref_row["median_s"])
            rows.append(
                {
                    "problem": prob,
                    "rotating_requested": rr,
                    "rotating": int(best["rotating"]),
                    "flush": fl,
                    "best": best["candidate"],
                    "best_median_s": float(best["median_s"]),
                    "hot_pick": ref_pick,
                    "hot_pick_median_s": ref_time,
                    "same_choice": best["candidate"] == ref_pick,
                    "regret": ref_time / float(best["median_s"]) - 1.0,
                    "runner_up_gap": _runner_up_gap(s),
                    # the change of pick is real only when the confidence intervals do not overlap
                    "distinguishable": bool(
                        best["candidate"] != ref_pick and float(ref_row["ci_low_s"]) > float(best["ci_high_s"])
                    ),
                }
            )
    return pd.DataFrame(rows)


def _runner_up_gap(s: pd.DataFrame) -> float:
    t = np.sort(s["median_s"].to_numpy())
    return float(t[1] / t[0] - 1.0) if len(t) > 1 else math.nan


__all__ = ["RESULT_COLUMNS", "candidate_rows", "choice_table", "ranked"]
