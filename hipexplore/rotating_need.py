"""How many rotating buffers does a kernel need? Timing and counted cold fraction side by side.

Why this module: the rocMLIR PR 2188 review asks whether the PR's default of 5 rotating buffer
sets defeats the cache, and how many sets a kernel needs. Timing alone cannot answer it (a
faster median may be a warm cache or a lucky clock); the counter pass (``bench.counters``) reads
the DRAM bytes of the launches. ``rotating_need`` reads one (kernel, size)'s summary rows of a
sweep over rotating counts (flush ``none``) and says where the inputs become cold by the counters
(the knee: the fewest sets whose cold fraction is at least ``COLD_AT``), what ``auto`` chose and
what a fixed count (5, the PR's default) measured; ``plot_rotating_need`` draws both on one figure
with those counts marked. Without counters (the host, a device without a profiler) the time alone
answers, by its plateau, and the answer says so.

The plateau is claimed only where it is seen: the fewest sets from which every larger count's median
is within ``PLATEAU_REL`` of the most sets', and at least one count below the most sets on it. A
"plateau" at the largest count alone (the median still rising to the last point: 41 -> 108 us at
1 MiB on the host, issue 49) is "no plateau seen up to N sets", with the sweep that would show one.
Where counters exist the cold fraction answers, not the time (a flat time can be a warm cache).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from .bench.counters.record import COLD_AT, WARM_AT
from .bench.flush import NONE
from .errors import ConfigError
from .schema import Timer

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

#: the fixed count shown against the knee and ``auto`` (rocMLIR PR 2188's default)
FIXED_SETS = 5
#: a rotating count's median within this fraction of the most sets' median is on the time plateau
PLATEAU_REL = 0.03


@dataclass
class RotatingNeed:
    """One (kernel, size)'s answer; ``rows`` the flush-``none`` rows by rotating count."""

    kernel: str
    size_bytes: int
    rows: pd.DataFrame
    counted: bool
    knee: int | None = None  # fewest sets counted cold (None: never, or no counters)
    plateau: int | None = None  # fewest sets from which the time stays on its plateau (None: none seen)
    auto: int | None = None  # the count 'auto' chose, if it was swept
    fixed: dict[str, Any] = field(default_factory=dict)  # the fixed count's row: sets, cold fraction, state
    why_uncounted: str = ""

    def sentences(self) -> list[str]:
        """The answer in sentences with numbers (the notebook's and the report's text)."""
        from .plot_parts import format_bytes

        what = f"{self.kernel} at {format_bytes(self.size_bytes)} per array"
        out = []
        if not self.counted:
            why = self.why_uncounted.removeprefix("no counters:").strip()
            out.append(
                f"{what}: no counters{f' ({why})' if why else ''}; the cache state is inferred from the time alone."
            )
        elif self.knee is None:
            most = self.rows.iloc[-1]
            out.append(
                f"{what}: no rotating count swept made the inputs cold: the most sets ({int(most['rotating'])}) "
                f"read a cold fraction of {float(most['cold_fraction']):.2f} (cold needs >= {COLD_AT})."
            )
        else:
            out.append(
                f"{what}: the inputs are read from memory (cold fraction >= {COLD_AT}) from {self.knee} rotating "
                f"set(s) on."
            )
        if self.fixed:
            state = (
                f"cold fraction {self.fixed['cold_fraction']:.2f}, {self.fixed['state']}"
                if self.counted
                else "not counted"
            )
            out.append(
                f"{FIXED_SETS} sets (a fixed default such as rocMLIR PR 2188's): {state}, median "
                f"{self.fixed['median_s'] * 1e6:.4g} us."
            )
        if self.auto is not None:
            row = self.rows[self.rows["rotating_requested"].astype(str) == "auto"].iloc[0]
            state = f", {row['cache_state']} ({float(row['cold_fraction']):.2f})" if self.counted else ""
            out.append(f"'auto' chose {self.auto} sets{state}.")
        if self.counted and self.knee is None:
            out.append(f"Sweeping {self._more()}, would show where the inputs turn cold.")
        elif not self.counted and len(self.rows) > 1:
            out.append(self._time_sentence())
        return out

    def _most(self) -> int:
        return int(self.rows["rotating"].max())

    def _more(self) -> str:
        """The sweep that would go further: 'auto' and beyond (twice and four times the most sets)."""
        most = self._most()
        auto = "" if self.auto is not None else "'auto' and "
        return f"{auto}more than {most} sets, e.g. --rotating {most},{2 * most},{4 * most}"

    def _time_sentence(self) -> str:
        """Without counters: where the median time levels off, or that it was not seen to."""
        if self.plateau is not None:
            return (
                f"The median time levels off from {self.plateau} set(s) on: every larger count is within "
                f"{PLATEAU_REL:.0%} of the most sets' ({self._most()})."
            )
        first, last = self.rows.iloc[0], self.rows.iloc[-1]
        sets = lambda n: f"{n} set{'' if n == 1 else 's'}"  # noqa: E731
        return (
            f"No plateau seen up to {sets(self._most())}: the median went from {float(first['median_s']) * 1e6:.4g} us "
            f"({sets(int(first['rotating']))}) to {float(last['median_s']) * 1e6:.4g} us ({sets(int(last['rotating']))}), "
            f"and no smaller count is within {PLATEAU_REL:.0%} of the most sets'; sweeping {self._more()}, would "
            f"show whether it levels off."
        )


def _pick(summary: pd.DataFrame, kernel: str | None, size_bytes: int | None) -> tuple[str, int]:
    pairs = summary[["kernel", "size_bytes"]].drop_duplicates()
    if kernel is not None:
        pairs = pairs[pairs["kernel"] == kernel]
    if size_bytes is not None:
        pairs = pairs[pairs["size_bytes"].astype("int64") == int(size_bytes)]
    if pairs.empty:
        raise ConfigError(
            f"no summary rows of kernel {kernel!r} at size {size_bytes!r}; the summary has "
            f"{sorted(set(map(tuple, summary[['kernel', 'size_bytes']].drop_duplicates().values.tolist())))}"
        )
    first = pairs.iloc[0]
    return str(first["kernel"]), int(first["size_bytes"])


def rotating_need(
    summary: pd.DataFrame, kernel: str | None = None, size_bytes: int | None = None, why_uncounted: str = ""
) -> RotatingNeed:
    """The answer for one (kernel, size) of ``summary`` (default: its first); see the module docstring.
    ``why_uncounted``: the sweep's one line when it has no counters (its ``counters.status``)."""
    for col in ("kernel", "size_bytes", "rotating", "rotating_requested", "flush", "median_s"):
        if col not in summary.columns:
            raise ConfigError(f"the summary has no {col!r} column (a sweep's summary frame is expected)")
    k, size = _pick(summary, kernel, size_bytes)
    rows = summary[
        (summary["kernel"] == k) & (summary["size_bytes"].astype("int64") == size) & (summary["flush"] == NONE.name)
    ]
    if "timer" in rows.columns:
        rows = rows[Timer.defaults_in(rows)]
    if rows.empty:
        raise ConfigError(f"{k} at {size} B has no flush 'none' rows: sweep the rotating counts with flush none")
    rows = rows.sort_values("rotating", kind="stable").reset_index(drop=True)
    counted = "cold_fraction" in rows.columns and rows["cold_fraction"].notna().any()
    need = RotatingNeed(k, size, rows, bool(counted), why_uncounted=why_uncounted)
    if counted:
        cold = rows[rows["cold_fraction"] >= COLD_AT]
        need.knee = int(cold["rotating"].min()) if len(cold) else None
    need.plateau = _plateau(rows)
    auto = rows[rows["rotating_requested"].astype(str) == "auto"]
    need.auto = int(auto["rotating"].iloc[0]) if len(auto) else None
    fixed = rows[rows["rotating"].astype("int64") == FIXED_SETS]
    if len(fixed):
        f = fixed.iloc[0]
        frac = float(f["cold_fraction"]) if counted else math.nan
        state = str(f.get("cache_state", "")) if counted else ""
        need.fixed = {"sets": FIXED_SETS, "median_s": float(f["median_s"]), "cold_fraction": frac, "state": state}
    return need


def _plateau(rows: pd.DataFrame) -> int | None:
    """The fewest sets from which every larger count's median is within ``PLATEAU_REL`` of the most
    sets'; None where only the most sets themselves are (a time still rising is no plateau)."""
    most = float(rows["median_s"].iloc[-1])
    if not (math.isfinite(most) and most > 0 and len(rows) > 1):
        return None
    near = ((rows["median_s"] - most).abs() <= PLATEAU_REL * most).to_numpy()
    first = len(near) - 1
    while first > 0 and near[first - 1]:
        first -= 1
    counts = rows["rotating"].astype("int64").to_numpy()
    return int(counts[first]) if counts[first] < counts[-1] else None


def need_paragraphs(summary: pd.DataFrame, kernel: str | None = None, why_uncounted: str = "") -> list[str]:
    """``need_text``'s paragraphs, one per size (for a page: each its own paragraph, never a printed
    line the browser wraps mid-word)."""
    return need_text(summary, kernel, why_uncounted).split("\n\n")


def need_text(summary: pd.DataFrame, kernel: str | None = None, why_uncounted: str = "") -> str:
    """``rotating_need``'s sentences for every size of ``kernel`` (default: the summary's first), one
    paragraph per size, smallest first: what the notebook and the report print."""
    k, _size = _pick(summary, kernel, None)
    sizes = sorted(int(s) for s in summary[summary["kernel"] == k]["size_bytes"].unique())
    out = []
    for size in sizes:
        try:
            out.append(" ".join(rotating_need(summary, k, size, why_uncounted).sentences()))
        except ConfigError as exc:  # a size swept with flushes only: said, not raised (the other sizes still answer)
            out.append(str(exc))
    return "\n\n".join(out)


def plot_rotating_need(
    summary: pd.DataFrame,
    kernel: str | None = None,
    size_bytes: int | None = None,
    ax: Any = None,
    why_uncounted: str = "",
) -> "Figure":
    """Median time (with its interval) and counted cold fraction against the rotating count, on one
    figure: the knee, ``auto`` and the fixed count marked; the cold/warm bands of the state rule."""
    from .plot_parts import _axes, format_bytes, time_unit

    k, size = _pick(summary, kernel, size_bytes)
    fig, ax = _axes(ax, (7.2, 4.4))
    if not (
        (summary["kernel"] == k) & (summary["size_bytes"].astype("int64") == size) & (summary["flush"] == NONE.name)
    ).any():
        ax.text(
            0.5,
            0.5,
            f"{k} at {format_bytes(size)}: no flush 'none' rows, so no rotating count to compare\n"
            f"(sweep the rotating counts with flush none)",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
        ax.set_axis_off()
        return fig
    need = rotating_need(summary, k, size, why_uncounted)
    rows = need.rows
    scale, unit = time_unit(rows["median_s"].to_numpy())
    x = rows["rotating"].astype(float).to_numpy()
    med = rows["median_s"].to_numpy() * scale
    if {"ci_low_s", "ci_high_s"} <= set(rows.columns):
        lo = med - rows["ci_low_s"].to_numpy() * scale
        hi = rows["ci_high_s"].to_numpy() * scale - med
        ax.errorbar(
            x, med, yerr=[lo.clip(min=0), hi.clip(min=0)], fmt="o-", color="tab:blue", capsize=3, label="median time"
        )
    else:
        ax.plot(x, med, "o-", color="tab:blue", label="median time")
    ax.set_xscale("log", base=2)
    ax.set_xticks(x, [str(int(v)) for v in x])
    ax.set_xlabel("rotating buffer sets")
    ax.set_ylabel(f"median time ({unit})", color="tab:blue")
    marks = [
        (need.knee, "tab:green", f"cold from {need.knee} (counters)"),
        (need.auto, "tab:purple", f"auto = {need.auto}"),
        (FIXED_SETS if need.fixed else None, "tab:red", f"fixed {FIXED_SETS}"),
    ]
    for at, color, label in marks:
        if at is not None:
            ax.axvline(at, color=color, linestyle="--", linewidth=1.2, label=label)
    if need.counted:
        right = ax.twinx()
        right.axhspan(COLD_AT, 1.05, color="tab:green", alpha=0.08)
        right.axhspan(-0.05, WARM_AT, color="tab:orange", alpha=0.08)
        right.plot(
            x, rows["cold_fraction"].to_numpy(), "s:", color="tab:gray", label="cold fraction (DRAM read / inputs)"
        )
        right.set_ylim(-0.05, 1.05)
        right.set_ylabel("cold fraction (counted)")
        handles = ax.get_legend_handles_labels()[0] + right.get_legend_handles_labels()[0]
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, fontsize=8)
    else:
        why = why_uncounted.removeprefix("no counters:").strip() or "this sweep did not count"
        ax.text(0.02, 0.02, f"no counters: {why}", transform=ax.transAxes, fontsize=8, color="0.3", va="bottom")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, fontsize=8)
    ax.set_title(f"How many rotating buffers? {need.kernel}, {format_bytes(need.size_bytes)} per array")
    return fig


__all__ = [
    "FIXED_SETS",
    "PLATEAU_REL",
    "RotatingNeed",
    "need_paragraphs",
    "need_text",
    "plot_rotating_need",
    "rotating_need",
]
