"""Intervals at the level that varies (``bench.levels``) and the verdicts built on them.

The effect guarded against is built in: a fake timer for statistics (allowed: it tests the
statistics, not a device) whose samples carry a per-unit placement offset far larger than the
chunk noise, as buffer placement did on the H200 (a byte-identical copy 3.5% slower because its
buffers were allocated second). A verdict from chunks alone calls such identical code different;
the between-unit interval must not.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from hipexplore.bench.levels import (
    MIN_UNITS,
    SHARED_PROCESS_LEVEL,
    UNIT_TRIM,
    Spread,
    decision_level,
    independent_units,
    paired_logs,
    paired_units,
    paired_windows,
    pooled_spreads,
    trend,
    unit_level,
    unit_levels,
)
from hipexplore.bench.stats import Measurement
from hipexplore.verdict_drift import drift_check
from hipexplore.verdict_row import comparison_row

CHUNK = 4


def _interleaved(
    rng: np.random.Generator,
    units: int,
    per_unit: int,
    *,
    effect: float = 1.0,
    placement_sd: float = 0.03,
    noise_sd: float = 0.002,
    drift: float = 0.0,
    base_time: float = 1e-5,
) -> tuple[Measurement, Measurement]:
    """Two kernels interleaved chunk by chunk in ``units`` units; each kernel's buffers land at a
    unit-specific place (an offset drawn per unit and kernel), samples of a chunk share it too."""
    bs, ns, bc, nc, bg, ng = [], [], [], [], [], []
    chunk = 0
    total = units * per_unit
    for u in range(units):
        pb = rng.normal(0, placement_sd)
        pn = rng.normal(0, placement_sd)
        for c in range(per_unit):
            t = (u * per_unit + c) / total
            for side in (0, 1):
                level = base_time * (1 + (pb if side == 0 else pn)) * ((effect * (1 + drift * t)) if side else 1.0)
                vals = level * (1 + rng.normal(0, noise_sd, CHUNK))
                (bs if side == 0 else ns).extend(vals)
                (bc if side == 0 else nc).extend([chunk] * CHUNK)
                (bg if side == 0 else ng).extend([u] * CHUNK)
                chunk += 1
    base = Measurement(np.array(bs), chunks=np.array(bc), groups=np.array(bg) if units > 1 else None, label="A")
    new = Measurement(np.array(ns), chunks=np.array(nc), groups=np.array(ng) if units > 1 else None, label="B")
    return base, new


def test_chunks_of_one_unit_call_identical_code_different_but_units_do_not() -> None:
    """The H200 failure, rebuilt: identical code, placement-dependent: the chunk-level interval
    excludes 1 by far; with several units the decision interval covers the placement."""
    rng = np.random.default_rng(11)
    wrong_chunk_only = 0
    wrong_units = 0
    for _ in range(40):
        base, new = _interleaved(rng, units=1, per_unit=60)
        row = comparison_row(base, new, 0.02, 0.95, 400)
        assert row["verdict"] == "undecided" and "unit" in row["note"]  # one unit: never decided
        if not (row["chunk_ci_low"] <= 1 <= row["chunk_ci_high"]) and abs(row["ratio"] - 1) > 0.02:
            wrong_chunk_only += 1
        base, new = _interleaved(rng, units=5, per_unit=12)
        row = comparison_row(base, new, 0.02, 0.95, 400)
        assert row["base_units"] == row["new_units"] == 5
        if row["verdict"] in ("faster", "slower"):
            wrong_units += 1
    assert wrong_chunk_only >= 10  # the effect is really there: chunks alone would have decided wrongly
    assert wrong_units <= 1


def test_units_sharing_one_process_decide_on_the_wider_of_the_two_levels() -> None:
    """Units that ran in one process (the host's default) do not redraw the process-level state, so
    their verdict interval is the wider of the between-unit one and the chunk windows', both at
    ``SHARED_PROCESS_LEVEL`` (99%) at least; units in processes of their own decide on the
    between-unit one alone at the level asked (``levels.decision_interval``)."""
    assert SHARED_PROCESS_LEVEL == 0.99 and decision_level(0.95, True) == 0.99 and decision_level(0.95, False) == 0.95
    assert decision_level(0.999, True) == 0.999
    rng = np.random.default_rng(23)
    widened = 0
    for _ in range(30):
        base, new = _interleaved(rng, units=3, per_unit=6, placement_sd=0.0, noise_sd=0.04)
        own = comparison_row(base, new, 0.02, 0.95, 300)
        own99 = comparison_row(base, new, 0.02, 0.99, 300)
        one = comparison_row(base, new, 0.02, 0.95, 300, one_process=True)
        assert one["ratio_ci_low"] == pytest.approx(min(own99["ratio_ci_low"], own99["chunk_ci_low"]))
        assert one["ratio_ci_high"] == pytest.approx(max(own99["ratio_ci_high"], own99["chunk_ci_high"]))
        assert one["ratio_ci_low"] <= min(own["ratio_ci_low"], own["chunk_ci_low"]) + 1e-12
        assert one["ratio_ci_high"] >= max(own["ratio_ci_high"], own["chunk_ci_high"]) - 1e-12
        assert "units in one process, at 99%" in one["interval"] and "units in one process" not in own["interval"]
        assert one["min_detectable"] >= own["min_detectable"] - 1e-12
        if one["verdict"] != own["verdict"]:
            assert one["verdict"] == "undecided", (own["verdict"], one["verdict"])
        widened += one["half_width"] > own["half_width"] + 1e-9
    assert widened >= 3  # the chunk windows were wider often enough for the rule to matter here


def test_a_real_difference_is_still_found_over_units() -> None:
    rng = np.random.default_rng(5)
    calls = [
        comparison_row(*_interleaved(rng, units=6, per_unit=12, effect=1.10, placement_sd=0.01), 0.02, 0.95, 400)[
            "verdict"
        ]
        for _ in range(10)
    ]
    assert calls.count("slower") >= 9, calls


def test_paired_units_is_a_t_interval_over_per_unit_log_ratios() -> None:
    rng = np.random.default_rng(2)
    base, new = _interleaved(rng, units=4, per_unit=10, effect=1.05)
    lv = paired_units(new, base)
    logs = []
    for u in range(4):  # each unit's level: off a timer grid (these fake times are continuous), its median
        mb = np.median(base.samples[base.groups == u])
        mn = np.median(new.samples[new.groups == u])
        logs.append(math.log(mn / mb))
    logs = np.array(logs)
    se = logs.std(ddof=1) / 2
    assert lv.df == 3
    assert lv.low == pytest.approx(math.exp(logs.mean() - 3.182446 * se), rel=1e-5)
    assert lv.high == pytest.approx(math.exp(logs.mean() + 3.182446 * se), rel=1e-5)
    assert lv.decided


def test_the_spread_is_pooled_over_flush_modes_of_one_size_never_across_sizes() -> None:
    """Three units, two flush modes at one size: df 2 + 2 = 4 and the variance their weighted mean;
    each configuration keeps its own centre. Another size, and a lone configuration, pool nothing."""
    rng = np.random.default_rng(5)
    pairs = {
        (size, flush): _interleaved(rng, units=3, per_unit=8, effect=1.01)[::-1]
        for size in (16, 256)
        for flush in ("none", "l2-write")
    }
    pairs[(1, "none")] = _interleaved(rng, units=3, per_unit=8)[::-1]
    pairs[(64, "none")] = _interleaved(rng, units=1, per_unit=8)[::-1]  # one unit: no spread to pool
    pairs[(64, "l2-write")] = _interleaved(rng, units=3, per_unit=8)[::-1]
    got = pooled_spreads(pairs, lambda k: k[0])
    assert set(got) == {(16, "none"), (16, "l2-write"), (256, "none"), (256, "l2-write")}
    for size in (16, 256):
        a, b = (paired_logs(*pairs[(size, f)]) for f in ("none", "l2-write"))
        want = (a.var(ddof=1) * 2 + b.var(ddof=1) * 2) / 4
        assert got[(size, "none")] == got[(size, "l2-write")] == Spread(pytest.approx(want, rel=1e-12), 4, 2)
        new, base = pairs[(size, "none")]
        lv = paired_units(new, base, pooled=got[(size, "none")])
        se = math.sqrt(want / 3)
        assert lv.df == 4 and lv.method == "paired units, spread pooled over 2 flush modes"
        assert lv.low == pytest.approx(math.exp(a.mean() - 2.776445 * se), rel=1e-5)
        assert lv.high == pytest.approx(math.exp(a.mean() + 2.776445 * se), rel=1e-5)
        assert lv.center == pytest.approx(math.exp(a.mean()), rel=1e-12)
    assert got[(16, "none")] != got[(256, "none")]
    # a pooled spread with no more degrees of freedom than the configuration's own is not used
    new, base = pairs[(1, "none")]
    assert paired_units(new, base, pooled=Spread(1.0, 2, 2)).method == "paired units"


def test_pooling_keeps_identical_code_covered_and_names_a_small_change_more_often() -> None:
    """The H100/H200 runs' case (BENCHMARKS.md, "Fifth session"), rebuilt with the fake timer: three
    units, two flush modes per size sharing the units' placement. Identical code: covered about as
    often as nominal, never far below; a +1% change: named more often than without pooling."""
    rng = np.random.default_rng(37)
    covered = {"own": 0, "pooled": 0}
    named = {"own": 0, "pooled": 0}
    trials = 300
    for _ in range(trials):
        for effect, tally in ((1.0, covered), (1.01, named)):
            pairs = {
                f: _interleaved(rng, units=3, per_unit=6, effect=effect, placement_sd=0.004)[::-1]
                for f in ("none", "l2-write")
            }
            spread = pooled_spreads(pairs, lambda k: 0)["none"]
            new, base = pairs["none"]
            for rule, lv in (("own", paired_units(new, base)), ("pooled", paired_units(new, base, pooled=spread))):
                inside = lv.low <= 1.0 <= lv.high
                tally[rule] += int(inside) if effect == 1.0 else int(lv.low > 1.0)
    assert 0.92 * trials <= covered["pooled"] <= covered["own"], covered
    assert named["pooled"] > named["own"], named


def test_a_units_level_resolves_below_the_timer_grid_and_ignores_a_few_outliers() -> None:
    """Times on a 32 ns grid around 20.05 us: the median sits on a tick, the trimmed mean between
    ticks where the samples are; one sample 10x off moves neither; a handful of samples: the median."""
    grid = 32e-9
    rng = np.random.default_rng(3)
    times = np.round((20.05e-6 + rng.normal(0, 40e-9, 400)) / grid) * grid
    assert np.median(times) % grid == pytest.approx(0, abs=1e-15) or np.median(times) % grid == pytest.approx(
        grid, abs=1e-15
    )
    assert unit_level(times) == pytest.approx(20.05e-6, rel=2e-4) and abs(unit_level(times) - np.median(times)) < grid
    spiked = times.copy()
    spiked[::100] *= 10  # 4 of 400: inside the 10% cut
    assert unit_level(spiked) == pytest.approx(unit_level(times), rel=1e-3)
    few = np.array([1.0, 1.0, 1.0, 5.0])
    assert unit_level(few) == 1.0 and UNIT_TRIM == 0.10
    # off a grid (a host's nanosecond clock, every value distinct): the median
    host = 1e-6 * (1 + rng.standard_exponential(400) * 0.3)
    assert Measurement(host).resolution == 0 and Measurement(times).resolution > 0
    assert unit_level(host, on_grid=False) == np.median(host) != unit_level(host)
    assert unit_levels(Measurement(host)) == {0: np.median(host)}
    assert unit_levels(Measurement(times)) == {0: unit_level(times)}


def test_too_few_units_give_no_between_unit_interval() -> None:
    rng = np.random.default_rng(1)
    base, new = _interleaved(rng, units=1, per_unit=30)
    assert MIN_UNITS >= 2
    assert not paired_units(new, base).decided
    assert not independent_units(new, base).decided


def test_separate_runs_compare_unit_medians_with_welch() -> None:
    rng = np.random.default_rng(4)

    def run(level: float, units: int) -> Measurement:
        vals, groups = [], []
        for u in range(units):
            place = rng.normal(0, 0.03)
            vals.extend(level * (1 + place) * (1 + rng.normal(0, 0.002, 40)))
            groups.extend([u] * 40)
        return Measurement(np.array(vals), groups=np.array(groups), chunks=np.arange(len(vals)) // CHUNK)

    wrong = 0
    for _ in range(30):
        a, b = run(1e-5, 5), run(1e-5, 5)
        row = comparison_row(a, b, 0.02, 0.95, 300)
        assert row["interval"].startswith("independent units")
        wrong += row["verdict"] in ("faster", "slower")
    assert wrong <= 1
    a, b = run(1e-5, 1), run(1e-5, 5)
    row = comparison_row(a, b, 0.02, 0.95, 300)
    assert row["verdict"] == "undecided" and "separate runs" in row["note"]


def test_windows_never_span_two_units() -> None:
    rng = np.random.default_rng(8)
    base, new = _interleaved(rng, units=3, per_unit=9)
    wins = paired_windows(new, base)
    assert wins
    unit_of = {}
    for u in range(3):
        for v in base.samples[base.groups == u]:
            unit_of[v] = u
        for v in new.samples[new.groups == u]:
            unit_of[v] = u
    for b, n in wins:
        assert len({unit_of[v] for v in np.r_[b, n]}) == 1


def test_mann_kendall_finds_a_trend_and_not_noise() -> None:
    rng = np.random.default_rng(0)
    tau, p = trend(np.arange(50) * 0.01 + rng.normal(0, 0.01, 50))
    assert tau > 0.5 and p < 1e-6
    ps = [trend(rng.normal(size=60))[1] for _ in range(200)]
    assert 0.02 < np.mean(np.array(ps) < 0.05) < 0.09  # about 5% false alarms at 5%
    assert trend([1.0] * 20) == (0.0, 1.0)


def test_a_drifting_ratio_turns_a_decided_verdict_undecided() -> None:
    rng = np.random.default_rng(9)
    base, new = _interleaved(rng, units=6, per_unit=20, effect=1.06, placement_sd=0.002, drift=0.8)
    p, note = drift_check(new, base, 0.02)
    assert p < 1e-3 and "not stationary" in note
    row = comparison_row(base, new, 0.02, 0.95, 300)
    assert row["verdict"] == "undecided" and "not stationary" in row["note"]
    # the same effect without drift is decided
    base, new = _interleaved(rng, units=6, per_unit=20, effect=1.06, placement_sd=0.002)
    assert comparison_row(base, new, 0.02, 0.95, 300)["verdict"] == "slower"


def test_a_window_holds_a_block_of_n_to_the_third_samples_of_each_side() -> None:
    # 1000 samples a side, alternating one-sample chunks in one unit: a block is ceil(1000 ** (1/3)) = 10
    # samples, so every window holds 10 of each side and there are 100 windows (a window of sqrt(n) = 32
    # would leave 31, and the paired bootstrap far fewer units of resampling)
    n = 1000
    t = np.linspace(1.0, 1.1, n)
    base = Measurement(t, chunks=np.arange(n) * 2, groups=np.zeros(n, np.int64))
    new = Measurement(t * 1.01, chunks=np.arange(n) * 2 + 1, groups=np.zeros(n, np.int64))
    wins = paired_windows(new, base)
    assert len(wins) == 100 and {(b.size, w.size) for b, w in wins} == {(10, 10)}


@pytest.mark.timeout(120)
def test_the_within_unit_bootstrap_resamples_windows_inside_each_unit_only():
    """``paired_ratio_ci`` (the within-unit interval of an interleaved pair) resamples windows
    within their unit and combines the units' ratios: it sees the chunk noise inside units and
    nothing of the differences between them. Two units far apart in level (10 µs, 20 µs) whose
    pairs differ by 1.0x and 1.2x: stratified, the interval is narrow around their geometric mean
    (1.095); windows drawn across units would mix the two levels, the medians jumping between the
    units' modes (a ratio of 1.0 one draw, 1.2 the next). Only a loaded host had caught its loss."""
    from hipexplore.bench.levels import paired_ratio_ci

    rng = np.random.default_rng(5)
    b, n, bc, nc, bg, ng = [], [], [], [], [], []
    chunk = 0
    for unit, (level, effect) in enumerate(((10e-6, 1.0), (20e-6, 1.2))):
        for _ in range(30):
            for side in (0, 1):
                vals = level * (effect if side else 1.0) * (1 + rng.normal(0, 0.002, CHUNK))
                (n if side else b).extend(vals)
                (nc if side else bc).extend([chunk] * CHUNK)
                (ng if side else bg).extend([unit] * CHUNK)
                chunk += 1
    base = Measurement(np.array(b), chunks=np.array(bc), groups=np.array(bg))
    new = Measurement(np.array(n), chunks=np.array(nc), groups=np.array(ng))
    _ratio, lo, hi = paired_ratio_ci(new, base, resamples=400)
    assert lo < math.sqrt(1.2) < hi and hi - lo < 0.01, (lo, hi)
