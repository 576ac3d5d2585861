"""Figures of the compile cache in a tuning flow (``plots``' module docstring: frames in, a
``Figure`` out): the compile time saved over the requests, the hit rate with each request's outcome,
the outcome counts, and the seconds of each tuning-replay scenario; with the frames behind them
(``compile_time_curves``, ``hit_rate``, ``outcome_counts``) for tables and tests.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .errors import ConfigError
from .plot_parts import _axes, _require
from .schema import HIT_OUTCOMES

#: Fixed order and colours so the same outcome looks the same in every figure.
OUTCOME_ORDER = ("compiled", "memory-hit", "disk-hit", "remote-hit", "joined", "bypassed", "failed")
OUTCOME_COLORS = {
    "compiled": "#d62728",
    "memory-hit": "#2ca02c",
    "disk-hit": "#17becf",
    "remote-hit": "#1f77b4",
    "joined": "#bcbd22",
    "bypassed": "#9467bd",
    "failed": "#000000",
}
#: The columns (of schema.EVENT_COLUMNS) the figures read; a frame needs only these.
_EVENTS_NEEDED = ("seq", "outcome", "lookup_seconds", "compile_seconds")


def _events(events: pd.DataFrame, what: str = "events frame") -> pd.DataFrame:
    _require(events, _EVENTS_NEEDED, what)
    return events.sort_values("seq", kind="stable").reset_index(drop=True)


def compile_time_curves(events: pd.DataFrame, baseline: pd.DataFrame | None = None) -> pd.DataFrame:
    """Cumulative seconds per request with the cache off and on.

    On: the measured wall time of each lookup (hits cost their lookup, misses their compile).
    Off: the measured lookups of ``baseline`` (a replay with the cache disabled) when given, else
    the recorded compile time of every request (a hit carries its entry's original compile time),
    so the saving is a sum of recorded compile times, not a guess.
    """
    ev = _events(events)
    out = pd.DataFrame({"request": np.arange(len(ev)), "on_s": ev["lookup_seconds"].astype(float).cumsum().to_numpy()})
    if baseline is not None:
        base = _events(baseline, "baseline events frame")
        if len(base) != len(ev):
            raise ConfigError(
                f"baseline has {len(base)} requests but events has {len(ev)}; they must replay the same list"
            )
        out["off_s"] = base["lookup_seconds"].astype(float).cumsum().to_numpy()
        out.attrs["off_source"] = "measured"
    else:
        per_request = ev["compile_seconds"].astype(float).where(ev["outcome"] != "failed", ev["lookup_seconds"])
        out["off_s"] = per_request.fillna(0.0).cumsum().to_numpy()
        out.attrs["off_source"] = "sum of recorded compile times"
    out["saved_s"] = out["off_s"] - out["on_s"]
    return out


def _num(v: float) -> str:
    from .readable import format_number

    return format_number(v, trim=True)  # never 1.04e+03


def saving_text(off: float, on: float) -> str:
    """The panel's second line: ``saved 0.998 s, 2.0× less``; a pass slower with the cache says so
    (not ``saved -0.00165 s, 1.0× less``), and a factor under 1.05 is left out (it reads 1.0×)."""
    if off < on:
        return f"{_num(on - off)} s more with the cache (no saving)"
    factor = off / on if on > 0 else float("inf")
    return f"saved {_num(off - on)} s" + (f", {factor:.1f}× less" if 1.05 <= factor < float("inf") else "")


def plot_compile_time_saved(
    events: pd.DataFrame, ax: Axes | None = None, baseline: pd.DataFrame | None = None, ideal_s: float | None = None
) -> Figure:
    """Cumulative compile time with the cache off and on over the request index, the saving shaded;
    ``ideal_s`` (the compile floor: each unique kernel's fastest measured compile, summed; tuning/floor.py)
    as a dashed line."""
    curves = compile_time_curves(events, baseline)
    fig, ax = _axes(ax)
    if ideal_s is not None and np.isfinite(ideal_s):
        ax.axhline(
            float(ideal_s),
            color="#9467bd",
            linestyle="--",
            linewidth=1,
            label=f"ideal floor {_num(float(ideal_s))} s (unique kernels, fastest measured)",
        )
    x = curves["request"]
    ax.plot(x, curves["off_s"], color="#d62728", label=f"cache off ({curves.attrs['off_source']})")
    ax.plot(x, curves["on_s"], color="#2ca02c", label="cache on (measured lookups)")
    ax.fill_between(
        x,
        curves["on_s"],
        curves["off_s"],
        where=curves["off_s"] >= curves["on_s"],
        color="#2ca02c",
        alpha=0.2,
        interpolate=True,
        label="saved",
    )
    off, on = float(curves["off_s"].iloc[-1]), float(curves["on_s"].iloc[-1])
    ax.text(
        0.02,
        0.97,
        f"{len(curves)} requests: {_num(off)} s → {_num(on)} s\n{saving_text(off, on)}",
        transform=ax.transAxes,
        va="top",
        fontsize="small",
        bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "0.8"},
    )
    ax.set_xlabel("request index")
    ax.set_ylabel("cumulative compile time (s)")
    ax.set_title("Compile time saved")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    return fig


def hit_rate(events: pd.DataFrame, window: int | None = None) -> pd.DataFrame:
    """Per request: whether it avoided a compile, the cumulative hit rate and a rolling one."""
    ev = _events(events)
    hit = ev["outcome"].isin(HIT_OUTCOMES).astype(float)
    n = len(ev)
    window = window or max(5, n // 10)
    if window < 1:
        raise ConfigError(f"window must be >= 1; got {window}")
    return pd.DataFrame(
        {
            "request": np.arange(n),
            "outcome": ev["outcome"].to_numpy(),
            "hit": hit.to_numpy(),
            "cumulative": (hit.cumsum() / np.arange(1, n + 1)).to_numpy(),
            "rolling": hit.rolling(window, min_periods=1).mean().to_numpy(),
        }
    )


def outcome_counts(events: pd.DataFrame) -> pd.Series:
    """Requests per outcome, in the fixed outcome order (unknown outcomes last)."""
    ev = _events(events)
    counts = ev["outcome"].value_counts()
    order = [o for o in OUTCOME_ORDER if o in counts.index] + sorted(set(counts.index) - set(OUTCOME_ORDER))
    return counts.reindex(order)


def plot_cache_hits(events: pd.DataFrame, ax: Axes | None = None, window: int | None = None) -> Figure:
    """Hit rate over the request index (cumulative and rolling), each request's outcome as a tick
    along the bottom, and the outcome counts in the legend."""
    rates = hit_rate(events, window)
    counts = outcome_counts(events)
    fig, ax = _axes(ax)
    x = rates["request"]
    ax.plot(x, rates["cumulative"] * 100, color="k", label="cumulative hit rate")
    ax.plot(x, rates["rolling"] * 100, color="0.55", linewidth=1, label="rolling hit rate")
    for outcome, n in counts.items():
        sel = rates["outcome"] == outcome
        ax.scatter(
            x[sel],
            np.full(int(sel.sum()), -6.0),
            marker="|",
            s=60,
            color=OUTCOME_COLORS.get(outcome, "0.5"),
            label=f"{outcome}: {int(n)}",
            clip_on=False,
        )
    ax.set_ylim(-10, 105)
    ax.set_xlabel("request index")
    ax.set_ylabel("hit rate (%)")
    total = int(counts.sum())
    hits = int(counts.reindex(list(HIT_OUTCOMES)).fillna(0).sum())
    ax.set_title(f"Cache hits — {hits}/{total} requests ({hits / total:.0%})")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="lower right", bbox_to_anchor=(1.0, 0.07))  # above the outcome ticks
    return fig


def plot_outcome_counts(events: pd.DataFrame, ax: Axes | None = None) -> Figure:
    """Horizontal bars: how many requests compiled, hit memory or disk, joined, bypassed, failed."""
    counts = outcome_counts(events)
    fig, ax = _axes(ax, (5.5, 3.0))
    y = np.arange(len(counts))
    ax.barh(y, counts.to_numpy(), color=[OUTCOME_COLORS.get(o, "0.5") for o in counts.index])
    for yi, n in zip(y, counts.to_numpy()):
        ax.annotate(str(int(n)), xy=(n, yi), xytext=(3, 0), textcoords="offset points", va="center", fontsize="small")
    ax.set_yticks(y)
    ax.set_yticklabels(list(counts.index))
    ax.invert_yaxis()
    ax.set_xlabel("requests")
    ax.set_title("Cache outcomes")
    ax.grid(True, axis="x", alpha=0.3)
    return fig


def plot_replay_scenarios(scenarios: pd.DataFrame, ax: Axes | None = None) -> Figure:
    """Seconds per tuning-replay scenario (``ideal``, ``off``, the cache modes) as bars, each
    annotated with its compiles and hits. Uses the measured wall time when present, else the
    summed lookup times."""
    frame = scenarios.reset_index() if "scenario" not in scenarios.columns else scenarios
    _require(frame, ("scenario", "compiles", "lookups"), "scenario table")
    wall = frame["wall_seconds"] if "wall_seconds" in frame.columns else pd.Series(np.nan, index=frame.index)
    summed = (
        frame["lookup_seconds_sum"] if "lookup_seconds_sum" in frame.columns else pd.Series(np.nan, index=frame.index)
    )
    measured = wall.notna().all()
    seconds = (wall if measured else summed).astype(float)
    if seconds.isna().all():
        raise ConfigError("scenario table has neither wall_seconds nor lookup_seconds_sum values")
    fig, ax = _axes(ax, (6.4, 0.6 * len(frame) + 1.4))
    y = np.arange(len(frame))
    colors = ["#7f7f7f" if s == "ideal" else "#d62728" if s == "off" else "#2ca02c" for s in frame["scenario"]]
    ax.barh(y, seconds, color=colors)
    for yi, (_, row), sec in zip(y, frame.iterrows(), seconds):
        hits = int(
            row.get("memory_hits", 0) + row.get("disk_hits", 0) + row.get("remote_hits", 0) + row.get("joins", 0)
        )
        ax.annotate(
            f"{sec:.3g} s — {int(row['compiles'])} compiles, {hits} hits of {int(row['lookups'])}",
            xy=(sec, yi),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize="small",
        )
    ax.set_yticks(y)
    ax.set_yticklabels(list(frame["scenario"]))
    ax.invert_yaxis()
    ax.set_xlim(0, float(np.nanmax(seconds)) * 1.9 if np.nanmax(seconds) > 0 else 1)
    ax.set_xlabel("wall time of the pass (s)" if measured else "summed lookup time (s)")
    ax.set_title("Tuning replay by scenario")
    ax.grid(True, axis="x", alpha=0.3)
    return fig


__all__ = [
    "OUTCOME_COLORS",
    "OUTCOME_ORDER",
    "compile_time_curves",
    "hit_rate",
    "outcome_counts",
    "plot_cache_hits",
    "plot_compile_time_saved",
    "plot_outcome_counts",
    "plot_replay_scenarios",
    "saving_text",
]
