"""``bench.drift.position_effect``: does a sample's position in its held chunk move its time?

Checked on synthetic samples with a known structure (a fake timer: the statistics are under test),
then on the real host device's samples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import hipexplore as hx
from hipexplore.bench.drift import position_effect
from hipexplore.errors import ConfigError


def _frame(rng, chunks, shift_at=None, shift=0.0, noise=0.01, chunk_noise=0.0, positions=4):
    rows = []
    for c in range(chunks):
        level = 1.0 + rng.normal(0, chunk_noise)
        for p in range(positions):
            t = level * (1 + (shift if p == shift_at else 0.0)) * (1 + rng.normal(0, noise))
            rows.append(
                {
                    "kernel": "k",
                    "size_bytes": 1024,
                    "rotating_requested": "1",
                    "flush": "none",
                    "timer": "events",
                    "chunk": c,
                    "position": p,
                    "time_s": t * 1e-5,
                    "dropped": False,
                }
            )
    return pd.DataFrame(rows)


def test_a_known_shift_at_one_position_is_found_with_an_interval_that_covers_it():
    rng = np.random.default_rng(1)
    r = position_effect(_frame(rng, 400, shift_at=3, shift=0.03)).iloc[0]
    assert r.positions == 4 and 3 in r.distinct and int(np.argmax(np.abs(r.effects))) == 3
    assert r.max_effect == pytest.approx(0.03, abs=0.004)
    assert r.max_effect_low <= r.max_effect <= r.max_effect_high
    assert r.max_effect_low > 0.02  # distinguishable from no effect


def test_no_shift_gives_no_distinct_position_and_a_small_effect():
    rng = np.random.default_rng(2)
    hits = 0
    for _ in range(20):
        r = position_effect(_frame(rng, 200), resamples=200).iloc[0]
        hits += bool(r.distinct)
        assert r.max_effect < 0.006
    assert hits <= 6  # 4 positions x 95% intervals: a few false alarms, not many


def test_chunk_correlated_noise_widens_the_interval_single_samples_would_give():
    rng = np.random.default_rng(3)
    iid = position_effect(_frame(rng, 100, noise=0.01)).iloc[0]
    corr = position_effect(_frame(rng, 100, noise=0.002, chunk_noise=0.01)).iloc[0]
    # within-chunk noise is small but chunks move together: positions share the chunk level, so the
    # per-position deviation is small; the resampling is by chunk, so the level noise is not double counted
    assert corr.max_effect < iid.max_effect
    assert corr.max_effect_high < iid.max_effect_high


def test_cold_reference_and_dropped_samples_are_left_out():
    rng = np.random.default_rng(4)
    f = _frame(rng, 50)
    ref = f.assign(flush="cold-reference", time_s=f.time_s * 10)
    dropped = f.assign(dropped=True, time_s=f.time_s * 100, chunk=f.chunk + 1000)
    r = position_effect(pd.concat([f, ref, dropped], ignore_index=True))
    assert r["flush"].tolist() == ["none"]
    assert r.iloc[0].median_s == pytest.approx(f.time_s.median())


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"resamples": 5}, "resamples must be an integer >= 10, got 5"),
        ({"level": 1.0}, r"level must be a float in \[0.5, 1\), got 1.0"),
    ],
)
def test_refusals_name_the_value(kw, match):
    with pytest.raises(ConfigError, match=match):
        position_effect(_frame(np.random.default_rng(0), 5), **kw)


def test_a_frame_without_positions_is_refused_naming_what_is_missing():
    with pytest.raises(ConfigError, match="missing chunk, position"):
        position_effect(
            pd.DataFrame(
                {"kernel": ["k"], "size_bytes": [1], "rotating_requested": ["1"], "flush": ["none"], "time_s": [1.0]}
            )
        )


def test_on_a_host_sweep_every_configuration_gets_a_row_with_its_chunk_positions():
    res = hx.sweep(
        "triad", ["16KiB"], [1], ["none", "l2-read"], device="host", iterations=24, reference=False, progress=False
    )
    r = position_effect(res.samples)
    assert sorted(r["flush"]) == ["l2-read", "none"] and set(r["positions"]) == {4}
    assert (r["max_effect_low"] <= r["max_effect_high"]).all()


def test_the_timer_grid_is_reported_relative_to_the_median():
    """Samples on a 32 ns grid around 3.6 us: the tick is 32 ns / median; off a grid it is 0."""
    rng = np.random.default_rng(5)
    grid = _frame(rng, 200)
    grid["time_s"] = np.round(grid["time_s"] * 3.6e-6 / 1e-5 / 32e-9) * 32e-9
    r = position_effect(grid).iloc[0]
    assert r.tick == pytest.approx(32e-9 / r.median_s, rel=1e-6)
    assert position_effect(_frame(rng, 200)).iloc[0].tick == 0.0


def test_means_see_a_shift_of_a_fraction_of_a_tick_that_medians_cannot():
    """Position 3 is 0.3 tick slower (a third of its samples one tick up): on a grid the medians
    agree, the means tell it apart; a bad statistic names the value."""
    rng = np.random.default_rng(7)
    f = _frame(rng, 300, noise=0.0)
    tick = 32e-9
    f["time_s"] = 3.2e-6 + tick * ((f["position"] == 3) & (rng.random(len(f)) < 0.3))
    med = position_effect(f).iloc[0]
    mean = position_effect(f, statistic="mean").iloc[0]
    assert med.max_effect == 0.0 and med.distinct == []
    assert mean.max_effect == pytest.approx(0.3 * tick / 3.2e-6, rel=0.25) and 3 in mean.distinct
    with pytest.raises(ConfigError, match="statistic must be 'median' or 'mean', got 'mode'"):
        position_effect(f, statistic="mode")
