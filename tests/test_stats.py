"""Measurement statistics and stop rules, on seeded synthetic samples and a fake clock."""
from __future__ import annotations

import numpy as np
import pytest

from hipexplore.bench.stats import Measurement, StopRule, measure_adaptively
from hipexplore.errors import ConfigError


def _noisy(n: int, median: float = 5e-6, rel: float = 0.02, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return median * (1 + rel * rng.standard_normal(n))


def test_summary_matches_numpy() -> None:
    x = _noisy(1000)
    m = Measurement(x, label="t")
    assert m.n == 1000
    assert m.median == pytest.approx(np.median(x))
    assert m.mean == pytest.approx(np.mean(x))
    assert m.min == pytest.approx(x.min())
    assert m.p5 == pytest.approx(np.percentile(x, 5)) and m.p95 == pytest.approx(np.percentile(x, 95))
    q1, q3 = np.percentile(x, [25, 75])
    assert m.iqr_rel == pytest.approx((q3 - q1) / np.median(x))
    assert m.cv == pytest.approx(np.std(x, ddof=1) / np.mean(x))
    s = m.summary()
    assert set(s) == {"n", "median_s", "mean_s", "min_s", "p5_s", "p95_s", "iqr_rel", "cv", "ci_low_s", "ci_high_s", "n_outliers",
                      "bimodality", "warning"}
    assert np.array_equal(m.samples, x)  # raw samples kept


def test_bootstrap_ci_covers_the_true_median_and_is_reproducible() -> None:
    covered = 0
    for seed in range(40):
        m = Measurement(_noisy(200, seed=seed), seed=seed)
        lo, hi = m.bootstrap_ci()
        assert lo <= m.median <= hi
        covered += lo <= 5e-6 <= hi
    assert covered >= 34  # ~95% nominal coverage; 34/40 leaves room for seeded chance
    m = Measurement(_noisy(200))
    assert m.bootstrap_ci() == m.bootstrap_ci()
    wide = Measurement(_noisy(200, rel=0.2)).bootstrap_ci()
    narrow = Measurement(_noisy(200, rel=0.01)).bootstrap_ci()
    assert wide[1] - wide[0] > 5 * (narrow[1] - narrow[0])


def test_outliers_are_counted_not_dropped() -> None:
    base = 5e-6 * (1 + 0.01 * np.random.default_rng(2).uniform(-1, 1, 100))  # bounded: no natural Tukey outliers
    x = np.concatenate([base, [1e-3, 2e-3]])
    m = Measurement(x)
    assert m.n_outliers == 2 and m.n == 102
    assert m.outliers()[-2:].all()


def test_noise_warnings_at_10_and_25_percent() -> None:
    assert Measurement(_noisy(500, rel=0.01)).warnings() == []
    w = Measurement(_noisy(500, rel=0.10)).warnings()  # IQR/median ~ 1.35 * 10% = 13.5%
    assert len(w) == 1 and w[0].startswith("noisy")
    w = Measurement(_noisy(500, rel=0.30)).warnings()
    assert len(w) == 1 and w[0].startswith("very noisy")
    assert Measurement([1.0], notes=["capped"]).warnings() == ["capped"]


def test_bad_samples_are_rejected() -> None:
    with pytest.raises(ConfigError, match="at least one sample"):
        Measurement([])
    with pytest.raises(ConfigError, match="NaN"):
        Measurement([1.0, float("nan")])


def test_fixed_stop_rule_takes_exactly_n() -> None:
    rng = np.random.default_rng(0)
    samples, why = measure_adaptively(lambda k: _noisy(k, seed=int(rng.integers(1 << 30))), StopRule(iterations=37), chunk=10)
    assert samples.size == 37 and why == "fixed iteration count"


def test_adaptive_stops_when_converged() -> None:
    rule = StopRule(min_samples=20, min_time_s=0.0, target_cv=0.01, timeout_s=100)
    rng = np.random.default_rng(5)
    samples, why = measure_adaptively(lambda k: 1e-5 * (1 + 0.002 * rng.standard_normal(k)), rule, chunk=8)
    assert why.startswith("converged") and 20 <= samples.size <= 27


def test_adaptive_times_out_on_noise_with_a_fake_clock() -> None:
    now = [0.0]

    def clock() -> float:
        return now[0]

    def take(k: int) -> np.ndarray:
        now[0] += 0.5  # each batch costs half a (fake) second
        return _noisy(k, rel=0.5, seed=int(now[0] * 10))

    rule = StopRule(min_samples=10, target_cv=0.001, timeout_s=3.0)
    samples, why = measure_adaptively(take, rule, chunk=16, clock=clock)
    assert why.startswith("timeout") and samples.size == 16 * 6


def test_adaptive_needs_min_time_and_max_samples_caps() -> None:
    rule = StopRule(min_samples=2, min_time_s=1e-3, target_cv=0.5, timeout_s=100, max_samples=50)
    samples, why = measure_adaptively(lambda k: np.full(k, 1e-5), rule, chunk=7)
    assert samples.sum() >= 1e-3 - 1e-12 or samples.size >= 50
    rule = StopRule(min_samples=2, min_time_s=10.0, target_cv=0.5, timeout_s=100, max_samples=30)
    samples, why = measure_adaptively(lambda k: np.full(k, 1e-5), rule, chunk=7)
    assert samples.size >= 30 and why.startswith("max_samples")


def test_stop_rule_validation() -> None:
    with pytest.raises(ConfigError, match="iterations"):
        StopRule(iterations=0)
    with pytest.raises(ConfigError, match="min_samples"):
        StopRule(min_samples=10, max_samples=5)
    assert StopRule().at_least(40).min_samples == 40
    assert StopRule(iterations=5).at_least(40).iterations == 5
