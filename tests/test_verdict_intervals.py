"""The statistics of the decision interval pinned on samples of known structure (issue #37).

Why synthetic samples: a hand-computed interval needs unit medians known exactly, and a bound
below 0 needs passes whose ratios scatter by 5x; both are built here from a fixed seed (or no
randomness at all) and go through the real ``compare`` / ``ratio_ci`` / ``compare_scenarios``.

Pinned: two separate runs are decided by Welch's t interval over the logarithms of the unit
medians at ``SEPARATE_RUNS_LEVEL`` (99%), oriented new / base; the decision interval is the wider
of the unit and the chunk interval; no ratio interval has a bound <= 0.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from hipexplore.bench.stats import Measurement, ratio_ci
from hipexplore.verdict_row import SEPARATE_RUNS_LEVEL
from hipexplore.verdicts import compare

#: Student t quantiles from the printed tables (no SciPy here): t(0.995, 6) and t(0.975, 6)
T_995_DF6, T_975_DF6 = 3.707428, 2.446912


def run_frame(unit_medians, spread=0.001, per_unit=15, kernel="k", size=1 << 20) -> pd.DataFrame:
    """One run: unit u's samples sit symmetrically around unit_medians[u] (an odd count, so the
    unit's median is exactly unit_medians[u]), three samples a chunk."""
    rows = []
    for u, med in enumerate(unit_medians):
        steps = np.arange(per_unit) - per_unit // 2
        for i, k in enumerate(steps):
            rows.append(
                {
                    "kernel": kernel,
                    "size_bytes": size,
                    "rotating_requested": "1",
                    "flush": "none",
                    "timer": "events",
                    "device_name": "dev",
                    "time_s": med * (1 + spread * k),
                    "chunk": u * 100 + i // 3,
                    "pass_index": u,
                    "dropped": False,
                }
            )
    return pd.DataFrame(rows)


def test_separate_runs_use_welch_on_log_unit_medians_at_99_percent_oriented_new_over_base():
    dev = np.array([-0.01, 0.0, 0.01, 0.02])
    base_meds = 10e-6 * np.exp(dev)
    new_meds = 1.3 * base_meds  # the same spread of logs: Welch's df is 2 (n - 1) = 6
    row = compare(run_frame(base_meds), run_frame(new_meds)).iloc[0]
    # by hand: mean difference of logs, each side's variance of logs over its 4 units
    ln, lb = np.log(new_meds), np.log(base_meds)
    d = ln.mean() - lb.mean()
    se = math.sqrt(ln.var(ddof=1) / 4 + lb.var(ddof=1) / 4)
    assert SEPARATE_RUNS_LEVEL == 0.99
    assert row["interval"].startswith("independent units (t, df 6)")
    assert row["unit_ci_low"] == pytest.approx(math.exp(d - T_995_DF6 * se), rel=1e-6)
    assert row["unit_ci_high"] == pytest.approx(math.exp(d + T_995_DF6 * se), rel=1e-6)
    assert row["unit_ci_low"] < math.exp(d - T_975_DF6 * se)  # 99%, not the 95% of one run
    # the wider of units and chunks decides; here the units' (the samples of a unit are tight)
    assert row["chunk_ci_high"] - row["chunk_ci_low"] < row["unit_ci_high"] - row["unit_ci_low"]
    assert (row["ratio_ci_low"], row["ratio_ci_high"]) == (row["unit_ci_low"], row["unit_ci_high"])
    assert row["ratio"] == pytest.approx(1.3, rel=1e-9)
    # a real 1.3x change is slower: an interval of base / new (about 0.77) would call it faster
    assert row["verdict"] == "slower" and row["change_called"] == "slower" and row["ratio_ci_low"] > 1.2
    back = compare(run_frame(new_meds), run_frame(base_meds)).iloc[0]
    assert back["verdict"] == "faster" and back["ratio_ci_high"] < 1 / 1.2


def grid_frame(unit_ticks, tick=32e-9, per_unit=15, kernel="k") -> pd.DataFrame:
    """One run whose samples sit on a timer grid (CUDA events tick in 32 ns): unit u's samples are
    unit_ticks[u] ticks, one tick either side of it too (an odd count: the unit's median is exactly
    unit_ticks[u] ticks)."""
    frame = run_frame([t * tick for t in unit_ticks], spread=0.0, per_unit=per_unit, kernel=kernel)
    steps = np.tile([-1, 0, 1], per_unit // 3 + 1)[:per_unit]
    frame["time_s"] = frame["time_s"] + np.tile(steps, len(unit_ticks)) * tick
    return frame


def test_the_units_decide_the_chunks_are_shown_and_the_timer_grid_floors_the_interval():
    """The decision interval is the between-unit one (``levels.decision_interval``); the within-unit
    (chunk) interval is information beside it; and a timer grid floors its half-width."""
    # wide noise inside units, little between them: the chunk interval is the wider, and does not decide
    dev = np.array([-0.002, 0.0, 0.002, 0.001])
    row = compare(
        run_frame(10e-6 * np.exp(dev), spread=0.05, per_unit=9),
        run_frame(10.5e-6 * np.exp(dev[::-1]), spread=0.05, per_unit=9),
    ).iloc[0]
    assert row["chunk_ci_high"] - row["chunk_ci_low"] > row["unit_ci_high"] - row["unit_ci_low"]
    assert (row["ratio_ci_low"], row["ratio_ci_high"]) == (row["unit_ci_low"], row["unit_ci_high"])
    assert row["verdict"] == "slower" and "chunks beside it" in row["interval"]
    # identical medians on a 32 ns grid in every unit: the t interval has width 0; the grid floors it
    same = compare(grid_frame([119] * 4), grid_frame([119] * 4)).iloc[0]  # 3.808 us
    assert same["unit_ci_low"] == pytest.approx(1.0) and same["unit_ci_high"] == pytest.approx(1.0)
    g = 2 * (16e-9 / (119 * 32e-9))  # half a tick of each median
    assert same["ratio_ci_low"] == pytest.approx(1 / (1 + g)) and same["ratio_ci_high"] == pytest.approx(1 + g)
    assert same["change_called"] == "none" and same["verdict"] == "same"
    # two ticks apart in every unit (+1.7%): a measured change, named, whatever the grid
    two = compare(grid_frame([119] * 4), grid_frame([121] * 4)).iloc[0]
    assert two["change_called"] == "slower" and two["ratio_ci_low"] > 1


def test_a_ratio_interval_over_three_scattered_passes_stays_above_zero():
    # a 3x slower kernel whose three passes read 1.2x, 3x and 6x its reference: the t-interval on
    # the ratios themselves (t = 4.30 at df 2) was point - 6.0, below 0; in log space it is not
    rng = np.random.default_rng(0)
    groups = np.repeat([0, 1, 2], 40)
    base = Measurement(1e-3 * (1 + rng.normal(0, 0.001, 120)), groups=groups)
    new = Measurement(1e-3 * np.repeat([1.2, 3.0, 6.0], 40) * (1 + rng.normal(0, 0.001, 120)), groups=groups)
    ratio, lo, hi = ratio_ci(new, base)
    per = np.array([1.2, 3.0, 6.0])
    linear_low = ratio - 4.302653 * per.std(ddof=1) / math.sqrt(3)
    assert linear_low < 0  # what the interval on the ratios gave
    logs = np.log(per)
    want = (
        ratio * math.exp(-4.302653 * logs.std(ddof=1) / math.sqrt(3)),
        ratio * math.exp(4.302653 * logs.std(ddof=1) / math.sqrt(3)),
    )
    assert 0 < lo <= want[0] * 1.001 and hi >= want[1] * 0.999
    assert lo == pytest.approx(want[0], rel=0.01) and hi == pytest.approx(want[1], rel=0.01)
    # through compare as two separate runs of three units: every bound positive
    row = compare(
        pd.DataFrame(
            {
                "kernel": "k",
                "size_bytes": 1,
                "rotating_requested": "1",
                "flush": "none",
                "timer": "events",
                "time_s": base.samples,
                "chunk": np.arange(120) // 4,
                "pass_index": groups,
            }
        ),
        pd.DataFrame(
            {
                "kernel": "k",
                "size_bytes": 1,
                "rotating_requested": "1",
                "flush": "none",
                "timer": "events",
                "time_s": new.samples,
                "chunk": np.arange(120) // 4,
                "pass_index": groups,
            }
        ),
    ).iloc[0]
    assert min(row["chunk_ci_low"], row["unit_ci_low"], row["ratio_ci_low"]) > 0


def test_a_grid_wider_than_the_ratio_keeps_the_low_bound_positive():
    # samples on a coarse timer grid: 1 and 2 ticks; the old widening by (1 - grid) went to 0 or below
    base = Measurement(np.array([1.0, 1.0, 2.0, 1.0, 1.0, 2.0, 1.0, 1.0] * 4), chunks=np.arange(32) // 2)
    new = Measurement(np.array([1.0, 2.0, 1.0, 1.0, 2.0, 1.0, 1.0, 2.0] * 4), chunks=np.arange(32) // 2)
    assert new.resolution / 2 / new.median + base.resolution / 2 / base.median >= 1  # the old factor 1 - grid <= 0
    _ratio, lo, hi = ratio_ci(new, base)
    assert 0 < lo < hi


# -- precision on request: --resolution -----------------------------------------------------------


def test_resolution_plans_extra_units_until_the_budget_runs_out_and_says_so(tmp_path):
    """A real host sweep (triad and copy interleaved): an unreachable resolution takes extra units
    until the budget is spent and the metadata says it was not reached and why; a loose one is
    reached with the planned units alone."""
    from hipexplore import sweep

    tight = sweep(
        ["triad", "copy"],
        ["64KiB"],
        [1],
        ["none"],
        device="host",
        interleave=True,
        progress=False,
        reference=False,
        resolution=0.0001,
        resolution_budget=0.5,
    )
    units = tight.samples.groupby("kernel")["pass_index"].nunique()
    # 3 planned; an extra unit of the one (pair) configuration is priced at 1/3 of them: the first fits 0.5x;
    # a second only if the first took under 1/6 of the planned time (the wall clock decides, so at any
    # load: at least one extra, both kernels alike; the rule itself on fake durations: bench/test_units.py)
    assert units.nunique() == 1 and int(units.iloc[0]) >= 4, units
    assert tight.metadata["units.resolution"] == "0.01%"
    out = tight.metadata["units.resolution_outcome"]
    assert out.startswith(
        "not reached: stopped by the budget (0.5x the planned units' time); 1 configuration(s) "
        "still wider than ±0.01%: copy 65536 r=1 none events: ±"
    ), out
    loose = sweep(
        ["triad", "copy"],
        ["64KiB"],
        [1],
        ["none"],
        device="host",
        interleave=True,
        progress=False,
        reference=False,
        resolution=0.45,
    )
    assert set(loose.samples.groupby("kernel")["pass_index"].nunique()) == {3}
    outcome = loose.metadata["units.resolution_outcome"]
    assert outcome.startswith(
        "reached: every configuration's 95% half-width (what compare reads) is within ±45.00% (widest ±"
    ), outcome
    # the half-width it judged is the one the user's compare reports for the pair (not the units' spread alone)
    row = compare(loose.samples, base="triad", new="copy").iloc[0]
    assert outcome.endswith(f"(widest ±{row['half_width']:.2%})"), (outcome, row["half_width"])
    assert (
        "units.resolution"
        not in sweep("triad", ["64KiB"], device="host", progress=False, reference=False, iterations=30).metadata
    )


def test_a_sizes_flush_modes_pool_their_unit_spread_in_compare_and_in_the_resolution_rule_alike():
    """A real host sweep, triad and copy interleaved over two flush modes: ``compare`` decides each
    configuration on the spread pooled over both (df 2 + 2), and the resolution rule judged exactly
    the half-widths ``compare`` reports (its widest is compare's widest)."""
    from hipexplore import sweep

    res = sweep(
        ["triad", "copy"],
        ["64KiB"],
        [1],
        ["none", "l2-write"],
        device="host",
        interleave=True,
        progress=False,
        reference=False,
        resolution=0.45,
    )
    rows = compare(res.samples, base="triad", new="copy")
    assert len(rows) == 2 and set(rows["flush"]) == {"none", "l2-write"}
    assert all(t.startswith("paired units, spread pooled over 2 flush modes (t, df 4)") for t in rows["interval"]), (
        list(rows["interval"])
    )
    outcome = res.metadata["units.resolution_outcome"]
    assert outcome.endswith(f"(widest ±{rows['half_width'].max():.2%})"), (outcome, list(rows["half_width"]))


def test_resolution_is_a_cli_option_that_reports_and_refuses_bad_values(tmp_path, capsys):
    from hipexplore.bench.spec import SweepSpec
    from hipexplore.cli import main
    from hipexplore.errors import ConfigError

    assert SweepSpec(resolution="1%").resolution == 0.01 and SweepSpec(resolution=0.02).resolution == 0.02
    for bad in ("60%", "-1%", "x"):
        with pytest.raises(
            ConfigError, match="resolution must be 0 .off. or a half-width below 50%, such as 1% or 0.01"
        ):
            SweepSpec(resolution=bad)
    with pytest.raises(ConfigError, match="resolution_budget must be a positive multiple"):
        SweepSpec(resolution_budget=0)
    out = tmp_path / "r.parquet"
    assert (
        main(
            [
                "bench",
                "triad,copy",
                "--device",
                "host",
                "--size",
                "64KiB",
                "--interleave",
                "--no-reference",
                "--no-progress",
                "--resolution",
                "0.01%",
                "--resolution-budget",
                "0.5",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "hipexplore bench: resolution ±0.01%: not reached: stopped by the budget (0.5x" in err, err
    try:
        rc = main(["bench", "triad", "--device", "host", "--resolution", "70%"])
    except SystemExit as exc:
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "resolution must be 0 (off) or a half-width below 50%" in err[-1], err


def test_two_kernels_of_one_run_not_interleaved_are_decided_as_separate_runs():
    # one run, kernels a and b measured one after the other (their own chunk ids, not interleaved):
    # nothing pairs them, so their Welch interval is at the separate-runs level, as two runs' is
    dev = np.array([-0.01, 0.0, 0.01, 0.02])
    a = run_frame(10e-6 * np.exp(dev), kernel="a")
    b = run_frame(10e-6 * np.exp(dev[::-1]), kernel="b").assign(chunk=lambda f: f["chunk"] + 50_000)
    row = compare(pd.concat([a, b], ignore_index=True), base="a", new="b").iloc[0]
    ln, lb = np.log(10e-6 * np.exp(dev[::-1])), np.log(10e-6 * np.exp(dev))
    se = math.sqrt(ln.var(ddof=1) / 4 + lb.var(ddof=1) / 4)
    assert row["interval"].startswith("independent units (t, df 6)")
    assert row["unit_ci_high"] == pytest.approx(math.exp(ln.mean() - lb.mean() + T_995_DF6 * se), rel=1e-6)
