"""The first screen's plain answers (``hipexplore.report.answers``) on real host sweeps and recorded
replays: each answer carries the numbers and the decision of the rule ``headline`` states in its
details, in words (no ``r=2 l2-read``), and the page puts the answers before the details."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from hipexplore import report
from hipexplore.bench import sweep
from hipexplore.bench.hostload import cores_of, load_summary
from hipexplore.report import answers
from hipexplore.report import headline as hl
from hipexplore.readable import format_number
from hipexplore.verdicts import compare, compare_scenarios

ROOT = Path(__file__).resolve().parents[2]


def pct(fraction: float) -> str:
    return f"{100 * fraction:.1f}%"


@pytest.fixture(scope="module")
def triad():
    return sweep("triad", ["64KiB"], [1, 2], ["none"], device="host", iterations=24, progress=False)


def test_the_timing_answer_carries_the_spread_the_precision_and_whether_the_settings_are_told_apart(triad):
    s = triad.summary
    text = answers.noise_answer(s)
    assert text.startswith(
        f"Timing: single launches spread {pct(np.nanmedian(s['iqr_rel']))} around their median "
        f"(typical of the {len(s)} settings shown)"
    )
    half = float(np.nanmedian((s["ci_high_s"] - s["ci_low_s"]) / 2 / s["median_s"]))
    assert (
        f"their medians are known to ±{pct(half)}, so settings closer than ~{pct(2 * half)} cannot be told apart"
        in text
    )
    settings = s[s["flush"] != "cold-reference"]
    lo, hi = settings.loc[settings["median_s"].idxmin()], settings.loc[settings["median_s"].idxmax()]
    apart = hi["ci_low_s"] > lo["ci_high_s"]
    assert text.endswith("told apart, so the setting matters here." if apart else "not told apart.")
    # the details say the same with all their numbers (headline.noise_sentences)
    details = " ".join(hl.noise_sentences(s))
    assert ("resolved (their 95% intervals do not overlap)" in details) == apart


def test_the_first_screen_names_the_load_where_it_matters_and_labels_in_words(triad):
    cores = cores_of(triad.metadata)
    screen = answers.first_screen(triad.summary, triad.samples, cores=cores)
    found = load_summary(triad.samples, cores)
    assert (found.answer() in screen.answers) == found.notable
    noise = next(i for i, d in enumerate(screen.details) if d.startswith("Noise: "))
    assert screen.details[noise + 1] == found.sentence()  # the load beside the noise
    for text in (*screen.answers, *screen.details):
        assert not re.search(r"\br=\d", text), text  # the shorthand a first screen may not use
    assert "rotating set" in " ".join(screen.details)
    page = screen._repr_html_()
    assert page.index('class="hx-headline"') < page.index('class="hx-details"')


def test_the_verdict_answer_counts_the_rules_calls():
    run = sweep(
        ["copy", "triad"],
        ["64KiB", "256KiB"],
        [1],
        ["none"],
        device="host",
        iterations=24,
        interleave=True,
        progress=False,
        reference=False,
    )
    verdicts = compare(run, base="copy", new="triad")
    counts = verdicts["verdict"].value_counts()
    text = answers.verdict_answer(verdicts, "copy", "triad")
    assert text.startswith("Verdict: triad against copy (rule ±2%): ") and text.endswith(" of 2 configuration(s).")
    for v, word in (("faster", "faster"), ("slower", "slower"), ("same", "the same"), ("undecided", "undecided")):
        assert (f"{word} in {int(counts.get(v, 0))}" in text) == bool(counts.get(v, 0)), text
    # the dashboard computes it from samples holding two kernels
    assert answers.answers(run.summary, run.samples, kernel="copy", size_bytes=64 * 1024)[0] == text


def test_the_cache_answer_is_the_replays_saving_by_the_review_rule():
    rep = report.replay_data(str(ROOT / "data" / "tuning"), jobs=2)  # an H200 replay: the cache saves time
    row = compare_scenarios(rep.frame[rep.frame["scenario"].isin(["off", "memory"])], "off", new="memory").iloc[0]
    assert row["verdict"] == "faster"
    assert answers.cache_answer(rep) == (
        f"Compile cache: it saved {format_number(row['saved_s'])} s of "
        f"{format_number(row['base_s'])} s ({pct(row['saved_s'] / row['base_s'])}) of the "
        f"tuning replay's time."
    )


def test_the_page_escapes_what_came_from_run_files():
    tag = "<img src=x onerror=alert(1)>"
    page = answers.FirstScreen([f"Verdict: {tag}"], [f"Noise: {tag}"])._repr_html_()
    assert "<img" not in page and page.count("&lt;img src=x onerror=alert(1)&gt;") == 2
