"""A sweep made in several passes (``SweepSpec.passes``), merged into one result.

Why: an interval from one pass describes the noise inside it, and on the H200 more changes between
runs than inside one. Ten back-to-back runs of the triad sweep spread their medians 5-10x what one
run's chunk bootstrap implied at 1-16 MiB, for two measured reasons (benchmarks/drift_h200.py,
benchmarks/placement_h200.py; BENCHMARKS.md "Run-to-run drift"):

* placement: the kernel's own (in-kernel) time depends on where its buffers landed: 8 allocations
  of the 1 MiB triad, all resident in the L2, ran in 0.96-1.12 us, the same per allocation in every
  run; one run sees one allocation, and rerunning lands elsewhere;
* the event floor (launch + drain, what events include and the kernel does not) moved between
  runs by 3.04-3.30 us at 4 KiB while staying put within one configuration's samples.

A pass is a whole sweep of its share of the samples (fixed iterations split evenly, rounded up;
an adaptive rule's minimum, time budget and sample cap divided by the passes), with its own
buffers and its own reference parts. On a GPU each pass runs in a worker process of its own, since
the event floor is fixed per process (``bench.run.run_location``: each pass is one unit, a
``bench.sweeprun.SweepRun``). Every pass but the first also holds a pad allocation of its
own size (``pad_bytes``) through the pass, allocated before its buffers, so that they land at other
addresses (fresh processes without one allocate alike; on the H200 the pads widened the 16 MiB
intervals to cover the spread between runs). Passes that share one process (the host device,
Python-callable kernels) hold the pad in this process. On a GPU ``sweep()`` orchestrates the passes
from the caller's process: from a worker, one more idle CUDA context sat beside every pass, and the
16 MiB triad read 1.6-4% above one-pass runs. The passes run one after another, so each configuration
is measured at ``passes`` different times and placements. The merged samples keep every pass's rows
(``pass_index``; chunk ids made distinct), and every summary row is computed again from them: the
median over all passes, the interval from the two-stage bootstrap (passes, then blocks of chunks
within each; ``stats.Measurement(groups=...)``), and each bias against the reference merged the
same way. Results are written once, when the last pass is done; a sweep stopped part-way keeps
what earlier, finished sweeps wrote to the same file, but not the passes of this one.
"""
from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..devices.base import Device
from ..errors import ConfigError
from ..schema import SUMMARY_COLUMNS, Configuration
from .modes import warning_with_modes
from .stats import Measurement, StopRule, is_timeout, set_bias

#: the pad of pass k is k * PAD_STEP plus a pass-dependent multiple of PAD_JITTER
PAD_STEP = 2 << 20
PAD_JITTER = 64 << 10
#: summary warnings that are the statistics' own (``Measurement.warnings``: recomputed on the merged
#: samples, not carried over from the passes)
_STAT_WARNINGS = re.compile(r"(?:very )?noisy: IQR/median [^;]*|bimodal: Sarle's coefficient [^(]*\(two modes; the median may sit between them\)"
                            r"|bimodal: modes at [^;]*")  # bench.modes' flag, recomputed too
CONFIG = list(Configuration.COLUMNS)
#: the key less its kernel: the kernels of one interleaved group share it
SETUP = list(Configuration.SETUP_COLUMNS)


def pass_rule(rule: StopRule, passes: int) -> StopRule:
    """The stop rule of one of ``passes`` passes: fixed counts split evenly (rounded up), an
    adaptive rule's minimum samples and time, time budget and sample cap divided among them."""
    if passes == 1:
        return rule
    if rule.iterations is not None:
        if rule.iterations < passes:
            raise ConfigError(f"iterations ({rule.iterations}) must be at least the number of passes ({passes}): "
                              f"every pass takes its share of the samples")
        return dataclasses.replace(rule, iterations=math.ceil(rule.iterations / passes))
    return dataclasses.replace(rule, min_samples=max(1, math.ceil(rule.min_samples / passes)),
                               min_time_s=rule.min_time_s / passes, min_wall_s=rule.min_wall_s / passes, timeout_s=rule.timeout_s / passes,
                               max_samples=max(1, math.ceil(rule.max_samples / passes)))


def pad_bytes(k: int, seed: int = 0) -> int:
    """Bytes held allocated through pass ``k`` (0 for the first), so its buffers land elsewhere."""
    if k == 0:
        return 0
    jitter = int(np.random.default_rng([seed, k]).integers(1, 32))
    return k * PAD_STEP + jitter * PAD_JITTER


def run_passes(device: Device, passes: int, measure: Callable[[int], Any], *, pad: bool = True) -> list[Any]:
    """``measure(k)`` for each pass with its pad allocation held here (``pad``: the passes allocate
    in this process; a pass in a process of its own holds its pad there instead); the results in
    pass order."""
    results = []
    for k in range(passes):
        pad_buf = device.alloc(pad_bytes(k)) if k and pad else None
        try:
            results.append(measure(k))
        finally:
            if pad_buf is not None:
                device.free(pad_buf)
    return results


def stack(samples: list[pd.DataFrame]) -> pd.DataFrame:
    """The units' sample frames (in unit order, an empty frame for a unit that is not there) as one
    frame: ``pass_index`` = the unit, chunk ids offset per configuration less its kernel (interleaved
    kernels number their chunks through one sequence within a unit, and must stay apart, and in time
    order, across units too), ``iteration`` counted through per configuration."""
    parts = [frame.assign(pass_index=np.int64(k)) for k, frame in enumerate(samples) if len(frame)]
    if not parts:
        return samples[0]
    merged = pd.concat(parts, ignore_index=True)
    codes = merged.groupby(SETUP, sort=False).ngroup().to_numpy()
    units = merged["pass_index"].to_numpy()
    chunk = merged["chunk"].to_numpy(np.int64).copy()
    offsets = np.zeros(int(codes.max()) + 1, dtype=np.int64)
    for k in dict.fromkeys(units.tolist()):  # the units in order: each starts where the last one's ids ended
        rows = units == k
        here = codes[rows]
        top = np.full(len(offsets), -1, dtype=np.int64)
        np.maximum.at(top, here, chunk[rows])
        chunk[rows] += offsets[here]
        seen = top >= 0
        offsets[seen] += top[seen] + 1
    merged["chunk"] = chunk
    merged["iteration"] = merged.groupby(CONFIG, sort=False).cumcount().astype(np.int64)
    return merged


def unstack(merged: pd.DataFrame) -> dict[int, pd.DataFrame]:
    """``stack`` undone: each unit's sample frame with its own chunk ids (what it measured), by
    unit. Exact for frames ``stack`` wrote: a unit's offset is where the previous unit's ids ended."""
    out: dict[int, pd.DataFrame] = {}
    if not len(merged):
        return out
    codes = merged.groupby(SETUP, sort=False).ngroup().to_numpy()
    units = merged["pass_index"].to_numpy()
    chunk = merged["chunk"].to_numpy(np.int64)
    ends = np.zeros(int(codes.max()) + 1, dtype=np.int64)
    for k in sorted(set(units.tolist())):
        rows = units == k
        here = codes[rows]
        top = np.full(len(ends), -1, dtype=np.int64)
        np.maximum.at(top, here, chunk[rows])
        frame = merged[rows].copy()
        frame["chunk"] = chunk[rows] - ends[here]
        seen = top >= 0
        ends[seen] = top[seen] + 1
        frame["iteration"] = frame.groupby(CONFIG, sort=False).cumcount().astype(np.int64)
        out[int(k)] = frame.reset_index(drop=True)
    return out


def measurement_of(key: tuple, g: pd.DataFrame) -> Measurement:
    """A merged configuration's ``Measurement``: its kept samples (all when every one was dropped),
    blocks of chunks within its units."""
    kept = g[~g["dropped"].to_numpy(bool)]
    if not len(kept):
        kept = g
    return Measurement(kept["time_s"].to_numpy(), label=" ".join(str(x) for x in key),
                       chunks=kept["chunk"].to_numpy(), groups=kept["pass_index"].to_numpy())


def merged_row(g: pd.DataFrame, m: Measurement, samples: pd.DataFrame, peak_bandwidth_gbs: float) -> dict[str, Any]:
    """One configuration's summary row from its units' rows ``g`` and its merged ``samples``
    (``m``: their ``measurement_of``); the bias is set by the caller, against the merged reference."""
    row = g.iloc[0].to_dict()
    s = m.summary()
    row.update({c: s[c] for c in ("n", "median_s", "mean_s", "min_s", "p5_s", "p95_s", "iqr_rel", "cv", "ci_low_s",
                                  "ci_high_s", "n_outliers", "bimodality")})
    row["passes"] = m.passes
    notes: list[str] = []
    for w in g["warning"].fillna(""):
        for part in _STAT_WARNINGS.sub("", str(w)).split("; "):
            part = part.strip()
            if part and part not in notes:
                notes.append(part)
    row["warning"] = warning_with_modes("; ".join([*notes, *(x for x in m.warnings() if x not in notes)]), m,
                                        row["ci_low_s"], row["ci_high_s"])
    reasons = list(dict.fromkeys(str(r) for r in g["stop_reason"]))
    row["stop_reason"] = " | ".join(reasons)
    # timed out when any pass did: a pass's own flag, or a stop reason that is a timeout or a cap
    row["timed_out"] = bool(g["timed_out"].fillna(False).astype(bool).any() or any(is_timeout(r) for r in reasons))
    row["n_throttled"] = int(g["n_throttled"].sum())
    clocks = samples["clock_mhz"].to_numpy(float)
    row["clock_mhz"] = float(np.nanmedian(clocks)) if np.isfinite(clocks).any() else math.nan
    row["bandwidth_gbs"] = row["footprint_bytes"] / m.median / 1e9 if m.median > 0 else math.nan
    row["peak_bandwidth_gbs"] = peak_bandwidth_gbs
    floors = g["floor_s"].to_numpy(float) if "floor_s" in g else np.empty(0)
    row["floor_s"] = float(np.median(floors[np.isfinite(floors)])) if np.isfinite(floors).any() else math.nan
    row["net_median_s"] = row["median_s"] - row["floor_s"] if math.isfinite(row["floor_s"]) else math.nan
    return row


def rebias(row: dict[str, Any], m: Measurement, ref: Measurement | None) -> None:
    """A merged row's bias against its merged reference (left as the units had it when there is no
    reference and they had none either)."""
    if ref is not None or not math.isnan(float(row.get("reference_median_s", math.nan))):
        set_bias(row, m, ref)


def merge(samples: list[pd.DataFrame], summaries: list[pd.DataFrame], *, peak_bandwidth_gbs: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One sweep result from its passes (samples and summary frames in pass order)."""
    merged = stack(samples)
    groups = {key: g for key, g in merged.groupby(CONFIG, sort=False)} if len(merged) else {}
    rows = pd.concat([s for s in summaries if len(s)], ignore_index=True) if any(len(s) for s in summaries) else summaries[0]
    out = []
    kept: dict[tuple, Measurement] = {}
    refs: dict[tuple, Measurement] = {}
    for key, g in rows.groupby(CONFIG, sort=False):
        if key not in groups:
            continue
        m = kept[key] = measurement_of(key, groups[key])
        row = merged_row(g, m, groups[key], peak_bandwidth_gbs)
        if Configuration.marks_reference(row):
            refs[(row["kernel"], row["size_bytes"], row["timer"])] = m
        out.append(row)
    for row in out:
        key = tuple(row[c] for c in CONFIG)
        rebias(row, kept[key], refs.get((row["kernel"], row["size_bytes"], row["timer"])))
    return merged, pd.DataFrame(out, columns=list(SUMMARY_COLUMNS))


__all__ = ["PAD_STEP", "measurement_of", "merge", "merged_row", "pad_bytes", "pass_rule", "rebias", "run_passes", "stack", "unstack"]
