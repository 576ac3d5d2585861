"""Run-to-run drift: do repeated runs of a sweep agree as closely as their intervals say?

Why: an interval from one run (the block bootstrap over its chunks) describes the noise inside that
run. Between runs more can move: the clock and thermal state, where the buffers landed in memory, what
else the machine did. On the H200 ten back-to-back runs of the same triad sweep moved their medians
by 1-8 timer ticks, up to 3x what the within-run intervals implied at 16 MiB (BENCHMARKS.md,
"Measurement truth"). ``run_to_run`` compares the spread of repeated runs' medians with the sigma
their intervals imply (half-width / 1.96) and says, per configuration, where drift between runs
exceeds it, so a report can say so instead of quoting an interval that does not cover it.
"""
from __future__ import annotations

import math
from typing import Iterable

import pandas as pd

from ..errors import ConfigError

#: SD of run medians above this multiple of the implied sigma: drift between runs is reported.
DRIFT_FACTOR = 1.5
#: configurations are compared run to run only on one device kind (bench.grouping)
CONFIG_KEYS = ("device_name", "kernel", "size_bytes", "rotating_requested", "flush", "timer")


def run_to_run(summaries: pd.DataFrame | Iterable[pd.DataFrame], *, factor: float = DRIFT_FACTOR) -> pd.DataFrame:
    """One row per configuration present in at least two runs: ``runs``, ``mean_median_s``,
    ``sd_of_medians_s``, ``implied_sigma_s`` (mean of (ci_high - ci_low) / 2 / 1.96), ``ratio``,
    ``drift`` (ratio > ``factor``) and a ``note`` saying so. Runs are told apart by ``run_id`` (a
    frame) or by position (a list of summary frames)."""
    if isinstance(summaries, pd.DataFrame):
        frame = summaries.copy()
        if "run_id" not in frame.columns:
            raise ConfigError("run_to_run needs a run_id column (or a list of summary frames, one per run)")
    else:
        parts = [s.assign(run_id=f"run{i}") if "run_id" not in s.columns or s["run_id"].nunique() != 1 else s
                 for i, s in enumerate(summaries)]
        if not parts:
            raise ConfigError("run_to_run needs at least two runs' summaries, got none")
        frame = pd.concat(parts, ignore_index=True)
        if frame["run_id"].nunique() < len(parts):  # the same run_id twice (a resumed file): tell them apart
            frame["run_id"] = [f"run{i}" for i, s in enumerate(parts) for _ in range(len(s))]
    if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor > 0):
        raise ConfigError(f"factor must be a positive number, got {factor!r}")
    keys = [k for k in CONFIG_KEYS if k in frame.columns]
    frame = frame[frame["flush"] != "cold-reference"]
    rows = []
    for key, g in frame.groupby(keys, dropna=False):
        if g["run_id"].nunique() < 2:
            continue
        implied = float(((g["ci_high_s"] - g["ci_low_s"]) / 2 / 1.96).mean())
        sd = float(g["median_s"].std(ddof=1))
        ratio = sd / implied if implied > 0 else math.inf
        drift = bool(ratio > factor)
        rows.append({**dict(zip(keys, key if isinstance(key, tuple) else (key,))), "runs": int(g["run_id"].nunique()),
                     "mean_median_s": float(g["median_s"].mean()), "sd_of_medians_s": sd, "implied_sigma_s": implied,
                     "ratio": ratio, "drift": drift,
                     "note": (f"drift between runs: the medians of {g['run_id'].nunique()} runs spread {ratio:.1f}x the sigma "
                              f"their intervals imply (> {factor:g}x); quote the spread between runs, not one run's interval")
                     if drift else ""})
    return pd.DataFrame(rows)
