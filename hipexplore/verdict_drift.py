"""Is the paired ratio of an interleaved run stationary? The drift check that turns a decided
verdict ``undecided`` (``verdicts``' module docstring: the rule's last case).

Why its own check: the between-unit interval covers a shift from one unit to the next, not a ratio
that keeps moving while the units run (a load that comes and goes, a clock that sags under one
kernel); no interval over such a run describes one difference.
"""

from __future__ import annotations

import math

import numpy as np

from .bench.levels import paired_windows, trend
from .bench.stats import Measurement


#: A paired ratio whose Mann-Kendall trend over the run has a p-value below this, and that moved by
#: more than half the threshold from the first third of each unit to the last, is not stationary: a
#: decided verdict becomes ``undecided`` (``verdicts``' module docstring).
DRIFT_P = 0.001


def drift_check(new: Measurement, base: Measurement, threshold: float) -> tuple[float, str]:
    """(p-value of a trend in the paired log ratios over the run, a note when it undoes a verdict).

    The trend is looked for within units: each window's log ratio less its unit's median, in time
    order. A shift from one unit to the next (placement, process) is what the between-unit
    interval already covers; a ratio that keeps moving while the units run (a load that comes and
    goes, a clock that sags under one kernel) is not, and no interval over it describes one
    difference."""
    windows, units = paired_windows(new, base, with_units=True)
    keep = [
        (math.log(np.median(n) / np.median(b)), u)
        for (b, n), u in zip(windows, units)
        if b.size and n.size and np.median(b) > 0 and np.median(n) > 0
    ]
    if len(keep) < 9:
        return math.nan, ""
    logs = np.array([v for v, _ in keep])
    unit = np.array([u for _, u in keep])
    resid, pos = logs.copy(), np.zeros(logs.size)
    for u in np.unique(unit):
        at = unit == u
        resid[at] -= np.median(logs[at])
        pos[at] = np.arange(at.sum()) / max(1, at.sum() - 1)  # where in its unit: 0 first, 1 last
    tau, p = trend(resid, order=pos) if np.unique(unit).size > 1 else trend(resid)
    if not p < DRIFT_P:
        return p, ""
    first, last = math.exp(float(np.median(resid[pos < 1 / 3]))), math.exp(float(np.median(resid[pos > 2 / 3])))
    if abs(last - first) <= threshold / 2:
        return p, ""
    return p, (
        f"not stationary: within its units the paired ratio moved by {last / first - 1:+.1%} from the "
        f"first third of each unit to the last (Mann-Kendall tau {tau:+.2f}, p = {p:.1g}); the difference "
        f"depends on when it was measured (load, clocks, heat): rerun on a quiet machine"
    )


__all__ = ["DRIFT_P", "drift_check"]
