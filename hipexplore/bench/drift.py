"""Run-to-run drift: do repeated runs of a sweep agree as closely as their intervals say?

Why: an interval from one run (the block bootstrap over its chunks) describes the noise inside that
run. Between runs more can move: the clock and thermal state, where the buffers landed in memory, what
else the machine did. On the H200 ten back-to-back runs of the same triad sweep moved their medians
by 1-8 timer ticks, up to 3x what the within-run intervals implied at 16 MiB (BENCHMARKS.md,
"Measurement truth"). ``run_to_run`` compares the spread of repeated runs' medians with the sigma
their intervals imply (half-width / 1.96) and says, per configuration, where drift between runs
exceeds it, so a report can say so instead of quoting an interval that does not cover it.

``position_effect`` asks the same of one run's chunks: does a sample's position in its held chunk
move its time (issue 7's queue-depth artefact)? A per-position median of 50 samples at 64 MiB moves
by ~1% from noise alone, so the largest deviation comes with a block-bootstrap interval (chunks
resampled whole, as the medians' own intervals are) and each position's deviation says whether it is
distinguishable from none.
"""

from __future__ import annotations

import math
import warnings
from typing import Iterable

import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..schema import Configuration
from .stats import Measurement, student_t_quantile

#: SD of run medians above this multiple of the implied sigma: drift between runs is reported.
DRIFT_FACTOR = 1.5
#: configurations are compared run to run only on one device kind (bench.grouping)
CONFIG_KEYS = ("device_name", *Configuration.COLUMNS)


#: the configuration of a sample row (bench.grouping): position effects are per configuration
POSITION_KEYS = Configuration.COLUMNS


def _tick(times: np.ndarray) -> float:
    """The timer's grid relative to the median (NaN where that cannot be read)."""
    finite = times[np.isfinite(times)]
    med = float(np.median(finite)) if finite.size else math.nan
    if not finite.size or not med > 0:
        return math.nan
    return Measurement(finite).resolution / med


def position_effect(
    samples: pd.DataFrame, *, resamples: int = 400, seed: int = 0, level: float = 0.95, statistic: str = "median"
) -> pd.DataFrame:
    """One row per configuration of a samples frame (cold-reference rows and dropped samples left
    out): ``positions``, ``median_s``, ``max_effect`` (the largest |median at a chunk position /
    the typical position's - 1|, the typical being the median of the positions' medians, so that one
    odd position does not make every other look odd too), its bootstrap interval ``max_effect_low`` / ``max_effect_high`` (chunks resampled
    whole, ``resamples`` times), ``effects`` (each position's deviation, in position order),
    ``distinct`` (the positions whose deviation's interval excludes 0) and ``tick`` (the timer's grid
    relative to the median, ``Measurement.resolution``: a median on a grid moves by whole ticks, so
    an effect of one tick is what the timer can resolve; 32 ns is 0.9% of the 1 MiB triad on the H200).
    ``statistic="mean"`` compares the positions' means instead (and names the column ``median_s``
    still: the configuration's median): means are not on the grid and do not jump between the modes
    of a bimodal configuration, so they show a shift of a fraction of a tick that medians cannot."""
    need = {"chunk", "position", "time_s", *Configuration.UNTIMED_COLUMNS}
    missing = sorted(need - set(samples.columns))
    if missing:
        raise ConfigError(
            f"position_effect needs a samples frame with {', '.join(sorted(need))}; missing {', '.join(missing)}"
        )
    if not (isinstance(resamples, int) and resamples >= 10):
        raise ConfigError(f"resamples must be an integer >= 10, got {resamples!r}")
    if not (isinstance(level, float) and 0.5 <= level < 1):
        raise ConfigError(f"level must be a float in [0.5, 1), got {level!r}")
    if statistic not in ("median", "mean"):
        raise ConfigError(f"statistic must be 'median' or 'mean', got {statistic!r}")
    centre = np.nanmedian if statistic == "median" else np.nanmean
    x = samples[~Configuration.marks_reference(samples)]
    if "dropped" in x.columns:
        x = x[~x["dropped"].to_numpy(bool)]
    keys = [k for k in POSITION_KEYS if k in x.columns]
    rng = np.random.default_rng(seed)
    lo_q, hi_q = (1 - level) / 2 * 100, (1 + level) / 2 * 100
    rows = []
    for key, g in x.groupby(keys, dropna=False, sort=True):
        pos = g["position"].to_numpy(np.int64)
        npos = int(pos.max()) + 1
        chunk_ids, chunk_of = np.unique(g["chunk"].to_numpy(np.int64), return_inverse=True)
        table = np.full((len(chunk_ids), npos), np.nan)
        table[chunk_of, pos] = g["time_s"].to_numpy(float)

        def effects(t: np.ndarray) -> np.ndarray:  # (..., chunks, positions) -> (..., positions)
            per = centre(t, axis=-2)
            return per / np.nanmedian(per, axis=-1)[..., None] - 1

        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a position absent from a resample: NaN
            eff = effects(table)
            boot = effects(table[rng.integers(0, len(chunk_ids), size=(resamples, len(chunk_ids)))])
        mx = np.nanmax(np.abs(boot), axis=1)
        lo, hi = np.nanpercentile(boot, lo_q, axis=0), np.nanpercentile(boot, hi_q, axis=0)
        rows.append(
            {
                **dict(zip(keys, key if isinstance(key, tuple) else (key,))),
                "positions": npos,
                "median_s": float(np.median(g["time_s"])),
                "max_effect": float(np.nanmax(np.abs(eff))),
                "max_effect_low": float(np.nanpercentile(mx, lo_q)),
                "max_effect_high": float(np.nanpercentile(mx, hi_q)),
                "effects": [float(e) for e in eff],
                "distinct": [int(p) for p in range(npos) if lo[p] > 0 or hi[p] < 0],
                "tick": _tick(g["time_s"].to_numpy(float)),
            }
        )
    return pd.DataFrame(rows)


def run_to_run(summaries: pd.DataFrame | Iterable[pd.DataFrame], *, factor: float = DRIFT_FACTOR) -> pd.DataFrame:
    """One row per configuration present in at least two runs: ``runs``, ``mean_median_s``,
    ``sd_of_medians_s``, ``implied_sigma_s`` (mean of (ci_high - ci_low) / 2 / q), ``ratio``,
    ``drift`` (ratio > ``factor``) and a ``note`` saying so. q is 1.96, or for rows measured in k > 1
    passes Student's t with k - 1 degrees of freedom (their intervals are at least t-intervals over
    the pass medians, ``bench.stats``; dividing those by 1.96 would overstate sigma up to 1.6x at 4
    passes and hide drift). Runs are told apart by ``run_id`` (a frame) or by position (a list of
    summary frames)."""
    if isinstance(summaries, pd.DataFrame):
        frame = summaries.copy()
        if "run_id" not in frame.columns:
            raise ConfigError("run_to_run needs a run_id column (or a list of summary frames, one per run)")
    else:
        parts = [
            s.assign(run_id=f"run{i}") if "run_id" not in s.columns or s["run_id"].nunique() != 1 else s
            for i, s in enumerate(summaries)
        ]
        if not parts:
            raise ConfigError("run_to_run needs at least two runs' summaries, got none")
        frame = pd.concat(parts, ignore_index=True)
        if frame["run_id"].nunique() < len(parts):  # the same run_id twice (a resumed file): tell them apart
            frame["run_id"] = [f"run{i}" for i, s in enumerate(parts) for _ in range(len(s))]
    if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor > 0):
        raise ConfigError(f"factor must be a positive number, got {factor!r}")
    keys = [k for k in CONFIG_KEYS if k in frame.columns]
    frame = frame[~Configuration.marks_reference(frame)]
    rows = []
    for key, g in frame.groupby(keys, dropna=False):
        if g["run_id"].nunique() < 2:
            continue
        passes = g["passes"].fillna(1).astype(int) if "passes" in g.columns else pd.Series(1, index=g.index)
        q = passes.map(lambda k: student_t_quantile(0.975, int(k) - 1) if k > 1 else 1.96)
        implied = float(((g["ci_high_s"] - g["ci_low_s"]) / 2 / q).mean())
        sd = float(g["median_s"].std(ddof=1))
        ratio = sd / implied if implied > 0 else math.inf
        drift = bool(ratio > factor)
        rows.append(
            {
                **dict(zip(keys, key if isinstance(key, tuple) else (key,))),
                "runs": int(g["run_id"].nunique()),
                "mean_median_s": float(g["median_s"].mean()),
                "sd_of_medians_s": sd,
                "implied_sigma_s": implied,
                "ratio": ratio,
                "drift": drift,
                "note": (
                    f"drift between runs: the medians of {g['run_id'].nunique()} runs spread {ratio:.1f}x the sigma "
                    f"their intervals imply (> {factor:g}x); quote the spread between runs, not one run's interval"
                )
                if drift
                else "",
            }
        )
    return pd.DataFrame(rows)
