"""The review report's data, tables and figures: verdicts of a baseline against a candidate.

Why its own module: the dashboard shows the evidence of one configuration; a review is about a
change. This module turns ``hipexplore.compare`` rows into what notebooks/review.py shows: a
banner naming the device (and saying "host CPU — not a GPU measurement" where so), the verdict
table (medians with their intervals, changes in percent, sizes human-readable), a forest plot of
the ratios with their intervals and the ±threshold band, the noise of both sides, the compile
section (absent with one sentence why, or a tuning list's cache verdicts named as such:
``compile_section``), and both sides' provenance, the code under review included. The headline
sentences above them are ``headline``'s.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..bench import info as mk
from ..plot_parts import plain_text
from ..verdict_rule import DEFAULT_THRESHOLD, change_text, rule_text
from ..verdicts import compare
from ..errors import ConfigError
from ..schema import Timer

VERDICT_COLORS = {"faster": "#2ca02c", "slower": "#d62728", "same": "#1f77b4", "undecided": "0.5"}
#: provenance rows shown first, in this order (the rest follow sorted)
REVIEW_PROVENANCE = tuple(
    k.name
    for k in (
        mk.DEVICE_NAME,
        mk.DEVICE_KIND,
        mk.DATE,
        mk.COMMAND,
        mk.GIT_REVISION,
        mk.HIPEXPLORE,
        mk.RUN_ID,
        mk.SWEEP_KERNELS,
        mk.SWEEP_SIZES,
        mk.SWEEP_INTERLEAVE,
        mk.SWEEP_STOP_RULE,
    )
)


@dataclass
class ReviewData:
    """A comparison and what the report needs around it."""

    verdicts: pd.DataFrame
    base_label: str
    new_label: str
    base_metadata: dict[str, str]
    new_metadata: dict[str, str]
    threshold: float
    base_kernels: list[str] | None = None
    new_kernels: list[str] | None = None
    source: str = ""
    notes: list[str] = field(default_factory=list)


def review_data(
    baseline: Any,
    candidate: Any = None,
    *,
    base_kernel: str | None = None,
    new_kernel: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    allow_other_device: bool = False,
    device: str = "auto",
    sizes: Sequence[str | int] = ("256KiB", "1MiB"),
    rotating: Sequence[int | str] = (1,),
    flush: Sequence[str] = ("none",),
    iterations: int | None = 64,
) -> ReviewData:
    """``baseline`` and ``candidate``: two runs (samples .parquet paths or SweepResults); or one run
    (``candidate`` None) with ``base_kernel`` and ``new_kernel``; or ``baseline="live"``: an
    interleaved sweep of ``base_kernel`` and ``new_kernel`` on ``device`` now."""
    if isinstance(baseline, str) and baseline == "live":
        if not (base_kernel and new_kernel):
            raise ConfigError("a live review needs base_kernel and new_kernel (two kernels swept interleaved)")
        from ..bench import sweep

        run = sweep(
            [base_kernel, new_kernel],
            list(sizes),
            list(rotating),
            list(flush),
            device=device,
            iterations=iterations,
            interleave=True,
            progress=False,
            reference=False,
        )
        baseline, source = run, f"live interleaved sweep on {run.info.device_name or device}"
    else:
        source = "recorded"
    if candidate is None or (isinstance(candidate, str) and candidate in ("", "none")):
        if not (base_kernel and new_kernel):
            raise ConfigError("one run needs base_kernel and new_kernel (or give a candidate run)")
        frame = compare(baseline, base=base_kernel, new=new_kernel, threshold=threshold)
        meta = frame.attrs["base_metadata"]
        return ReviewData(
            frame,
            base_kernel,
            new_kernel,
            meta,
            frame.attrs["new_metadata"],
            threshold,
            [base_kernel],
            [new_kernel],
            source + " (one run, two kernels)",
        )
    frame = compare(baseline, candidate, threshold=threshold, allow_other_device=allow_other_device)
    label = lambda x: Path(x).name if isinstance(x, (str, Path)) else str(getattr(x, "path", "") or "run")  # noqa: E731
    return ReviewData(
        frame,
        label(baseline),
        label(candidate),
        frame.attrs["base_metadata"],
        frame.attrs["new_metadata"],
        threshold,
        source=source + " (two runs)",
    )


# -- the banner -----------------------------------------------------------------------------------


class Banner:
    """The device a report's numbers come from, first on the page."""

    def __init__(self, metadata: Mapping[str, str], other: Mapping[str, str] | None = None) -> None:
        self.sides = [metadata] + ([other] if other is not None and dict(other) != dict(metadata) else [])

    def text(self) -> str:
        parts = []
        for meta in self.sides:
            name, kind = mk.DEVICE_NAME.of(meta, "unknown device"), mk.DEVICE_KIND.of(meta, "")
            parts.append(
                f"{name} ({kind}) — host CPU — not a GPU measurement"
                if kind == "host"
                else f"{name} ({kind or 'device'})"
            )
        return "Measured on: " + " | ".join(dict.fromkeys(parts))

    def host(self) -> bool:
        return any(mk.DEVICE_KIND.of(m) == "host" for m in self.sides)

    def _repr_html_(self) -> str:
        color = "#8a1c1c" if self.host() else "#1f4e79"
        return (
            f'<div class="hx-banner" style="border:2px solid {color};color:{color};padding:6px 10px;'
            f'font-weight:bold;margin:4px 0;max-width:100%;overflow-wrap:anywhere">{html.escape(self.text())}</div>'
        )

    def __repr__(self) -> str:
        return self.text()


class Headline:
    """The review's first paragraphs: what is compared, the decision rule, the count of verdicts.

    Why HTML built here and not Markdown in the notebook: the labels are file names of other
    people's runs. In Markdown a backtick in a name ends the code span around it and the
    ``<img onerror=...>`` after it is live HTML; here every string is escaped once."""

    def __init__(self, data: ReviewData) -> None:
        self.data = data

    def paragraphs(self) -> list[list[tuple[str, str]]]:
        """Each paragraph as (kind, text) runs: ``b`` bold, ``code``, ``text``."""
        d = self.data
        out = [
            [
                ("b", "Baseline:"),
                ("text", " "),
                ("code", d.base_label),
                ("text", " · "),
                ("b", "candidate:"),
                ("text", " "),
                ("code", d.new_label),
                ("text", f" · {d.source}"),
            ],
            [
                ("b", "Decision rule:"),
                (
                    "text",
                    f" {rule_text(d.threshold)}. The p-value is information, not the rule "
                    "(samples of one chunk are correlated, which makes it too small).",
                ),
            ],
            [("b", "Summary:"), ("text", f" {verdict_counts(d.verdicts)}.")],
        ]
        caveat = d.verdicts.attrs.get("caveat")
        if caveat:
            out.append([("b", "Note:"), ("text", f" {caveat}.")])
        return out

    def _repr_html_(self) -> str:
        tags = {"b": ("<b>", "</b>"), "code": ("<code>", "</code>"), "text": ("", "")}
        return "\n".join(
            "<p>" + "".join(f"{tags[k][0]}{html.escape(t)}{tags[k][1]}" for k, t in para) + "</p>"
            for para in self.paragraphs()
        )

    def __repr__(self) -> str:
        return "\n\n".join("".join(t for _, t in para) for para in self.paragraphs())


def device_banner(bench: Any) -> Banner:
    """The banner of a dashboard: the device of its benchmark data (live or recorded)."""
    return Banner({mk.DEVICE.key(k): str(v) for k, v in getattr(bench, "device_properties", {}).items()})


# -- tables ---------------------------------------------------------------------------------------


def _size(n: Any) -> str:
    from ..plot_parts import format_bytes

    return format_bytes(float(n))


def _interval(r: Mapping[str, Any], side: str, unit: tuple[float, str]) -> str:
    """``1040 [1035, 1046]``: a side's median and interval in the table's unit, fixed notation
    (``readable.format_interval``; ``.3g`` wrote 1040 µs as ``1.04e+03``)."""
    from ..readable import format_interval

    k = unit[0]
    return format_interval(r[f"{side}_median_s"] * k, r[f"{side}_ci_low_s"] * k, r[f"{side}_ci_high_s"] * k)


def config_label(row: Mapping[str, Any]) -> str:
    kern = row.get("kernel") if isinstance(row.get("kernel"), str) else ""
    rot = f"r={row['rotating_requested']}"
    t = Timer.of_cell(row.get("timer"))
    timer = "" if t.default else f" {t}"
    return " ".join(filter(None, [kern, _size(row["size_bytes"]), rot, str(row["flush"])])) + timer


def verdict_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration: medians with their 95% intervals (one time unit per table),
    the change and its interval in percent, p, the smallest callable change and the verdict.

    An ``undecided`` row with a small p says why both stand (``headline.p_note``): the rule is the
    interval against the threshold, the p-value only says that the medians differ."""
    from ..plot_parts import time_unit
    from ..readable import format_p
    from .headline import p_note

    threshold = float(frame.attrs.get("threshold", DEFAULT_THRESHOLD))

    both = frame[frame["present"] == "both"]
    unit = time_unit(both["base_median_s"]) if len(both) else (1e6, "us")
    rows = []
    for r in frame.to_dict("records"):
        out = {"configuration": config_label(r)}
        if r["present"] == "both":
            out.update(
                {
                    f"base median [95%] ({unit[1]})": _interval(r, "base", unit),
                    f"new median [95%] ({unit[1]})": _interval(r, "new", unit),
                    "change [95%]": f"{r['change']:+.1%} "
                    + (
                        f"[{r['ratio_ci_low'] - 1:+.1%}, {r['ratio_ci_high'] - 1:+.1%}]"
                        if math.isfinite(r["ratio_ci_low"])
                        else "(no interval: see note)"
                    ),
                    "p (Mann-Whitney)": format_p(r["p_value"]),
                    "min. detectable": f"{r['min_detectable']:.1%}",
                    "verdict": r["verdict"],
                    "measured change": change_text(r, threshold),
                    "note": "; ".join(filter(None, [p_note(r, threshold), r.get("note") or ""])),
                }
            )
        else:
            out.update({"verdict": "", "note": r["note"]})
        rows.append(out)
    return pd.DataFrame(rows).fillna("").set_index("configuration")


def verdict_counts(frame: pd.DataFrame) -> str:
    """Both answers counted: the verdicts against the threshold, and how many rows measured a change
    at all (their interval excluding no change), whatever its size."""
    from .headline import _measured

    both = frame[frame["present"] == "both"]
    counts = both["verdict"].value_counts()
    parts = [f"{int(counts.get(v, 0))} {v}" for v in ("faster", "slower", "same", "undecided") if counts.get(v, 0)]
    only = frame[frame["present"] != "both"]
    extra = f"; {len(only)} configuration(s) only in one run (listed, not compared)" if len(only) else ""
    undecided = both[both["verdict"] == "undecided"]
    where = (
        f"; the noise allows no call at: {', '.join(config_label(r) for r in undecided.to_dict('records'))}"
        if len(undecided)
        else ""
    )
    return f"{len(both)} configuration(s) compared: {', '.join(parts) or 'none'}; {_measured(both)}{extra}{where}"


def provenance_pair(data: ReviewData) -> pd.DataFrame:
    """Both sides' provenance in two columns; each side's ``code.*`` rows are those of its own kernels."""

    def side(meta: Mapping[str, str], kernels: list[str] | None) -> dict[str, str]:
        hidden = (mk.CODE.prefix, mk.PACKAGE.prefix, mk.VERIFY.prefix, mk.FLUSH_BYTES.prefix, mk.SWEEP_SPEC.name)
        out = {k: str(v) for k, v in meta.items() if not k.startswith(hidden)}
        for k, v in meta.items():
            if mk.CODE.owns(k):
                kern, _, what = mk.CODE.part(k).rpartition(".")
                if kernels is None or kern in kernels:
                    out[f"code under review: {kern} {what}"] = str(v)
        return out

    a = side(data.base_metadata, data.base_kernels)
    b = side(data.new_metadata, data.new_kernels)
    keys = [k for k in REVIEW_PROVENANCE if k in a or k in b]
    code = sorted(k for k in set(a) | set(b) if k.startswith("code under review"))
    keys += code + sorted((set(a) | set(b)) - set(keys) - set(code))
    if not keys:  # runs recorded without metadata (samples alone): one row that says so, not an empty table
        keys, a, b = ["provenance"], {"provenance": "none recorded"}, {"provenance": "none recorded"}
    return pd.DataFrame(
        {
            "item": keys,
            f"baseline: {data.base_label}": [a.get(k, "") for k in keys],
            f"candidate: {data.new_label}": [b.get(k, "") for k in keys],
        }
    ).set_index("item")


def wrapped(table: pd.DataFrame) -> Any:
    """A table that wraps long cells (command lines, hashes) instead of widening the page; every
    cell and label HTML-escaped (the labels and provenance come from run files)."""
    from .recorded import escaped_style

    return escaped_style(table).set_properties(
        **{"text-align": "left", "white-space": "pre-wrap", "overflow-wrap": "anywhere", "max-width": "28em"}
    )


# -- figures --------------------------------------------------------------------------------------


def plot_forest(
    frame: pd.DataFrame, ax: Any = None, threshold: float | None = None, title: str | None = None
) -> Figure:
    """Change new/base - 1 (percent) per configuration with its 95% interval, the ±threshold band
    shaded, colored by verdict."""
    both = frame[frame["present"] == "both"].reset_index(drop=True)
    if both.empty:
        raise ConfigError("no configuration is present in both runs: nothing to plot")
    thr = float(frame.attrs.get("threshold", DEFAULT_THRESHOLD) if threshold is None else threshold)
    if ax is None:
        fig = Figure(figsize=(8.4, 1.2 + 0.38 * len(both)), layout="constrained")
        ax = fig.subplots()
    else:
        fig = ax.figure
    y = np.arange(len(both))[::-1]
    ax.axvspan(-thr * 100, thr * 100, color="#1f77b4", alpha=0.12, label=f"±{thr:.0%} (practical threshold)")
    ax.axvline(0, color="k", linewidth=0.8)
    for yi, r in zip(y, both.to_dict("records")):
        c = VERDICT_COLORS.get(r["verdict"], "k")
        mid, lo, hi = (r["ratio"] - 1) * 100, (r["ratio_ci_low"] - 1) * 100, (r["ratio_ci_high"] - 1) * 100
        ax.errorbar([mid], [yi], xerr=[[mid - lo], [hi - mid]], fmt="o", color=c, capsize=3)
    for v, c in VERDICT_COLORS.items():
        if (both["verdict"] == v).any():
            ax.plot([], [], "o", color=c, label=v)
    ax.set_yticks(y, [plain_text(config_label(r)) for r in both.to_dict("records")], fontsize="small")
    ax.set_xlabel("change of the median, new vs base (%), with its 95% interval")
    ax.set_title(plain_text(title) if title else "Verdicts: new / base")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    return fig


def plot_noise_both(frame: pd.DataFrame, base_label: str = "base", new_label: str = "new") -> Figure:
    """Relative IQR (percent) of each configuration on both sides, with the 10% / 25% warning levels."""
    both = frame[frame["present"] == "both"].reset_index(drop=True)
    if both.empty or "base_iqr_rel" not in both:
        raise ConfigError("no configuration is present in both runs: nothing to plot")
    fig = Figure(figsize=(8.4, 1.2 + 0.38 * len(both)), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(both))[::-1]
    ax.barh(y + 0.2, both["base_iqr_rel"] * 100, height=0.38, color="0.6", label=plain_text(f"baseline: {base_label}"))
    ax.barh(
        y - 0.2, both["new_iqr_rel"] * 100, height=0.38, color="#ff7f0e", label=plain_text(f"candidate: {new_label}")
    )
    for level, ls in ((10, "--"), (25, ":")):
        ax.axvline(level, color="k", linestyle=ls, linewidth=0.8, label=f"{level}% (torch.utils.benchmark warns)")
    ax.set_yticks(y, [plain_text(config_label(r)) for r in both.to_dict("records")], fontsize="small")
    ax.set_xlabel("noise: IQR / median (%)")
    ax.set_title("Noise, both sides")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    return fig


def plot_cache_review(replay: Any) -> Figure:
    """Compile time saved (with the ideal floor: each unique kernel compiled once) | cache hits."""
    from .. import cache_plots

    fig = Figure(figsize=(8.4, 3.6), layout="constrained")
    ax_saved, ax_hits = fig.subplots(1, 2)
    cache_plots.plot_compile_time_saved(
        replay.events, ax=ax_saved, baseline=replay.baseline, ideal_s=ideal_floor(replay)
    )
    ax_saved.legend(fontsize="x-small", loc="lower right")
    cache_plots.plot_cache_hits(replay.events, ax=ax_hits)
    for ax in (ax_saved, ax_hits):
        ax.title.set_fontsize("medium")
    return fig


def ideal_floor(replay: Any) -> float | None:
    """The dashed line of the compile-time panel: the compile floor (each unique kernel's fastest
    compile measured in the run, summed; tuning/floor.py), which no cached pass's summed lookups
    can go below. Replays without one (frames recorded before it) fall back to the ideal pass's
    summed compile times (one measured pass: a sample, not a bound)."""
    floor = getattr(replay, "floor", None)
    if floor and floor.get("kernels"):
        v = float(floor["compile_sum_s"])
        return v if math.isfinite(v) else None
    sc = getattr(replay, "scenarios", None)
    if sc is not None and "ideal" in sc.index and "lookup_seconds_sum" in sc.columns:
        v = float(sc.loc["ideal", "lookup_seconds_sum"])
        return v if math.isfinite(v) else None
    return None


def kernels_under_review(data: ReviewData) -> list[str]:
    """The kernels the review compares (both sides), in order."""
    names = list(data.base_kernels or []) + list(data.new_kernels or [])
    if not names and "kernel" in data.verdicts.columns:
        names = [str(k) for k in pd.unique(data.verdicts["kernel"].dropna())]
    return list(dict.fromkeys(names))


def compile_section(data: ReviewData, replay: Any = None) -> Any:
    """The compile section's words: why it is absent (no replay), or what its figures are about.

    Why not the tuning replay by default (issue #36): it replays a GEMM list unrelated to the code
    under review, and its "saved -0.00165 s" read as a fact about that code. A sweep records each
    kernel's code hash (``code.<kernel>.sha256``), not its compile events, so there is nothing about
    the code under review's compiles to show; a replay is shown only where ``tuning_data`` asks for
    one, and then says which list it is."""
    from .headline import Paragraph, cache_sentences

    kernels = ", ".join(kernels_under_review(data)) or "the kernels compared"
    if replay is None:
        return Paragraph(
            f"No compile-time section: the runs record no compile events of the code under review "
            f"({kernels}): a sweep stores each kernel's code hash, not its compiles, and a tuning-list "
            f"replay would time other code (set tuning_data to a recorded replay folder, or 'live', "
            f"to see the compile cache on a tuning list)."
        )
    listed = getattr(replay, "list_name", "") or "a tuning list"
    listed = "the built-in split-K list" if listed == "built-in" else listed
    ev = replay.events
    comp = (
        f" with {ev['compiler'].iloc[0]}/{ev['target'].iloc[0]}"
        if {"compiler", "target"} <= set(ev.columns) and len(ev)
        else ""
    )
    return Paragraph(
        [
            f"These figures are about the compile cache on {listed}{comp} (tuning_data = {replay.source!r}), "
            f"not about the code under review ({kernels}), whose compiles the runs do not record.",
            *cache_sentences(replay, data.threshold),
        ]
    )


def cache_verdicts(replay: Any, threshold: float = DEFAULT_THRESHOLD) -> pd.DataFrame:
    """``compare_scenarios`` of the replay (every scenario against the cache off), as a table."""
    from ..verdict_scenarios import compare_scenarios

    frame = replay.frame
    if "off" not in set(frame["scenario"]):
        raise ConfigError("the replay has no 'off' scenario (cache disabled): nothing to compare against")
    from ..readable import format_interval, format_number

    rows = compare_scenarios(frame[frame["scenario"] != "ideal"], "off", threshold=threshold)
    out = pd.DataFrame(
        {
            "scenario": rows["scenario"],
            "cache off (s)": rows["base_s"].map(format_number),
            "with it (s)": rows["new_s"].map(format_number),
            "saved (s) [95%]": [
                format_interval(r.saved_s, r.saved_ci_low_s, r.saved_ci_high_s) for r in rows.itertuples()
            ],
            "time change [95%]": [
                f"{r.ratio - 1:+.1%} [{r.ratio_ci_low - 1:+.1%}, {r.ratio_ci_high - 1:+.1%}]" for r in rows.itertuples()
            ],
            "verdict": rows["verdict"].map(lambda v: {"faster": "faster (saves time)"}.get(v, v)),
            "interval over": rows["interval_over"],
        }
    )
    return out.set_index("scenario")


__all__ = [
    "Banner",
    "Headline",
    "REVIEW_PROVENANCE",
    "ReviewData",
    "cache_verdicts",
    "compile_section",
    "config_label",
    "device_banner",
    "ideal_floor",
    "kernels_under_review",
    "plot_cache_review",
    "plot_forest",
    "plot_noise_both",
    "provenance_pair",
    "review_data",
    "rule_text",
    "verdict_counts",
    "verdict_table",
    "wrapped",
]
