"""Benchmark data for the notebooks (a live sweep or recorded frames) and what the dashboard
shows: its configuration, title, summary table and provenance table."""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..errors import ConfigError, HipexploreError
from .recorded import collect_provenance, escaped_style, load_recorded, provenance_table
from .replay import ReplayData

# ----------------------------------------------------------------------------------------------
# benchmark sweeps, live or recorded


@dataclass
class BenchData:
    samples: pd.DataFrame
    summary: pd.DataFrame
    source: str
    device_properties: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, str] = field(default_factory=dict)

    @property
    def cores(self) -> int | None:
        """The measuring host's core count (its recorded ``cpu_count``): what a busy chunk is judged against."""
        from ..bench.hostload import cores_of

        return cores_of(self.provenance)


def _one_device(summary: pd.DataFrame, samples: pd.DataFrame, notes: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows of the device kind with the most configurations, and a note naming the others
    (samples of different device kinds are never pooled: bench.grouping)."""
    from ..bench.grouping import device_names

    names = device_names(summary)
    if len(names) < 2:
        return summary, samples
    counts = summary["device_name"].astype(str).value_counts()
    notes.append(
        f"the results come from {len(names)} device kinds ({', '.join(f'{n}: {counts[n]} configurations' for n in names)}); "
        f"showing {names[0]} (different kinds are never pooled)"
    )
    keep = summary[summary["device_name"].astype(str) == names[0]].reset_index(drop=True)
    if "device_name" in samples.columns:
        samples = samples[samples["device_name"].astype(str) == names[0]].reset_index(drop=True)
    return keep, samples


def benchmark_data(
    source: str = "live",
    device: str = "auto",
    kernel: str = "triad",
    sizes: Sequence[int | str] | str = ("1MiB",),
    rotating: Sequence[int | str] | str = (1, 2, 4, "auto"),
    flush: Sequence[str] | str = ("none", "l2-read"),
    iterations: int | None = 40,
    progress: bool = False,
    command: str | Sequence[str] | None = None,
    counters: bool | str = False,
) -> BenchData:
    """A rotating x flush sweep of one kernel on ``device`` (``hipexplore.bench.sweep``), or the
    frames recorded under ``source`` (a parquet file or folder). ``iterations`` must be at least
    the largest rotating count (``auto`` included); None lets the adaptive stop rule decide.
    ``counters``: the sweep's counter pass (``SweepSpec.counters``; True: the device's profiler,
    and one line in the provenance's ``counters.status`` where it has none)."""
    if source != "live":
        rec = load_recorded(source)
        if rec.summary is None:
            raise ConfigError(
                f"no benchmark summary parquet under {source!r} (expected columns median_s, iqr_rel, ...)"
            )
        samples = rec.samples if rec.samples is not None else pd.DataFrame()
        rec.summary, samples = _one_device(rec.summary, samples, rec.notes)
        props = {k[len("device.") :]: v for k, v in rec.provenance.items() if k.startswith("device.")}
        prov = {**rec.provenance, **({"recorded.note": " ".join(rec.notes)} if rec.notes else {})}
        return BenchData(samples, rec.summary, str(source), props, prov)
    from ..bench.sweep import sweep
    from ..devices import get_device

    dev = get_device(device)
    try:
        props = dev.properties
        props = props.as_dict() if hasattr(props, "as_dict") else dict(props)
        note = ""
        if iterations is not None:  # 'auto' can want more sets than the notebook's iteration count on a large LLC
            try:
                needed = _most_sets(kernel, sizes, rotating, dev.llc_bytes)
            except HipexploreError:  # a bad argument: let the sweep itself report it
                needed = iterations
            if needed > iterations:
                note = (
                    f"iterations raised from {iterations} to {needed}: rotating 'auto' wants {needed} buffer sets "
                    f"on this device (LLC {dev.llc_bytes} B), and every set must be timed at least once"
                )
                iterations = needed
        with warnings.catch_warnings():
            from ..bench.counters import CountersSkipped

            warnings.simplefilter(
                "ignore", CountersSkipped
            )  # the reason is kept as counters.status and shown by the figure
            result = sweep(
                kernel,
                sizes,
                rotating,
                flush,
                device=dev,
                iterations=iterations,
                progress=progress,
                command=command,
                counters=counters,
            )
        if note:
            result.metadata["report.iterations_note"] = note
    finally:
        dev.close()
    if result.summary.empty:
        raise HipexploreError(f"the sweep on {device!r} returned no summary rows")
    return BenchData(result.samples, result.summary, "live", props, dict(result.metadata))


def _most_sets(
    kernel: str, sizes: Sequence[int | str] | str, rotating: Sequence[int | str] | str, llc_bytes: int
) -> int:
    """The largest buffer-set count the sweep will ask for (before the memory cap)."""
    from ..bench import rotating as rot
    from ..bench.spec_checks import parse_size
    from ..kernels import catalog

    spec = catalog.get(kernel)
    size_list = [sizes] if isinstance(sizes, (int, str)) else list(sizes)
    rot_list = [rotating] if isinstance(rotating, (int, str)) else list(rotating)
    counts = [1]
    for size in size_list:
        n = spec.elements(parse_size(size))
        for r in rot_list:
            req = rot.parse_rotating(r)
            counts.append(rot.auto_count(llc_bytes, spec.footprint(n)) if req == "auto" else int(req))
    return max(counts)


def provenance_for(
    bench: BenchData | None, replay: ReplayData | None = None, command: str | Sequence[str] | None = None
) -> pd.DataFrame:
    """The report's provenance table: this run (device properties included) and, when figures
    come from recorded files, what those files say about the run that recorded them."""
    live = bench is not None and bench.source == "live"
    info = collect_provenance(bench.device_properties if live else None, command)
    if live:  # how the sweep measured: stop rule, timing method, flush sizes, run id
        info.update(
            {k: v for k, v in bench.provenance.items() if k.startswith(("sweep.", "timing.", "flush.", "run_id"))}
        )
    recorded: dict[str, str] = {}
    if replay is not None and replay.source != "live":
        recorded.update(replay.provenance)
        recorded["recorded.tuning"] = replay.source
    if bench is not None and bench.source != "live":
        recorded.update(bench.provenance)
        recorded["recorded.benchmark"] = bench.source
    return provenance_table(info, recorded or None)


# ----------------------------------------------------------------------------------------------
# what the dashboard shows

#: Summary columns a reviewer reads first.
SUMMARY_VIEW = (
    "flush",
    "rotating_requested",
    "rotating",
    "n",
    "median_s",
    "iqr_rel",
    "cv",
    "bias",
    "bandwidth_gbs",
    "n_outliers",
    "cold_fraction",
    "cache_state",
    "warning",
)


def bench_configuration(bench: BenchData) -> dict[str, Any]:
    """The one (kernel, size) the single-configuration figures show: the first kernel and its
    smallest size, where launch overhead and cache state move the numbers most."""
    summary = bench.summary
    kernel = list(pd.unique(summary["kernel"]))[0]
    size = int(summary.loc[summary["kernel"] == kernel, "size_bytes"].min())
    device_name = (
        str(summary["device_name"].iloc[0])
        if "device_name" in summary.columns
        else str(bench.device_properties.get("name", ""))
    )
    return {"kernel": kernel, "size_bytes": size, "device_name": device_name}


def dashboard_configuration(bench: BenchData, replay: ReplayData) -> dict[str, Any]:
    """``bench_configuration`` plus the composite figure's title."""
    from ..plot_parts import format_bytes

    cfg = bench_configuration(bench)
    kernel, size, device_name = cfg["kernel"], cfg["size_bytes"], cfg["device_name"]
    ev = replay.events
    comp = (
        f"{ev['compiler'].iloc[0]}/{ev['target'].iloc[0]}"
        if {"compiler", "target"} <= set(ev.columns) and len(ev)
        else ""
    )
    listed = getattr(replay, "list_name", "")
    listed = f" of list {listed}" if listed and listed != "built-in" else ""
    title = (
        f"{device_name} — {kernel}, {format_bytes(size)} per array   |   "
        f"tuning replay{listed} {comp}: {len(ev)} requests, cache '{replay.primary}'"
    )
    return {"kernel": kernel, "size_bytes": size, "device_name": device_name, "title": title}


def summary_table(summary: pd.DataFrame, kernel: str | None = None, size_bytes: int | None = None) -> pd.DataFrame:
    """The reviewer's columns of one configuration's summary rows, sorted by flush and rotating;
    ``iqr_rel``, ``cv`` and ``bias`` in percent (``iqr_rel_%``...), as the plots show them."""
    from ..plot_parts import one_configuration, time_unit
    from ..readable import format_bounds, percent_columns

    rows = one_configuration(summary, kernel, size_bytes, "summary frame")
    if "counter_warning" in rows.columns:  # a broken cold promise is flagged beside the other warnings
        joined = [
            ("; ".join(t for t in (str(w or ""), str(c or "")) if t and t != "nan"))
            for w, c in zip(rows.get("warning", [""] * len(rows)), rows["counter_warning"])
        ]
        rows = rows.assign(warning=joined)
    cols = [c for c in SUMMARY_VIEW if c in rows.columns]
    table = rows.sort_values(["flush", "rotating"])[cols].reset_index(drop=True)
    scale, unit = time_unit(table["median_s"])  # seconds with six decimals hide the differences
    table["median_s"] = table["median_s"] * scale
    if {"ci_low_s", "ci_high_s"} <= set(rows.columns):  # a median carries its interval
        ordered = rows.sort_values(["flush", "rotating"]).reset_index(drop=True)
        table.insert(
            list(table.columns).index("median_s") + 1,
            f"95% CI ({unit.replace('µ', 'u')})",
            [
                format_bounds(m * scale, lo * scale, hi * scale, digits=4)  # fixed notation: no 1.04e+04
                for m, lo, hi in zip(ordered["median_s"], ordered["ci_low_s"], ordered["ci_high_s"])
            ],
        )
    if (
        "floor_s" in rows.columns and np.isfinite(rows["floor_s"].to_numpy(float)).any()
    ):  # the launch floor (bench.floor)
        ordered = rows.sort_values(["flush", "rotating"]).reset_index(drop=True)
        at = (
            list(table.columns).index(f"95% CI ({unit.replace('µ', 'u')})") + 1
            if f"95% CI ({unit.replace('µ', 'u')})" in table.columns
            else 1
        )
        table.insert(at, f"floor_{unit.replace('µ', 'u')}", ordered["floor_s"].to_numpy(float) * scale)
    return percent_columns(table.rename(columns={"median_s": f"median_{unit.replace('µ', 'u')}"}))


_SHORT_HEADERS = {
    "rotating_requested": "rotating asked",
    "rotating": "sets",
    "bandwidth_gbs": "GB/s",
    "n_outliers": "outliers",
}


def styled_summary(table: pd.DataFrame) -> Any:
    """``summary_table`` for display: two decimals, and a warning column that wraps at a readable
    width instead of four narrow lines cut off by JupyterLab's output area."""
    fmt = {c: "{:.2f}" for c in table.columns if c.endswith("_%") or c.startswith("median_")}
    fmt.update({c: "{:.1f}" for c in ("bandwidth_gbs",) if c in table.columns})
    # escaped: the warning column and the labels can carry text from a recorded run (recorded.escaped_style)
    sty = escaped_style(table).format(fmt, na_rep="", escape="html").hide(axis="index")
    sty = sty.relabel_index(
        [html.escape(_SHORT_HEADERS.get(c, c)).replace("{", "{{").replace("}", "}}") for c in table.columns], axis=1
    )  # 900 px: short headers
    if "warning" in table.columns:
        sty = sty.set_properties(
            subset=["warning"],
            **{"white-space": "normal", "min-width": "16em", "max-width": "28em", "text-align": "left"},
        )
    return sty.set_table_styles([{"selector": "", "props": [("max-width", "100%")]}])
