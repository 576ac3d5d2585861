"""The host's load beside the noise: was the machine busy while the chunks were timed, and does the
spread of the timings follow the load?

Why: on a 2-core host that other work kept at load 12-20 the report called rows "bimodal: two modes
4 ms apart" (a scheduler's time slice: the timing process preempted) and never said the host was
busy, although every chunk records it (``devices.telemetry.HostLoad``: ``host_load``, the other
runnable tasks at the reading after the chunk; ``host_busy``, the share of all CPU time others used
since the previous chunk; ``host_steal``; and the device's ``clock_mhz``). This module reads those
columns of a samples frame and says, in numbers, how busy the host was and whether the spread tracks
the load (the report's headline, the sweep panel).

Busy: a chunk is busy when the other runnable tasks at its reading are at least the host's cores
(``host_load >= cores``): every core then had another task wanting it, so the timing process had to
share a core and its launches could be preempted. Fewer other tasks leave a core free (one other task
on 2 cores is not contention), and the share of CPU time others used cannot tell that either: others
using 90% of 16 cores still leave one free.

Tracks: Spearman's rank correlation between each chunk's load and its spread (max - min of its
samples over its configuration's median), the spread taken as its percentile among its own
configuration's chunks so that a configuration that is noisier by nature (a flush, a small size) does
not stand in for the load; two-sided p from the rank correlation's null (z = rho * sqrt(n - 1)). The
spread tracks the load when rho > 0 at p < ``TRACK_P`` and, where busy and quiet chunks both exist,
single launches spread wider (IQR/median, median over the configurations holding both) in busy chunks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..schema import Configuration

#: a rank correlation at or below this p (and positive) says the spread tracks the load
TRACK_P = 0.01
#: fewest chunks with a spread for the rank correlation
MIN_CHUNKS = 10
#: fewest samples per side for a configuration's busy-against-quiet noise
MIN_SIDE = 8
#: a host busy in at least this share of the chunks is named on a first screen even where the spread
#: is not shown to track the load (no quiet chunks to compare with, too few chunks)
NOTABLE_SHARE = 0.1


@dataclass(frozen=True)
class LoadSummary:
    """How busy the host was over the chunks of a samples frame, and whether the spread tracks it."""

    cores: int | None
    chunks: int  # chunks with a load reading
    busy_chunks: int  # of them busy (NaN-free only when ``cores`` is known)
    load_median: float  # other runnable tasks at a chunk's reading, median over the chunks
    load_min: float
    load_max: float
    others_share: float  # share of all CPU time others used, median over the chunks
    rho: float = math.nan  # rank correlation of chunk spread and load
    p_value: float = math.nan
    rho_chunks: int = 0
    noise_busy: float = math.nan  # IQR/median of single launches in busy chunks (median over configurations)
    noise_quiet: float = math.nan
    clock_min: float = math.nan  # the device's clock over the chunks, MHz
    clock_median: float = math.nan
    clock_max: float = math.nan
    throttled: int = 0  # samples flagged below the throttle threshold

    @property
    def busy_share(self) -> float:
        return self.busy_chunks / self.chunks if self.cores and self.chunks else math.nan

    @property
    def tracks(self) -> bool:
        """Whether the spread follows the load (see the module docstring)."""
        if not (self.rho > 0 and self.p_value <= TRACK_P):
            return False
        return not (
            math.isfinite(self.noise_busy) and math.isfinite(self.noise_quiet) and self.noise_busy <= self.noise_quiet
        )

    def answer(self) -> str:
        """One plain sentence for a first screen."""
        if not self.cores:
            return (
                f"Host load: {_num(self.load_median)} other runnable tasks in the median chunk "
                f"(the core count was not recorded, so busy is not judged)."
            )
        if not self.busy_chunks:
            return f"Host load: the host was quiet: no chunk had other tasks wanting all {self.cores} cores."
        share = "every chunk" if self.busy_chunks == self.chunks else f"{self.busy_share:.0%} of the chunks"
        text = f"Host load: the host was busy in {share} (other tasks wanted all {self.cores} cores)"
        if self.tracks:
            return text + "; the spread tracks the load, so a quieter host would give tighter numbers."
        if self.busy_chunks == self.chunks:
            return text + ": these timings carry that load (a quiet host would show how much)."
        if math.isfinite(self.rho):
            return text + "; the spread does not track the load."
        return text + "."

    @property
    def notable(self) -> bool:
        """Worth a first screen's sentence: the spread tracks the load, or the host was busy in at
        least ``NOTABLE_SHARE`` of the chunks."""
        return self.tracks or (self.busy_share >= NOTABLE_SHARE if self.cores else False)

    def sentence(self) -> str:
        """The numbers behind ``answer``: the load, the definition of busy, the test and the clock."""
        text = (
            f"Host load: other runnable tasks at each chunk's reading numbered {_num(self.load_median)} in the median "
            f"chunk ({_num(self.load_min)} to {_num(self.load_max)})"
        )
        if math.isfinite(self.others_share):
            text += f", and others used {self.others_share:.0%} of the CPU time (median)"
        if self.cores:
            text += (
                f"; a chunk is busy when they are at least the host's {self.cores} cores (every core wanted by another "
                f"task, so the timing process shared one): busy in {self.busy_chunks} of {self.chunks} chunks "
                f"({self.busy_share:.0%})"
            )
        else:
            text += "; the core count was not recorded, so no chunk is judged busy"
        text += ". " + self._test_text()
        return text + self._clock_text()

    def _test_text(self) -> str:
        if not math.isfinite(self.rho):
            return (
                f"Whether the spread tracks the load is not tested: fewer than {MIN_CHUNKS} chunks with a spread, "
                f"or a load that never changed."
            )
        how = (
            f"rank correlation of each chunk's spread with its load {self.rho:+.2f} over {self.rho_chunks} chunks, "
            f"p {_p(self.p_value)}"
        )
        both = math.isfinite(self.noise_busy) and math.isfinite(self.noise_quiet)
        noise = (
            f"; single launches spread {self.noise_busy:.1%} (IQR/median) in busy chunks against "
            f"{self.noise_quiet:.1%} in quiet ones"
            if both
            else ""
        )
        verdict = "The spread tracks the load" if self.tracks else "The spread does not track the load"
        return f"{verdict} ({how}{noise})."

    def _clock_text(self) -> str:
        if not math.isfinite(self.clock_median):
            return ""
        span = (
            f"{_num(self.clock_median)} MHz in every chunk"
            if self.clock_min == self.clock_max
            else f"{_num(self.clock_min)}-{_num(self.clock_max)} MHz (median {_num(self.clock_median)})"
        )
        thr = f"; {self.throttled} sample(s) ran throttled" if self.throttled else ""
        return f" The device's clock read {span}{thr}."


def _num(v: Any) -> str:
    if isinstance(v, str):
        return v
    return f"{v:.0f}" if float(v).is_integer() else f"{v:.1f}"


def _p(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-3 else "< 0.001"


def cores_of(metadata: Mapping[str, Any] | None) -> int | None:
    """The host's core count a run recorded (``cpu_count`` of its provenance), None when absent."""
    try:
        n = int(str((metadata or {}).get("cpu_count", "")).strip())
    except ValueError:
        return None
    return n if n > 0 else None


def _selected(
    samples: pd.DataFrame | None, kernel: str | None, size_bytes: int | None, dropped: bool = False
) -> pd.DataFrame:
    """The timed samples of ``kernel``/``size_bytes`` whose chunk recorded the load, the dropped ones
    (throttled) left out unless ``dropped`` (empty if none)."""
    if samples is None or samples.empty or not {"host_load", "chunk", "time_s"} <= set(samples.columns):
        return pd.DataFrame()
    s = samples
    if kernel is not None and "kernel" in s.columns:
        s = s[s["kernel"] == kernel]
    if size_bytes is not None and "size_bytes" in s.columns:
        s = s[s["size_bytes"].astype("int64") == int(size_bytes)]
    if "dropped" in s.columns and not dropped:
        s = s[~s["dropped"].fillna(False).astype(bool)]
    return s[np.isfinite(s["time_s"].to_numpy(float)) & np.isfinite(s["host_load"].to_numpy(float))]


def chunk_frame(samples: pd.DataFrame, kernel: str | None = None, size_bytes: int | None = None) -> pd.DataFrame:
    """One row per timed chunk of ``samples`` (dropped samples left out): its configuration, ``n``,
    ``load``, ``others``, ``clock``, ``spread`` (max - min of its samples over its configuration's
    median; NaN for a one-sample chunk) and ``spread_rank`` (its percentile among its configuration's
    chunks). Empty where the samples record no load."""
    s = _selected(samples, kernel, size_bytes)
    if s.empty:
        return pd.DataFrame()
    conf = [c for c in Configuration.COLUMNS if c in s.columns]
    key = [*conf, *(["pass_index"] if "pass_index" in s.columns else []), "chunk"]
    rel = s["time_s"] / s.groupby(conf, dropna=False)["time_s"].transform("median")
    readings = {
        name: (col, "first")
        for name, col in (("load", "host_load"), ("others", "host_busy"), ("clock", "clock_mhz"))
        if col in s.columns
    }
    out = (
        s.assign(_rel=rel)
        .groupby(key, dropna=False, sort=False)
        .agg(n=("time_s", "size"), lo=("_rel", "min"), hi=("_rel", "max"), **readings)
        .reset_index()
    )
    for name in ("others", "clock"):
        if name not in out.columns:
            out[name] = math.nan
    out["spread"] = np.where(out["n"] >= 2, out["hi"] - out["lo"], math.nan)
    out["spread_rank"] = out.groupby(conf, dropna=False)["spread"].rank(pct=True)
    return out.drop(columns=["lo", "hi"])


def rank_correlation(x: np.ndarray, y: np.ndarray) -> tuple[float, float, int]:
    """(Spearman's rho, two-sided p, pairs) of the finite pairs; NaN with fewer than ``MIN_CHUNKS``
    pairs or a constant side (ties share their mean rank)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    n = int(ok.sum())
    if n < MIN_CHUNKS:
        return math.nan, math.nan, n
    rx, ry = pd.Series(x[ok]).rank().to_numpy(), pd.Series(y[ok]).rank().to_numpy()
    if rx.std() == 0 or ry.std() == 0:
        return math.nan, math.nan, n
    rho = float(np.corrcoef(rx, ry)[0, 1])
    return rho, math.erfc(abs(rho) * math.sqrt(n - 1) / math.sqrt(2)), n


def _noise_by_state(samples: pd.DataFrame, cores: int) -> tuple[float, float]:
    """(busy, quiet): IQR/median of single launches in busy and in quiet chunks, the median over the
    configurations holding at least ``MIN_SIDE`` samples of each."""
    conf = [c for c in Configuration.COLUMNS if c in samples.columns]
    busy, quiet = [], []
    for _key, grp in samples.groupby(conf, dropna=False, sort=False):
        t = grp["time_s"].to_numpy(float)
        hot = grp["host_load"].to_numpy(float) >= cores
        if hot.sum() >= MIN_SIDE and (~hot).sum() >= MIN_SIDE:
            busy.append(_iqr_rel(t[hot]))
            quiet.append(_iqr_rel(t[~hot]))
    return (float(np.median(busy)), float(np.median(quiet))) if busy else (math.nan, math.nan)


def _iqr_rel(t: np.ndarray) -> float:
    q1, med, q3 = np.percentile(t, [25, 50, 75])
    return float((q3 - q1) / med) if med > 0 else math.nan


def load_summary(
    samples: pd.DataFrame | None, cores: int | None, kernel: str | None = None, size_bytes: int | None = None
) -> LoadSummary | None:
    """How busy the host was over ``samples``' chunks (of ``kernel``/``size_bytes`` where given) and
    whether the spread tracks it; None where no chunk recorded the load (files from before it, or
    a platform without ``/proc``)."""
    chunks = chunk_frame(samples, kernel, size_bytes)
    if chunks.empty:
        return None
    load = chunks["load"].to_numpy(float)
    cores = int(cores) if cores else None
    rho, p, n = rank_correlation(load, chunks["spread_rank"].to_numpy(float))
    noise = _noise_by_state(_selected(samples, kernel, size_bytes), cores) if cores else (math.nan, math.nan)
    clock = chunks["clock"].to_numpy(float)
    clock = clock[np.isfinite(clock)]
    others = chunks["others"].to_numpy(float)
    others = others[np.isfinite(others)]
    every = _selected(samples, kernel, size_bytes, dropped=True)
    throttled = int(every["throttled"].fillna(False).astype(bool).sum()) if "throttled" in every.columns else 0
    return LoadSummary(
        cores=cores,
        chunks=len(chunks),
        busy_chunks=int((load >= cores).sum()) if cores else 0,
        load_median=float(np.median(load)),
        load_min=float(load.min()),
        load_max=float(load.max()),
        others_share=float(np.median(others)) if others.size else math.nan,
        rho=rho,
        p_value=p,
        rho_chunks=n,
        noise_busy=noise[0],
        noise_quiet=noise[1],
        clock_min=float(clock.min()) if clock.size else math.nan,
        clock_median=float(np.median(clock)) if clock.size else math.nan,
        clock_max=float(clock.max()) if clock.size else math.nan,
        throttled=throttled,
    )


__all__ = ["LoadSummary", "MIN_CHUNKS", "TRACK_P", "chunk_frame", "cores_of", "load_summary", "rank_correlation"]
