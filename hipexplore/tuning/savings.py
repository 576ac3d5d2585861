"""What the cache saved, against the real baselines, with 95% intervals over repeated passes (issue 45).

Why: a ratio of the fastest passes (the replay's ``memory / ideal``) hides how much the passes
vary, and "saved against the cache off" no longer answers the reviewer's question once the
compiler caches on its own. Four comparisons, each over the wall times of repeated, alternated
passes (``tuning.baselines``), through the review rule's own machinery
(``verdicts.compare_scenarios``: the saving's interval a bootstrap of the pass means, the ratio's
Welch's t over log pass times, the verdict at the review threshold):

* ``saved_vs_cold``: against ``cold``, every compiler cache off (the true cost of the list);
* ``saved_beyond_compiler_cache``: against ``compiler-cache``, hipexplore's cache off and the
  compiler's own on and warm from an earlier pass of the same list (what a user gets who installs
  nothing);
* ``warm_beyond_compiler_cache``: against ``compiler-cache`` too, but with hipexplore's cache warm
  as well (``disk-warm``: its disk tier filled by an earlier pass, in a new cache object), so both
  caches start the pass in the same state -- the second run of a flow. The one above sets a cache
  that starts cold in its process against the compiler's warm one (the first run after an earlier
  flow); a replay without ``--cache disk``/``all`` has no ``disk-warm`` pass and says so;
* ``memory_vs_ideal``: the memory pass against each unique kernel compiled once.

Seconds are base minus the cache's pass (positive: saved), the ratio is the cache's pass over the
base (below 1: faster). The ratio's interval is ``compare_scenarios``'s (Welch's t over the log pass
times); the seconds' is the same interval in seconds of the base's mean (``base × (1 − ratio)``), so
the two never disagree. An interval needs two passes a side; with one it is None, and said so.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import pandas as pd

#: the comparisons a replay reports: (name, base scenario, the cache's scenario or None for the primary)
COMPARISONS = (
    ("saved_vs_cold", "cold", None),
    ("saved_beyond_compiler_cache", "compiler-cache", None),
    ("warm_beyond_compiler_cache", "compiler-cache", "disk-warm"),
    ("memory_vs_ideal", "ideal", "memory"),
)


def pass_walls(frame: pd.DataFrame, jobs: int | None = None) -> dict[str, list[float]]:
    """Each scenario's pass wall times, in round order, from a replay frame: ``pass_seconds``
    where it was recorded, else the pass's summed lookup seconds (frames recorded before it)."""
    if frame.empty or "scenario" not in frame.columns:
        return {}
    if jobs is not None and "jobs" in frame.columns:
        frame = frame[frame["jobs"] == jobs]
    keys = [c for c in ("scenario", "jobs", "round") if c in frame.columns]
    out: dict[str, list[float]] = {}
    for key, g in frame.groupby(keys, sort=True):
        scenario = key[0] if isinstance(key, tuple) else key
        wall = g["pass_seconds"].iloc[0] if "pass_seconds" in g.columns else math.nan
        wall = float(wall) if wall is not None and math.isfinite(float(wall)) else float(g["lookup_seconds"].sum())
        out.setdefault(str(scenario), []).append(wall)
    return out


def _frame(walls: Mapping[str, Sequence[float]]) -> pd.DataFrame:
    """One row per pass, its wall as ``lookup_seconds``: what ``compare_scenarios`` sums per pass."""
    rows = [
        {"scenario": s, "round": i, "jobs": 0, "lookup_seconds": float(w)}
        for s, ws in walls.items()
        for i, w in enumerate(ws)
    ]
    return pd.DataFrame(rows)


def comparison(walls: Mapping[str, Sequence[float]], base: str, new: str, level: float = 0.95) -> dict[str, Any] | None:
    """``base`` against ``new`` over their passes: seconds saved and the time ratio, each with its
    interval (None with fewer than two passes a side), the verdict; None when a side was not measured."""
    from ..verdict_scenarios import compare_scenarios

    b, n = list(walls.get(base, ())), list(walls.get(new, ()))
    if not b or not n:
        return None
    row = compare_scenarios(_frame({base: b, new: n}), base, new=new, level=level).iloc[0]
    both = len(b) >= 2 and len(n) >= 2
    base_s, lo, hi = float(row["base_s"]), float(row["ratio_ci_low"]), float(row["ratio_ci_high"])
    return {
        "base": base,
        "scenario": new,
        "base_s": base_s,
        "new_s": float(row["new_s"]),
        "seconds": float(row["saved_s"]),
        # the ratio's interval in seconds of the base's mean: one interval, two units (a bootstrap of
        # 2-4 pass means is narrower than the passes allow: verdicts._pass_ratio_ci)
        "seconds_ci": [base_s * (1 - hi), base_s * (1 - lo)] if both else None,
        "ratio": float(row["ratio"]),
        "ratio_ci": [lo, hi] if both else None,
        "verdict": str(row["verdict"]) if both else "",
        "passes": [len(b), len(n)],
        "interval_over": str(row["interval_over"]) if both else "no interval: it needs two or more passes a side",
    }


def savings(walls: Mapping[str, Sequence[float]], primary: str) -> dict[str, Any]:
    """The comparisons (``COMPARISONS``) of a replay whose cache's pass is ``primary``."""
    return {name: comparison(walls, base, new or primary) for name, base, new in COMPARISONS}


def interval_text(c: Mapping[str, Any] | None, what: str = "seconds") -> str:
    """``12.3 s [10.1, 14.0]`` / ``0.52× [0.48, 0.57]`` (``-`` when not measured)."""
    if not c:
        return "-"
    value, ci = c[what], c[f"{what}_ci"]
    if what == "seconds":
        return f"{value:.3g} s" + (f" [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else " (1 pass)")
    return f"{value:.3f}x" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else " (1 pass)")


__all__ = ["COMPARISONS", "comparison", "interval_text", "pass_walls", "savings"]
