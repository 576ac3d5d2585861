"""hipexplore.mann_whitney: the Mann–Whitney U test reported beside each verdict, against
independent computations (enumeration of every split, R's documented example, a permutation test)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from hipexplore.errors import ConfigError
from hipexplore.mann_whitney import mann_whitney_u


def brute_force_p(x, y) -> float:
    """Two-sided exact p by enumerating every split of the pooled values (no ties)."""
    pooled = np.r_[x, y]
    n1 = len(x)
    u_obs = sum(a > b for a in x for b in y)
    us = []
    for idx in itertools.combinations(range(len(pooled)), n1):
        xs = pooled[list(idx)]
        ys = np.delete(pooled, list(idx))
        us.append(sum(a > b for a in xs for b in ys))
    us = np.array(us)
    k = min(u_obs, n1 * len(y) - u_obs)
    return min(1.0, 2 * float(np.mean(us <= k)))


def test_exact_mann_whitney_matches_enumeration() -> None:
    rng = np.random.default_rng(3)
    for n1, n2 in [(3, 3), (4, 6), (5, 5), (7, 4)]:
        x, y = rng.normal(size=n1), rng.normal(0.8, size=n2)
        u, p = mann_whitney_u(x, y, method="exact")
        assert u == sum(a > b for a in x for b in y)
        assert p == pytest.approx(brute_force_p(x, y), abs=1e-12)


def test_mann_whitney_matches_the_r_documentation_example() -> None:
    # R: wilcox.test(x, y, alternative = "greater") -> W = 35, p-value = 0.1272 (Hollander & Wolfe)
    x = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46]
    y = [1.15, 0.88, 0.90, 0.74, 1.21]
    u, p = mann_whitney_u(x, y)
    assert u == 35
    assert p == pytest.approx(2 * 0.1272, abs=1e-3)
    assert mann_whitney_u([1, 2, 3], [4, 5, 6])[1] == pytest.approx(0.1)  # 2 of 20 splits are as extreme


def test_normal_approximation_with_ties_matches_a_permutation_test() -> None:
    rng = np.random.default_rng(7)
    x = np.round(rng.normal(0.0, 1, 40), 0)  # heavy ties: a timer's grid
    y = np.round(rng.normal(0.5, 1, 35), 0)
    u, p = mann_whitney_u(x, y, method="normal")
    pooled = np.r_[x, y]
    ranks = pd.Series(pooled).rank().to_numpy()
    mu = len(x) * len(y) / 2
    obs = abs(ranks[: len(x)].sum() - len(x) * (len(x) + 1) / 2 - mu)
    hits = 0
    for _ in range(20000):
        perm = rng.permutation(len(pooled))
        hits += abs(ranks[perm[: len(x)]].sum() - len(x) * (len(x) + 1) / 2 - mu) >= obs - 1e-9
    assert p == pytest.approx(hits / 20000, abs=0.015)
    assert mann_whitney_u([2.0] * 5, [2.0] * 7)[1] == 1.0  # all tied: no evidence
    with pytest.raises(ConfigError, match="no ties"):
        mann_whitney_u(x, y, method="exact")
    with pytest.raises(ConfigError, match="both sides"):
        mann_whitney_u([], [1.0])
