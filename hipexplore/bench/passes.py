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
from ..schema import Configuration
from .modes import warning_with_modes
from .outcome import MERGED, Bias, ConfigurationResult, Floor, RunSummary, Samples, Statistics
from .stats import Measurement, StopRule, is_timeout

#: the pad of pass k is k * PAD_STEP plus a pass-dependent multiple of PAD_JITTER
PAD_STEP = 2 << 20
PAD_JITTER = 64 << 10
#: summary warnings that are the statistics' own (``Measurement.warnings``: recomputed on the merged
#: samples, not carried over from the passes)
_STAT_WARNINGS = re.compile(
    r"(?:very )?noisy: IQR/median [^;]*|bimodal: Sarle's coefficient [^(]*\(two modes; the median may sit between them\)"
    r"|bimodal: modes at [^;]*"
)  # bench.modes' flag, recomputed too
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
            raise ConfigError(
                f"iterations ({rule.iterations}) must be at least the number of passes ({passes}): "
                f"every pass takes its share of the samples"
            )
        return dataclasses.replace(rule, iterations=math.ceil(rule.iterations / passes))
    return dataclasses.replace(
        rule,
        min_samples=max(1, math.ceil(rule.min_samples / passes)),
        min_time_s=rule.min_time_s / passes,
        min_wall_s=rule.min_wall_s / passes,
        timeout_s=rule.timeout_s / passes,
        max_samples=max(1, math.ceil(rule.max_samples / passes)),
    )


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


def stack_units(group: list[dict[int, Samples]]) -> list[Samples]:
    """``stack`` over results: the samples of a key group's configurations (the configuration less its
    kernel; each a map unit -> its samples, chunk ids as the unit measured them), each configuration's
    stacked in unit order: ``pass_index`` the unit, chunk ids offset per unit past the group's last
    one, ``iteration`` counted through."""
    import numpy as np

    parts: list[list[Samples]] = [[] for _ in group]
    offset = 0
    for k in range(max((k for units in group for k in units), default=-1) + 1):
        here = [(i, units[k]) for i, units in enumerate(group) if k in units and units[k].n]
        if not here:
            continue
        for i, s in here:
            parts[i].append(
                s.but(chunk=s["chunk"].astype(np.int64) + offset, pass_index=np.full(s.n, k, dtype=np.int64))
            )
        offset += max(int(s["chunk"].max()) for _i, s in here) + 1
    out = []
    for units, mine in zip(group, parts):
        whole = Samples.concat(mine) if mine else next(iter(units.values()))
        out.append(whole.but(iteration=np.arange(whole.n, dtype=np.int64)) if mine else whole)
    return out


def merged_result(units: list[ConfigurationResult], samples: Samples, peak_bandwidth_gbs: float) -> ConfigurationResult:
    """One configuration's result from its units' results (in unit order) and its merged ``samples``
    (``stack_units``); the bias stays the first unit's, for the caller to take against the merged
    reference (``rebiased``)."""
    first = units[0]
    m = samples.measurement(" ".join(str(x) for x in first.configuration), groups=True)
    s = m.summary()
    notes: list[str] = []
    for w in (r.warning if isinstance(r.warning, str) else "" for r in units):
        for part in _STAT_WARNINGS.sub("", w).split("; "):
            part = part.strip()
            if part and part not in notes:
                notes.append(part)
    warning = warning_with_modes(
        "; ".join([*notes, *(x for x in m.warnings() if x not in notes)]), m, s["ci_low_s"], s["ci_high_s"]
    )
    reasons = list(dict.fromkeys(str(r.run.stop_reason) for r in units))
    # timed out when any unit did: a unit's own flag, or a stop reason that is a timeout or a cap
    timed_out = any(r.run.timed_out is True or r.run.timed_out == 1 for r in units) or any(
        is_timeout(x) for x in reasons
    )
    clocks = samples["clock_mhz"].astype(float)
    floors = np.array([float(r.floor.floor_s) for r in units])
    floor_s = float(np.median(floors[np.isfinite(floors)])) if np.isfinite(floors).any() else math.nan
    run = RunSummary(
        m.passes,
        " | ".join(reasons),
        bool(timed_out),
        int(sum(r.run.n_throttled for r in units if r.run.n_throttled == r.run.n_throttled)),
        float(np.nanmedian(clocks)) if np.isfinite(clocks).any() else math.nan,
        first.plan.footprint_bytes / m.median / 1e9 if m.median > 0 else math.nan,
        peak_bandwidth_gbs,
    )
    floor = Floor(floor_s, s["median_s"] - floor_s if math.isfinite(floor_s) else math.nan)
    rest = tuple(p for p in first.summaries if p.NAME not in (Statistics.NAME, RunSummary.NAME))
    return dataclasses.replace(
        first,
        unit=MERGED,
        samples=samples,
        measurement=m,
        floor=floor,
        summaries=(Statistics.of(s), run, *rest),
        warning=warning,
    )


def rebiased(result: ConfigurationResult, ref: Measurement | None) -> ConfigurationResult:
    """A merged result's bias against its merged reference (left as the units had it when there is no
    reference and they had none either)."""
    if ref is None and math.isnan(float(result.bias.reference_median_s)):
        return result
    return dataclasses.replace(result, bias=Bias.of(result.measurement, ref))


__all__ = [
    "PAD_STEP",
    "merged_result",
    "pad_bytes",
    "pass_rule",
    "rebiased",
    "run_passes",
    "stack",
    "stack_units",
    "unstack",
]
