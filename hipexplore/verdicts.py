"""Review verdicts: is the new kernel (option, code object, cache) faster, and how sure are we?

Why a decision rule and not a p-value: with thousands of samples any difference is "significant",
and chunk-correlated samples make a rank test's p-value too small anyway. A review needs to know
whether the change matters, so the verdict comes from the 95% interval of the ratio
``median(new) / median(base)`` against a practical threshold (default 2%).

Which interval: the one at the level that varies (``bench.levels``). A sweep measures each
configuration in several *units* (``SweepSpec.units``; the ``pass_index`` of each sample): each unit
with its own buffer placement, process and time. The decision interval is the between-unit one
(``levels.decision_interval``): two kernels of one interleaved run (``bench.interleave``) get a t
interval over their per-unit ratios (what a unit shares cancels in its ratio); two separate runs a
Welch t interval over each run's unit levels (``levels.unit_level``: on a timer grid a unit's
10%-trimmed mean, off one its median). Its half-width is at least the timer's grid (a
median read on a 32 ns grid is not known better than that, and three units reading the same grid
values would otherwise give an interval of width 0). The within-unit interval (``chunk_ci_*``: for
an interleaved pair, windows of chunks holding samples of both resampled jointly,
``paired_ratio_ci``; otherwise each side's chunk blocks on their own) is reported beside it, as
information: each unit's median already carries its chunks' noise, and deciding on the wider of the
two covered 1 in 98.3-98.8% of identical-code rows at a nominal 95% (H100, H200, busy host), the
units' interval with the grid floor in 94.2-98.0% (BENCHMARKS.md, "Wave 4 on the H100"). Units that
shared one process (the host device's default, ``levels.SHARED_PROCESS_LOCATIONS``) decide on the
wider of the two: they do not draw the process-level state afresh, and on a loaded CI host three of
them called a byte-identical copy 1.117x slower on the units' interval alone.

With fewer than ``levels.MIN_UNITS`` units on a side there is no between-unit interval and the
verdict is ``undecided``, saying what to run instead: chunks of one unit share its placement and
process, and on the H200 an interval from them called a byte-identical copy 3.5% slower. The rule:

* ``faster`` / ``slower``: the whole interval lies below ``1 - threshold`` / above ``1 + threshold``;
* ``same``: the whole interval lies within ``[1 - threshold, 1 + threshold]``;
* ``undecided``: otherwise (the noise does not allow a call at this threshold), or too few units, or
  the paired ratio of an interleaved run drifts over the run (Mann-Kendall, ``drift_check``).

``min_detectable`` is the smallest change the rule could call with this noise: the threshold plus
the interval's half-width. The Mann–Whitney U p-value (normal approximation with tie correction,
exact for small samples without ties) is reported beside it, as information, not as the rule.

Two runs are compared configuration by configuration (kernel, size, rotating, flush, timer), their
between-unit interval at ``SEPARATE_RUNS_LEVEL`` (99%) at least: what changed between two sessions
is a level no unit inside either run sees (two kernels of one run that were not interleaved, such as
their cold references, are decided at that level too);
configurations only in one run are listed with ``present`` = ``base only`` / ``new only``.
Runs from different devices are refused unless ``allow_other_device=True``. Two kernels of one
(interleaved) run are compared with ``compare(run, base="A", new="B")``.
"""

from __future__ import annotations

import math
from itertools import combinations
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .bench.levels import (
    MIN_UNITS,
    LevelInterval,
    decision_interval,
    independent_units,
    interleaved_pair,
    paired_ratio_ci,
    paired_units,
    paired_windows,
    pooled_spreads,
    shared_process,
    trend,
)
from .bench.info import SWEEP_UNIT_LOCATION
from .bench.stats import Measurement, ratio_ci
from .errors import ConfigError
from .schema import Configuration

DEFAULT_THRESHOLD = 0.02
VERDICTS = ("faster", "slower", "same", "undecided")
_EXACT_MAX = 400  # exact U distribution up to n1 * n2 of this size (no ties)


def size_text(n: float) -> str:
    """Bytes human-readable (``64 KiB``), as ``plots.format_bytes`` writes them, without matplotlib
    (the GPU machine, where verdict tables are printed, has none)."""
    n = float(n)
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:g} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{int(n)} B"


# -- Mann–Whitney U -------------------------------------------------------------------------------


def _ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mid-ranks (1-based) and the sizes of the groups of tied values."""
    order = np.argsort(values, kind="mergesort")
    sorted_v = values[order]
    starts = np.flatnonzero(np.r_[True, sorted_v[1:] != sorted_v[:-1]])
    sizes = np.diff(np.r_[starts, sorted_v.size])
    mid = starts + (sizes + 1) / 2.0
    ranks = np.empty(values.size)
    ranks[order] = np.repeat(mid, sizes)
    return ranks, sizes


def _exact_cdf(n1: int, n2: int) -> np.ndarray:
    """P(U <= u) for u = 0..n1*n2 under H0, no ties: counts of U by the recursion
    f(n1, n2, u) = f(n1 - 1, n2, u - n2) + f(n1, n2 - 1, u)."""
    # table[j][u]: number of arrangements of i x-values and j y-values with U_x = u
    prev = [np.ones(1)] + [np.ones(1) for _ in range(n2)]  # i = 0: U = 0 only
    for i in range(1, n1 + 1):
        cur = [np.ones(1)]  # j = 0: U = 0 only
        for j in range(1, n2 + 1):
            a = np.r_[np.zeros(j), prev[j]]  # x is largest: adds j
            b = cur[j - 1]
            m = max(a.size, b.size)
            cur.append(np.pad(a, (0, m - a.size)) + np.pad(b, (0, m - b.size)))
        prev = cur
    counts = prev[n2]
    return np.cumsum(counts) / counts.sum()


def mann_whitney_u(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *, method: str = "auto"
) -> tuple[float, float]:
    """(U of ``x``, two-sided p-value) of the Mann–Whitney U test.

    ``method``: ``exact`` (the exact null distribution; no ties allowed), ``normal`` (normal
    approximation with the tie correction of the variance and a continuity correction of 0.5) or
    ``auto`` (exact when there are no ties and n1 * n2 <= 400, else normal).
    """
    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    if a.size == 0 or b.size == 0:
        raise ConfigError(f"the Mann-Whitney test needs samples on both sides; got {a.size} and {b.size}")
    if method not in ("auto", "exact", "normal"):
        raise ConfigError(f"method must be 'auto', 'exact' or 'normal'; got {method!r}")
    n1, n2 = a.size, b.size
    ranks, ties = _ranks(np.r_[a, b])
    u = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    tied = bool(np.any(ties > 1))
    if method == "exact" and tied:
        raise ConfigError("the exact Mann-Whitney distribution assumes no ties; use method='normal'")
    if method == "exact" or (method == "auto" and not tied and n1 * n2 <= _EXACT_MAX):
        cdf = _exact_cdf(n1, n2)
        k = int(round(min(u, n1 * n2 - u)))
        return u, float(min(1.0, 2 * cdf[k]))
    n = n1 + n2
    mu = n1 * n2 / 2
    var = n1 * n2 / 12 * ((n + 1) - float(np.sum(ties**3 - ties)) / (n * (n - 1)))
    if var <= 0:
        return u, 1.0
    z = (abs(u - mu) - 0.5) / math.sqrt(var)
    return u, float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))


# -- the decision rule ----------------------------------------------------------------------------


def check_threshold(threshold: Any) -> float:
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, (int, float))
        or not math.isfinite(threshold)
        or not 0 < threshold < 1
    ):
        raise ConfigError(f"threshold must be a fraction in (0, 1) (0.02 is 2%), got {threshold!r}")
    return float(threshold)


def verdict(low: float, high: float, threshold: float = DEFAULT_THRESHOLD) -> str:
    """The decision rule (module docstring) on an interval of the ratio new / base."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "undecided"
    if high < 1 - threshold:
        return "faster"
    if low > 1 + threshold:
        return "slower"
    if low >= 1 - threshold and high <= 1 + threshold:
        return "same"
    return "undecided"


#: ``change_called`` of a row: the direction of the measured change whenever its interval excludes 1,
#: whatever the threshold says (the second answer beside ``verdict``; "none": the interval holds 1)
CHANGES = ("faster", "slower", "none")


def change_called(low: float, high: float) -> str:
    """The measured change's direction: ``slower`` / ``faster`` when the whole interval of new / base
    lies above / below 1, else ``none``. Why beside ``verdict``: a change of +1.2% measured to ±0.1%
    is ``same`` at a 2% threshold, and a reviewer told only "same" hears "no change" (pyperf reports
    every significant change with its size and judges it against ``--min-speed`` separately)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "none"
    return "slower" if low > 1 else "faster" if high < 1 else "none"


def change_text(row: Mapping[str, Any], threshold: float = DEFAULT_THRESHOLD) -> str:
    """Both answers of a compared row in words: ``slower by 1.2% [+1.1%, +1.3%] — below the 2%
    threshold``; ``no measurable change: +0.1% [-0.3%, +0.4%] — within ±2%``."""
    t = _thr(threshold)
    lo, hi, v = float(row["ratio_ci_low"]), float(row["ratio_ci_high"]), str(row["verdict"])
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{row['change']:+.1%} (no interval: too few units) — {v}"
    ci = f"[{lo - 1:+.1%}, {hi - 1:+.1%}]"
    called = change_called(lo, hi)
    if called == "none":
        judged = {"same": f"within ±{t}", "undecided": f"the interval reaches past ±{t}: undecided"}.get(v, v)
        return f"no measurable change: {row['change']:+.1%} {ci} — {judged}"
    judged = {
        "same": f"below the {t} threshold",
        "faster": f"past the {t} threshold",
        "slower": f"past the {t} threshold",
    }.get(v, f"not resolved against the {t} threshold: undecided")
    return f"{called} by {abs(row['change']):.1%} {ci} — {judged}"


def _thr(threshold: float) -> str:
    """``2%`` for 0.02, ``2.5%`` for 0.025."""
    return f"{threshold:.0%}" if round(threshold * 100, 6) == round(threshold * 100) else f"{threshold:.1%}"


def rule_text(threshold: float = DEFAULT_THRESHOLD) -> str:
    t = _thr(threshold)
    return (
        f"faster/slower only when the 95% interval of new/base lies wholly below -{t} / above +{t}; "
        f"same when it lies wholly within ±{t}; otherwise undecided. Beside it, the measured change is named "
        f"(faster/slower) whenever its interval excludes no change, whatever its size"
    )


# -- loading runs ---------------------------------------------------------------------------------


def _samples_of(run: Any, what: str) -> tuple[pd.DataFrame, dict[str, str]]:
    """Sample rows and metadata of a SweepResult, a samples parquet file or a samples frame."""
    if isinstance(run, pd.DataFrame):
        return run, dict(run.attrs.get("metadata", {}))
    if hasattr(run, "samples") and hasattr(run, "metadata"):
        return run.samples, dict(run.metadata)
    if isinstance(run, (str, Path)):
        from .bench.io import output_paths, read_results

        path = Path(run)
        if str(path).endswith(".summary.parquet"):
            raise ConfigError(
                f"{what} {str(path)!r} is a summary file; give the samples file "
                f"{str(path).replace('.summary.parquet', '.parquet')!r} (comparisons need the raw samples)"
            )
        paths = output_paths(path)
        if not paths[0].is_file():
            raise ConfigError(f"{what} {str(path)!r} does not exist (expected a sweep's samples .parquet file)")
        got = read_results(paths)  # checked there as untrusted input (bench.readback)
        if got is None:  # samples without a summary file: read the samples alone, checked the same way
            from .bench.readback import read_frame
            from .schema import SAMPLES

            return read_frame(paths[0], SAMPLES), {}
        return got[0], dict(got[2] or {})
    raise ConfigError(
        f"{what} must be a SweepResult, a samples .parquet path or a samples DataFrame; got {type(run).__name__}"
    )


def _one_process(meta: Mapping[str, Any], samples: pd.DataFrame) -> bool:
    """True when a run's units shared one process (``levels.shared_process``): its metadata says
    where they ran; a run recorded without it is taken as in-process when it ran on the host
    device (where units run unless ``worker=True``) in more than one unit."""
    where = SWEEP_UNIT_LOCATION.of(meta, "")
    if where:
        return shared_process(where)
    devices = set(map(str, samples["device"].unique())) if len(samples) and "device" in samples.columns else set()
    return (
        bool(devices)
        and all(d == "host" or d.startswith("host:") for d in devices)
        and "pass_index" in samples.columns
        and samples["pass_index"].nunique() > 1
    )


def _measurements(samples: pd.DataFrame, keys: Sequence[str], what: str) -> dict[tuple, Measurement]:
    need = [*keys, "time_s", "chunk"]
    missing = [c for c in need if c not in samples.columns]
    if missing:
        raise ConfigError(f"{what} is missing sample columns {missing} (is it a samples frame?)")
    kept = samples[~samples["dropped"].to_numpy(bool)] if "dropped" in samples.columns else samples
    out: dict[tuple, Measurement] = {}
    for key, g in kept.groupby(list(keys), sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        key = tuple(
            str(k) if name == "rotating_requested" else int(k) if name == "size_bytes" else k
            for name, k in zip(keys, key)
        )
        # a sweep in passes (bench.passes): the interval is bootstrapped over its passes too, as its summary's is
        groups = g["pass_index"].to_numpy() if "pass_index" in g.columns and g["pass_index"].nunique() > 1 else None
        out[key] = Measurement(
            g["time_s"].to_numpy(), chunks=g["chunk"].to_numpy(), groups=groups, label=" ".join(map(str, key))
        )
    return out


#: A paired ratio whose Mann-Kendall trend over the run has a p-value below this, and that moved by
#: more than half the threshold from the first third of each unit to the last, is not stationary: a
#: decided verdict becomes ``undecided`` (module docstring).
DRIFT_P = 0.001


def drift_check(new: Measurement, base: Measurement, threshold: float) -> tuple[float, str]:
    """(p-value of a trend in the paired log ratios over the run, a note when it undoes a verdict).

    The trend is looked for within units: each window's log ratio less its unit's median, in time
    order. A shift from one unit to the next (placement, process) is what the between-unit
    interval already covers; a ratio that keeps moving while the units run (a load that comes and
    goes, a clock that sags under one kernel) is not, and no interval over it describes one
    difference."""
    windows, units = paired_windows(new, base, with_units=True)
    keep = [
        (math.log(np.median(n) / np.median(b)), u)
        for (b, n), u in zip(windows, units)
        if b.size and n.size and np.median(b) > 0 and np.median(n) > 0
    ]
    if len(keep) < 9:
        return math.nan, ""
    logs = np.array([v for v, _ in keep])
    unit = np.array([u for _, u in keep])
    resid, pos = logs.copy(), np.zeros(logs.size)
    for u in np.unique(unit):
        at = unit == u
        resid[at] -= np.median(logs[at])
        pos[at] = np.arange(at.sum()) / max(1, at.sum() - 1)  # where in its unit: 0 first, 1 last
    tau, p = trend(resid, order=pos) if np.unique(unit).size > 1 else trend(resid)
    if not p < DRIFT_P:
        return p, ""
    first, last = math.exp(float(np.median(resid[pos < 1 / 3]))), math.exp(float(np.median(resid[pos > 2 / 3])))
    if abs(last - first) <= threshold / 2:
        return p, ""
    return p, (
        f"not stationary: within its units the paired ratio moved by {last / first - 1:+.1%} from the "
        f"first third of each unit to the last (Mann-Kendall tau {tau:+.2f}, p = {p:.1g}); the difference "
        f"depends on when it was measured (load, clocks, heat): rerun on a quiet machine"
    )


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
    interval is then the wider of the between-unit and the within-unit one. ``pooled``: the spread
    of the per-unit ratios over the run's flush modes of this configuration (``levels.pooled_spreads``)."""
    paired = interleaved_pair(base, new)
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
    if not lv.decided:
        note = _units_note(lv, paired)
    elif drift_note and v != "undecided":
        v, note = "undecided", drift_note
    elif v == "undecided":
        note = (
            f"the noise allows no call at ±{threshold:.0%}: the interval over {min(lv.base_units, lv.new_units)} "
            f"units is ±{half:.1%} wide; changes of {threshold + half:.1%} or more could be called "
            f"({_more_units(min(lv.base_units, lv.new_units))})"
        )
    else:
        note = ""
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
            f"{'taken where wider (units in one process)' if one_process else 'beside it'}: "
            if lv.decided
            else "chunks: "
        )
        + ("paired windows (interleaved)" if paired else "independent blocks"),
        "note": note,
    }


def _device_names(samples: pd.DataFrame) -> set[str]:
    return set(map(str, samples["device_name"].unique())) if "device_name" in samples.columns else set()


def compare(
    run: Any,
    other: Any = None,
    *,
    base: str | None = None,
    new: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    level: float = 0.95,
    resamples: int = 2000,
    allow_other_device: bool = False,
) -> pd.DataFrame:
    """Verdicts, one row per configuration (see the module docstring).

    ``compare(base_run, new_run)``: two runs (SweepResult, samples .parquet path or samples frame),
    configuration by configuration. ``compare(run, base="A", new="B")``: kernel ``B`` against
    kernel ``A`` of one run, configuration by configuration (size, rotating, flush, timer).
    The frame's ``attrs`` hold the threshold, the rule and both sides' metadata.
    """
    threshold = check_threshold(threshold)
    if not 0 < level < 1:
        raise ConfigError(f"level must be in (0, 1), got {level!r}")
    if other is not None and (base is not None or new is not None):
        raise ConfigError("give either two runs, or one run with base= and new= kernel names, not both")
    if other is None:
        if base is None or new is None:
            raise ConfigError("comparing within one run needs both base= and new= kernel names")
        samples, meta = _samples_of(run, "run")
        have = sorted(map(str, samples["kernel"].unique())) if "kernel" in samples.columns else []
        for name, k in (("base", base), ("new", new)):
            if k not in have:
                raise ConfigError(f"{name} kernel {k!r} is not in the run; it holds {have}")
        if base == new:
            raise ConfigError(f"base and new are the same kernel {base!r}")
        keys = Configuration.SETUP_COLUMNS
        left = _measurements(samples[samples["kernel"] == base], keys, "run")
        right = _measurements(samples[samples["kernel"] == new], keys, "run")
        fixed = {"base_kernel": base, "new_kernel": new}
        metas, sides = (meta, meta), (samples, samples)
    else:
        s1, m1 = _samples_of(run, "base run")
        s2, m2 = _samples_of(other, "new run")
        d1, d2 = _device_names(s1), _device_names(s2)
        if d1 and d2 and d1 != d2 and not allow_other_device:
            raise ConfigError(
                f"the runs were measured on different devices (base: {sorted(d1)}, new: {sorted(d2)}); "
                f"timings of different devices are no A/B comparison (allow_other_device=True / "
                f"--allow-other-device to compare anyway)"
            )
        keys = Configuration.COLUMNS
        left, right = _measurements(s1, keys, "base run"), _measurements(s2, keys, "new run")
        fixed = {}
        metas, sides = (m1, m2), (s1, s2)
    one_process = any(_one_process(m, s) for m, s in zip(metas, sides))
    flush_at = list(keys).index("flush")
    pooled = pooled_spreads(
        {k: (right[k], left[k]) for k in set(left) & set(right)}, lambda k: k[:flush_at] + k[flush_at + 1 :]
    )
    rows = []
    for key in sorted(
        set(left) | set(right),
        key=lambda k: tuple((0, x, "") if isinstance(x, (int, float, np.integer)) else (1, 0, str(x)) for x in k),
    ):
        if key in left and key in right:
            compared = {
                "present": "both",
                **comparison_row(
                    left[key],
                    right[key],
                    threshold,
                    level,
                    resamples,
                    separate=other is not None,
                    one_process=one_process,
                    pooled=pooled.get(key),
                ),
            }
        else:
            compared = {
                "present": "base only" if key in left else "new only",
                "verdict": "",
                "change_called": "",
                "note": f"only in the {'base' if key in left else 'new'} run: not compared",
            }
        rows.append({**fixed, **dict(zip(keys, key)), **compared})
    frame = pd.DataFrame(rows)

    def passes_of(samples: Any) -> int:  # units (pass_index) of a run
        return int(samples["pass_index"].nunique()) if "pass_index" in samples.columns and len(samples) else 1

    fewest = min(passes_of(s1), passes_of(s2)) if other is not None else 1
    caveat = (
        ""
        if other is None
        else f"two separate runs, each in {fewest} or more units: the intervals compare the runs' unit levels "
        f"(each unit its own process and placement), so they cover what moved between units, not what "
        f"changed between the two runs' sessions (a driver update, another machine); one interleaved run "
        f"(hipexplore bench A,B --interleave) leaves nothing between them"
        if fewest >= MIN_UNITS
        else "two separate runs with a single unit on a side: nothing says how far a rerun would move, so no "
        "row is decided; rerun both with --units 4 or more, or measure both in one interleaved run"
    )
    frame.attrs.update(
        threshold=threshold,
        level=level,
        rule=rule_text(threshold),
        caveat=caveat,
        base_metadata=dict(metas[0]),
        new_metadata=dict(metas[1]),
        hint=_no_overlap_hint(frame) if other is not None else "",
    )
    return frame


def _no_overlap_hint(frame: pd.DataFrame) -> str:
    """Two runs sharing no configuration, most often because their kernels have other names
    (every row "only in the base run" / "only in the new run"): say which kernels each run holds
    and how to compare two differently named kernels."""
    if frame.empty or "present" not in frame.columns or (frame["present"] == "both").any():
        return ""
    kernels = (
        {
            side: sorted(map(str, pd.unique(frame.loc[frame["present"] == f"{side} only", "kernel"])))
            for side in ("base", "new")
        }
        if "kernel" in frame.columns
        else {"base": [], "new": []}
    )
    if kernels["base"] and kernels["new"] and set(kernels["base"]) != set(kernels["new"]):
        a, b = kernels["base"][0], kernels["new"][0]
        return (
            f"no configuration is in both runs: configurations are matched by kernel name, and the base run "
            f"holds kernel(s) {', '.join(kernels['base'])} while the new run holds {', '.join(kernels['new'])}. "
            f"To compare two kernels, measure them in one run and name them: hipexplore bench {a},{b} "
            f"--interleave --out RUN.parquet, then hipexplore compare RUN.parquet --base {a} --new {b}"
        )
    return (
        "no configuration is in both runs (sizes, rotating counts, flush modes or timers differ): "
        "rerun one of them with the other's configurations"
    )


def pairs(kernels: Sequence[str]) -> list[tuple[str, str]]:
    """Every (base, new) pair of ``kernels`` in order (the first is the base of the others first)."""
    return list(combinations(list(kernels), 2))


# -- compile-cache A/B ----------------------------------------------------------------------------


def _pass_totals(frame: pd.DataFrame, scenario: str) -> tuple[np.ndarray, list[np.ndarray]]:
    g = frame[frame["scenario"] == scenario]
    by = [c for c in ("jobs", "round") if c in g.columns]
    if not by:
        return np.array([float(g["lookup_seconds"].sum())]), [g["lookup_seconds"].to_numpy(float)]
    parts = [grp["lookup_seconds"].to_numpy(float) for _k, grp in g.groupby(by, sort=True)]
    return np.array([p.sum() for p in parts]), parts


def compare_scenarios(
    frame: pd.DataFrame,
    base: str = "off",
    new: Sequence[str] | str | None = None,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Tuning-replay scenarios against ``base`` (default the cache off): per scenario the seconds of
    one pass (summed lookup seconds), ``saved_s`` = base - new with a 95% interval, the ratio
    new / base with its interval, and the verdict of the same rule (``faster``: the cache saves
    time) with ``change_called`` beside it. The intervals are over repeated passes (``round`` /
    ``jobs``) where each side has at least two (the ratio's: Welch's t over log pass totals,
    ``_pass_ratio_ci``), else over the requests of the single pass (noted)."""
    from .schema import require_columns

    require_columns(frame, ("scenario", "lookup_seconds"), "replay frame")
    threshold = check_threshold(threshold)
    present = list(pd.unique(frame["scenario"]))
    if base not in present:
        raise ConfigError(f"replay frame has no scenario {base!r}; it holds {present}")
    wanted = [s for s in present if s != base] if new is None else ([new] if isinstance(new, str) else list(new))
    for s in wanted:
        if s not in present:
            raise ConfigError(f"replay frame has no scenario {s!r}; it holds {present}")
    rng = np.random.default_rng(seed)
    b_tot, b_parts = _pass_totals(frame, base)

    def draws(totals: np.ndarray, parts: list[np.ndarray]) -> tuple[np.ndarray, str]:
        if totals.size >= 2:
            return rng.choice(totals, size=(resamples, totals.size)).mean(axis=1), f"{totals.size} passes"
        req = parts[0]
        return rng.choice(req, size=(resamples, req.size)).sum(axis=1), f"1 pass ({req.size} requests resampled)"

    b_draw, b_how = draws(b_tot, b_parts)
    alpha = (1 - level) / 2
    rows = []
    for s in wanted:
        n_tot, n_parts = _pass_totals(frame, s)
        n_draw, n_how = draws(n_tot, n_parts)
        saved = b_draw - n_draw
        lo, hi = _pass_ratio_ci(n_tot, b_tot, n_draw, b_draw, level)
        s_lo, s_hi = np.quantile(saved, [alpha, 1 - alpha])
        b_mean, n_mean = float(b_tot.mean()), float(n_tot.mean())
        rows.append(
            {
                "base": base,
                "scenario": s,
                "base_s": b_mean,
                "new_s": n_mean,
                "saved_s": b_mean - n_mean,
                "saved_ci_low_s": float(s_lo),
                "saved_ci_high_s": float(s_hi),
                "ratio": n_mean / b_mean if b_mean > 0 else math.nan,
                "ratio_ci_low": float(lo),
                "ratio_ci_high": float(hi),
                "verdict": verdict(float(lo), float(hi), threshold),
                "change_called": change_called(float(lo), float(hi)),
                "interval_over": f"base: {b_how}; {s}: {n_how}",
            }
        )
    out = pd.DataFrame(rows)
    out.attrs.update(threshold=threshold, rule=rule_text(threshold))
    return out


def _pass_ratio_ci(
    n_tot: np.ndarray, b_tot: np.ndarray, n_draw: np.ndarray, b_draw: np.ndarray, level: float
) -> tuple[float, float]:
    """The interval of a replay's time ratio new / base. With two or more passes a side: Welch's t
    interval over the logarithms of the pass totals (``levels.independent_units``, each pass a
    unit), as two separate runs are compared; a percentile bootstrap of the mean over 2-4 passes
    takes only a handful of distinct values and is narrower than the passes allow. With one pass:
    the bootstrap over its requests. Both in ratio terms of positive totals, so no bound <= 0."""
    if n_tot.size >= 2 and b_tot.size >= 2 and (n_tot > 0).all() and (b_tot > 0).all():
        lv = independent_units(
            Measurement(n_tot, groups=np.arange(n_tot.size)), Measurement(b_tot, groups=np.arange(b_tot.size)), level
        )
        # centred on the ratio of geometric means; the stated ratio (of the means) lies inside
        return lv.low, lv.high
    alpha = (1 - level) / 2
    ratio = n_draw / np.where(b_draw > 0, b_draw, np.nan)
    lo, hi = np.nanquantile(ratio, [alpha, 1 - alpha])
    return float(lo), float(hi)


def saving_text(row: Mapping[str, Any]) -> str:
    """ "the cache saves X s ± Y" for one ``compare_scenarios`` row."""
    half = (row["saved_ci_high_s"] - row["saved_ci_low_s"]) / 2
    return (
        f"{row['scenario']} vs {row['base']}: saves {row['saved_s']:.3g} s ± {half:.2g} s "
        f"({row['ratio'] - 1:+.1%} time, verdict: {row['verdict']})"
    )


__all__ = [
    "CHANGES",
    "DEFAULT_THRESHOLD",
    "VERDICTS",
    "change_called",
    "change_text",
    "check_threshold",
    "compare",
    "compare_scenarios",
    "comparison_row",
    "mann_whitney_u",
    "pairs",
    "rule_text",
    "saving_text",
    "verdict",
]
