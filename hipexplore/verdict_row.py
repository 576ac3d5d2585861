"""One compared configuration: ``new`` against ``base`` as one row of ``verdicts.compare``, with
its ratio, the decision interval at the level that varies (between units), the within-unit interval
beside it, the verdict by the rule (``verdict_rule``) and the note that says why a row is undecided.

``verdicts``' module docstring says which interval decides and why; this module applies it to two
``Measurement``s, so the rule over units is pinned on measurements built to a known effect without
writing runs (tests/test_verdict_row.py, tests/bench/test_levels.py).
"""

from __future__ import annotations

import math
from typing import Any

from .bench.levels import (
    MIN_UNITS,
    LevelInterval,
    decision_interval,
    decision_level,
    independent_units,
    interleaved_pair,
    paired_ratio_ci,
    paired_units,
)
from .bench.stats import Measurement, ratio_ci
from .mann_whitney import mann_whitney_u
from .verdict_drift import drift_check
from .verdict_rule import change_called, verdict


def _units_note(lv: LevelInterval, paired: bool) -> str:
    if paired:
        return (
            f"only {min(lv.base_units, lv.new_units)} unit(s) shared by both kernels: a verdict needs the "
            f"variation between at least {MIN_UNITS} units (buffer placement, process, load), not chunks of "
            f"one unit; run with --units 4 or more (sweep(..., units=4))"
        )
    return (
        f"base {lv.base_units} unit(s), new {lv.new_units}: comparing separate runs needs at least "
        f"{MIN_UNITS} units in each (each unit its own process and placement); rerun both with --units 4 "
        f"or more, or better, measure both in one interleaved run (hipexplore bench A,B --interleave)"
    )


def _more_units(units: int) -> str:
    """The undecided note's way out: the ``--units`` that narrows the interval (about 1/sqrt(units))."""
    from .bench.spec_checks import MAX_UNITS

    if units >= MAX_UNITS:
        return f"{units} units is the most a run takes: only a wider --threshold can decide it"
    more = min(max(2 * units, 4), MAX_UNITS)
    return f"more units narrow it: rerun with --units {more} (sweep(..., units={more}))"


#: Two *separate* runs are decided at this level at least: what moved between their sessions (the
#: GPU's state, other tenants, a reboot) is a level no unit inside either run sees, so the units'
#: variation understates it; a wider interval keeps identical code from being called different.
#: So are two kernels of one run that were not interleaved (their cold references, taken in parts
#: at other times; a sweep without --interleave): on the shared host, with the load changing during
#: the run, the cold references of two byte-identical copies read 1.34x apart in all 3 units.
SEPARATE_RUNS_LEVEL = 0.99


def _verdict_note(
    lv: LevelInterval, paired: bool, v: str, drift_note: str, threshold: float, half: float
) -> tuple[str, str]:
    """(verdict, note) of a row: too few units to decide, a drift that undoes a decided verdict,
    or how large a change this noise lets be called when it is undecided."""
    if not lv.decided:
        return v, _units_note(lv, paired)
    if drift_note and v != "undecided":
        return "undecided", drift_note
    if v == "undecided":
        return v, (
            f"the noise allows no call at ±{threshold:.0%}: the interval over {min(lv.base_units, lv.new_units)} "
            f"units is ±{half:.1%} wide; changes of {threshold + half:.1%} or more could be called "
            f"({_more_units(min(lv.base_units, lv.new_units))})"
        )
    return v, ""


def comparison_row(
    base: Measurement,
    new: Measurement,
    threshold: float,
    level: float,
    resamples: int,
    separate: bool = False,
    one_process: bool = False,
    pooled: Any = None,
) -> dict[str, Any]:
    """One row of ``compare``: ``new`` against ``base``, its ratio, intervals and verdict (public: the
    rule over units is pinned on Measurements built to a known effect, without writing runs).
    ``one_process``: a side's units shared one process (``levels.shared_process``): the decision
    interval is then the wider of the between-unit and the within-unit one, both at
    ``levels.SHARED_PROCESS_LEVEL`` at least. ``pooled``: the spread
    of the per-unit ratios over the run's flush modes of this configuration (``levels.pooled_spreads``)."""
    paired = interleaved_pair(base, new)
    level = decision_level(level, one_process)
    ratio, c_lo, c_hi = (paired_ratio_ci if paired else ratio_ci)(new, base, level=level, resamples=resamples)
    # not interleaved (two runs; two kernels of one run measured one after the other, or their cold
    # references): separate measurements, whatever file they are in (SEPARATE_RUNS_LEVEL)
    if paired:
        lv = paired_units(new, base, max(level, SEPARATE_RUNS_LEVEL) if separate else level, pooled)
    else:
        lv = independent_units(new, base, max(level, SEPARATE_RUNS_LEVEL))
    _u, p = mann_whitney_u(new.samples, base.samples)
    b_lo, b_hi = base.bootstrap_ci(level, resamples)
    n_lo, n_hi = new.bootstrap_ci(level, resamples)
    if lv.decided:
        ratio = lv.center  # over units: each unit's own ratio, combined (a pooled median mixes their levels)
        lo, hi = decision_interval(lv, new, base, (c_lo, c_hi) if one_process else None)
    else:
        lo, hi = math.nan, math.nan
    half = (hi - lo) / 2 if lv.decided else (c_hi - c_lo) / 2
    v = verdict(lo, hi, threshold)
    drift_p, drift_note = drift_check(new, base, threshold) if paired else (math.nan, "")
    v, note = _verdict_note(lv, paired, v, drift_note, threshold, half)
    return {
        "base_n": base.n,
        "new_n": new.n,
        "base_units": lv.base_units,
        "new_units": lv.new_units,
        "base_iqr_rel": base.iqr_rel,
        "new_iqr_rel": new.iqr_rel,
        "base_median_s": base.median,
        "base_ci_low_s": b_lo,
        "base_ci_high_s": b_hi,
        "new_median_s": new.median,
        "new_ci_low_s": n_lo,
        "new_ci_high_s": n_hi,
        "ratio": ratio,
        "ratio_ci_low": lo,
        "ratio_ci_high": hi,
        "change": ratio - 1.0,
        "chunk_ci_low": c_lo,
        "chunk_ci_high": c_hi,
        "unit_ci_low": lv.low,
        "unit_ci_high": lv.high,
        "p_value": p,
        "drift_p": drift_p,
        "half_width": half,
        "min_detectable": threshold + half,
        "verdict": v,
        "change_called": change_called(lo, hi),
        "interval": (
            f"{lv.method} (t, df {lv.df:g}), grid floor; chunks "
            f"{f'taken where wider (units in one process, at {level:.0%})' if one_process else 'beside it'}: "
            if lv.decided
            else "chunks: "
        )
        + ("paired windows (interleaved)" if paired else "independent blocks"),
        "note": note,
    }


__all__ = ["SEPARATE_RUNS_LEVEL", "comparison_row"]
