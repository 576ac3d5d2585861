"""Intervals at the level that varies: units first, chunks within them.

Why: a *unit* is one measurement of a configuration with everything the code under review does not
decide drawn afresh — its own process (on a GPU), its own buffer allocations at other addresses,
its own code-object load, another time. On the H200 the same 1 MiB triad ran 0.96-1.12 us depending
on where its buffers landed, the event floor moved 3.04-3.30 us between processes, and a
byte-identical copy of a kernel interleaved with the original read 3.2-3.7% slower at 16 MiB
because its buffers were allocated second. Chunks within one unit share all of that, so an
interval from them (however carefully blocked) describes sampling noise only: it called identical
code different in 5 of 36 rows. Following Kalibera & Jones ("Rigorous Benchmarking in Reasonable
Time", ISMM 2013) the interval that decides is built from the variation *between units*; the
within-unit interval is kept beside it for information. The decision interval
(``decision_interval``) is the between-unit one with a floor: its half-width is at least the timer's
grid, so a few units that read the same grid values do not make an interval of width 0. (Until
2026-12-06 it was the wider of the two levels; that covered 1 in 98.3-98.8% of identical-code rows
at a nominal 95%: each unit's median already carries its chunks' noise.) Units that ran in one
process (``SHARED_PROCESS_LOCATIONS``: the host device's default) still decide on the wider of the
two: they share what only a process draws (physical pages, the core, the allocator's state), and on
a loaded CI host three such units read a byte-identical copy 1.117x [1.085, 1.150] slower (one tight
cluster of three in-process units, which the t interval over units alone took at face value).

* ``unit_level``: a unit's level is, on a timer grid, its samples' mean with 10% cut from each
  end (a median on the grid moves in whole ticks), off a grid their median; see ``unit_level``.
* ``paired_units``: two kernels measured in the same units (an interleaved run): the per-unit
  ratio of levels, a Student t interval over their logarithms (df = units - 1). What a unit shares
  between the two kernels (its process, its load, its clock) cancels in each unit's ratio.
  ``pooled_spreads``: the configurations of one run that differ only in their flush share their
  units (the same processes, loads and placements), so the spread of the per-unit log ratios is
  estimated from all of them (pooled variance, df = sum of units - 1): each configuration keeps its
  own centre. With 3 units, t at df 2 is 4.30 and at df 4 (two flush modes) 2.78, so the interval
  is a third narrower for the same units. Measured on identical-code interleaved rows through
  ``compare`` before adopting it (2026-12-06, ``benchmarks/verdict_truth.py --analyze`` on the
  recorded runs): covering 1 in 93.3% (H100, 120 rows), 96.4% (H100, 252), 97.6% (H200, 252) and
  95.0% (the busy host, 120) at a nominal 95%, against 97.5%, 97.2%, 98.0% and 98.3% unpooled,
  none called faster or slower; a +1.4% change at 16 MiB named in 10 of 10 runs instead of 8
  (BENCHMARKS.md, "Fifth session"). Pooling over sizes too covered only 91-93% in a first look:
  the spread differs by size, so it is not pooled across them.
* ``independent_units``: two separate runs (or two kernels not measured in the same units): each
  side's unit levels, a Welch t interval over the difference of their mean logarithms.
* ``trend``: Mann-Kendall's test for a monotone trend in a sequence (the paired log ratios of an
  interleaved run in time order): a ratio that drifts across the run (one kernel heating the chip,
  a load that starts half-way) is no stationary difference, and the verdict then says so.

Every function takes ``Measurement``s whose ``groups`` hold the unit of each sample
(``pass_index`` in the sample frames); a measurement without groups is one unit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .stats import Measurement, ratio_ci, student_t_quantile, widen_by_grid

#: Where units share one process (``bench.executors``: the host device's units and Python callables
#: run in the caller's process): they draw a fresh code load and pad, but not the process-level state
#: (its physical pages, its core and SMT sibling, its allocator's history), so their spread can
#: understate what a rerun moves. Their verdicts decide on the wider of the between-unit and the
#: within-unit interval (module docstring).
SHARED_PROCESS_LOCATIONS = frozenset({"in-process"})

#: The level units that shared one process decide at, at least (``decision_level``): the wider of
#: two 95% intervals was not enough. CI at dccd73b (the suite's own load beside it) called a
#: byte-identical copy on the same buffers ``slower`` at 256 KiB on the host, both its between-unit
#: and its within-unit 95% interval above 1.02 (three units, t on 2 df). What the units share (the
#: process, the load of that minute) moves them together, so a 95% interval from them covers less
#: than 95%; at 99% the t quantile on 2 df is 9.9 against 4.3.
SHARED_PROCESS_LEVEL = 0.99

#: Fewest units on each side before a between-unit interval exists (with one unit there is no
#: between-unit variation to see, and a decision would rest on chunks of one unit alone).
MIN_UNITS = 2


@dataclass(frozen=True)
class LevelInterval:
    """A ratio ``new / base`` with its between-unit interval (NaN bounds: too few units)."""

    ratio: float
    low: float
    high: float
    base_units: int
    new_units: int
    #: "paired units" (per-unit ratios, t over units) or "independent units" (Welch t over unit levels)
    method: str
    df: float
    #: the ratio the interval is centred on: the geometric mean of the per-unit ratios (paired) or
    #: the ratio of the geometric means of the unit levels (independent); NaN without units
    center: float = math.nan

    @property
    def decided(self) -> bool:
        """True when a between-unit interval exists (enough units on both sides)."""
        return math.isfinite(self.low) and math.isfinite(self.high)


#: each side trimmed of this share of a unit's samples before their mean is its level (``unit_levels``)
UNIT_TRIM = 0.10
#: fewer samples than this in a unit: its median is its level (a trimmed mean of a handful is an outlier's)
TRIM_MIN_SAMPLES = 10


def unit_level(samples: np.ndarray, on_grid: bool = True) -> float:
    """One unit's level: on a timer grid (``on_grid``), the mean of its samples with ``UNIT_TRIM``
    cut from each end (their median below ``TRIM_MIN_SAMPLES``); off a grid, their median.

    Why: GPU times sit on the timer's grid (32 ns on the H100/H200, 0.16% of a 20 us kernel), so a
    unit's median moves in whole ticks and its tick noise went into every unit-to-unit spread; a
    trimmed mean resolves below the grid and keeps the median's indifference to a few outliers. On
    the recorded GPU runs (pooled over flush modes, the module docstring) it narrowed the 16 MiB
    half-widths from ~0.70% to ~0.43%, identical code still covered in 95.0-97.2% of rows and never
    called different, and a +1% change at 16 MiB was named in 9 and 10 of 10 runs instead of 8 and
    10 (BENCHMARKS.md, "Fifth session"). Off a grid (the host's nanosecond clock) there are no
    ticks to resolve, and a loaded host's tails reach past a 10% cut: there the median stays (a
    trimmed level read a host pair's interval [-2.7%, +52.9%] where the medians excluded 1)."""
    v = np.sort(np.asarray(samples, dtype=np.float64))
    if not on_grid or v.size < TRIM_MIN_SAMPLES:
        return float(np.median(v)) if v.size else math.nan
    k = int(v.size * UNIT_TRIM)
    return float(v[k : v.size - k].mean())


def unit_levels(m: Measurement) -> dict[int, float]:
    """Each unit's level (``unit_level``, on a grid when the measurement's samples are:
    ``Measurement.resolution``; one entry for a measurement without unit ids)."""
    on_grid = m.resolution > 0
    if m.groups is None:
        return {0: unit_level(m.samples, on_grid)}
    return {int(g): unit_level(m.samples[m.groups == g], on_grid) for g in np.unique(m.groups)}


def _t_bounds(center: float, se: float, df: float, level: float) -> tuple[float, float]:
    if not (df >= 1 and math.isfinite(se)):
        return math.nan, math.nan
    q = student_t_quantile(1 - (1 - level) / 2, max(1, int(math.floor(df))))
    return math.exp(center - q * se), math.exp(center + q * se)


def paired_logs(new: Measurement, base: Measurement) -> np.ndarray:
    """The logarithm of each shared unit's ratio of levels (``unit_level``), ``new / base``."""
    mn, mb = unit_levels(new), unit_levels(base)
    return np.array([math.log(mn[u] / mb[u]) for u in sorted(set(mn) & set(mb)) if mb[u] > 0 and mn[u] > 0])


@dataclass(frozen=True)
class Spread:
    """A pooled variance of per-unit log ratios, its degrees of freedom and how many configurations it pools."""

    variance: float
    df: int
    configurations: int


def pooled_spreads(pairs: dict[Any, tuple[Measurement, Measurement]], group: Any) -> dict[Any, Spread]:
    """For each key of ``pairs`` ((new, base) measurements of one configuration), the spread pooled
    over the interleaved pairs of its ``group(key)`` that have ``MIN_UNITS`` units or more (module
    docstring); keys whose group pools one configuration (or none) are left out."""
    logs = {k: paired_logs(n, b) for k, (n, b) in pairs.items() if interleaved_pair(b, n)}
    members: dict[Any, list[Any]] = {}
    for k, v in logs.items():
        if v.size >= MIN_UNITS:
            members.setdefault(group(k), []).append(k)
    out: dict[Any, Spread] = {}
    for keys in members.values():
        if len(keys) < 2:
            continue
        df = sum(logs[k].size - 1 for k in keys)
        var = sum(float(np.var(logs[k], ddof=1)) * (logs[k].size - 1) for k in keys) / df
        out.update({k: Spread(var, df, len(keys)) for k in keys})
    return out


def paired_units(
    new: Measurement, base: Measurement, level: float = 0.95, pooled: Spread | None = None
) -> LevelInterval:
    """Per-unit ratios over the units both sides share; a t interval on their logarithms, with the
    spread of its configuration's ``pooled`` group when given (``pooled_spreads``)."""
    mn, mb = unit_levels(new), unit_levels(base)
    logs = paired_logs(new, base)
    ratio = new.median / base.median if base.median > 0 else math.nan
    if logs.size < MIN_UNITS:
        return LevelInterval(ratio, math.nan, math.nan, len(mb), len(mn), "paired units", 0.0)
    if pooled is not None and pooled.df > logs.size - 1:
        se, df = math.sqrt(pooled.variance / logs.size), pooled.df
        method = f"paired units, spread pooled over {pooled.configurations} flush modes"
    else:
        se, df, method = float(np.std(logs, ddof=1)) / math.sqrt(logs.size), logs.size - 1, "paired units"
    lo, hi = _t_bounds(float(np.mean(logs)), se, df, level)
    return LevelInterval(ratio, lo, hi, len(mb), len(mn), method, float(df), math.exp(float(np.mean(logs))))


def independent_units(new: Measurement, base: Measurement, level: float = 0.95) -> LevelInterval:
    """Each side's unit levels; Welch's t interval over the difference of their mean logarithms."""
    ln = np.log([v for v in unit_levels(new).values() if v > 0])
    lb = np.log([v for v in unit_levels(base).values() if v > 0])
    ratio = new.median / base.median if base.median > 0 else math.nan
    if ln.size < MIN_UNITS or lb.size < MIN_UNITS:
        return LevelInterval(ratio, math.nan, math.nan, int(lb.size), int(ln.size), "independent units", 0.0)
    vn, vb = float(np.var(ln, ddof=1)) / ln.size, float(np.var(lb, ddof=1)) / lb.size
    se = math.sqrt(vn + vb)
    if se == 0:
        df = float(ln.size + lb.size - 2)
    else:  # Welch-Satterthwaite
        df = (vn + vb) ** 2 / ((vn**2 / (ln.size - 1) if vn else 0.0) + (vb**2 / (lb.size - 1) if vb else 0.0))
    lo, hi = _t_bounds(float(np.mean(ln) - np.mean(lb)), se, df, level)
    return LevelInterval(
        ratio,
        lo,
        hi,
        int(lb.size),
        int(ln.size),
        "independent units",
        float(df),
        math.exp(float(np.mean(ln) - np.mean(lb))),
    )


def decision_interval(
    lv: LevelInterval, new: Measurement, base: Measurement, within: tuple[float, float] | None = None
) -> tuple[float, float]:
    """The interval a verdict decides on: the between-unit interval ``lv``, its half-width at least
    the timer's grid around its centre (``stats.widen_by_grid``: each median is known to half a tick
    at best; three units reading the same grid values give a t interval of width 0). ``within``:
    the within-unit (chunk) interval, given for units that shared one process
    (``SHARED_PROCESS_LOCATIONS``): the result is then the wider of the two (module docstring).
    NaN bounds when ``lv`` is not decided (too few units)."""
    if not lv.decided:
        return math.nan, math.nan
    g_lo, g_hi = widen_by_grid(lv.center, lv.center, new, base)
    lo, hi = min(lv.low, g_lo), max(lv.high, g_hi)
    if within is not None and all(math.isfinite(x) for x in within):
        lo, hi = min(lo, within[0]), max(hi, within[1])
    return lo, hi


def decision_level(level: float, one_process: bool) -> float:
    """The level a verdict decides at: ``level``, or ``SHARED_PROCESS_LEVEL`` at least where the
    units shared one process (``one_process``)."""
    return max(level, SHARED_PROCESS_LEVEL) if one_process else level


def shared_process(location: str) -> bool:
    """True when a run's units ran in one process (``sweep.unit_location``; module docstring)."""
    return location in SHARED_PROCESS_LOCATIONS


def paired_windows(new: Measurement, base: Measurement, *, with_units: bool = False) -> Any:
    """An interleaved pair cut, in chunk order, into windows holding at least a block's worth
    (n ** (1/3)) of samples of each side: (base samples, new samples) per window, in time order.
    A window never spans two units (their chunk ids are distinct and ordered by unit). With
    ``with_units``: (windows, the unit of each window)."""
    assert base.chunks is not None and new.chunks is not None
    want = max(1, math.ceil(min(base.n, new.n) ** (1 / 3)))
    ids = np.r_[base.chunks, new.chunks]
    side = np.r_[np.zeros(base.n, bool), np.ones(new.n, bool)]
    values = np.r_[base.samples, new.samples]
    gb = base.groups if base.groups is not None else np.zeros(base.n, np.int64)
    gn = new.groups if new.groups is not None else np.zeros(new.n, np.int64)
    units = np.r_[gb, gn]
    order = np.lexsort((ids, units))
    ids, side, values, units = ids[order], side[order], values[order], units[order]
    bounds = np.flatnonzero((np.diff(ids) != 0) | (np.diff(units) != 0)) + 1
    windows: list[tuple[np.ndarray, np.ndarray]] = []
    of_unit: list[int] = []
    start = last = nb = nn = 0
    for stop in list(bounds) + [ids.size]:
        seg = side[last:stop]
        nb += int((~seg).sum())
        nn += int(seg.sum())
        last = stop
        unit_ends = stop == ids.size or units[stop] != units[stop - 1]
        if (nb >= want and nn >= want) or (unit_ends and nb and nn):
            windows.append((values[start:stop][~side[start:stop]], values[start:stop][side[start:stop]]))
            of_unit.append(int(units[start]))
            start, nb, nn = stop, 0, 0
        elif unit_ends:  # a unit's tail with one side only: dropped from the pairing
            start, nb, nn = stop, 0, 0
    return (windows, of_unit) if with_units else windows


def interleaved_pair(base: Measurement, new: Measurement) -> bool:
    """True when two measurements of one configuration ran interleaved: no chunk id in common
    (an interleaved sweep numbers the chunks of all its kernels through) and overlapping ranges."""
    if base.chunks is None or new.chunks is None:
        return False
    a, b = np.unique(base.chunks), np.unique(new.chunks)
    return not np.intersect1d(a, b).size and a.min() < b.max() and b.min() < a.max()


def paired_ratio_ci(
    new: Measurement, base: Measurement, level: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """``median(new) / median(base)`` of an interleaved pair and its *within-unit* interval from a
    joint block bootstrap: the run is cut, in chunk order, into windows holding at least a block's
    worth of samples of each side (``levels.paired_windows``), and whole windows are resampled for
    both sides at once. What the two kernels shared inside a window (drift, a busy host for a few
    milliseconds) then cancels in the interval as it does in the design; resampling the sides
    independently would count it twice. This interval sees chunk noise only: it is reported beside
    the decision interval (``decision_interval``), not used by it."""
    windows, units = paired_windows(new, base, with_units=True)
    if len(windows) < 2:
        return ratio_ci(new, base, level=level, resamples=resamples, seed=seed)
    rng = np.random.default_rng(seed)
    # stratified by unit: windows are resampled within their unit and the per-unit ratios combined
    # (geometric mean), so this interval sees the chunk noise inside units and nothing of the
    # differences between them (a mixture of units' levels would make the medians jump between modes)
    strata = [[w for w, u in zip(windows, units) if u == g] for g in dict.fromkeys(units)]
    ratios = np.empty(resamples)
    for r in range(resamples):
        logs = []
        for wins in strata:
            pick = rng.integers(0, len(wins), size=len(wins))
            mb = np.median(np.concatenate([wins[i][0] for i in pick]))
            mn = np.median(np.concatenate([wins[i][1] for i in pick]))
            logs.append(math.log(mn / mb) if mb > 0 and mn > 0 else math.nan)
        ratios[r] = math.exp(float(np.mean(logs)))
    alpha = (1 - level) / 2
    lo, hi = np.nanquantile(ratios, [alpha, 1 - alpha])
    return (new.median / base.median, *widen_by_grid(float(lo), float(hi), new, base))


def trend(
    values: Sequence[float] | np.ndarray, order: Sequence[float] | np.ndarray | None = None, max_n: int = 2000
) -> tuple[float, float]:
    """Mann-Kendall trend test: (Kendall's tau of ``values`` against ``order`` — their time order
    when None —, two-sided p-value from the normal approximation with the tie corrections).
    Longer sequences are thinned evenly to ``max_n``."""
    y = np.asarray(values, dtype=np.float64)
    x = np.arange(y.size, dtype=np.float64) if order is None else np.asarray(order, dtype=np.float64)
    ok = np.isfinite(y) & np.isfinite(x)
    x, y = x[ok], y[ok]
    if y.size > max_n:
        pick = np.linspace(0, y.size - 1, max_n).astype(int)
        x, y = x[pick], y[pick]
    n = y.size
    if n < 8:
        return math.nan, 1.0
    d = np.sign(y[None, :] - y[:, None]) * np.sign(x[None, :] - x[:, None])
    s = float(np.triu(d, 1).sum())

    def ties(v: np.ndarray) -> float:
        _, c = np.unique(v, return_counts=True)
        return float(np.sum(c * (c - 1) * (2 * c + 5)))

    var = (n * (n - 1) * (2 * n + 5) - ties(y) - ties(x)) / 18.0
    if var <= 0 or s == 0:
        return 0.0, 1.0
    z = (s - math.copysign(1.0, s)) / math.sqrt(var)
    p = math.erfc(abs(z) / math.sqrt(2))
    return s / (n * (n - 1) / 2), p
