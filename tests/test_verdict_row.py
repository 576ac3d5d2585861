"""hipexplore.verdict_row: one compared configuration from two Measurements built to a known
structure: the level its interval is taken at, what a row without enough units says, and the note
that names the way out of an undecided row."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hipexplore.bench.levels import MIN_UNITS, independent_units
from hipexplore.bench.stats import Measurement
from hipexplore.verdict_row import SEPARATE_RUNS_LEVEL, comparison_row


def test_the_undecided_note_names_the_units_flag() -> None:
    rng = np.random.default_rng(5)
    sides = []
    for _side in range(2):  # 3 units each, 5% apart by placement: an interval far wider than 2%
        levels = np.repeat(1e-5 * (1 + rng.normal(0, 0.05, 3)), 64)
        sides.append(
            Measurement(
                levels * (1 + rng.normal(0, 0.002, levels.size)),
                chunks=np.arange(levels.size) // 4,
                groups=np.repeat(np.arange(3), 64),
            )
        )
    row = comparison_row(sides[0], sides[1], 0.02, 0.95, 400, separate=True)
    assert row["verdict"] == "undecided" and "the noise allows no call" in row["note"], row["note"]
    assert "more units narrow it: rerun with --units 6 (sweep(..., units=6))" in row["note"], row["note"]


def _units(rng: np.random.Generator, units: int, first_chunk: int = 0, step: int = 1) -> Measurement:
    """``units`` units of 64 samples around 10 µs, each unit offset by its own placement (1%)."""
    levels = np.repeat(1e-5 * (1 + rng.normal(0, 0.01, units)), 64)
    return Measurement(
        levels * (1 + rng.normal(0, 0.002, levels.size)),
        chunks=first_chunk + step * (np.arange(levels.size) // 4),
        groups=np.repeat(np.arange(units), 64) if units > 1 else None,
    )


def test_measurements_not_interleaved_are_decided_at_the_separate_runs_level() -> None:
    """Two sides sharing chunk ids (not one interleaved run): the units' interval is Welch's at
    ``SEPARATE_RUNS_LEVEL`` whatever level was asked, wider than the one at 95%."""
    rng = np.random.default_rng(2)
    base, new = _units(rng, 4), _units(rng, 4)
    row = comparison_row(base, new, 0.02, 0.95, 300)
    at_99, at_95 = independent_units(new, base, SEPARATE_RUNS_LEVEL), independent_units(new, base, 0.95)
    assert SEPARATE_RUNS_LEVEL > 0.95 and row["interval"].startswith("independent units")
    assert (row["unit_ci_low"], row["unit_ci_high"]) == (at_99.low, at_99.high)
    assert row["unit_ci_low"] < at_95.low and row["unit_ci_high"] > at_95.high
    assert row["base_units"] == row["new_units"] == 4
    assert row["min_detectable"] == pytest.approx(0.02 + row["half_width"])


@pytest.mark.parametrize("paired", [True, False])
def test_one_unit_a_side_is_undecided_and_says_how_to_decide(paired) -> None:
    """Chunks of one unit share its placement: no bounds, no change called, a note naming the flag
    (and, for separate runs, the interleaved run that leaves nothing between them)."""
    rng = np.random.default_rng(4)
    # interleaved: even chunk ids for the base, odd for the new side; else the same ids on both
    base, new = (
        _units(rng, 1, step=2 if paired else 1),
        _units(rng, 1, first_chunk=int(paired), step=2 if paired else 1),
    )
    row = comparison_row(base, new, 0.02, 0.95, 300)
    assert row["verdict"] == "undecided" and row["change_called"] == "none"
    assert math.isnan(row["ratio_ci_low"]) and math.isnan(row["ratio_ci_high"])
    assert row["half_width"] == pytest.approx((row["chunk_ci_high"] - row["chunk_ci_low"]) / 2)
    assert f"at least {MIN_UNITS} units" in row["note"] and "--units 4" in row["note"]
    if paired:
        assert row["interval"] == "chunks: paired windows (interleaved)"
        assert row["note"].startswith("only 1 unit(s) shared by both kernels")
    else:
        assert row["interval"] == "chunks: independent blocks"
        assert row["note"].startswith("base 1 unit(s), new 1") and "--interleave" in row["note"]
