"""The reports' headline: the first screen says, in sentences with numbers, what the noise is and
whether it allows the question asked, what the compile cache saved, and the verdict where two
kernels are compared.

Why library code: a reviewer read the dashboard's table (8 of 9 rows flagged noisy) with no word
on whether the numbers were usable, and an A/B table with a p-value of 2.5e-52 beside
``undecided``; the answers were in columns to dig through. The sentences are computed here from the
frames (a sweep's summary and samples, a tuning replay, a ``verdicts.compare`` frame), so the
notebooks only wire them and the tests check the numbers in them.
"""

from __future__ import annotations

import html
import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..schema import Configuration, Timer
from ..readable import format_bytes, format_number, format_p
from ..verdict_rule import DEFAULT_THRESHOLD, change_text
from ..verdict_rule import _thr as _threshold_text

#: configuration columns a row label is made of (those that vary among the rows described)
_LABEL_COLUMNS = Configuration.COLUMNS
#: at most this many configurations are named in one sentence (the tables list them all)
NAMED = 3


def _pct(fraction: float, signed: bool = False) -> str:
    return f"{100 * fraction:{'+' if signed else ''}.1f}%"


_thr = _threshold_text  # ``2%`` for 0.02, ``2.5%`` for 0.025 (as ``verdicts.rule_text`` writes the threshold)


def _times(ratio: float) -> str:
    """A difference of two medians: ``37.8%`` below 2x, ``4.5×`` from there."""
    return f"{ratio:.1f}×" if ratio >= 2 else _pct(ratio - 1)


def _varying(rows: pd.DataFrame) -> list[str]:
    cols = [c for c in _LABEL_COLUMNS if c in rows.columns and rows[c].astype(str).nunique() > 1]
    return cols or [c for c in ("rotating_requested", "flush") if c in rows.columns]


def row_label(row: Mapping[str, Any], columns: Sequence[str]) -> str:
    """``1 MiB, 2 rotating sets, l2-read flush`` (only the columns that tell the rows described apart).

    In words, not the harness's shorthand (``r=2 l2-read``): the headline is read first, by people
    who never saw the sweep's options."""
    parts = []
    for c in columns:
        v = row.get(c)
        if c == "size_bytes":
            parts.append(format_bytes(v))
        elif c == "rotating_requested":
            parts.append(f"{v} rotating set{'' if str(v) == '1' else 's'}")
        elif c == "flush":
            parts.append(
                "the cold reference"
                if Configuration.marks_reference(str(v))
                else {"none": "no flush"}.get(str(v), f"{v} flush")
            )
        elif c == "timer" and not Timer.of_cell(v).default:
            parts.append(f"{v} timer")
        elif c != "timer":
            parts.append(str(v))
    return ", ".join(parts)


def _time(seconds: float, unit: tuple[float, str]) -> str:
    return f"{format_number(seconds * unit[0])} {unit[1]}"


def _named(items: Sequence[str], sep: str = "; ") -> str:
    shown = list(items[:NAMED])
    return sep.join(shown) + (f"{sep}and {len(items) - NAMED} more (table below)" if len(items) > NAMED else "")


# -- noise ----------------------------------------------------------------------------------------


def noise_rows(summary: pd.DataFrame, kernel: str | None = None, size_bytes: int | None = None) -> pd.DataFrame:
    """The summary rows the noise sentences describe: ``kernel``'s at ``size_bytes`` (all where None)
    with a measured median."""
    rows = summary
    if kernel is not None and "kernel" in rows.columns:
        rows = rows[rows["kernel"] == kernel]
    if size_bytes is not None and "size_bytes" in rows.columns:
        rows = rows[rows["size_bytes"] == size_bytes]
    rows = rows[np.isfinite(rows["median_s"].to_numpy(float)) & (rows["median_s"].to_numpy(float) > 0)]
    return rows.reset_index(drop=True)


def noise_sentences(summary: pd.DataFrame, kernel: str | None = None, size_bytes: int | None = None) -> list[str]:
    """What the noise is (the spread of single launches), how well the medians are known (their
    95% intervals), and whether the rows shown can be told apart at that precision.

    ``kernel``/``size_bytes`` pick the configuration the report's table shows (all rows when None).
    Resolution: two medians are told apart when their 95% intervals do not overlap, i.e. roughly
    when they differ by more than the sum of their half-widths (twice the typical half-width)."""
    rows = noise_rows(summary, kernel, size_bytes)
    if rows.empty:
        return ["Noise: no configuration with a measured median."]
    cols = _varying(rows)
    n = len(rows)
    iqr = float(np.nanmedian(rows["iqr_rel"].to_numpy(float)))
    out = [
        f"Noise: the median run-to-run spread of single launches is {_pct(iqr)} (IQR/median, median of {n} "
        f"rows, from {_pct(float(rows['iqr_rel'].min()))} to {_pct(float(rows['iqr_rel'].max()))})"
    ]
    if "warning" in rows.columns:
        noisy = int(rows["warning"].astype(str).str.contains("noisy").sum())
        if noisy:
            out[0] += (
                f"; {noisy} of {n} rows carry the harness's 'noisy' warning (spread above 10%), which is "
                f"about single launches, not about the medians"
            )
    out[0] += "."
    if not {"ci_low_s", "ci_high_s"} <= set(rows.columns):
        return out
    half = ((rows["ci_high_s"] - rows["ci_low_s"]) / 2 / rows["median_s"]).to_numpy(float)
    if not np.isfinite(half).any():
        return out
    h = float(np.nanmedian(half))
    wide = int(np.nanargmax(half))
    out.append(
        f"The medians are known to ±{_pct(h)} (half-width of their 95% intervals, median over the rows; "
        f"widest ±{_pct(float(half[wide]))} at {row_label(rows.iloc[wide], cols)}), so differences between "
        f"rows under ~{_pct(2 * h)} cannot be resolved at these settings (more iterations or units narrow "
        f"the intervals)."
    )
    settings = rows[~Configuration.marks_reference(rows)] if "flush" in rows.columns else rows
    if len(settings) >= 2:
        out.append(_settings_sentence(settings.reset_index(drop=True), cols))
    bias = _bias_sentence(settings, cols)
    if bias:
        out.append(bias)
    return out


def load_sentences(
    samples: pd.DataFrame | None, cores: int | None, kernel: str | None = None, size_bytes: int | None = None
) -> list[str]:
    """The host's load over the chunks shown and whether the spread tracks it (``bench.hostload``);
    none where the samples recorded no load."""
    from ..bench.hostload import load_summary

    found = load_summary(samples, cores, kernel, size_bytes)
    return [found.sentence()] if found is not None else []


def _settings_sentence(rows: pd.DataFrame, cols: Sequence[str]) -> str:
    """Whether the fastest and the slowest row shown are told apart (intervals not overlapping)."""
    from ..plot_parts import time_unit

    unit = time_unit(rows["median_s"])
    lo, hi = rows.loc[rows["median_s"].idxmin()], rows.loc[rows["median_s"].idxmax()]
    ratio = float(hi["median_s"] / lo["median_s"])
    apart = float(hi["ci_low_s"]) > float(lo["ci_high_s"])
    what = (
        f"The slowest and fastest settings shown ({row_label(hi, cols)}: {_time(hi['median_s'], unit)}; "
        f"{row_label(lo, cols)}: {_time(lo['median_s'], unit)}) differ by {_times(ratio)}"
    )
    if apart:
        return what + ": resolved (their 95% intervals do not overlap), so the setting changes the time here."
    return what + ": not resolved (their 95% intervals overlap); at these settings the rows cannot be told apart."


def _bias_sentence(rows: pd.DataFrame, cols: Sequence[str]) -> str:
    """The bias of each setting against the cold reference, where its interval excludes zero."""
    need = {"bias", "bias_ci_low", "bias_ci_high"}
    if not need <= set(rows.columns):
        return ""
    b = rows[np.isfinite(rows["bias_ci_low"].to_numpy(float)) & np.isfinite(rows["bias_ci_high"].to_numpy(float))]
    if b.empty:
        return ""
    resolved = b[(b["bias_ci_low"] > 0) | (b["bias_ci_high"] < 0)]
    named = [
        f"{row_label(r, cols)}: {_pct(r['bias'], True)} [{_pct(r['bias_ci_low'], True)}, {_pct(r['bias_ci_high'], True)}]"
        for r in resolved.to_dict("records")
    ]
    text = (
        f"Against the cold reference (single launches after a cache flush) the bias is resolved (its 95% "
        f"interval excludes 0) in {len(resolved)} of {len(b)} settings"
    )
    return text + (f": {_named(named)}." if named else ".")


# -- trust ------------------------------------------------------------------------------------------


def trust_sentences(summary: pd.DataFrame | None) -> list[str]:
    """The configurations whose timing the harness does not trust (``bench.trust``: a flag line in
    the warning, or a broken cold promise), counted and named with the first reason each; [] when
    none is flagged. First on the page: a flagged row's time is not evidence."""
    from ..bench.trust import flags_of, is_flagged

    if summary is None or summary.empty or "warning" not in summary.columns:
        return []
    rows = summary.reset_index(drop=True)
    flagged = [r for r in rows.to_dict("records") if is_flagged(r)]
    if not flagged:
        return []
    cols = _varying(rows) if len(rows) > 1 else list(_LABEL_COLUMNS)
    named = []
    for r in flagged:
        why = (flags_of(r.get("warning")) or [str(r.get("counter_warning") or "its cold promise broke")])[0]
        named.append(f"{row_label(r, ['kernel', *[c for c in cols if c != 'kernel']])}: {why.split(': ', 1)[-1]}")
    kernels = sorted({str(r.get("kernel")) for r in flagged})
    return [
        f"Untrusted timings: {len(flagged)} of {len(rows)} configuration(s) of {len(kernels)} kernel(s) "
        f"({', '.join(kernels[:NAMED])}{' and more' if len(kernels) > NAMED else ''}) failed a check that needs "
        f"nothing from the kernel, so their times are not evidence: {_named(named)}."
    ]


# -- the compile cache ----------------------------------------------------------------------------


def cache_sentences(replay: Any, threshold: float = DEFAULT_THRESHOLD) -> list[str]:
    """What the cache saved on the tuning replay: the cached pass against the cache off, the saving's
    95% interval and the verdict of the review rule (``verdicts.compare_scenarios``)."""
    from ..verdict_scenarios import compare_scenarios

    frame = replay.frame
    present = list(pd.unique(frame["scenario"]))
    primary = getattr(replay, "primary", None)
    if "off" not in present or primary in (None, "off") or primary not in present:
        return [
            f"Compile cache: the replay has no cache-off pass to compare the '{primary}' pass with, so no saving is stated."
        ]
    row = compare_scenarios(
        frame[frame["scenario"].isin(["off", primary])], "off", new=primary, threshold=threshold
    ).iloc[0]
    ev = replay.events
    hits = int(ev["outcome"].isin(("memory-hit", "disk-hit", "remote-hit", "joined")).sum())
    listed = getattr(replay, "list_name", "") or "the tuning list"
    listed = "the built-in split-K list" if listed == "built-in" else listed
    saved, lo, hi = float(row["saved_s"]), float(row["saved_ci_low_s"]), float(row["saved_ci_high_s"])
    text = (
        f"Compile cache: replaying {listed} ({len(ev)} requests, {hits} answered from the cache), the "
        f"'{primary}' pass took {format_number(row['new_s'])} s against {format_number(row['base_s'])} s with the "
        f"cache off: "
    )
    text += (
        f"saved {format_number(saved)} s ({_pct(-(float(row['ratio']) - 1))} of the time)"
        if saved >= 0
        else f"{format_number(-saved)} s more with the cache"
    )
    text += f", 95% interval [{format_number(lo)}, {format_number(hi)}] s of saving ({row['interval_over']}); "
    verdict = str(row["verdict"])
    # the second answer: a change resolved below the threshold is named, not hidden by "same"
    measured = (
        change_text({**row, "change": float(row["ratio"]) - 1}, threshold)
        if row.get("change_called") in ("faster", "slower") and verdict not in ("faster", "slower")
        else ""
    )
    if verdict == "faster":
        text += "verdict: the cache saves time."
    elif verdict == "same" and measured:
        text += f"verdict: same (within ±{_thr(threshold)}), but the time measurably changed: {measured}."
    elif verdict == "same":
        text += f"verdict: same (within ±{_thr(threshold)}): the cache neither saves nor costs time here."
    elif verdict == "slower":
        text += "verdict: slower: the cache costs time here."
    else:
        text += f"verdict: undecided: the interval of the time ratio straddles the ±{_thr(threshold)} threshold."
        text += f" Measured: {measured}." if measured else ""
    from .baselines import own_cache_sentences  # the compiler's own cache, and the saving beyond it (issue 45)

    return [text, *own_cache_sentences(replay)]


def ideal_sentences(replay: Any) -> list[str]:
    """What the ``ideal`` row of the scenario table is, and what it is not: one measured pass
    (each unique request compiled once, cold, without a cache), so its own noise can put it above
    a cached pass that compiles the same kernels; the floor that does bound every compiling pass
    is ``tuning/floor.py``'s (each unique kernel's fastest measured compile, summed)."""
    from ..tuning.floor import COMPILING_SCENARIOS

    sc = getattr(replay, "scenarios", None)
    if sc is None or "ideal" not in sc.index or "lookup_seconds_sum" not in sc.columns:
        return []
    ideal = float(sc.loc["ideal", "lookup_seconds_sum"])
    out = [
        f"'ideal' is one cold compile per unique request, no cache, measured in a pass of its own: "
        f"{format_number(ideal)} s (summed lookups)."
    ]
    seconds = {s: float(sc.loc[s, "lookup_seconds_sum"]) for s in sc.index if s != "ideal"}
    below = {s: v for s, v in seconds.items() if s in COMPILING_SCENARIOS and v < ideal}
    if below:
        names = [f"'{s}' ({format_number(v)} s)" for s, v in below.items()]
        which = (
            f"The {names[0]} pass, which compiles"
            if len(names) == 1
            else f"The {', '.join(names[:-1])} and {names[-1]} passes, which compile"
        )
        out.append(
            which + " every unique kernel too, came in below it: the ideal pass is one sample of compile "
            "times, not a floor (compile times vary from call to call, and its own noise can put it "
            "above a cached pass)."
        )
    floor = getattr(replay, "floor", None)
    if floor and floor.get("kernels") and math.isfinite(float(floor.get("compile_sum_s", math.nan))):
        out.append(
            f"The floor that no pass compiling every unique kernel can beat is {format_number(floor['compile_sum_s'])} s: "
            f"each unique kernel's fastest compile measured in any pass, summed (the dashed line of the "
            f"compile-time panel)."
        )
    warm = {s: v for s, v in seconds.items() if s not in COMPILING_SCENARIOS and s != "off"}
    if warm:
        out.append(
            "Passes served from a warm cache ("
            + ", ".join(f"'{s}' {format_number(v)} s" for s, v in warm.items())
            + ") compile nothing and sit below both."
        )
    return out


# -- verdicts -------------------------------------------------------------------------------------


def undecided_reason(row: Mapping[str, Any], threshold: float) -> str:
    """Why a row is ``undecided``: too few units, an interval straddling a threshold, or drift."""
    from ..bench.levels import MIN_UNITS

    lo, hi = float(row.get("ratio_ci_low", math.nan)), float(row.get("ratio_ci_high", math.nan))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        units = min(int(row.get("base_units", 0) or 0), int(row.get("new_units", 0) or 0))
        return f"too few units ({units}; a verdict needs at least {MIN_UNITS} per side: run with --units 4 or more)"
    crossed = [
        f"{sign}{_thr(threshold)}" for sign, edge in (("-", 1 - threshold), ("+", 1 + threshold)) if lo < edge < hi
    ]
    if crossed:
        return (
            f"the 95% interval [{_pct(lo - 1, True)}, {_pct(hi - 1, True)}] straddles the "
            f"{' and '.join(crossed)} threshold{'s' if len(crossed) > 1 else ''}"
        )
    return str(row.get("note") or "see the note")


def p_note(row: Mapping[str, Any], threshold: float) -> str:
    """For an ``undecided`` row whose Mann-Whitney p is small: why both stand (empty otherwise).

    The verdict rule is the interval against the threshold; the p-value only says the medians
    differ (and is too small with chunk-correlated samples), not whether they differ by more than
    the threshold."""
    p = float(row.get("p_value", math.nan))
    if row.get("verdict") != "undecided" or not p < 0.05:
        return ""
    reason = undecided_reason(row, threshold)
    lo, hi = float(row.get("ratio_ci_low", math.nan)), float(row.get("ratio_ci_high", math.nan))
    if lo < 1 < hi:  # the interval over units holds no change at all: p's independent launches overstate
        return (
            f"significant (p {format_p(p)}, counting every launch as independent) but the 95% interval "
            f"[{_pct(lo - 1, True)}, {_pct(hi - 1, True)}], which counts the variation between units, includes "
            f"no change: the difference is not established"
        )
    if reason.startswith("the 95% interval"):
        return (
            f"significant (p {format_p(p)}: the medians differ) but {reason}: whether the change exceeds "
            f"±{_thr(threshold)} is not resolved"
        )
    if reason.startswith("too few units"):
        return f"significant (p {format_p(p)}, counting every launch as independent) but undecided: too few units"
    return f"significant (p {format_p(p)}, counting every launch as independent) but undecided: {reason}"


def verdict_sentences(verdicts: pd.DataFrame, base_label: str, new_label: str) -> list[str]:
    """The verdict of ``new_label`` against ``base_label`` with the changes that decided it, and how
    small a change the noise lets the rule call."""
    thr = float(verdicts.attrs.get("threshold", DEFAULT_THRESHOLD))
    both = verdicts[verdicts["present"] == "both"].reset_index(drop=True) if "present" in verdicts.columns else verdicts
    if both.empty:
        return [f"Verdict: {new_label} and {base_label} share no configuration; nothing is compared."]
    cols = _varying(both) if len(both) > 1 else [c for c in Configuration.SETUP_COLUMNS if c in both.columns]
    counts = both["verdict"].value_counts()
    tally = ", ".join(f"{v} in {int(counts[v])}" for v in ("faster", "slower", "same", "undecided") if counts.get(v, 0))
    out = [
        f"Verdict ({new_label} against {base_label}, rule ±{_thr(thr)}): {tally} of {len(both)} configuration(s); "
        f"{_measured(both)}."
    ]
    # every row whose change is measured (interval excluding 1) or decided, both answers in one phrase
    told = [
        f"{row_label(r, cols)}: {change_text(r, thr)}"
        for r in both.to_dict("records")
        if r["verdict"] != "undecided" or r.get("change_called") in ("faster", "slower")
    ]
    if told:
        out.append(f"Measured: {_named(told)}.")
    by_reason: dict[str, list[str]] = {}
    for r in both.to_dict("records"):
        if r["verdict"] == "undecided":
            by_reason.setdefault(undecided_reason(r, thr), []).append(row_label(r, cols))
    if by_reason:

        def who(labels: list[str]) -> str:
            return f"all {len(labels)}" if len(labels) == len(both) > 1 else _named(labels)

        out.append("Undecided: " + "; ".join(f"{who(labels)}: {reason}" for reason, labels in by_reason.items()) + ".")
    return out + _rule_noise(both, thr, base_label, new_label)


def _measured(both: pd.DataFrame) -> str:
    """``a change measured in 3 (slower in 3), past the threshold in 1``: the second answer counted."""
    called = both["change_called"].astype(str) if "change_called" in both.columns else pd.Series([], dtype=str)
    n = int(called.isin(("faster", "slower")).sum())
    dirs = ", ".join(f"{d} in {int((called == d).sum())}" for d in ("faster", "slower") if (called == d).any())
    past = int(both["verdict"].isin(("faster", "slower")).sum())
    return (
        f"a change measured (interval excluding no change) in {n}"
        + (f" ({dirs})" if dirs else "")
        + f", past the threshold in {past}"
    )


def _rule_noise(both: pd.DataFrame, thr: float, base_label: str, new_label: str) -> list[str]:
    b, n = float(np.nanmedian(both["base_iqr_rel"])), float(np.nanmedian(both["new_iqr_rel"]))
    text = (
        f"Noise: the median spread of single launches is {_pct(b)} ({base_label}) and {_pct(n)} ({new_label}), "
        f"IQR/median"
    )
    md = both["min_detectable"].to_numpy(float) if "min_detectable" in both.columns else np.array([])
    if not np.isfinite(both["ratio_ci_low"].to_numpy(float)).any():
        from ..bench.levels import MIN_UNITS

        text += (
            f"; with fewer than {MIN_UNITS} units per side the rule can call no change at these settings, "
            f"whatever its size (run with --units 4 or more)"
        )
    elif np.isfinite(md).any():
        m = float(np.nanmedian(md))
        text += (
            f"; the rule's 95% intervals are ±{_pct(m - thr)} wide (median), so changes of ~{_pct(m - thr)} or "
            f"more are measured and named, and changes under ~{_pct(m)} cannot be called past the ±{_thr(thr)} "
            f"threshold at these settings (more units narrow the intervals)"
        )
    return [text + "."]


def kernel_verdicts(
    samples: pd.DataFrame | None, threshold: float = DEFAULT_THRESHOLD
) -> list[tuple[str, str, pd.DataFrame]]:
    """(base, new, verdicts) for each further kernel of ``samples`` against its first kernel, where
    the samples hold two or more (at most ``NAMED`` comparisons): the dashboard's verdict."""
    from ..verdicts import compare

    if samples is None or samples.empty or "kernel" not in samples.columns:
        return []
    kernels = [str(k) for k in pd.unique(samples["kernel"])]
    return [
        (kernels[0], k, compare(samples, base=kernels[0], new=k, threshold=threshold)) for k in kernels[1 : NAMED + 1]
    ]


def _kernel_paragraphs(samples: pd.DataFrame | None, threshold: float) -> list[str]:
    """The dashboard's verdicts, or one sentence saying why the samples allow none."""
    from ..errors import ConfigError

    try:
        found = kernel_verdicts(samples, threshold)
    except ConfigError as exc:  # samples recorded without the columns a comparison needs
        return [f"Verdict: none, although the samples hold several kernels: {exc}."]
    return [" ".join(verdict_sentences(frame, base, new)) for base, new, frame in found]


def headline(
    summary: pd.DataFrame | None = None,
    samples: pd.DataFrame | None = None,
    replay: Any = None,
    verdicts: pd.DataFrame | None = None,
    *,
    kernel: str | None = None,
    size_bytes: int | None = None,
    base_label: str = "baseline",
    new_label: str = "candidate",
    threshold: float = DEFAULT_THRESHOLD,
    cores: int | None = None,
) -> list[str]:
    """The headline's paragraphs (each a few sentences): the verdict (``verdicts``, or computed
    from ``samples`` holding two kernels), the noise (of ``summary``'s rows of ``kernel`` and
    ``size_bytes``, or of the verdicts' two sides) with the host's load beside it (``samples``' chunks
    against ``cores``, the run's ``cpu_count``), and what the compile cache saved (``replay``); first,
    the configurations whose timing the trust checks flagged (``trust_sentences``)."""
    out: list[str] = list(trust_sentences(summary))
    if verdicts is not None:
        out.append(" ".join(verdict_sentences(verdicts, base_label, new_label)))
    else:
        out += _kernel_paragraphs(samples, threshold)
    if summary is not None and not summary.empty:
        out.append(" ".join(noise_sentences(summary, kernel, size_bytes)))
        out += load_sentences(samples, cores, kernel, size_bytes)
    if replay is not None:
        out.append(" ".join(cache_sentences(replay, threshold)))
    return out


class HeadlineBox:
    """The headline on the page: a framed list of paragraphs, every string HTML-escaped (kernel
    names and labels come from run files)."""

    def __init__(self, paragraphs: Sequence[str], title: str = "In short") -> None:
        self.paragraphs = list(paragraphs)
        self.title = title

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{html.escape(p)}</li>" for p in self.paragraphs)
        return (
            f'<div class="hx-headline" style="border-left:4px solid #1f4e79;padding:2px 10px;margin:6px 0;'
            f'max-width:100%;overflow-wrap:anywhere"><b>{html.escape(self.title)}</b><ul>{items}</ul></div>'
        )

    def __repr__(self) -> str:
        return f"{self.title}:\n" + "\n".join(f"- {p}" for p in self.paragraphs)


class Paragraph:
    """Sentences shown as one paragraph, HTML-escaped (they name kernels and lists from run files)."""

    def __init__(self, sentences: Sequence[str] | str) -> None:
        self.text = sentences if isinstance(sentences, str) else " ".join(sentences)

    def _repr_html_(self) -> str:
        return f'<p class="hx-note">{html.escape(self.text)}</p>'

    def __repr__(self) -> str:
        return self.text


__all__ = [
    "HeadlineBox",
    "Paragraph",
    "cache_sentences",
    "headline",
    "ideal_sentences",
    "kernel_verdicts",
    "load_sentences",
    "noise_rows",
    "noise_sentences",
    "p_note",
    "row_label",
    "trust_sentences",
    "undecided_reason",
    "verdict_sentences",
]
