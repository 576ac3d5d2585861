"""hipexplore.cache_plots: the compile-cache figures and the frames behind them, on hand-made
events that pin exact values and on events from a real tuning replay with the host compiler."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # unit tests only; notebooks keep the inline backend

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection

from hipexplore import cache_plots, plots
from hipexplore.errors import ConfigError


def events_frame(outcomes: list[str], compile_s: float = 0.5, hit_s: float = 0.001) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "seq": range(len(outcomes)),
            "outcome": outcomes,
            "lookup_seconds": [compile_s if o == "compiled" else hit_s for o in outcomes],
            "compile_seconds": [compile_s] * len(outcomes),
        }
    )


def test_compile_time_curves_from_recorded_compile_times_and_from_a_baseline():
    ev = events_frame(["compiled", "memory-hit", "memory-hit", "compiled"])
    c = cache_plots.compile_time_curves(ev)
    np.testing.assert_allclose(c["off_s"], [0.5, 1.0, 1.5, 2.0])
    np.testing.assert_allclose(c["on_s"], [0.5, 0.501, 0.502, 1.002])
    base = events_frame(["compiled"] * 4, compile_s=0.6)
    c2 = cache_plots.compile_time_curves(ev, baseline=base)
    np.testing.assert_allclose(c2["off_s"], [0.6, 1.2, 1.8, 2.4])
    assert c2.attrs["off_source"] == "measured"
    with pytest.raises(ConfigError, match="baseline has 2 requests but events has 4"):
        cache_plots.compile_time_curves(ev, baseline=base.iloc[:2])


def test_compile_time_saved_shades_the_saving_and_states_it():
    ev = events_frame(["compiled", "memory-hit", "memory-hit", "compiled"])
    fig = cache_plots.plot_compile_time_saved(ev)
    ax = fig.axes[0]
    shaded = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert shaded, "the saving must be shaded"
    text = " ".join(t.get_text() for t in ax.texts)
    assert "2 s → 1 s" in text and "saved 0.998 s" in text


def test_a_pass_slower_with_the_cache_is_no_saving():
    """The review report printed 'saved -0.00165 s, 1.0× less' for a replay the cache did not speed
    up; a slower pass says so, and a factor that rounds to 1.0× is left out."""
    ev = events_frame(["compiled", "compiled"], compile_s=0.5)
    base = events_frame(["compiled", "compiled"], compile_s=0.49917)
    text = " ".join(t.get_text() for t in cache_plots.plot_compile_time_saved(ev, baseline=base).axes[0].texts)
    assert "0.998 s → 1 s" in text and "0.00166 s more with the cache (no saving)" in text
    assert "saved" not in text and "×" not in text
    assert (
        cache_plots.saving_text(1.0, 0.99) == "saved 0.01 s"
        and cache_plots.saving_text(2400.0, 1200.0) == "saved 1200 s, 2.0× less"
    )


def test_hit_rate_counts_joins_as_hits():
    ev = events_frame(["compiled", "memory-hit", "joined", "disk-hit", "compiled", "bypassed"])
    r = cache_plots.hit_rate(ev, window=2)
    np.testing.assert_allclose(r["cumulative"], [0, 1 / 2, 2 / 3, 3 / 4, 3 / 5, 3 / 6])
    np.testing.assert_allclose(r["rolling"], [0, 0.5, 1, 1, 0.5, 0])
    counts = cache_plots.outcome_counts(ev)
    assert list(counts.index) == ["compiled", "memory-hit", "disk-hit", "joined", "bypassed"]
    fig = cache_plots.plot_cache_hits(ev)
    assert "3/6" in fig.axes[0].get_title()
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "compiled: 2" in labels and "joined: 1" in labels


@pytest.fixture(scope="module")
def host_replay():
    """A small split-K tuning list replayed through the cache with the real host compiler."""
    from hipexplore import report

    return report.replay_data("live", compiler="host", target="host", problems=1, candidates=3)


def test_cache_figures_on_a_real_host_replay(host_replay):
    ev, base = host_replay.events, host_replay.baseline
    assert base is not None and len(base) == len(ev)
    assert (base["outcome"] == "compiled").all()
    assert ev["outcome"].isin(cache_plots.HIT_OUTCOMES).any(), "repeated tails must hit"
    c = cache_plots.compile_time_curves(ev, baseline=base)
    assert c["on_s"].iloc[-1] == pytest.approx(ev["lookup_seconds"].sum())
    assert c["off_s"].iloc[-1] == pytest.approx(base["lookup_seconds"].sum())
    for fn in (cache_plots.plot_cache_hits, cache_plots.plot_outcome_counts):
        assert plots.figure_png(fn(ev)).startswith(b"\x89PNG")
    fig = cache_plots.plot_replay_scenarios(host_replay.scenarios)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["ideal", "off", "memory"]


def test_compile_time_panel_draws_the_ideal_floor():
    events = pd.DataFrame(
        {
            "seq": range(4),
            "outcome": ["compiled", "memory-hit", "compiled", "memory-hit"],
            "lookup_seconds": [1.0, 0.01, 1.0, 0.01],
            "compile_seconds": [1.0, 1.0, 1.0, 1.0],
        }
    )
    fig = cache_plots.plot_compile_time_saved(events, ideal_s=1.5)
    ax = fig.axes[0]
    floors = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert len(floors) == 1 and list(floors[0].get_ydata()) == [1.5, 1.5]
    assert any("ideal floor 1.5 s" in t.get_text() for t in ax.get_legend().get_texts())
    assert not [
        ln for ln in cache_plots.plot_compile_time_saved(events).axes[0].get_lines() if ln.get_linestyle() == "--"
    ]
