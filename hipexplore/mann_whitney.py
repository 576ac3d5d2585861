"""The Mann–Whitney U test, reported beside each verdict as information (``verdicts`` decides on
an interval, not on this p-value: with thousands of chunk-correlated samples any difference is
"significant"). Normal approximation with tie correction, exact for small samples without ties."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .errors import ConfigError

_EXACT_MAX = 400  # exact U distribution up to n1 * n2 of this size (no ties)


def _ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mid-ranks (1-based) and the sizes of the groups of tied values."""
    order = np.argsort(values, kind="mergesort")
    sorted_v = values[order]
    starts = np.flatnonzero(np.r_[True, sorted_v[1:] != sorted_v[:-1]])
    sizes = np.diff(np.r_[starts, sorted_v.size])
    mid = starts + (sizes + 1) / 2.0
    ranks = np.empty(values.size)
    ranks[order] = np.repeat(mid, sizes)
    return ranks, sizes


def _exact_cdf(n1: int, n2: int) -> np.ndarray:
    """P(U <= u) for u = 0..n1*n2 under H0, no ties: counts of U by the recursion
    f(n1, n2, u) = f(n1 - 1, n2, u - n2) + f(n1, n2 - 1, u)."""
    # table[j][u]: number of arrangements of i x-values and j y-values with U_x = u
    prev = [np.ones(1)] + [np.ones(1) for _ in range(n2)]  # i = 0: U = 0 only
    for i in range(1, n1 + 1):
        cur = [np.ones(1)]  # j = 0: U = 0 only
        for j in range(1, n2 + 1):
            a = np.r_[np.zeros(j), prev[j]]  # x is largest: adds j
            b = cur[j - 1]
            m = max(a.size, b.size)
            cur.append(np.pad(a, (0, m - a.size)) + np.pad(b, (0, m - b.size)))
        prev = cur
    counts = prev[n2]
    return np.cumsum(counts) / counts.sum()


def mann_whitney_u(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *, method: str = "auto"
) -> tuple[float, float]:
    """(U of ``x``, two-sided p-value) of the Mann–Whitney U test.

    ``method``: ``exact`` (the exact null distribution; no ties allowed), ``normal`` (normal
    approximation with the tie correction of the variance and a continuity correction of 0.5) or
    ``auto`` (exact when there are no ties and n1 * n2 <= 400, else normal).
    """
    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    if a.size == 0 or b.size == 0:
        raise ConfigError(f"the Mann-Whitney test needs samples on both sides; got {a.size} and {b.size}")
    if method not in ("auto", "exact", "normal"):
        raise ConfigError(f"method must be 'auto', 'exact' or 'normal'; got {method!r}")
    n1, n2 = a.size, b.size
    ranks, ties = _ranks(np.r_[a, b])
    u = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    tied = bool(np.any(ties > 1))
    if method == "exact" and tied:
        raise ConfigError("the exact Mann-Whitney distribution assumes no ties; use method='normal'")
    if method == "exact" or (method == "auto" and not tied and n1 * n2 <= _EXACT_MAX):
        cdf = _exact_cdf(n1, n2)
        k = int(round(min(u, n1 * n2 - u)))
        return u, float(min(1.0, 2 * cdf[k]))
    n = n1 + n2
    mu = n1 * n2 / 2
    var = n1 * n2 / 12 * ((n + 1) - float(np.sum(ties**3 - ties)) / (n * (n - 1)))
    if var <= 0:
        return u, 1.0
    z = (abs(u - mu) - 0.5) / math.sqrt(var)
    return u, float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))


__all__ = ["mann_whitney_u"]
