"""The drift check's size rule (``verdict_drift.drift_check``), on synthetic interleaved measurements.

A paired ratio counts as not stationary when its within-unit trend is significant (Mann-Kendall,
p < ``DRIFT_P``) *and* it moved by more than half the verdict threshold from the first third of
each unit to the last. Only an 80% drift was tried before; here the trend is always significant and
only its size varies, so what decides is the size rule: a move of 1.25% counts against a 2%
threshold (half of it: 1%) and not against 3% (1.5%); 0.75% counts against neither; the sign does
not matter; a shift from unit to unit (placement) is not a drift. The measurements come from a
deterministic generator: each unit's chunks of the two kernels alternate, the new kernel's ratio to
the base moves linearly through each unit, plus a small seeded noise.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from hipexplore.bench.stats import Measurement
from hipexplore.verdict_drift import DRIFT_P, drift_check

CHUNK = 4


def pair(
    move: float, *, units: int = 6, chunks: int = 20, unit_shift: float = 0.0, effect: float = 1.0, seed: int = 0
) -> tuple[Measurement, Measurement]:
    """(base, new) interleaved chunk by chunk in ``units`` units. Within each unit the ratio new/base
    goes linearly from ``effect`` to ``effect * (1 + move / K)``, K chosen so that the medians of the
    first and last thirds of the unit's windows are ``move`` apart; unit u is shifted by
    ``unit_shift * (-1)**u`` on the new side (another placement per unit); every sample has a
    seeded noise of 0.02% (``seed``)."""
    # windows hold 2 chunks of each side here (n = 480 a side: 8 samples); the first third's median
    # sits at window 1 of 10, the last third's at window 8: 7/9 of the unit's span apart
    span = move / (7 / 9)
    bs, ns, bc, nc, bg, ng = [], [], [], [], [], []
    chunk = 0
    rng = np.random.default_rng(seed)
    for u in range(units):
        shift = 1 + unit_shift * (-1) ** u
        for c in range(chunks):
            pos = (c // 2) / (chunks // 2 - 1)  # the window's place in its unit, 0 .. 1
            for side in (0, 1):
                jitter = 1 + rng.normal(0, 2e-4, CHUNK)
                level = 1e-5 * (effect * shift * (1 + span * pos) if side else 1.0) * jitter
                (ns if side else bs).extend(level)
                (nc if side else bc).extend([chunk] * CHUNK)
                (ng if side else bg).extend([u] * CHUNK)
                chunk += 1
    base = Measurement(np.array(bs), chunks=np.array(bc), groups=np.array(bg), label="base")
    new = Measurement(np.array(ns), chunks=np.array(nc), groups=np.array(ng), label="new")
    return base, new


def moved(note: str) -> float:
    m = re.search(r"moved by ([+-][0-9.]+)%", note)
    assert m, note
    return float(m.group(1)) / 100


@pytest.mark.timeout(60)
@pytest.mark.parametrize("move", [0.0125, -0.0125])
def test_a_move_over_half_the_threshold_is_not_stationary(move) -> None:
    base, new = pair(move)
    p, note = drift_check(new, base, 0.02)
    assert p < DRIFT_P and "not stationary" in note
    assert moved(note) == pytest.approx(move, abs=0.001)  # the note says how far, with its sign


@pytest.mark.timeout(60)
@pytest.mark.parametrize("move", [0.0125, -0.0125])
def test_the_same_move_under_half_a_wider_threshold_is_let_be(move) -> None:
    """The trend is just as significant; against a 3% threshold (half: 1.5%) it is too small to undo a verdict."""
    base, new = pair(move)
    p, note = drift_check(new, base, 0.03)
    assert p < DRIFT_P and note == ""


@pytest.mark.timeout(60)
def test_a_significant_but_small_move_is_let_be() -> None:
    """0.75% < 1%: significant (p far below ``DRIFT_P``) and no note, at a 2% threshold; at 1.2% it counts."""
    base, new = pair(0.0075)
    p, note = drift_check(new, base, 0.02)
    assert p < DRIFT_P and note == ""
    p, note = drift_check(new, base, 0.012)
    assert p < DRIFT_P and "not stationary" in note and moved(note) == pytest.approx(0.0075, abs=0.001)


@pytest.mark.timeout(60)
def test_a_shift_between_units_is_not_a_drift() -> None:
    """Each unit's ratio 10% off the next (placement) with no move within units: nothing to report;
    the between-unit interval covers such shifts."""
    for seed in range(5):
        base, new = pair(0.0, unit_shift=0.05, effect=1.1, seed=seed)
        p, note = drift_check(new, base, 0.02)
        assert note == "" and not p < DRIFT_P, (seed, p)


@pytest.mark.timeout(60)
def test_a_move_within_units_counts_on_top_of_shifts_between_them() -> None:
    """A 1.25% move within units on top of +-5% unit shifts still counts, measured as 1.25% (the
    move is read within each unit, the shifts taken out)."""
    base, new = pair(0.0125, unit_shift=0.05)
    p, note = drift_check(new, base, 0.02)
    assert p < DRIFT_P and moved(note) == pytest.approx(0.0125, abs=0.001)


@pytest.mark.timeout(60)
def test_a_move_without_a_significant_trend_is_let_be_however_small_the_threshold() -> None:
    """Pure noise (1% a sample, no trend): its thirds differ by something, which a threshold of
    1e-9 would count, but the trend test finds nothing (p >= ``DRIFT_P``): no note. Both halves of the
    rule must hold."""
    for seed in range(5):
        base, new = pair(0.0, seed=seed)
        noisy = Measurement(
            new.samples * (1 + np.random.default_rng(100 + seed).normal(0, 0.01, new.n)),
            chunks=new.chunks,
            groups=new.groups,
            label="new",
        )
        p, note = drift_check(noisy, base, 1e-9)
        assert not p < DRIFT_P and note == "", (seed, p, note)
