"""Matplotlib figures for the two review questions: how noisy is a benchmark under each rotating /
flush setting, and how much compile time does the cache save in a tuning flow.

Every function takes the tidy frames of docs/ARCHITECTURE.md (benchmark samples and summary,
cache events or the tuning-replay frame), draws on ``ax`` when given (else on a new ``Figure``
that is not registered with pyplot, so notebooks show it once and nothing leaks), and returns the
``Figure``. A frame without the needed columns, or with nothing to draw, raises ``ConfigError``
naming what is missing: an empty plot would look like evidence.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .errors import ConfigError
from .schema import HIT_OUTCOMES, Configuration, require_columns

#: torch.utils.benchmark warns at these relative-IQR levels; the noise plots draw them.
IQR_WARN_LEVELS = (0.10, 0.25)

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
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")

#: The columns (of schema.SAMPLE_COLUMNS, SUMMARY_COLUMNS, EVENT_COLUMNS) the figures read; a
#: frame needs only these, so hand-made and legacy frames plot too.
_SAMPLES_NEEDED = ("kernel", "size_bytes", "rotating", "flush", "time_s")
_SUMMARY_NEEDED = ("kernel", "size_bytes", "rotating", "flush", "median_s", "iqr_rel")
_EVENTS_NEEDED = ("seq", "outcome", "lookup_seconds", "compile_seconds")


# ----------------------------------------------------------------------------------------------
# helpers


def _require(frame: Any, columns: Iterable[str], what: str) -> pd.DataFrame:
    return require_columns(frame, columns, what)


def _axes(ax: Axes | None, figsize: tuple[float, float] = (6.4, 4.2)) -> tuple[Figure, Axes]:
    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.add_subplot()


def _select(frame: pd.DataFrame, column: str, value: Any, what: str) -> pd.DataFrame:
    """Rows with ``column == value``; with ``value=None`` the column must hold a single value."""
    values = list(pd.unique(frame[column]))
    if value is None:
        if len(values) > 1:
            raise ConfigError(f"{what} holds several {column} values {sorted(values)}; pass {column}= one of them")
        return frame
    out = frame[frame[column] == value]
    if out.empty:
        raise ConfigError(f"{what} has no rows with {column}={value!r}; it holds {sorted(values)}")
    return out


def one_configuration(
    frame: pd.DataFrame, kernel: str | None = None, size_bytes: int | None = None, what: str = "frame"
) -> pd.DataFrame:
    """Rows of one (kernel, size): the unit the noise figures compare rotating/flush settings on."""
    from .bench.grouping import check_one_device

    _require(frame, ("kernel", "size_bytes"), what)
    return check_one_device(_select(_select(frame, "kernel", kernel, what), "size_bytes", size_bytes, what), what)


def flush_colors(modes: Iterable[str]) -> dict[str, str]:
    """A stable colour per flush mode (sorted order), grey for the cold reference."""
    out: dict[str, str] = {}
    i = 0
    for mode in sorted(set(modes)):
        if Configuration.marks_reference(mode):
            out[mode] = "#7f7f7f"
        else:
            out[mode] = _PALETTE[i % len(_PALETTE)]
            i += 1
    return out


def time_unit(seconds: Sequence[float] | np.ndarray | pd.Series) -> tuple[float, str]:
    """(scale, label) so that ``seconds * scale`` reads in ns, µs, ms or s."""
    arr = np.asarray(seconds, dtype=float)
    arr = arr[np.isfinite(arr)]
    typical = float(np.median(np.abs(arr))) if arr.size else 1.0
    for scale, label in ((1e9, "ns"), (1e6, "µs"), (1e3, "ms")):
        if typical * scale < 1000:
            return scale, label
    return 1.0, "s"


def format_bytes(n: float) -> str:
    from .readable import format_bytes as fmt

    return fmt(n)


def plain_text(text: Any) -> str:
    """``text`` as matplotlib draws it literally: every ``$`` escaped.

    Why: kernel names, device names, flush modes and file names in a figure come from run files,
    and matplotlib reads text between two ``$`` as mathtext; ``k$\\foo$`` in a recorded kernel
    name would make drawing the figure raise, and the whole report with it."""
    return str(text).replace("$", r"\$")


def _config_title(frame: pd.DataFrame) -> str:
    """Device, kernel and size of a one-configuration frame (data strings: ``plain_text``)."""
    parts = []
    if "device_name" in frame.columns and frame["device_name"].nunique() == 1:
        parts.append(str(frame["device_name"].iloc[0]))
    if "kernel" in frame.columns and frame["kernel"].nunique() == 1:
        parts.append(str(frame["kernel"].iloc[0]))
    if "size_bytes" in frame.columns and frame["size_bytes"].nunique() == 1:
        parts.append(format_bytes(frame["size_bytes"].iloc[0]))
    return plain_text(", ".join(parts))


def _clip_outliers(ax: Axes, values: np.ndarray, axis: str = "y") -> None:
    """Keep a few far outliers from squashing the distribution: limit the axis to 1.2x the 99th
    percentile and say how many samples lie beyond it (they still count in every statistic)."""
    values = values[np.isfinite(values)]
    if values.size < 20:
        return
    top = float(np.percentile(values, 99)) * 1.2
    beyond = int((values > top).sum())
    if beyond == 0:
        return
    (ax.set_ylim if axis == "y" else ax.set_xlim)(0, top)
    ax.text(
        0.99,
        0.01,
        f"{beyond} sample(s) above {top:.3g} off scale",
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize="x-small",
        color="0.4",
    )


def _rotating_axis(ax: Axes, rotating: Iterable[int], requested: Iterable[Any] | None = None) -> None:
    """Rotating counts on x, labelled ``auto (N)`` where the count came from ``auto``; the axis
    label says when the scale is log2 (wide ranges of counts)."""
    rot = [int(r) for r in rotating]
    ticks = sorted(set(rot))
    log = bool(ticks) and max(ticks) / max(min(ticks), 1) >= 8
    if log:
        ax.set_xscale("log", base=2)
    autos = {r for r, q in zip(rot, requested if requested is not None else [None] * len(rot)) if str(q) == "auto"}
    plain = {r for r, q in zip(rot, requested if requested is not None else [None] * len(rot)) if str(q) != "auto"}
    ax.set_xticks(ticks)
    crowded = len(ticks) > 4 or len(autos) > 1  # several 'auto' counts (one per size) sit close together
    ax.set_xticklabels(
        [(f"{t} (= auto)" if t in plain else f"auto ({t})") if t in autos else str(t) for t in ticks],
        rotation=35 if crowded else 0,
        ha="right" if crowded else "center",
    )
    ax.minorticks_off()
    ax.set_xlabel("rotating buffer sets" + (" (log2 scale)" if log else ""))


def _requested(frame: pd.DataFrame) -> Any:
    return frame["rotating_requested"] if "rotating_requested" in frame.columns else None


def _legend_outside(ax: Axes, **kw: Any) -> Any:
    """A legend to the right of the axes, never over the data (many entries: flush x rotating)."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **kw)


# ----------------------------------------------------------------------------------------------
# noise


def plot_noise_ecdf(
    samples: pd.DataFrame, ax: Axes | None = None, kernel: str | None = None, size_bytes: int | None = None
) -> Figure:
    """ECDF of the per-sample times of one (kernel, size), one line per flush mode and rotating count.

    An ECDF shows the whole distribution (tails, bimodality) that a median hides.
    """
    _require(samples, _SAMPLES_NEEDED, "samples frame")
    data = one_configuration(samples, kernel, size_bytes, "samples frame")
    fig, ax = _axes(ax, (8.4, 4.2))  # room for the legend beside the curves
    scale, unit = time_unit(data["time_s"])
    colors = flush_colors(data["flush"])
    rot_values = sorted(data["rotating"].unique())
    styles = ("-", "--", ":", "-.")
    for (flush, rot), grp in data.groupby(["flush", "rotating"], sort=True):
        t = np.sort(grp["time_s"].to_numpy(dtype=float)) * scale
        y = np.arange(1, t.size + 1) / t.size
        ls = styles[rot_values.index(rot) % len(styles)]
        label = plain_text(flush if Configuration.marks_reference(flush) else f"{flush}, rotating {rot}")
        ax.step(t, y, where="post", color=colors[flush], linestyle=ls, label=label)
    _clip_outliers(ax, data["time_s"].to_numpy(dtype=float) * scale, axis="x")
    ax.set_xlabel(f"time per launch ({unit})")
    ax.set_ylabel("fraction of samples ≤ time")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"Per-sample times — {_config_title(data)}")
    ax.grid(True, alpha=0.3)
    _legend_outside(ax, fontsize="small", ncols=1 if len(ax.get_lines()) <= 14 else 2)
    return fig


def plot_noise_violins(
    samples: pd.DataFrame, ax: Axes | None = None, kernel: str | None = None, size_bytes: int | None = None
) -> Figure:
    """Violins of per-sample times of one (kernel, size): rotating count on x, flush modes side by side."""
    _require(samples, _SAMPLES_NEEDED, "samples frame")
    data = one_configuration(samples, kernel, size_bytes, "samples frame")
    fig, ax = _axes(ax, (8.4, 4.2))
    scale, unit = time_unit(data["time_s"])
    colors = flush_colors(data["flush"])
    modes = sorted(data["flush"].unique())
    rots = sorted(data["rotating"].unique())
    width = 0.8 / max(len(modes), 1)
    handles = []
    for i, mode in enumerate(modes):
        for j, rot in enumerate(rots):
            t = data.loc[(data["flush"] == mode) & (data["rotating"] == rot), "time_s"].to_numpy(dtype=float) * scale
            if t.size == 0:
                continue
            pos = j - 0.4 + width * (i + 0.5)
            if t.size > 1 and np.ptp(t) > 0:
                parts = ax.violinplot([t], positions=[pos], widths=width * 0.95, showmedians=True, showextrema=False)
                for body in parts["bodies"]:
                    body.set_facecolor(colors[mode])
                    body.set_alpha(0.55)
                parts["cmedians"].set_color(colors[mode])
            else:
                ax.plot([pos], [float(np.median(t))], marker="_", markersize=14, color=colors[mode])
        handles.append(ax.plot([], [], color=colors[mode], linewidth=8, alpha=0.55, label=plain_text(mode))[0])
    _clip_outliers(ax, data["time_s"].to_numpy(dtype=float) * scale, axis="y")
    ax.set_xticks(range(len(rots)))
    ax.set_xticklabels([str(r) for r in rots])
    ax.set_xlabel("rotating buffer sets")
    ax.set_ylabel(f"time per launch ({unit})")
    ax.set_title(f"Per-sample times — {_config_title(data)}")
    ax.grid(True, axis="y", alpha=0.3)
    _legend_outside(ax, handles=handles, fontsize="small", title="flush")  # the off-scale note keeps the lower right
    return fig


def _sized(summary: pd.DataFrame, kernel: str | None, size_bytes: int | str | None) -> pd.DataFrame:
    """One (kernel, size), or with ``size_bytes="all"`` every size of the kernel (the live panel:
    sizes swept so far stay on the plot)."""
    if size_bytes == "all":
        _require(summary, ("kernel", "size_bytes"), "summary frame")
        return _select(summary, "kernel", kernel, "summary frame")
    return one_configuration(summary, kernel, size_bytes, "summary frame")  # type: ignore[arg-type]


_SIZE_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def _lines(ax: Axes, data: pd.DataFrame, column: str, colors: dict[str, str]) -> None:
    """One line per flush mode (per flush mode and size when several sizes are present)."""
    sizes = sorted(data["size_bytes"].unique())
    one_mode = data["flush"].nunique() == 1
    shades = matplotlib.colormaps["viridis"](np.linspace(0.0, 0.85, len(sizes)))
    for (mode, size), grp in data.groupby(["flush", "size_bytes"], sort=True):
        grp = grp.sort_values("rotating")
        label = plain_text(mode if len(sizes) == 1 else f"{mode}, {format_bytes(size)}")
        i = sizes.index(size)
        color = (
            shades[i] if one_mode and len(sizes) > 1 else colors[mode]
        )  # one flush mode: tell the sizes apart by colour
        ax.plot(
            grp["rotating"], grp[column] * 100, marker=_SIZE_MARKERS[i % len(_SIZE_MARKERS)], color=color, label=label
        )


def plot_iqr_vs_rotating(
    summary: pd.DataFrame, ax: Axes | None = None, kernel: str | None = None, size_bytes: int | str | None = None
) -> Figure:
    """Relative IQR (IQR / median) against rotating count, one line per flush mode, with the
    10% and 25% levels at which torch.utils.benchmark warns. ``size_bytes="all"``: a line per
    flush mode and size."""
    _require(summary, _SUMMARY_NEEDED, "summary frame")
    data = _sized(summary, kernel, size_bytes)
    data = data[~Configuration.marks_reference(data)]
    if data.empty:
        raise ConfigError("summary frame holds only cold-reference rows: no rotating/flush setting to plot")
    fig, ax = _axes(ax)
    colors = flush_colors(summary["flush"])
    _lines(ax, data, "iqr_rel", colors)
    for level, style in zip(IQR_WARN_LEVELS, (":", "--")):
        ax.axhline(level * 100, color="0.35", linestyle=style, linewidth=1)
        ax.annotate(
            f"{level:.0%}",
            xy=(1.0, level * 100),
            xycoords=("axes fraction", "data"),
            xytext=(2, 0),
            textcoords="offset points",
            va="center",
            fontsize="small",
            color="0.35",
        )
    top = max(float(data["iqr_rel"].max()) * 100 * 1.15, IQR_WARN_LEVELS[-1] * 100 * 1.1)
    ax.set_ylim(0, top)
    _rotating_axis(ax, data["rotating"], _requested(data))
    ax.set_ylabel("relative IQR (% of median)")
    ax.set_title(f"Noise — {_config_title(data)}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", title="flush")
    return fig


def plot_bias(
    summary: pd.DataFrame, ax: Axes | None = None, kernel: str | None = None, size_bytes: int | str | None = None
) -> Figure:
    """Bias of each setting's median against the cold reference (single launch after an L2
    read), in percent, against rotating count: above zero reads slower than cold, below is warm.
    ``size_bytes="all"``: a line per flush mode and size."""
    _require(summary, (*_SUMMARY_NEEDED, "bias"), "summary frame")
    data = _sized(summary, kernel, size_bytes)
    data = data[~Configuration.marks_reference(data) & data["bias"].notna()]
    if data.empty:
        raise ConfigError("summary frame has no bias values (was a cold reference measured?)")
    fig, ax = _axes(ax)
    colors = flush_colors(summary["flush"])
    _lines(ax, data, "bias", colors)
    ax.axhline(0, color="0.3", linewidth=1)
    _rotating_axis(ax, data["rotating"], _requested(data))
    ax.set_ylabel("median vs cold reference (%)")
    ax.set_title(f"Bias — {_config_title(data)}{_cold_times(data)}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", title="flush")
    return fig


def _cold_times(data: pd.DataFrame) -> str:
    """`` (cold 8.3 µs)``, or per size `` (cold 8.3 µs at 64 KiB, 33.1 µs at 256 KiB)``: each size has its
    own cold reference (one time for two sizes named the first size's for both); over 3 sizes, none."""
    if "reference_median_s" not in data.columns or not data["reference_median_s"].notna().any():
        return ""
    ref = data.dropna(subset=["reference_median_s"]).groupby("size_bytes", sort=True)["reference_median_s"].first()
    scale, unit = time_unit(ref)
    if len(ref) > 3:
        return " (cold reference: one per size, in the table)"
    at = [f"{v * scale:.3g} {unit}" + (f" at {format_bytes(s)}" if len(ref) > 1 else "") for s, v in ref.items()]
    return f" (cold {', '.join(at)})"


def plot_bandwidth(
    summary: pd.DataFrame, ax: Axes | None = None, kernel: str | None = None, rotating: int | str | None = None
) -> Figure:
    """Effective bandwidth against size, one line per flush mode, with the device's peak when known.

    rotating: the requested rotating count to show (e.g. ``"auto"`` or ``4``); by default each
    (flush, size) point uses its largest rotating count, the setting closest to a cold cache.
    """
    _require(summary, ("kernel", "size_bytes", "flush", "rotating", "bandwidth_gbs"), "summary frame")
    data = _select(summary, "kernel", kernel, "summary frame")
    data = data[data["bandwidth_gbs"].notna()]
    if data.empty:
        raise ConfigError("summary frame has no bandwidth_gbs values")
    if rotating is not None:
        key = Configuration.rotating_of(data)
        chosen = data[(key == str(rotating)) | Configuration.marks_reference(data)]
        if (~Configuration.marks_reference(chosen)).sum() == 0:
            raise ConfigError(f"summary frame has no rows with rotating={rotating!r}; it holds {sorted(key.unique())}")
        data, how = chosen, f"rotating {rotating}"
    else:
        data = data.sort_values("rotating").groupby(["flush", "size_bytes"], sort=False).tail(1)
        how = "largest rotating count"
    fig, ax = _axes(ax)
    colors = flush_colors(data["flush"])
    for mode, grp in data.groupby("flush", sort=True):
        grp = grp.sort_values("size_bytes")
        ax.plot(grp["size_bytes"], grp["bandwidth_gbs"], marker="o", color=colors[mode], label=plain_text(mode))
    peak = data["peak_bandwidth_gbs"].dropna() if "peak_bandwidth_gbs" in data.columns else pd.Series(dtype=float)
    if not peak.empty and float(peak.max()) > 0:
        p = float(peak.max())
        ax.axhline(p, color="k", linestyle="--", linewidth=1)
        ax.annotate(
            f"device peak {p:,.0f} GB/s",
            xy=(0.01, p),
            xycoords=("axes fraction", "data"),
            xytext=(0, 3),
            textcoords="offset points",
            fontsize="small",
        )
    else:
        ax.text(0.01, 0.98, "device peak unknown", transform=ax.transAxes, va="top", fontsize="small", color="0.4")
    sizes = sorted(data["size_bytes"].unique())
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([format_bytes(s) for s in sizes], rotation=30, ha="right")
    ax.minorticks_off()
    ax.set_ylim(bottom=0)
    ax.set_xlabel("size per array")
    ax.set_ylabel("bandwidth (GB/s)")
    title = _config_title(data.drop(columns=["size_bytes"]))
    ax.set_title(f"Bandwidth — {title}" if title else "Bandwidth")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", title=f"flush ({how})", loc="lower right")
    return fig


# ----------------------------------------------------------------------------------------------
# compile cache


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


# ----------------------------------------------------------------------------------------------
# the review dashboard


def dashboard_figure(
    summary: pd.DataFrame,
    events: pd.DataFrame,
    baseline: pd.DataFrame | None = None,
    kernel: str | None = None,
    size_bytes: int | None = None,
    title: str | None = None,
    ideal_s: float | None = None,
) -> Figure:
    """Noise | compile time saved (with the ideal floor when ``ideal_s`` is given) | cache hits,
    side by side for one configuration."""
    fig = Figure(figsize=(16, 4.8), layout="constrained")
    ax_noise, ax_saved, ax_hits = fig.subplots(1, 3)
    plot_iqr_vs_rotating(summary, ax=ax_noise, kernel=kernel, size_bytes=size_bytes)
    plot_compile_time_saved(events, ax=ax_saved, baseline=baseline, ideal_s=ideal_s)
    plot_cache_hits(events, ax=ax_hits)
    if title:
        fig.suptitle(plain_text(title))
    return fig


def figure_png(fig: Figure, dpi: int = 100) -> bytes:
    """The figure as PNG bytes (for image widgets and files), drawn with the Agg canvas."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


__all__ = [
    "HIT_OUTCOMES",
    "IQR_WARN_LEVELS",
    "OUTCOME_COLORS",
    "OUTCOME_ORDER",
    "compile_time_curves",
    "dashboard_figure",
    "figure_png",
    "flush_colors",
    "format_bytes",
    "hit_rate",
    "one_configuration",
    "outcome_counts",
    "plain_text",
    "plot_bandwidth",
    "plot_bias",
    "plot_cache_hits",
    "plot_compile_time_saved",
    "plot_iqr_vs_rotating",
    "plot_noise_ecdf",
    "plot_noise_violins",
    "plot_outcome_counts",
    "plot_replay_scenarios",
    "time_unit",
]
