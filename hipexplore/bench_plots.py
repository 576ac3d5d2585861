"""Figures of a benchmark run (``plots``' module docstring: frames in, a ``Figure`` out, a frame
that cannot be drawn named in a ``ConfigError``): how noisy each rotating / flush setting is (the
per-sample ECDF and violins, the relative IQR), how far its median sits from the cold reference
(bias), and the bandwidth it reaches against size.
"""

from __future__ import annotations

from typing import Any, Iterable

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .errors import ConfigError
from .plot_parts import _axes, _require, _select, flush_colors, format_bytes, one_configuration, plain_text, time_unit
from .schema import Configuration

#: torch.utils.benchmark warns at these relative-IQR levels; the noise plots draw them.
IQR_WARN_LEVELS = (0.10, 0.25)

#: The columns (of schema.SAMPLE_COLUMNS, SUMMARY_COLUMNS, EVENT_COLUMNS) the figures read; a
#: frame needs only these, so hand-made and legacy frames plot too.
_SAMPLES_NEEDED = ("kernel", "size_bytes", "rotating", "flush", "time_s")
_SUMMARY_NEEDED = ("kernel", "size_bytes", "rotating", "flush", "median_s", "iqr_rel")


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


__all__ = [
    "IQR_WARN_LEVELS",
    "plot_bandwidth",
    "plot_bias",
    "plot_iqr_vs_rotating",
    "plot_noise_ecdf",
    "plot_noise_violins",
]
