"""The compile-cache A/B: tuning-replay scenarios (the cache off, its tiers, the ideal floor)
against a base scenario, each with the time a pass saves, the ratio new / base with its interval
and the verdict of the same rule as a kernel comparison (``verdict_rule``; ``faster``: the cache
saves time).

Why apart from ``verdicts.compare``: a replay's unit is a pass of the whole tuning list (summed
lookup seconds), not a kernel's timed samples, so its intervals are over repeated passes (Welch's t
over log pass totals) or, with one pass, over the requests of that pass.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .bench.levels import independent_units
from .bench.stats import Measurement
from .errors import ConfigError
from .verdict_rule import DEFAULT_THRESHOLD, change_called, check_threshold, rule_text, verdict


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


__all__ = ["compare_scenarios", "saving_text"]
