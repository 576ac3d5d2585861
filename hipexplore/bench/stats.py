"""Statistics over raw timing samples, and the rules that decide when to stop sampling.

``Measurement`` keeps every sample (seconds); summaries are computed from them on demand, so a
reader can always recompute or re-plot. Noise warnings follow torch.utils.benchmark: relative IQR
above 10% ("noisy") and above 25% ("very noisy"). Outliers are Tukey's: outside
[Q1 - 1.5 IQR, Q3 + 1.5 IQR]; they are counted, never dropped.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np

from ..errors import ConfigError

NOISY_IQR = 0.10
VERY_NOISY_IQR = 0.25


@dataclass
class Measurement:
    """Raw samples of one configuration plus the statistics reviewers ask for."""

    samples: np.ndarray
    label: str = ""
    seed: int = 0
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        arr = np.asarray(self.samples, dtype=np.float64).ravel()
        if arr.size == 0:
            raise ConfigError(f"a Measurement needs at least one sample ({self.label or 'unnamed'})")
        if not np.all(np.isfinite(arr)):
            raise ConfigError(f"samples of {self.label or 'a measurement'} contain NaN or infinity")
        self.samples = arr

    @property
    def n(self) -> int:
        return int(self.samples.size)

    @property
    def median(self) -> float:
        return float(np.median(self.samples))

    @property
    def mean(self) -> float:
        return float(np.mean(self.samples))

    @property
    def min(self) -> float:
        return float(np.min(self.samples))

    @property
    def max(self) -> float:
        return float(np.max(self.samples))

    def percentile(self, q: float) -> float:
        return float(np.percentile(self.samples, q))

    @property
    def p5(self) -> float:
        return self.percentile(5)

    @property
    def p95(self) -> float:
        return self.percentile(95)

    @property
    def iqr(self) -> float:
        q1, q3 = np.percentile(self.samples, [25, 75])
        return float(q3 - q1)

    @property
    def iqr_rel(self) -> float:
        med = self.median
        return self.iqr / med if med > 0 else math.nan

    @property
    def stdev(self) -> float:
        return float(np.std(self.samples, ddof=1)) if self.n > 1 else 0.0

    @property
    def cv(self) -> float:
        """stdev / mean."""
        m = self.mean
        return self.stdev / m if m > 0 else math.nan

    def outliers(self) -> np.ndarray:
        """Boolean mask of Tukey outliers (kept in the data, only flagged)."""
        q1, q3 = np.percentile(self.samples, [25, 75])
        iqr = q3 - q1
        return (self.samples < q1 - 1.5 * iqr) | (self.samples > q3 + 1.5 * iqr)

    @property
    def n_outliers(self) -> int:
        return int(self.outliers().sum())

    def bootstrap_ci(self, level: float = 0.95, resamples: int = 2000) -> tuple[float, float]:
        """Percentile-bootstrap CI of the median (seeded: the same samples give the same interval)."""
        if not 0 < level < 1:
            raise ConfigError(f"confidence level must be in (0, 1), got {level!r}")
        if self.n == 1:
            return self.median, self.median
        rng = np.random.default_rng(self.seed)
        meds = np.empty(resamples)
        per = max(1, int(4_000_000 // self.n))  # bound memory: at most ~4M indices at once
        for lo in range(0, resamples, per):
            hi = min(resamples, lo + per)
            idx = rng.integers(0, self.n, size=(hi - lo, self.n))
            meds[lo:hi] = np.median(self.samples[idx], axis=1)
        alpha = (1 - level) / 2
        low, high = np.quantile(meds, [alpha, 1 - alpha])
        return float(low), float(high)

    def warnings(self) -> list[str]:
        out = list(self.notes)
        r = self.iqr_rel
        if r > VERY_NOISY_IQR:
            out.append(f"very noisy: IQR/median {r:.1%} > {VERY_NOISY_IQR:.0%}")
        elif r > NOISY_IQR:
            out.append(f"noisy: IQR/median {r:.1%} > {NOISY_IQR:.0%}")
        return out

    def summary(self) -> dict[str, float | int | str]:
        lo, hi = self.bootstrap_ci()
        return {
            "n": self.n,
            "median_s": self.median,
            "mean_s": self.mean,
            "min_s": self.min,
            "p5_s": self.p5,
            "p95_s": self.p95,
            "iqr_rel": self.iqr_rel,
            "cv": self.cv,
            "ci_low_s": lo,
            "ci_high_s": hi,
            "n_outliers": self.n_outliers,
            "warning": "; ".join(self.warnings()),
        }

    def __repr__(self) -> str:
        return (f"Measurement({self.label!r}, n={self.n}, median={self.median * 1e6:.3f} us, "
                f"IQR/median={self.iqr_rel:.2%}, cv={self.cv:.2%})")


@dataclass(frozen=True)
class StopRule:
    """When to stop sampling.

    Fixed: ``iterations=N`` takes exactly N samples. Adaptive (``iterations=None``): stop once at
    least ``min_samples`` samples and ``min_time_s`` of measured kernel time are in and the relative
    stdev is at most ``target_cv``; give up (with a note) at ``timeout_s`` of wall time or at
    ``max_samples``. Defaults follow nvbench (0.5% rel. stdev, >= 10 samples, >= 0.5 s, 15 s timeout)
    scaled down for interactive use.
    """

    iterations: int | None = None
    min_samples: int = 10
    min_time_s: float = 0.05
    target_cv: float = 0.005
    timeout_s: float = 5.0
    max_samples: int = 100_000

    def __post_init__(self) -> None:
        if self.iterations is not None and (not isinstance(self.iterations, int) or self.iterations < 1):
            raise ConfigError(f"iterations must be a positive int or None (adaptive), got {self.iterations!r}")
        if self.min_samples < 1 or self.max_samples < self.min_samples:
            raise ConfigError(f"need 1 <= min_samples ({self.min_samples}) <= max_samples ({self.max_samples})")
        if not self.target_cv > 0 or not self.timeout_s > 0 or self.min_time_s < 0:
            raise ConfigError(f"target_cv ({self.target_cv}) and timeout_s ({self.timeout_s}) must be > 0, min_time_s ({self.min_time_s}) >= 0")

    @property
    def adaptive(self) -> bool:
        return self.iterations is None

    def at_least(self, n: int) -> "StopRule":
        """The same rule with at least ``n`` samples (adaptive) — used to cover every buffer set."""
        if self.adaptive and self.min_samples < n:
            from dataclasses import replace

            return replace(self, min_samples=n, max_samples=max(self.max_samples, n))
        return self

    def remaining(self, samples: np.ndarray, elapsed_s: float) -> tuple[int, str]:
        """How many more samples to take (0: stop) and, when stopping, why."""
        n = int(samples.size)
        if not self.adaptive:
            assert self.iterations is not None
            return max(0, self.iterations - n), "fixed iteration count"
        if n >= self.max_samples:
            return 0, f"max_samples {self.max_samples} reached before cv <= {self.target_cv:.2%}"
        if elapsed_s >= self.timeout_s and n >= 1:
            return 0, f"timeout {self.timeout_s:g} s reached before cv <= {self.target_cv:.2%}"
        if n >= max(2, self.min_samples) and float(samples.sum()) >= self.min_time_s:
            mean = float(samples.mean())
            cv = float(samples.std(ddof=1)) / mean if mean > 0 else math.inf
            if cv <= self.target_cv:
                return 0, "converged"
        need = max(self.min_samples - n, 0)
        return max(need, 1), ""


def measure_adaptively(take: Callable[[int], Iterable[float]], rule: StopRule, chunk: int = 64,
                       clock: Callable[[], float] = time.perf_counter) -> tuple[np.ndarray, str]:
    """Call ``take(k)`` for batches of samples until ``rule`` says stop; returns (samples, reason)."""
    got: list[float] = []
    t0 = clock()
    while True:
        arr = np.asarray(got)
        more, why = rule.remaining(arr, clock() - t0)
        if more == 0:
            return arr, why
        k = min(more, chunk) if not rule.adaptive else chunk
        got.extend(float(x) for x in take(k))
