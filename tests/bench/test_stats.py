"""Measurement statistics and stop rules, on seeded synthetic samples and a fake clock."""

from __future__ import annotations

import numpy as np
import pytest

from hipexplore.bench.stats import bimodality_coefficient, Measurement, StopRule, measure_adaptively
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
    assert set(s) == {
        "n",
        "median_s",
        "mean_s",
        "min_s",
        "p5_s",
        "p95_s",
        "iqr_rel",
        "cv",
        "ci_low_s",
        "ci_high_s",
        "n_outliers",
        "bimodality",
        "warning",
    }
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
    samples, why = measure_adaptively(
        lambda k: _noisy(k, seed=int(rng.integers(1 << 30))), StopRule(iterations=37), chunk=10
    )
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

    # no rule can converge (min_wall_s lets them run after 0.5 fake seconds): the timeout decides
    rule = StopRule(min_samples=10, target_cv=0.001, target_ci=1e-9, stable_noise=1e-9, timeout_s=3.0)
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


# --- oracles that tell a right statistic from a near miss (issue 17) -----------------------------


def test_bootstrap_ci_of_the_median_has_the_95_percent_width_and_coverage() -> None:
    """For normal samples of known sigma, the median's standard error is sqrt(pi/2) sigma / sqrt(n)
    (1.2533 sigma / sqrt(n)), so a 95% CI is 2 x 1.96 x that wide on average and covers the true
    median in ~95% of draws. A 99.5% interval is 1.43x as wide and covers ~99.5%; a CI of the mean
    is 1/1.2533 = 0.80x as wide; the sample min-max is ~10x as wide."""
    n, sigma, true_median, draws = 200, 1.0, 10.0, 200
    expected_width = 2 * 1.959964 * np.sqrt(np.pi / 2) * sigma / np.sqrt(n)
    widths, covered = [], 0
    for seed in range(draws):
        x = true_median + sigma * np.random.default_rng(1000 + seed).standard_normal(n)
        s = Measurement(x, seed=seed).summary()  # what the sweep reports
        lo, hi = s["ci_low_s"], s["ci_high_s"]
        widths.append(hi - lo)
        covered += lo <= true_median <= hi
    ratio = float(np.mean(widths)) / expected_width
    assert 0.9 < ratio < 1.1, f"mean CI width is {ratio:.3f} x the 95% width of a median CI"
    assert 0.90 <= covered / draws <= 0.99, f"coverage {covered}/{draws} is not ~95%"


def test_bootstrap_ci_is_of_the_median_not_the_mean_on_skewed_data() -> None:
    # exponential(1): median ln 2 = 0.693, mean 1.0; n = 400 puts the two CIs far apart
    m = Measurement(np.random.default_rng(7).exponential(1.0, 400), seed=3)
    lo, hi = m.bootstrap_ci()
    assert lo <= np.log(2) <= hi and lo <= m.median <= hi
    assert hi < 0.9 < m.mean  # a CI of the mean would sit around 1.0
    lo99, hi99 = m.bootstrap_ci(level=0.99)
    assert lo99 <= lo and hi <= hi99 and (hi99 - lo99) > (hi - lo)


def test_tukey_fences_are_at_1_5_iqr() -> None:
    # 1001 evenly spaced points: Q1 = 0.25, Q3 = 0.75, IQR = 0.5, fences at -0.5 and 1.5; the six
    # added points move the quartiles by < 0.002, far less than the 0.025 margins below
    base = np.linspace(0.0, 1.0, 1001)
    probes = {
        0.75 + 1.45 * 0.5: False,  # just inside the upper fence
        0.75 + 1.55 * 0.5: True,  # just outside it
        0.75 + 2.9 * 0.5: True,  # outside 1.5 IQR, inside 3 IQR
        0.25 - 1.45 * 0.5: False,
        0.25 - 1.55 * 0.5: True,
        0.25 - 2.9 * 0.5: True,
    }
    x = np.concatenate([base, list(probes)])
    m = Measurement(x + 10.0)  # shifted so every sample is a positive time
    mask = m.outliers()
    assert not mask[: base.size].any()
    assert list(mask[base.size :]) == list(probes.values())
    assert m.n_outliers == 4 and m.summary()["n_outliers"] == 4


def _rel_iqr(rel: float, median: float = 5e-6) -> np.ndarray:
    """1001 evenly spaced samples over median x [1 - rel, 1 + rel]: IQR / median is exactly ``rel``."""
    return median * np.linspace(1 - rel, 1 + rel, 1001)


@pytest.mark.parametrize(
    "rel, expected",
    [
        (0.095, None),
        (0.105, "noisy"),
        (0.245, "noisy"),
        (0.255, "very noisy"),
    ],
)
def test_noise_thresholds_probed_just_below_and_above(rel: float, expected: str | None) -> None:
    m = Measurement(_rel_iqr(rel))
    assert m.iqr_rel == pytest.approx(rel, rel=1e-9)
    w = m.warnings()
    if expected is None:
        assert w == [] and m.summary()["warning"] == ""
    else:
        assert len(w) == 1 and w[0].split(":")[0] == expected
        assert m.summary()["warning"] == w[0]


def test_stop_rule_timeout_stops_at_the_limit_not_after() -> None:
    rule = StopRule(min_samples=2, min_time_s=0.0, target_cv=1e-9, timeout_s=2.0)
    noisy = _noisy(50, rel=0.5)
    more, why = rule.remaining(noisy, 1.98)
    assert more > 0 and why == ""
    more, why = rule.remaining(noisy, 2.0)
    assert more == 0 and why.startswith("timeout 2 s")


def test_adaptive_timeout_with_a_fake_clock_is_within_one_batch() -> None:
    """Each batch advances a fake clock by 0.1 s: the loop stops at the first check at or past the
    3 s timeout, i.e. after 30 batches (a timeout checked at 10x its limit would take 300)."""
    now = [0.0]

    def take(k: int) -> np.ndarray:
        now[0] += 0.1
        return _noisy(k, rel=0.5, seed=len(str(now[0])) + int(now[0] * 10))

    rule = StopRule(min_samples=10, target_cv=1e-6, target_ci=1e-9, stable_noise=1e-9, timeout_s=3.0)
    samples, why = measure_adaptively(take, rule, chunk=8, clock=lambda: now[0])
    assert why.startswith("timeout 3 s")
    assert 3.0 <= now[0] <= 3.0 + 0.1 + 1e-9 and samples.size == 8 * round(now[0] / 0.1)


def test_summary_reports_each_statistic_under_its_own_name() -> None:
    x = np.random.default_rng(11).gamma(2.0, 1e-6, 301)  # skewed: min, p5, median, mean, p95, max all differ
    m = Measurement(x, seed=4)
    q1, q3 = np.percentile(x, [25, 75])
    lo, hi = m.bootstrap_ci()
    want = {
        "n": 301,
        "median_s": np.median(x),
        "mean_s": np.mean(x),
        "min_s": x.min(),
        "p5_s": np.percentile(x, 5),
        "p95_s": np.percentile(x, 95),
        "iqr_rel": (q3 - q1) / np.median(x),
        "cv": np.std(x, ddof=1) / np.mean(x),
        "ci_low_s": lo,
        "ci_high_s": hi,
        "n_outliers": int(((x < q1 - 1.5 * (q3 - q1)) | (x > q3 + 1.5 * (q3 - q1))).sum()),
        "bimodality": bimodality_coefficient(x),
    }
    s = m.summary()
    assert set(s) == set(want) | {"warning"}
    for key, value in want.items():
        assert s[key] == pytest.approx(value, rel=1e-12), key
    assert s["warning"] == "; ".join(m.warnings()) != ""  # gamma(2) has IQR/median ~ 0.9: very noisy
    assert s["n_outliers"] > 0 and lo < s["median_s"] < hi


def test_bootstrap_ci_of_two_samples_is_an_interval_and_levels_are_checked() -> None:
    assert Measurement([2e-6]).bootstrap_ci() == (2e-6, 2e-6)
    lo, hi = Measurement([1e-6, 3e-6]).bootstrap_ci()  # resampled medians: 1, 2 or 3 us
    assert lo == pytest.approx(1e-6) and hi == pytest.approx(3e-6)
    for bad in (0.0, 1.0, 1.5, -0.1):
        with pytest.raises(ConfigError, match="confidence level"):
            Measurement([1e-6, 2e-6]).bootstrap_ci(level=bad)


def _with_cv(cv: float, n: int = 20) -> np.ndarray:
    """n samples around 1 ms whose sample stdev / mean is exactly ``cv``."""
    z = np.random.default_rng(3).standard_normal(n)
    z = (z - z.mean()) / z.std(ddof=1)
    return 1e-3 * (1 + cv * z)


def test_stop_rule_converges_at_its_target_cv_and_not_before() -> None:
    rule = StopRule(min_samples=10, min_time_s=0.0, target_cv=0.01, timeout_s=100)
    more, why = rule.remaining(_with_cv(0.0099), 1.0)
    assert more == 0 and why == "converged: rel stdev 0.99% <= 1.00%"
    more, why = rule.remaining(_with_cv(0.0101), 1.0)
    assert more >= 1 and why == ""
    # the documented defaults: 0.5% relative stdev over at least 20 samples
    default = StopRule(min_time_s=0.0)
    more, why = default.remaining(_with_cv(0.0049, 20), 0.1)
    assert more == 0 and why.startswith("converged: rel stdev")
    assert default.remaining(_with_cv(0.0051, 20), 0.1)[0] >= 1
    assert default.remaining(_with_cv(0.0, 19)[:19], 0.1) == (1, "")  # 19 identical samples: one more


def test_stop_rule_counts_what_is_missing_and_caps_at_max_samples() -> None:
    rule = StopRule(min_samples=12, min_time_s=0.0, target_cv=0.5, timeout_s=100, max_samples=40)
    assert rule.remaining(np.empty(0), 0.0) == (12, "")
    assert rule.remaining(np.full(5, 1e-6), 0.0) == (7, "")
    more, why = rule.remaining(np.full(12, 1e-6), 0.0)
    assert more == 0 and why.startswith("converged")
    noisy = _noisy(40, rel=2.0, seed=9)
    more, why = rule.remaining(noisy, 0.0)
    assert more == 0 and why.startswith("max_samples 40 reached")
    assert rule.remaining(noisy[:39], 0.0) == (1, "")


def test_at_least_raises_min_and_max_samples_of_adaptive_rules_only() -> None:
    rule = StopRule(min_samples=10, max_samples=20)
    grown = rule.at_least(40)
    assert (grown.min_samples, grown.max_samples) == (40, 40)
    assert rule.at_least(5) is rule
    fixed = StopRule(iterations=5)
    assert fixed.at_least(40) is fixed


def test_a_short_kernel_behind_a_long_flush_converges_on_wall_time() -> None:
    # 31 us kernels, each after a ~7 ms flush (the host's l2-read at 64 KiB): 0.05 s of kernel time
    # would need 1600 samples = 11 s of wall time, past the 10 s timeout; min_wall_s lets the rules run
    rng = np.random.default_rng(0)
    now = [0.0]

    def clock() -> float:
        return now[0]

    def take(k: int) -> np.ndarray:
        now[0] += k * 7e-3
        return 31e-6 * (1 + 0.002 * rng.standard_normal(k))

    samples, why = measure_adaptively(take, StopRule(), chunk=4, clock=clock)
    assert why.startswith("converged"), why
    assert now[0] < StopRule().timeout_s / 2 and samples.sum() < StopRule().min_time_s
    now[0] = 0.0
    samples, why = measure_adaptively(take, StopRule(min_wall_s=1e9), chunk=4, clock=clock)
    assert why.startswith("timeout")  # without the wall-time minimum: the old behaviour
    with pytest.raises(ConfigError, match="min_wall_s must be a finite number of seconds >= 0, got -1"):
        StopRule(min_wall_s=-1)


def test_the_interval_rule_waits_for_enough_blocks_to_mean_anything():
    """Chunks of the same 16 values: every bootstrap resample has the same median. With 2 blocks of
    host samples such an interval had width 0 and a fresh-clone CI run stopped a never-converging
    rule on it; the interval rule is not even evaluated below MIN_CI_BLOCKS blocks, and is from
    there on."""
    import math

    from hipexplore.bench.stats import MIN_CI_BLOCKS, StopTracker

    rule = StopRule(
        min_samples=2,
        min_time_s=0.0,
        target_ci=1e-12,
        target_cv=1e-12,
        stable_noise=1e-12,
        noise_window=2,
        timeout_s=100.0,
        max_samples=10**8,
    )
    chunk = (np.arange(16) + 10.0) * 1e-6
    tracker = StopTracker(rule)
    assert MIN_CI_BLOCKS == 8
    for k in range(1, 8):  # 1..7 blocks (the CI run that stopped had 2)
        x = np.tile(chunk, k)
        more, why = tracker.check(x, 0.1, np.repeat(np.arange(k), 16))
        assert more > 0, (k, why)
    assert math.isnan(tracker.last_ci_rel)  # never evaluated on fewer blocks
    x = np.tile(chunk, 9)
    tracker.check(x, 0.2, np.repeat(np.arange(9), 16))
    assert math.isfinite(tracker.last_ci_rel)  # evaluated once there are enough blocks


def test_block_bootstrap_medians_are_exactly_those_of_the_concatenated_draws() -> None:
    """The vectorised resampled medians (bench.stats.resampled_medians: a window of the sorted
    samples, whole scans where the middle falls outside it) against np.median of each resample's
    concatenated blocks, on ties, sorted series (the middle far off the window for some draws)
    and draws that skip whole halves."""
    from hipexplore.bench.stats import resampled_medians

    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(2, 2500))
        x = rng.normal(size=n).round(2)  # ties
        if trial % 3 == 0:
            x = np.sort(x)
        _, block = np.unique(np.sort(rng.integers(0, int(rng.integers(2, 40)), size=n)), return_inverse=True)
        k = int(block.max()) + 1
        counts = rng.integers(0, 3, size=(6, k))
        counts[:, 0] += 1
        if trial % 5 == 0:
            counts[:, : k // 2] = 0
            counts[:, -1] += 1
        want = [np.median(np.concatenate([np.repeat(x[block == b], c[b]) for b in range(k)])) for c in counts]
        assert np.array_equal(resampled_medians(x, block, counts), np.array(want)), trial


def test_two_stage_bootstrap_draws_groups_then_their_blocks() -> None:
    """Groups (units) of very different levels: every resampled median lies within the range of the
    drawn groups' levels, and over many resamples each group's level is drawn about as often."""
    levels = np.array([1.0, 2.0, 3.0])
    x = np.concatenate([lv + 1e-3 * np.arange(40) for lv in levels])
    m = Measurement(x, chunks=np.tile(np.arange(40) // 4, 3), groups=np.repeat([0, 1, 2], 40))
    meds = m.bootstrap_medians(3000, seed=1)
    assert meds.min() >= 1.0 and meds.max() <= 3.04
    # the median of 3 groups drawn with replacement is group 2's level with probability 13/27
    assert np.mean((meds > 1.9) & (meds < 2.1)) == pytest.approx(13 / 27, abs=0.03)


def test_the_interval_must_meet_its_target_at_two_evaluations_in_a_row() -> None:
    # narrow (a hit), then two modes with the median between them (a miss: the count starts again),
    # then narrow again (one hit): no stop yet. Counting hits that are not consecutive would stop
    # on the second lucky interval, which biases adaptive runs narrow (StopRule's docstring).
    rule = StopRule(
        min_samples=20, min_time_s=0, min_wall_s=0, target_ci=0.02, target_cv=1e-9, stable_noise=1e-9, timeout_s=1e9
    )
    rng = np.random.default_rng(0)
    a, b, c = (lv + 0.001 * rng.standard_normal(k) for lv, k in ((1.0, 40), (1.5, 40), (1.0, 60)))
    tracker = rule.tracker()
    seen = [tracker.check(x, 1.0) for x in (a, np.r_[a, b], np.r_[a, b, c])]
    assert [s[0] > 0 for s in seen] == [True, True, True], seen
    left, why = tracker.check(np.r_[a, b, c, 1.0 + 0.001 * rng.standard_normal(20)], 1.0)  # the second hit in a row
    assert left == 0 and why.startswith("converged: 95% CI of the median"), why


def test_a_measurements_repr_shows_its_median_in_microseconds():
    from hipexplore.bench.stats import Measurement

    text = repr(Measurement(np.array([1e-6, 2e-6, 3e-6]), label="k"))
    assert text.startswith("Measurement('k', n=3, median=2.000 us, ")


def test_the_stateless_stop_check_uses_the_chunks_it_is_given():
    """Why: ``StopRule.remaining`` is the tracker's check in one call; a timeout's reason reports
    the interval of the median, which with chunks is the block bootstrap's (wider here: each chunk
    sits at its own level)."""
    rule = StopRule(min_samples=10, min_time_s=0.0, timeout_s=1.0, target_ci=1e-9, target_cv=1e-9)
    rng = np.random.default_rng(3)
    chunks = np.repeat(np.arange(6), 10)
    x = 1e-3 * (1 + 0.05 * chunks + 0.001 * rng.standard_normal(60))
    with_chunks = rule.remaining(x, 2.0, chunks)
    assert with_chunks == rule.tracker().check(x, 2.0, chunks) and with_chunks[1].startswith("timeout")
    assert with_chunks != rule.remaining(x, 2.0)


def test_a_ratio_interval_is_reproducible_with_its_default_seed_and_resamples():
    """Why: a bias interval must read the same when the same samples are summarised again."""
    from hipexplore.bench.stats import Measurement, ratio_ci

    rng = np.random.default_rng(5)
    new, base = Measurement(1.1 + 0.05 * rng.random(40)), Measurement(1.0 + 0.05 * rng.random(40))
    assert ratio_ci(new, base) == ratio_ci(new, base) == ratio_ci(new, base, resamples=2000, seed=0)


def test_a_ratio_interval_follows_its_seed_argument_not_the_measurements_own_seed():
    from hipexplore.bench.stats import Measurement, ratio_ci

    rng = np.random.default_rng(6)
    x, base = 1.1 + 0.05 * rng.random(40), Measurement(1.0 + 0.05 * rng.random(40))
    assert ratio_ci(Measurement(x, seed=0), base, seed=3) == ratio_ci(Measurement(x, seed=99), base, seed=3)
