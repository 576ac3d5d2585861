"""The report's first screen: the answers in plain words, then the details.

Why: the dashboard report opened on ~300 px of notebook introduction, then one box of dense
paragraphs (``IQR/median, median of 5 rows``, ``r=2 l2-read``, intervals of intervals) in which the
answer had to be dug for. Here each question gets one plain sentence, first (is the timing precise
enough to tell the settings apart, was the host busy and does that explain the noise, did the compile
cache save time, and the verdict where two kernels are compared), and ``headline``'s sentences with
all their numbers follow as the details. The sentences are computed from the same frames by the same
rules (``headline``, ``verdicts.compare_scenarios``, ``bench.hostload``); only the wording is shorter.
"""

from __future__ import annotations

import html
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..schema import Configuration
from ..readable import format_number
from ..verdict_rule import DEFAULT_THRESHOLD
from . import headline as hl


def noise_answer(summary: pd.DataFrame, kernel: str | None = None, size_bytes: int | None = None) -> str:
    """How much single launches spread, how well the medians are known, and whether the settings
    shown are told apart (``headline.noise_sentences``' rule: 95% intervals that do not overlap)."""
    rows = hl.noise_rows(summary, kernel, size_bytes)
    if rows.empty:
        return "Timing: no setting has a measured median."
    text = (
        f"Timing: single launches spread {hl._pct(float(np.nanmedian(rows['iqr_rel'].to_numpy(float))))} around their "
        f"median (typical of the {len(rows)} settings shown)"
    )
    if not {"ci_low_s", "ci_high_s"} <= set(rows.columns):
        return text + "."
    half = ((rows["ci_high_s"] - rows["ci_low_s"]) / 2 / rows["median_s"]).to_numpy(float)
    if not np.isfinite(half).any():
        return text + "."
    h = float(np.nanmedian(half))
    text += (
        f"; their medians are known to ±{hl._pct(h)}, so settings closer than ~{hl._pct(2 * h)} cannot be told apart"
    )
    settings = rows[~Configuration.marks_reference(rows)] if "flush" in rows.columns else rows
    if len(settings) < 2:
        return text + "."
    lo, hi = settings.loc[settings["median_s"].idxmin()], settings.loc[settings["median_s"].idxmax()]
    apart = float(hi["ci_low_s"]) > float(lo["ci_high_s"])
    ratio = hl._times(float(hi["median_s"] / lo["median_s"]))
    return text + (
        f". The settings differ by up to {ratio}: "
        + ("told apart, so the setting matters here." if apart else "within the noise, so they are not told apart.")
    )


def load_answer(
    samples: pd.DataFrame | None, cores: int | None, kernel: str | None = None, size_bytes: int | None = None
) -> str:
    """The host's load in one sentence where it explains the noise (the spread tracks it) or the host
    was busy in a notable share of the chunks; "" otherwise (the details still give the load)."""
    from ..bench.hostload import load_summary

    found = load_summary(samples, cores, kernel, size_bytes)
    return found.answer() if found is not None and found.notable else ""


def cache_answer(replay: Any, threshold: float = DEFAULT_THRESHOLD) -> str:
    """What the compile cache saved on the tuning replay, by the review rule's verdict."""
    from ..verdict_scenarios import compare_scenarios

    frame = replay.frame
    primary = getattr(replay, "primary", None)
    if "off" not in set(frame["scenario"]) or primary in (None, "off") or primary not in set(frame["scenario"]):
        return "Compile cache: the replay has no pass without the cache to compare with, so no saving is stated."
    row = compare_scenarios(
        frame[frame["scenario"].isin(["off", primary])], "off", new=primary, threshold=threshold
    ).iloc[0]
    saved, base = float(row["saved_s"]), float(row["base_s"])
    what = (
        f"{format_number(saved)} s of {format_number(base)} s ({hl._pct(saved / base)})"
        if base > 0
        else f"{format_number(saved)} s"
    )
    verdict = str(row["verdict"])
    if verdict == "faster":
        return f"Compile cache: it saved {what} of the tuning replay's time."
    if verdict == "slower":
        return f"Compile cache: it cost {format_number(-saved)} s more than compiling without it."
    if verdict == "same":
        return f"Compile cache: no saving beyond ±{hl._thr(threshold)} on the tuning replay ({what} saved)."
    return (
        f"Compile cache: it saved {what} on the tuning replay, but the interval ({format_number(row['saved_ci_low_s'])} to "
        f"{format_number(row['saved_ci_high_s'])} s) is too wide to call it a saving (undecided)."
    )


def verdict_answer(verdicts: pd.DataFrame, base_label: str, new_label: str) -> str:
    """How many configurations the rule called faster, slower, the same or undecided."""
    thr = float(verdicts.attrs.get("threshold", DEFAULT_THRESHOLD))
    both = verdicts[verdicts["present"] == "both"] if "present" in verdicts.columns else verdicts
    if both.empty:
        return f"Verdict: {new_label} and {base_label} share no configuration."
    counts = both["verdict"].value_counts()
    tally = ", ".join(
        f"{word} in {int(counts[v])}"
        for v, word in (("faster", "faster"), ("slower", "slower"), ("same", "the same"), ("undecided", "undecided"))
        if counts.get(v, 0)
    )
    return f"Verdict: {new_label} against {base_label} (rule ±{hl._thr(thr)}): {tally} of {len(both)} configuration(s)."


def answers(
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
    """The first screen's plain sentences, in ``headline``'s order (its arguments)."""
    out: list[str] = []
    if verdicts is not None:
        out.append(verdict_answer(verdicts, base_label, new_label))
    else:
        try:
            out += [verdict_answer(frame, base, new) for base, new, frame in hl.kernel_verdicts(samples, threshold)]
        except ConfigError:  # samples without the columns a comparison needs: the details say so
            pass
    if summary is not None and not summary.empty:
        out.append(noise_answer(summary, kernel, size_bytes))
        out.append(load_answer(samples, cores, kernel, size_bytes))
    if replay is not None:
        out.append(cache_answer(replay, threshold))
    return [a for a in out if a]


class FirstScreen:
    """The answers in a framed box, then the details (``headline``'s paragraphs) below it, smaller;
    every string HTML-escaped (kernel names and labels come from run files)."""

    def __init__(self, answers: Sequence[str], details: Sequence[str], title: str = "In short") -> None:
        self.answers, self.details, self.title = list(answers), list(details), title

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{html.escape(a)}</li>" for a in self.answers)
        more = "".join(f"<li>{html.escape(d)}</li>" for d in self.details)
        return (
            f'<div class="hx-headline" style="border-left:4px solid #1f4e79;padding:2px 10px;margin:6px 0;'
            f'max-width:100%;overflow-wrap:anywhere"><b>{html.escape(self.title)}</b><ul>{items}</ul></div>'
            f'<div class="hx-details" style="color:#333;font-size:0.9em;margin:4px 0 4px 14px;max-width:100%;'
            f'overflow-wrap:anywhere"><b>The details</b><ul>{more}</ul></div>'
        )

    def __repr__(self) -> str:
        return "\n".join(
            [f"{self.title}:", *(f"- {a}" for a in self.answers), "The details:", *(f"- {d}" for d in self.details)]
        )


def first_screen(
    summary: pd.DataFrame | None = None,
    samples: pd.DataFrame | None = None,
    replay: Any = None,
    verdicts: pd.DataFrame | None = None,
    **kw: Any,
) -> FirstScreen:
    """``answers`` then ``headline.headline`` (the same arguments) as the details."""
    return FirstScreen(
        answers(summary, samples, replay, verdicts, **kw), hl.headline(summary, samples, replay, verdicts, **kw)
    )


__all__ = ["FirstScreen", "answers", "cache_answer", "first_screen", "load_answer", "noise_answer", "verdict_answer"]
