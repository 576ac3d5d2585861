"""What a summary row says about how it stopped and how its samples lie (issue 26 items 9 and 10):
``timed_out`` for a sample cap as for a timeout, a merged row that timed out in one of its passes,
the bench table's ``stop`` column and alignment, and the start-up banner's rules (the bimodal
flag: tests/bench/test_modes.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

import hipexplore as hx
from hipexplore.bench.io import merge_passes
from hipexplore.bench.stats import StopRule
from hipexplore.cli.bench_cmd import adaptive_banner
from hipexplore.cli.bench_table import stop_word, table

#: an adaptive rule that cannot converge (every target out of reach): only its cap can stop it
NEVER = dict(
    min_samples=8, min_time_s=0.0, min_wall_s=0.0, target_ci=1e-12, target_cv=1e-12, stable_noise=1e-12, timeout_s=120.0
)


def test_a_sample_cap_is_reported_as_timed_out_by_a_real_sweep():
    res = hx.sweep(
        "triad",
        ["16KiB"],
        [1],
        ["none"],
        device="host",
        stop=StopRule(max_samples=24, **NEVER),
        reference=False,
        progress=False,
        warmup_s=0.0,
        worker=False,
        units=1,
    )
    row = res.summary.iloc[0]
    assert row["stop_reason"].startswith("max_samples 24 reached"), row["stop_reason"]
    assert bool(row["timed_out"]) is True  # a cap is no convergence
    # said once: the timing's own note, not again as "stopped by its max_samples 24 before convergence"
    assert "max_samples 24 reached before convergence" in row["warning"] and "stopped by its" not in row["warning"], (
        row["warning"]
    )


def test_a_merged_row_timed_out_when_one_of_its_passes_did():
    one = hx.sweep(
        "triad",
        ["16KiB"],
        [1],
        ["none"],
        device="host",
        iterations=8,
        reference=False,
        progress=False,
        warmup_s=0.0,
        worker=False,
        units=1,
    )
    capped = hx.sweep(
        "triad",
        ["16KiB"],
        [1],
        ["none"],
        device="host",
        stop=StopRule(max_samples=16, **NEVER),
        reference=False,
        progress=False,
        warmup_s=0.0,
        worker=False,
        units=1,
    )
    assert not one.summary["timed_out"].any() and capped.summary["timed_out"].all()
    for order in ((one, capped), (capped, one)):
        _samples, merged = merge_passes([r.samples for r in order], [r.summary for r in order], peak_bandwidth_gbs=1.0)
        assert len(merged) == 1 and bool(merged["timed_out"].iloc[0]) is True, merged[["stop_reason", "timed_out"]]
        assert "max_samples 16 reached" in merged["stop_reason"].iloc[0]
    _s, both_fine = merge_passes([one.samples, one.samples], [one.summary, one.summary], peak_bandwidth_gbs=1.0)
    assert bool(both_fine["timed_out"].iloc[0]) is False


def test_the_table_shows_why_each_row_stopped_and_stays_aligned_with_auto_counts():
    rows = []
    for rot, req, why in (
        (1, "1", "fixed iteration count"),
        (
            32,
            "auto",
            "converged: noise stabilised at 20.69% (robust rel. stdev; nvbench stdrel rule: "
            "spread 1.0% < 5.0% over the last 8 checks)",
        ),
        (4, "4", "timeout 10 s reached before convergence"),
        (2, "2", "converged: 95% CI of the median +-0.84% <= 1.00%"),
    ):
        rows.append(
            dict(
                kernel="triad",
                size_bytes=1 << 20,
                rotating=rot,
                rotating_requested=req,
                flush="l2-read",
                timer="events",
                n=40,
                median_s=4.5e-6,
                ci_low_s=4.4e-6,
                ci_high_s=4.6e-6,
                floor_s=np.nan,
                iqr_rel=0.01,
                bias=0.02,
                bandwidth_gbs=700.0,
                stop_reason=why,
                warning="",
            )
        )
    text = table(pd.DataFrame(rows)).splitlines()
    stops = [line.split()[-1] for line in text[1:]]  # one word each, the level in --json's stop_reason
    assert stops == ["fixed", "noise", "TIMEOUT", "ci"], text
    assert "auto=32" in text[2]
    # every column lines up: the header's column starts are where each row's cells end or begin
    median_end = text[0].index("median_us") + len("median_us")
    assert all(line[:median_end].endswith("4.500") for line in text[1:]), text
    assert len({line.index("l2-read") for line in text[1:]}) == 1


def test_the_banner_lists_every_rule_the_stop_column_can_name():
    rule = StopRule()
    banner = adaptive_banner(rule)
    # the stops by the words the table's stop column uses; the whole rule (nvbench's stdrel definition of
    # settled noise among it) is StopRule's docstring: the banner is at most 240 characters
    for name in ("'ci'", "'cv'", "'noise'", "'TIMEOUT'", "'CAP'", f"{rule.target_ci:.1%}", f"{rule.max_samples:,}"):
        assert name in banner, name
    assert len(banner) <= 240
    assert stop_word("converged: rel stdev 0.40% <= 0.50%") == "cv"
    assert stop_word("max_samples 100 reached before convergence | fixed iteration count") == "CAP"  # the most severe
