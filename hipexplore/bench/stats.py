"""Statistics over raw timing samples, and the rules that decide when to stop sampling.

``Measurement`` keeps every sample (seconds); summaries are computed from them on demand, so a
reader can always recompute or re-plot. Noise warnings follow torch.utils.benchmark: relative IQR
above 10% ("noisy") and above 25% ("very noisy"). Outliers are Tukey's: outside
[Q1 - 1.5 IQR, Q3 + 1.5 IQR]; they are counted, never dropped.

Intervals respect how samples were taken. Launches are timed in chunks (one stream hold each), and
samples of one chunk are correlated (on the H200 flushed launches alternate fast/slow within a
chunk), so the bootstrap resamples whole blocks of consecutive chunks (a block bootstrap), never
single samples, when the chunk of every sample is known. Blocks hold at least ``n ** (1/3)``
samples (the usual block-length rate) and never split a chunk. Resampling single samples made the
1 MiB l2-read interval on the H200 3.5x too narrow. A bias (``median / reference - 1``) gets its own
two-sample interval (both sides resampled independently).

Samples taken in several *passes* through a sweep (``SweepSpec.passes``: each pass with its own
buffers, at another time) carry the pass of each sample (``groups``), and the bootstrap is then
two-stage: passes drawn with replacement, then blocks within each drawn pass. Why: on the H200 the
triad's in-kernel time depends on where its buffers landed (0.96-1.12 us at 1 MiB between 8
allocations) and the event floor moves between runs (3.04-3.30 us), so ten runs' medians spread
5-10x what one run's chunk bootstrap implied; only an interval over several placements and times
can cover what changes between runs (BENCHMARKS.md, "Run-to-run drift").
A bootstrap over a handful of passes is too narrow, though: it resamples only k values (its spread
shrinks by (k-1)/k) and reads normal quantiles where k pass medians call for Student's t with k-1
degrees of freedom (3.18 for k = 4 at 95%, not 1.96). On the H200, 9 runs of 4 passes each spread
their 4 MiB in-kernel medians 1.63x what the two-stage bootstrap implied. So with passes the
interval is at least the t-interval over the pass medians, in log space (median x/÷
exp(t * SD(log pass medians) / sqrt(k))): a time is positive and its noise multiplicative, and the
linear form gave a host cold reference of 2 passes the interval [-21, 63] us), and a bias's interval at least the t-interval over the per-pass ratios (``ratio_ci``).

A bimodality flag uses Sarle's bimodality coefficient, (skew^2 + 1) / (excess kurtosis +
3 (n-1)^2 / ((n-2)(n-3))), above 5/9 (the value of a uniform distribution): two modes, so a median
and its interval can sit between them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable

from ..errors import ConfigError
from .bootstrap import block_labels, block_medians, grouped_block_medians, resampled_medians  # noqa: F401 - re-exported

if TYPE_CHECKING:  # numpy is imported in the functions that compute: `bench --help` loads this module without it
    import numpy as np

NOISY_IQR = 0.10
VERY_NOISY_IQR = 0.25
#: Sarle's bimodality coefficient of a uniform distribution; above it: flagged as bimodal.
BIMODAL_COEFFICIENT = 5 / 9
#: Fewest samples for which the bimodality flag is computed (the coefficient needs n > 3 and is
#: unstable for small n).
BIMODAL_MIN_SAMPLES = 30
#: Fewest bootstrap blocks (chunks, or samples without chunk ids) before the interval rule may stop
#: sampling: a bootstrap over 2 blocks of 16 host samples once gave an interval of width exactly 0
#: (both blocks and their union had the same median) and "converged" at +-0.00%.
MIN_CI_BLOCKS = 8


def student_t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (no SciPy here): closed forms
    for 1 and 2, else bisection on the CDF (Simpson's rule over the density), to ~1e-7."""
    if not 0 < p < 1 or df < 1:
        raise ConfigError(f"t quantile needs 0 < p < 1 and df >= 1, got p={p!r}, df={df!r}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -student_t_quantile(1 - p, df)
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)

    def cdf(x: float) -> float:
        import numpy as np

        t = np.linspace(0.0, x, 4001)
        f = c * (1 + t * t / df) ** (-(df + 1) / 2)
        return 0.5 + float((x / 12000) * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum()))

    lo, hi = 0.0, 1.0
    while cdf(hi) < p:
        lo, hi = hi, hi * 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
        if hi - lo < 1e-9:
            break
    return (lo + hi) / 2


def bimodality_coefficient(samples: np.ndarray) -> float:
    """Sarle's coefficient (sample skewness and excess kurtosis, bias-corrected); NaN for n < 4
    or constant data."""
    import numpy as np

    x = np.asarray(samples, dtype=np.float64)
    n = x.size
    if n < 4:
        return math.nan
    d = x - x.mean()
    m2 = float(np.mean(d**2))
    if m2 <= 0:
        return math.nan
    g1 = float(np.mean(d**3)) / m2**1.5
    g2 = float(np.mean(d**4)) / m2**2 - 3.0
    skew = g1 * math.sqrt(n * (n - 1)) / (n - 2)
    kurt = ((n + 1) * g2 + 6) * (n - 1) / ((n - 2) * (n - 3))
    return (skew**2 + 1) / (kurt + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))


@dataclass
class Measurement:
    """Raw samples of one configuration plus the statistics reviewers ask for."""

    samples: np.ndarray
    label: str = ""
    seed: int = 0
    notes: list[str] = field(default_factory=list)
    #: chunk (stream hold) of each sample, for the block bootstrap; None: samples are independent
    chunks: np.ndarray | None = None
    #: pass of each sample (``SweepSpec.passes``), for the two-stage bootstrap; None: one pass
    groups: np.ndarray | None = None

    def __post_init__(self) -> None:
        import numpy as np

        arr = np.asarray(self.samples, dtype=np.float64).ravel()
        if arr.size == 0:
            raise ConfigError(f"a Measurement needs at least one sample ({self.label or 'unnamed'})")
        if not np.all(np.isfinite(arr)):
            raise ConfigError(f"samples of {self.label or 'a measurement'} contain NaN or infinity")
        self.samples = arr
        if self.chunks is not None:
            ch = np.asarray(self.chunks).ravel()
            if ch.size != arr.size:
                raise ConfigError(f"{self.label or 'a measurement'}: {ch.size} chunk ids for {arr.size} samples")
            self.chunks = ch
        if self.groups is not None:
            gr = np.asarray(self.groups).ravel()
            if gr.size != arr.size:
                raise ConfigError(f"{self.label or 'a measurement'}: {gr.size} pass ids for {arr.size} samples")
            self.groups = gr

    @property
    def passes(self) -> int:
        """How many passes the samples come from (1 without pass ids)."""
        import numpy as np

        return 1 if self.groups is None else int(np.unique(self.groups).size)

    def blocks(self) -> np.ndarray:
        """Bootstrap block label of each sample (see ``block_labels``)."""
        return block_labels(self.chunks, self.n)

    @property
    def n(self) -> int:
        return int(self.samples.size)

    @property
    def median(self) -> float:
        """median of the samples (s)"""
        import numpy as np

        return float(np.median(self.samples))

    mean = property(lambda self: float(self.samples.mean()), doc="mean of the samples (s)")
    min = property(lambda self: float(self.samples.min()), doc="fastest sample (s)")
    max = property(lambda self: float(self.samples.max()), doc="slowest sample (s)")

    def percentile(self, q: float) -> float:
        import numpy as np

        return float(np.percentile(self.samples, q))

    @property
    def p5(self) -> float:
        return self.percentile(5)

    @property
    def p95(self) -> float:
        return self.percentile(95)

    @property
    def iqr(self) -> float:
        import numpy as np

        q1, q3 = np.percentile(self.samples, [25, 75])
        return float(q3 - q1)

    @property
    def iqr_rel(self) -> float:
        med = self.median
        return self.iqr / med if med > 0 else math.nan

    @property
    def stdev(self) -> float:
        import numpy as np

        return float(np.std(self.samples, ddof=1)) if self.n > 1 else 0.0

    @property
    def cv(self) -> float:
        """stdev / mean."""
        m = self.mean
        return self.stdev / m if m > 0 else math.nan

    def outliers(self) -> np.ndarray:
        """Boolean mask of Tukey outliers (kept in the data, only flagged)."""
        import numpy as np

        q1, q3 = np.percentile(self.samples, [25, 75])
        iqr = q3 - q1
        return (self.samples < q1 - 1.5 * iqr) | (self.samples > q3 + 1.5 * iqr)

    @property
    def n_outliers(self) -> int:
        return int(self.outliers().sum())

    def bootstrap_medians(self, resamples: int = 2000, seed: int | None = None) -> np.ndarray:
        """Medians of bootstrap resamples: whole blocks of chunks when chunk ids are known, else
        single samples (seeded: the same samples give the same medians)."""
        import numpy as np

        rng = np.random.default_rng(self.seed if seed is None else seed)
        if self.passes > 1:
            return grouped_block_medians(self.samples, self.chunks, self.groups, resamples, rng)  # type: ignore[arg-type]
        if self.chunks is not None:
            return block_medians(self.samples, self.blocks(), resamples, rng)
        meds = np.empty(resamples)
        per = max(1, int(4_000_000 // self.n))  # bound memory: at most ~4M indices at once
        for lo in range(0, resamples, per):
            hi = min(resamples, lo + per)
            idx = rng.integers(0, self.n, size=(hi - lo, self.n))
            meds[lo:hi] = np.median(self.samples[idx], axis=1)
        return meds

    @property
    def resolution(self) -> float:
        """The timer's grid, as seen in the samples: the smallest gap between distinct values when
        the samples sit on a grid (CUDA events and %globaltimer tick in 32 ns on the H200), else 0."""
        import numpy as np

        u = np.unique(self.samples)
        if u.size < 2 or u.size > self.n // 2:  # as many values as samples: no grid to speak of
            return 0.0
        return float(np.min(np.diff(u)))

    def bootstrap_ci(self, level: float = 0.95, resamples: int = 2000) -> tuple[float, float]:
        """Percentile-bootstrap CI of the median: a block bootstrap over chunks when the chunk of
        every sample is known (see the module docstring), else over single samples; widened by half
        the timer's ``resolution`` on each side, since a median read on a grid is not known better
        than the grid (on the H200 the 1 MiB medians of repeated runs moved by one 32 ns tick while
        the unwidened intervals were narrower than the tick)."""
        import numpy as np

        if not 0 < level < 1:
            raise ConfigError(f"confidence level must be in (0, 1), got {level!r}")
        if self.n == 1:
            return self.median, self.median
        meds = self.bootstrap_medians(resamples)
        alpha = (1 - level) / 2
        low, high = np.quantile(meds, [alpha, 1 - alpha])
        if self.passes > 1:  # at least the t-interval over the pass medians (module docstring)
            assert self.groups is not None
            per = np.array([np.median(self.samples[self.groups == g]) for g in np.unique(self.groups)])
            logs = np.log(per[per > 0])
            if logs.size > 1 and self.median > 0:  # in log space: never a bound <= 0 (module docstring)
                t_half = (
                    student_t_quantile(1 - alpha, logs.size - 1) * float(np.std(logs, ddof=1)) / math.sqrt(logs.size)
                )
                low, high = (
                    min(float(low), self.median * math.exp(-t_half)),
                    max(float(high), self.median * math.exp(t_half)),
                )
        half = self.resolution / 2
        return float(low) - half, float(high) + half

    @property
    def bimodality(self) -> float:
        """Sarle's bimodality coefficient (NaN below ``BIMODAL_MIN_SAMPLES`` samples)."""
        return bimodality_coefficient(self.samples) if self.n >= BIMODAL_MIN_SAMPLES else math.nan

    @property
    def bimodal(self) -> bool:
        b = self.bimodality
        return bool(b > BIMODAL_COEFFICIENT) if not math.isnan(b) else False

    def warnings(self) -> list[str]:
        out = list(self.notes)
        r = self.iqr_rel
        if r > VERY_NOISY_IQR:
            out.append(f"very noisy: IQR/median {r:.1%} > {VERY_NOISY_IQR:.0%}")
        elif r > NOISY_IQR:
            out.append(f"noisy: IQR/median {r:.1%} > {NOISY_IQR:.0%}")
        if self.bimodal:
            out.append(
                f"bimodal: Sarle's coefficient {self.bimodality:.2f} > {BIMODAL_COEFFICIENT:.3f} "
                f"(two modes; the median may sit between them)"
            )
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
            "bimodality": self.bimodality,
            "warning": "; ".join(self.warnings()),
        }

    def __repr__(self) -> str:
        return (
            f"Measurement({self.label!r}, n={self.n}, median={self.median * 1e6:.3f} us, "
            f"IQR/median={self.iqr_rel:.2%}, cv={self.cv:.2%})"
        )


def ratio_ci(
    new: Measurement, base: Measurement, level: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """``median(new) / median(base)`` and its percentile interval from a two-sample bootstrap (each
    side resampled on its own, by blocks where its chunks are known; with passes, at least the
    t-interval over the per-pass ratios). A bias is this ratio - 1."""
    import numpy as np

    if not 0 < level < 1:
        raise ConfigError(f"confidence level must be in (0, 1), got {level!r}")
    if base.median <= 0:
        raise ConfigError(f"the base median of {base.label or 'a measurement'} must be positive, got {base.median!r}")
    a = new.bootstrap_medians(resamples, seed=seed)
    b = base.bootstrap_medians(resamples, seed=seed + 1)
    ratios = a / np.where(b > 0, b, np.nan)
    alpha = (1 - level) / 2
    lo, hi = np.nanquantile(ratios, [alpha, 1 - alpha])
    per = _per_pass_ratios(new, base)
    per = per[per > 0]
    if per.size > 1:  # as for a median: at least the t-interval over the passes (module docstring)
        # in log space: a ratio's spread is multiplicative, and a t-interval on the ratios themselves
        # (3 passes of a 3x slower kernel, t = 4.3 at df 2) reached below 0
        t_half = student_t_quantile(1 - alpha, per.size - 1) * float(np.std(np.log(per), ddof=1)) / math.sqrt(per.size)
        point = new.median / base.median
        lo, hi = min(float(lo), point * math.exp(-t_half)), max(float(hi), point * math.exp(t_half))
    return (new.median / base.median, *widen_by_grid(float(lo), float(hi), new, base))


def widen_by_grid(lo: float, hi: float, new: Measurement, base: Measurement) -> tuple[float, float]:
    """A ratio interval widened by the timer's grid: each median is known to half its timer's grid at
    best (see Measurement.bootstrap_ci). Divided, not multiplied by 1 - grid, so the low bound stays
    above 0 whatever the grid."""
    grid = new.resolution / 2 / new.median + base.resolution / 2 / base.median if new.median > 0 else 0.0
    return lo / (1 + grid), hi * (1 + grid)


def _per_pass_ratios(new: Measurement, base: Measurement) -> np.ndarray:
    """The ratio of medians in each pass both sides share (each side's pass against the other's
    median where only one side has passes); empty with fewer than two passes."""
    import numpy as np

    def medians(m: Measurement) -> dict:
        if m.passes < 2:
            return {}
        assert m.groups is not None
        return {g: float(np.median(m.samples[m.groups == g])) for g in np.unique(m.groups)}

    pn, pb = medians(new), medians(base)
    if pn and pb:
        common = sorted(set(pn) & set(pb))
        return np.array([pn[g] / pb[g] for g in common if pb[g] > 0]) if len(common) > 1 else np.empty(0)
    if pn:
        return np.array([v / base.median for v in pn.values()])
    if pb:
        return np.array([new.median / v for v in pb.values() if v > 0])
    return np.empty(0)


@dataclass(frozen=True)
class StopRule:
    """When to stop sampling.

    Fixed: ``iterations=N`` takes exactly N samples. Adaptive (``iterations=None``): once at least
    ``min_samples`` samples and ``min_time_s`` of measured kernel time are in — or ``min_wall_s`` of
    wall time, for a short kernel behind a long flush (a 31 us kernel after a host l2-read flush
    of ~7 ms never gathered 0.05 s of kernel time inside the 10 s timeout) — stop as soon as one
    of these holds (checked in this order):

    1. the 95% interval of the median is tight: its half-width is at most ``target_ci`` of the
       median (default 1%; the block bootstrap over chunks when they are known, once there are
       at least ``MIN_CI_BLOCKS`` blocks);
    2. the noise is low: relative stdev at most ``target_cv`` (nvbench's max-noise, 0.5%);
    3. the noise has stabilised (nvbench's stdrel rule): the noise, measured robustly (IQR / 1.349 /
       median, the relative stdev of normal noise that one huge sample from a busy host does not
       throw) every ``noise_every`` (16) samples, has a spread relative to its current value below
       ``stable_noise`` (5%) over the newer half of its history (at least 8 values, at most
       ``noise_window``). Inherently noisy kernels stop here instead of running to the timeout.
       A unit of a sweep in units records it more often (``bench.units.unit_rule``: every
       16/units samples), so that the units together take the samples one unit took.

    ``timeout_s`` of wall time (default 10 s; nvbench's is 15 s) or ``max_samples`` is the last resort; a stop there is reported as
    a timeout, never as convergence. The CI is re-evaluated only when the sample count has grown by
    10% (it costs a bootstrap), and must meet the target at two evaluations in a row.
    """

    iterations: int | None = None
    min_samples: int = 20
    min_time_s: float = 0.05
    min_wall_s: float = 0.5
    target_ci: float = 0.01
    target_cv: float = 0.005
    stable_noise: float = 0.05
    noise_window: int = 512
    noise_every: int = 16
    timeout_s: float = 10.0
    max_samples: int = 100_000

    def __post_init__(self) -> None:
        if self.iterations is not None and (
            isinstance(self.iterations, bool) or not isinstance(self.iterations, int) or self.iterations < 1
        ):
            raise ConfigError(f"iterations must be a positive int or None (adaptive), got {self.iterations!r}")
        if self.min_samples < 1 or self.max_samples < self.min_samples:
            raise ConfigError(f"need 1 <= min_samples ({self.min_samples}) <= max_samples ({self.max_samples})")
        for name in ("target_ci", "target_cv", "stable_noise", "timeout_s"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ConfigError(f"stop rule {name} must be a finite number > 0, got {v!r}")
        if not (isinstance(self.min_time_s, (int, float)) and math.isfinite(self.min_time_s) and self.min_time_s >= 0):
            raise ConfigError(f"stop rule min_time_s must be a finite number >= 0, got {self.min_time_s!r}")
        if isinstance(self.min_wall_s, bool) or not (
            isinstance(self.min_wall_s, (int, float)) and math.isfinite(self.min_wall_s) and self.min_wall_s >= 0
        ):
            raise ConfigError(f"stop rule min_wall_s must be a finite number of seconds >= 0, got {self.min_wall_s!r}")
        if self.noise_window < 2:
            raise ConfigError(f"stop rule noise_window must be >= 2, got {self.noise_window!r}")
        if isinstance(self.noise_every, bool) or not isinstance(self.noise_every, int) or self.noise_every < 1:
            raise ConfigError(
                f"stop rule noise_every must be an int >= 1 (samples between noise readings), got {self.noise_every!r}"
            )

    @property
    def adaptive(self) -> bool:
        return self.iterations is None

    def at_least(self, n: int) -> "StopRule":
        """The same rule with at least ``n`` samples (adaptive) — used to cover every buffer set."""
        if self.adaptive and self.min_samples < n:
            from dataclasses import replace

            return replace(self, min_samples=n, max_samples=max(self.max_samples, n))
        return self

    def tracker(self) -> "StopTracker":
        """A stateful checker for one configuration (remembers when the CI was last computed)."""
        return StopTracker(self)

    def remaining(self, samples: np.ndarray, elapsed_s: float, chunks: np.ndarray | None = None) -> tuple[int, str]:
        """How many more samples to take (0: stop) and, when stopping, why (stateless form)."""
        return StopTracker(self).check(samples, elapsed_s, chunks)


def running_rel_stdev(samples: np.ndarray) -> np.ndarray:
    """Relative stdev (ddof=1) of every prefix of ``samples`` with at least 2 samples."""
    import numpy as np

    x = np.asarray(samples, dtype=np.float64)
    if x.size < 2:
        return np.empty(0)
    k = np.arange(1, x.size + 1, dtype=np.float64)
    mean = np.cumsum(x) / k
    # Welford-free but stable enough for timings (values ~1e-6 to 1e-1 with small spread)
    var = (np.cumsum((x - x[0]) ** 2) - k * (mean - x[0]) ** 2) / np.maximum(k - 1, 1)
    rel = np.sqrt(np.maximum(var, 0.0)) / np.where(mean > 0, mean, np.nan)
    return rel[1:]


class StopTracker:
    """``StopRule`` applied to one growing series of samples."""

    def __init__(self, rule: StopRule) -> None:
        self.rule = rule
        self._ci_at = 0
        self._ci_hits = 0
        self._noise_at = 0
        self._noise: list[float] = []
        self.last_ci_rel = math.nan

    def check(self, samples: np.ndarray, elapsed_s: float, chunks: np.ndarray | None = None) -> tuple[int, str]:
        import numpy as np

        rule = self.rule
        n = int(np.asarray(samples).size)
        if not rule.adaptive:
            assert rule.iterations is not None
            return max(0, rule.iterations - n), "fixed iteration count"
        if n >= rule.min_samples and (float(np.sum(samples)) >= rule.min_time_s or elapsed_s >= rule.min_wall_s):
            x = np.asarray(samples, dtype=np.float64)
            m = None
            if n >= max(self._ci_at * 1.1, self._ci_at + 1) or self._ci_at == 0:
                m = Measurement(x, chunks=None if chunks is None else np.asarray(chunks)[:n])
                if (np.unique(m.blocks()).size if m.chunks is not None else n) < MIN_CI_BLOCKS:
                    m = None  # too few blocks for an interval to mean anything: asked again next time
            if m is not None:
                self._ci_at = n
                lo, hi = m.bootstrap_ci(resamples=400)
                med = m.median
                self.last_ci_rel = (hi - lo) / 2 / med if med > 0 else math.inf
                # two evaluations in a row (n, then >= 1.1 n): stopping at the first lucky
                # resample would bias the intervals of adaptive runs narrow
                self._ci_hits = self._ci_hits + 1 if self.last_ci_rel <= rule.target_ci else 0
                if self._ci_hits >= 2:
                    return 0, f"converged: 95% CI of the median +-{self.last_ci_rel:.2%} <= {rule.target_ci:.2%}"
            mean = float(x.mean())
            cv = float(x.std(ddof=1)) / mean if mean > 0 and n > 1 else math.inf
            if cv <= rule.target_cv:
                return 0, f"converged: rel stdev {cv:.2%} <= {rule.target_cv:.2%}"
            # nvbench's stdrel rule, on a robust noise measure (IQR / 1.349 / median: the relative
            # stdev for normal noise, but not thrown by the rare huge sample a busy host produces),
            # recorded every noise_every samples; the window is the newer half of that history
            if n >= self._noise_at + rule.noise_every:
                self._noise_at = n
                q1, q3 = np.percentile(x, [25, 75])
                med = float(np.median(x))
                self._noise.append((q3 - q1) / 1.349 / med if med > 0 else math.inf)
            hist = np.asarray(self._noise[-rule.noise_window :])
            window = hist[-max(8, hist.size // 2) :]
            if hist.size >= 8 and window[-1] > 0 and np.isfinite(window).all():
                spread = float(np.sqrt(np.mean((window - window[-1]) ** 2))) / float(window[-1])
                limit = rule.stable_noise
                if spread < limit:
                    return 0, (
                        f"converged: noise stabilised at {window[-1]:.2%} (robust rel. stdev; nvbench stdrel rule: "
                        f"spread {spread:.1%} < {limit:.1%} over the last {window.size} checks)"
                    )
        if n >= rule.max_samples:
            return 0, f"max_samples {rule.max_samples} reached before convergence{self._ci_note()}"
        if elapsed_s >= rule.timeout_s and n >= 1:
            return 0, f"timeout {rule.timeout_s:g} s reached before convergence{self._ci_note()}"
        need = max(rule.min_samples - n, 0)
        return max(need, 1), ""

    def _ci_note(self) -> str:
        return "" if math.isnan(self.last_ci_rel) else f" (CI of the median +-{self.last_ci_rel:.2%})"


def is_timeout(reason: str) -> bool:
    """True for a stop reason that is a timeout or a sample cap, not convergence."""
    return reason.startswith(("timeout", "max_samples"))


def measure_adaptively(
    take: Callable[[int], Iterable[float]],
    rule: StopRule,
    chunk: int = 64,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[np.ndarray, str]:
    """Call ``take(k)`` for batches of samples until ``rule`` says stop; returns (samples, reason).
    Each batch is one chunk for the block bootstrap."""
    import numpy as np

    got: list[float] = []
    chunk_ids: list[int] = []
    tracker = rule.tracker()
    t0 = clock()
    batch = 0
    while True:
        arr = np.asarray(got)
        more, why = tracker.check(arr, clock() - t0, np.asarray(chunk_ids))
        if more == 0:
            return arr, why
        k = min(more, chunk) if not rule.adaptive else chunk
        new = [float(x) for x in take(k)]
        got.extend(new)
        chunk_ids.extend([batch] * len(new))
        batch += 1
