"""When a bimodal flag matters: two modes far enough apart to move the median by more than its interval.

Why: Sarle's coefficient flags a distribution with two modes, and on a real machine nearly every
configuration has some (a launch parity, a clock step, a preempted chunk): the H200 and this VM
flagged most rows "bimodal", which teaches a reader to skip the flag. What makes two modes matter
is whether the median can jump between them: the median sits in the mode holding the larger share,
and a run whose shares tip the other way reads the other mode's median. If the two modes' medians
lie further apart than the 95% interval of the median is wide, the interval does not cover that
jump, and the row says so, with both modes; closer modes are inside the interval's own story and
the row stays quiet (``bimodality`` keeps the coefficient for anyone who looks).

The modes are split where the sorted samples divide into two groups with the least spread within
them (Otsu's threshold on the samples themselves: no bins, no seed).
"""

from __future__ import annotations

import re

import numpy as np

from .stats import Measurement

#: the flag ``stats.Measurement.warnings`` writes (replaced here by one that says why it matters)
_STATS_FLAG = re.compile(r"bimodal: Sarle's coefficient [^(]*\(two modes; the median may sit between them\)")


def split(samples: np.ndarray) -> tuple[float, float, float]:
    """(median of the lower mode, median of the upper mode, share of samples in the upper mode)."""
    x = np.sort(np.asarray(samples, dtype=np.float64))
    n = x.size
    if n < 4:
        return float(np.median(x)), float(np.median(x)), 0.0
    csum, csq = np.cumsum(x), np.cumsum(x * x)
    k = np.arange(1, n)  # the lower group is x[:k]
    lo_var = csq[k - 1] - csum[k - 1] ** 2 / k
    hi_var = (csq[-1] - csq[k - 1]) - (csum[-1] - csum[k - 1]) ** 2 / (n - k)
    cut = int(k[np.argmin(lo_var + hi_var)])
    return float(np.median(x[:cut])), float(np.median(x[cut:])), (n - cut) / n


def bimodal_note(m: Measurement, ci_low: float, ci_high: float) -> str:
    """The row's bimodal warning, or "" when the modes cannot move the median beyond its interval."""
    if not m.bimodal or not np.isfinite(ci_high - ci_low):
        return ""
    lo, hi, share = split(m.samples)
    gap, width = hi - lo, ci_high - ci_low
    if gap <= width:
        return ""
    return (
        f"bimodal: modes at {lo * 1e6:.3f} and {hi * 1e6:.3f} us ({share:.0%} in the upper), {gap * 1e6:.3f} us apart, "
        f"wider than the 95% interval ({width * 1e6:.3f} us): another run may read the other mode"
    )


def warning_with_modes(warning: str, m: Measurement, ci_low: float, ci_high: float) -> str:
    """``warning`` (a summary row's) with the statistics' bimodal flag kept only where it matters."""
    parts = [p.strip() for p in _STATS_FLAG.sub("", warning or "").split(";") if p.strip()]
    note = bimodal_note(m, ci_low, ci_high)
    return "; ".join([*parts, *([note] if note else [])])


__all__ = ["bimodal_note", "split", "warning_with_modes"]
